"""Metrics: hand-computed golden cases, an edge matrix, and a randomized cross-check
against pytrec_eval (an independent C implementation of trec_eval)."""

import math

import numpy as np
import pytest

from bakeoff.data.model import Qrels, Run
from bakeoff.metrics import Measure, parse_measure, parse_measures, score_run


def one(run_scores, qrels, measure, qid="q"):
    ev = score_run(Run.from_scores("r", {qid: run_scores}), Qrels({qid: qrels}), [measure])
    return ev.per_query[str(parse_measure(measure))][qid]


# Golden case: ranking d1 d2 d3 d4 d5 (scores 5..1); relevant d2 (grade 2) and d4 (grade 1),
# d9 relevant but never retrieved (grade 1), d1 judged non-relevant (grade 0).
RUN = {"d1": 5.0, "d2": 4.0, "d3": 3.0, "d4": 2.0, "d5": 1.0}
QRELS = {"d1": 0, "d2": 2, "d4": 1, "d9": 1}


@pytest.mark.parametrize(
    "measure,expected",
    [
        ("precision@1", 0.0),
        ("precision@2", 1 / 2),
        ("precision@5", 2 / 5),
        ("precision@10", 2 / 10),  # trec_eval divides by k even when fewer are retrieved
        ("recall@2", 1 / 3),
        ("recall@5", 2 / 3),
        ("mrr@1", 0.0),  # true cutoff: first hit at rank 2
        ("mrr@10", 1 / 2),
        ("mrr", 1 / 2),
        ("hit@1", 0.0),
        ("hit@2", 1.0),
        ("map@5", (1 / 2 + 2 / 4) / 3),
        ("map@3", (1 / 2) / 3),
        # linear gain: DCG = 2/log2(3) + 1/log2(5); IDCG@5 = 2 + 1/log2(3) + 1/log2(4)
        ("ndcg@5", (2 / math.log2(3) + 1 / math.log2(5)) / (2 + 1 / math.log2(3) + 1 / 2)),
        # IDCG@2 = 2 + 1/log2(3); DCG@2 = 2/log2(3)
        ("ndcg@2", (2 / math.log2(3)) / (2 + 1 / math.log2(3))),
        # exponential gain 2^g-1: grade 2 -> 3, grade 1 -> 1
        ("ndcg_exp@5", (3 / math.log2(3) + 1 / math.log2(5)) / (3 + 1 / math.log2(3) + 1 / 2)),
    ],
)
def test_golden(measure, expected):
    assert one(RUN, QRELS, measure) == pytest.approx(expected, abs=1e-12)


def test_binary_ndcg_gains_coincide():
    qrels = {"d2": 1, "d4": 1}
    assert one(RUN, qrels, "ndcg@5") == pytest.approx(one(RUN, qrels, "ndcg_exp@5"), abs=1e-15)


def test_ties_broken_by_doc_id_descending():
    # All tied: order is c, b, a; relevant a is at rank 3.
    assert one({"a": 1.0, "b": 1.0, "c": 1.0}, {"a": 1}, "mrr@10") == pytest.approx(1 / 3)
    assert one({"a": 1.0, "b": 1.0, "c": 1.0}, {"a": 1}, "mrr@2") == 0.0


def test_measures_are_values():
    m = parse_measure("nDCG@10")
    assert m == Measure("ndcg", 10) and str(m) == "ndcg@10" and hash(m) == hash(Measure("ndcg", 10))
    assert str(parse_measure("P@5")) == "precision@5"
    assert str(parse_measure("success@3")) == "hit@3"
    assert str(parse_measure("recip_rank")) == "mrr"
    assert parse_measures(["ndcg@10", "NDCG@10", "mrr@10"]) == (Measure("ndcg", 10), Measure("mrr", 10))
    for bad in ["ndcg@0", "foo@10", "precision", "ndcg@x"]:
        with pytest.raises(ValueError):
            parse_measure(bad)


