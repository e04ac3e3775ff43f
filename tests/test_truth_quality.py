"""Truth-quality diagnostics: judged@k by hand and against ir_measures' Judged@k, the pool and
its holes, round trip, leak buckets, and the leak-robust verdict (paired test inside each bucket)."""

from __future__ import annotations

import numpy as np
import pytest

from bakeoff.data.model import Qrels, Queries, Query, Run
from bakeoff.data.pool import holes, pool
from bakeoff.diagnose import hole_counts, judged_at_k, leak_bucket_labels, leak_buckets, round_trip
from bakeoff.metrics import parse_measure, score_run


def _run(name: str, ranked: dict[str, list[str]]) -> Run:
    return Run.from_scores(name, {q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in ranked.items()})


A = _run("a", {"q1": ["d1", "d2", "d3", "d4"], "q2": ["d5", "d6"]})
B = _run("b", {"q1": ["d2", "d7", "d1", "d8"], "q2": ["d6", "d9", "d5"]})
QRELS = Qrels({"q1": {"d1": 1, "d3": 0}, "q2": {"d6": 1}, "q3": {"d1": 1}})


def test_judged_at_k_by_hand() -> None:
    assert str(parse_measure("judged@3")) == "judged@3"
    with pytest.raises(ValueError):
        parse_measure("judged")
    ev = score_run(A, QRELS, ["judged@3", "judged@10"], query_ids=["q1", "q2", "q3"])
    # q1 top 3 d1 d2 d3: d1 and d3 judged (grade 0 counts) -> 2/3; q2: d6 of the 2 retrieved -> 1/2;
    # q3 not in the run -> 0
    assert ev.per_query["judged@3"] == {"q1": pytest.approx(2 / 3), "q2": pytest.approx(1 / 2), "q3": 0.0}
    # fewer than k retrieved: the share of what was retrieved (ir_measures), q2 has 2 documents
    assert ev.per_query["judged@10"]["q2"] == pytest.approx(1 / 2)
    j = judged_at_k({"a": A, "b": B}, QRELS, k=3, query_ids=["q1", "q2"])
    assert j["a"]["mean"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert j["b"]["per_query"] == {"q1": pytest.approx(1 / 3), "q2": pytest.approx(1 / 3)}


def test_judged_at_k_matches_ir_measures() -> None:
    ir_measures = pytest.importorskip("ir_measures")
    rng = np.random.default_rng(0)
    docs = [f"d{i}" for i in range(40)]
    qrels, scores = {}, {}
    for q in range(25):
        qid = f"q{q}"
        judged = rng.choice(docs, size=int(rng.integers(1, 15)), replace=False)
        qrels[qid] = {str(d): int(rng.integers(0, 3)) for d in judged}
        qrels[qid][str(judged[0])] = 1  # every query has a relevant document
        got = rng.choice(docs, size=int(rng.integers(3, 30)), replace=False)
        scores[qid] = {str(d): float(s) for d, s in zip(got, rng.permutation(len(got)))}
    run = Run.from_scores("r", scores)
    for k in (1, 5, 10, 20):
        ours = score_run(run, Qrels(qrels), [f"judged@{k}"], query_ids=list(qrels)).per_query[f"judged@{k}"]
        theirs = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Judged @ k], qrels, scores)}
        assert set(theirs) == set(ours)
        for q in ours:
            assert ours[q] == pytest.approx(theirs[q], abs=1e-12), (k, q)


def test_pool_and_holes() -> None:
    p = pool({"a": A, "b": B}, k=3, query_ids=["q1", "q2"])
    assert p["q1"] == {"d1": {"a": 1, "b": 3}, "d2": {"a": 2, "b": 1}, "d3": {"a": 3}, "d7": {"b": 2}}
    hs = holes({"a": A, "b": B}, QRELS, k=3, query_ids=["q1", "q2"])
    # q1: d2 (both arms, best rank 1), d7 (b only, rank 2); d1, d3 judged. q2: d5 (both), d9 (b only)
    assert [(h.query_id, h.doc_id, h.arms, h.best_rank, h.disputed) for h in hs] == [
        ("q1", "d2", ("a", "b"), 1, False), ("q1", "d7", ("b",), 2, True),
        ("q2", "d5", ("a", "b"), 1, False), ("q2", "d9", ("b",), 2, True)]
    c = hole_counts(hs, ["a", "b"], k=3)
    assert c == {"k": 3, "total": 4, "disputed": 2, "queries": 2, "per_arm": {"a": 2, "b": 4},
                 "disputed_per_arm": {"a": 0, "b": 2}}


def test_round_trip() -> None:
    qs = Queries.from_queries([Query("q1", "x", {"source_doc": "d3"}), Query("q2", "y", {"source_doc": "d9"}),
                               Query("q3", "z", {})])
    rt = round_trip({"a": A, "b": B}, qs, query_ids=["q1", "q2", "q3"], ks=(1, 3))
    assert rt["n"] == 2  # q3 records no source
    assert rt["arms"]["a"] == {"top1": 0.0, "top3": 0.5}      # d3 at rank 3 for q1; d9 never
    assert rt["arms"]["b"] == {"top1": 0.0, "top3": 0.5}      # d9 at rank 2 for q2; d3 never
    assert round_trip({"a": A}, Queries.from_queries([Query("q1", "x", {})]), query_ids=["q1"])["arms"] == {}


def test_leak_buckets_edges() -> None:
    assert leak_bucket_labels() == ["[0, 0.1)", "[0.1, 0.35]", "(0.35, 1]", "(no leak value)"]
    b = leak_buckets({"a": 0.0, "b": 0.0999, "c": 0.1, "d": 0.35, "e": 0.3501, "f": 1.0}, list("abcdefg"))
    assert b == {"a": "[0, 0.1)", "b": "[0, 0.1)", "c": "[0.1, 0.35]", "d": "[0.1, 0.35]", "e": "(0.35, 1]",
                 "f": "(0.35, 1]", "g": "(no leak value)"}


def test_leak_verdict_tests_inside_each_bucket() -> None:
    from bakeoff.report.quality import leak_verdict

    leak = {"q1": 0.0, "q2": 0.05, "q3": 0.0, "q4": 0.5, "q5": 0.6, "q6": 0.9}
    qids = list(leak)
    per_query = {
        # best wins by 0.5 on every high-leak query, ties on low leak
        "best": {"ndcg@10": {"q1": 0.5, "q2": 0.5, "q3": 0.5, "q4": 1.0, "q5": 1.0, "q6": 1.0}},
        "other": {"ndcg@10": {"q1": 0.5, "q2": 0.5, "q3": 0.5, "q4": 0.5, "q5": 0.5, "q6": 0.5}},
        "third": {"ndcg@10": {"q1": 0.0, "q2": 0.0, "q3": 0.0, "q4": 0.5, "q5": 0.5, "q6": 0.5}},
    }
    v = leak_verdict(per_query, leak=leak, arms=["best", "other", "third"], measure="ndcg@10", query_ids=qids,
                     n_resamples=1000)
    assert v["counts"] == {"[0, 0.1)": 3, "(0.35, 1]": 3}
    rows = {(p["b"], r["bucket"]): r for p in v["pairs"] for r in p["rows"]}
    low, high = rows[("other", "[0, 0.1)")], rows[("other", "(0.35, 1]")]
    assert low["delta"] == 0.0 and low["p_perm"] == 1.0 and low["wins"] == 0 and low["ties"] == 3
    # exact sign-flip test on d = (0.5, 0.5, 0.5): 2 of 8 patterns reach |mean| 0.5 -> p = 0.25
    assert high["delta"] == pytest.approx(0.5) and high["p_perm"] == pytest.approx(0.25)
    # Holm over the two pairs inside the high bucket: both p = 0.25 -> adjusted 0.5
    assert high["p_perm_holm"] == pytest.approx(0.5) and not high["significant"]
    assert rows[("third", "[0, 0.1)")]["delta"] == pytest.approx(0.5)
    assert sum(r["contribution"] for r in v["pairs"][0]["rows"]) == pytest.approx(v["pairs"][0]["delta"])
    assert v["pairs"][0]["delta"] == pytest.approx(0.25)


def test_quick_quality_for_the_demo() -> None:
    from bakeoff.data.model import Corpus, Dataset
    from bakeoff.report.quality import quick_quality

    ids = tuple(f"d{i}" for i in range(1, 10))
    corpus = Corpus(ids, ids, tuple("" for _ in ids), tuple({} for _ in ids))
    qs = Queries.from_queries([Query("q1", "x", {"source_doc": "d1"}), Query("q2", "y", {"source_doc": "d6"})])
    ds = Dataset(name="t", corpus=corpus, queries=qs, qrels=Qrels({"q1": {"d1": 1, "d3": 0}, "q2": {"d6": 1}}),
                 split="test")
    qq = quick_quality(ds, {"a": A, "b": B}, k=3)
    assert qq["judged"] == {"a": pytest.approx((2 / 3 + 1 / 2) / 2), "b": pytest.approx((1 / 3 + 1 / 3) / 2)}
    assert qq["holes"]["total"] == 4 and qq["holes"]["per_arm"] == {"a": 2, "b": 4}
    # source in top 10: a has d1 (q1) and d6 (q2); b has d1 (q1, rank 3) and d6 (q2, rank 1)
    assert qq["round_trip"]["arms"] == {"a": {"top10": 1.0, "top100": 1.0}, "b": {"top10": 1.0, "top100": 1.0}}
    # the demo prints the same figures before its results table
    from bakeoff.demo import judged_lines

    lines = judged_lines(qq)
    assert lines[0] == "judged@3: a 0.583, b 0.333"
    assert lines[1].startswith(f"holes: 4 unjudged (query, document) pairs in the arms' top 3, {qq['holes']['disputed']} ")
    assert lines[2] == "round trip (source document in the arm's top 10 / top 100): a 1.00/1.00, b 1.00/1.00"