class TestEdgeMatrix:
    measures = ("ndcg@10", "recall@10", "mrr@10", "precision@10", "hit@10", "map@10")

    def test_empty_run_scores_zero(self):
        ev = score_run(Run.from_scores("r", {"q": {}}), Qrels({"q": {"a": 1}}), self.measures)
        assert all(ev.per_query[m]["q"] == 0.0 for m in ev.per_query)
        assert ev.query_ids == ("q",)

    def test_query_missing_from_run_scores_zero_and_is_reported(self):
        ev = score_run(Run.from_scores("r", {"q1": {"a": 1.0}}), Qrels({"q1": {"a": 1}, "q2": {"b": 1}}), self.measures)
        assert ev.per_query["recall@10"] == {"q1": 1.0, "q2": 0.0}
        assert ev.means["recall@10"] == 0.5
        assert ev.missing_from_run == ("q2",)

    def test_no_relevant_docs_excluded_from_means(self):
        qrels = Qrels({"q1": {"a": 1}, "q2": {"b": 0}})
        ev = score_run(Run.from_scores("r", {"q1": {"a": 1.0}, "q2": {"b": 1.0}}), qrels, self.measures)
        assert ev.query_ids == ("q1",)
        assert ev.excluded["no_relevant"] == ("q2",)
        assert ev.means["mrr@10"] == 1.0

    def test_run_queries_without_judgments_are_reported_not_scored(self):
        ev = score_run(Run.from_scores("r", {"q1": {"a": 1.0}, "qx": {"a": 1.0}}), Qrels({"q1": {"a": 1}}), self.measures)
        assert ev.excluded["not_judged"] == ("qx",)
        assert "qx" not in ev.per_query["ndcg@10"]

    def test_all_scores_tied(self):
        scores = {f"d{i}": 0.0 for i in range(20)}
        # order: d9 d8 ... d2 d19 d18 ... (string-descending); d0 is last
        assert one(scores, {"d0": 1}, "mrr") == pytest.approx(1 / 20)
        assert one(scores, {"d9": 1}, "mrr@1") == 1.0

    def test_k_larger_than_list(self):
        assert one({"a": 1.0}, {"a": 1, "b": 1}, "recall@1000") == 0.5
        assert one({"a": 1.0}, {"a": 1}, "precision@1000") == pytest.approx(1 / 1000)

    def test_no_evaluable_queries_gives_nan_means(self):
        ev = score_run(Run.from_scores("r", {}), Qrels({"q": {"a": 0}}), ["ndcg@10"])
        assert math.isnan(ev.means["ndcg@10"]) and ev.query_ids == ()

    def test_evaluate_does_not_mutate_inputs(self):
        run = Run.from_scores("r", {"q": {"a": 1.0, "b": 2.0}})
        qrels = Qrels({"q": {"a": 1}})
        before = (run.fingerprint(), qrels.fingerprint())
        score_run(run, qrels, self.measures)
        assert (run.fingerprint(), qrels.fingerprint()) == before


def test_randomized_cross_check_against_pytrec_eval():
    """>= 1,000 random runs with heavy ties and graded judgments; equal to 1e-9."""
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier is a test dependency")
    rng = np.random.default_rng(20261129)
    pairs = {
        "ndcg@5": "ndcg_cut_5", "ndcg@10": "ndcg_cut_10", "ndcg@3": "ndcg_cut_3",
        "precision@5": "P_5", "precision@10": "P_10", "recall@5": "recall_5", "recall@10": "recall_10",
        "map@10": "map_cut_10", "map@5": "map_cut_5", "hit@5": "success_5", "hit@1": "success_1", "mrr": "recip_rank",
    }
    trec_measures = {v.replace("_cut_", "_cut.").replace("P_", "P.").replace("recall_", "recall.").replace(
        "success_", "success.") for v in pairs.values()}
    n_runs, worst = 0, 0.0
    for _ in range(250):
        qrels, runs = {}, {}
        for q in range(4):
            n_docs = int(rng.integers(1, 40))
            docs = [f"d{int(x)}" for x in rng.choice(1000, size=n_docs, replace=False)]
            judged = rng.choice(docs, size=int(rng.integers(1, n_docs + 1)), replace=False)
            grades = {str(d): int(rng.integers(0, 4)) for d in judged}
            if not any(g > 0 for g in grades.values()):
                grades[str(judged[0])] = int(rng.integers(1, 4))
            qrels[f"q{q}"] = grades
            retrieved = rng.choice(docs, size=int(rng.integers(1, n_docs + 1)), replace=False)
            # few distinct score values -> many ties
            runs[f"q{q}"] = {str(d): float(rng.integers(0, 4)) / 2 for d in retrieved}
            n_runs += 1
        ref = pytrec_eval.RelevanceEvaluator(qrels, trec_measures).evaluate(runs)
        ours = score_run(Run.from_scores("r", runs), Qrels(qrels), list(pairs))
        for q in runs:
            for mine, theirs in pairs.items():
                worst = max(worst, abs(ours.per_query[mine][q] - ref[q][theirs]))
        # MRR@k with a true cutoff, derived independently from trec_eval's uncut recip_rank
        for k in (1, 3, 10):
            cut = score_run(Run.from_scores("r", runs), Qrels(qrels), [f"mrr@{k}"])
            for q in runs:
                rr = ref[q]["recip_rank"]
                expected = rr if rr > 0 and round(1 / rr) <= k else 0.0
                worst = max(worst, abs(cut.per_query[f"mrr@{k}"][q] - expected))
    assert n_runs >= 1000
    assert worst <= 1e-9
