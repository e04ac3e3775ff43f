"""Per-query diagnostics on tiny fixtures with hand-counted answers."""

from __future__ import annotations

import csv

import pytest

from bakeoff import diagnose as dg
from bakeoff.data.model import Qrels, Queries, Query, Run

QIDS = ["q1", "q2", "q3", "q4", "q5"]
PER_QUERY = {
    "A": {"mrr@10": {"q1": 1.0, "q2": 0.5, "q3": 0.0, "q4": 1 / 3, "q5": 1.0}},
    "B": {"mrr@10": {"q1": 1.0, "q2": 1.0, "q3": 0.0, "q4": 0.25, "q5": 0.5}},
    "C": {"mrr@10": {"q1": 0.5, "q2": 0.5, "q3": 0.2, "q4": 1 / 3, "q5": 0.0}},
}


def test_win_tie_loss_exact_counts() -> None:
    # A vs B: q1 tie, q2 loss, q3 tie, q4 win, q5 win -> 2/2/1
    a = [PER_QUERY["A"]["mrr@10"][q] for q in QIDS]
    b = [PER_QUERY["B"]["mrr@10"][q] for q in QIDS]
    assert dg.win_tie_loss(a, b) == (2, 2, 1)
    assert dg.win_tie_loss(b, a) == (1, 2, 2)
    # floating-point noise is a tie, a real difference is not
    assert dg.win_tie_loss([0.1 + 0.2], [0.3]) == (0, 1, 0)
    assert dg.win_tie_loss([0.30001], [0.3]) == (1, 0, 0)
    m = {(w.a, w.b): (w.wins, w.ties, w.losses) for w in dg.win_tie_loss_matrix(PER_QUERY, "mrr@10", query_ids=QIDS)}
    assert m[("A", "B")] == (2, 2, 1)
    # A vs C: q1 win, q2 tie, q3 loss, q4 tie (1/3 == 1/3), q5 win
    assert m[("A", "C")] == (2, 2, 1)
    assert m[("C", "A")] == (1, 2, 2)
    assert len(m) == 6


def test_disagreements_sorted_with_text() -> None:
    queries = Queries.from_queries([Query(q, f"text of {q}") for q in QIDS])
    rows = dg.disagreements(PER_QUERY, "A", "C", "mrr@10", query_ids=QIDS, queries=queries, n=2)
    # |A - C|: q1 0.5, q3 0.2, q5 1.0 -> q5, q1
    assert [r["query_id"] for r in rows] == ["q5", "q1"]
    assert rows[0]["text"] == "text of q5" and rows[0]["delta"] == 1.0 and rows[0]["A"] == 1.0
    assert len(dg.disagreements(PER_QUERY, "A", "C", "mrr@10", query_ids=QIDS, n=10)) == 3  # ties left out


def test_churn_counts_both_directions() -> None:
    qrels = Qrels({"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 1}, "q3": {"d4": 1}, "q4": {"d5": 1}})
    base = Run.from_scores("base", {
        "q1": {"d1": 3, "x": 2, "y": 1},        # d1 in top 2
        "q2": {"x": 3, "d3": 2, "y": 1},        # d3 in top 2
        "q3": {"x": 3, "y": 2, "d4": 1},        # none in top 2
        "q4": {"d5": 3, "x": 2},                # d5 in top 2
    })
    new = Run.from_scores("new", {
        "q1": {"d2": 3, "x": 2, "d1": 1},       # lost d1, gained d2 (net 0)
        "q2": {"x": 3, "y": 2, "d3": 1},        # lost d3 -> broken
        "q3": {"d4": 3, "x": 2},                # gained d4 -> rescued
        "q4": {"x": 3, "d5": 2},                # unchanged membership
    })
    c = dg.churn(base, new, qrels, k=2, query_ids=["q1", "q2", "q3", "q4"])
    assert (c.gained, c.lost, c.both, c.rescued, c.broken) == (2, 2, 1, 1, 1)
    assert (c.docs_gained, c.docs_lost) == (2, 2)
    assert c.gained_queries == ("q1", "q3") and c.lost_queries == ("q1", "q2")
    assert c.to_dict()["gained_queries"] == ["q1", "q3"]


def test_decompose_contributions_add_up() -> None:
    buckets = {"q1": "single", "q2": "single", "q3": "multi", "q4": "multi", "q5": "single"}
    rows = dg.decompose(PER_QUERY, "A", "B", "mrr@10", buckets=buckets, query_ids=QIDS)
    by = {r.bucket: r for r in rows}
    assert [r.bucket for r in rows] == ["multi", "single"]
    # single: q1 0, q2 -0.5, q5 +0.5 -> delta 0, contribution 0; multi: q3 0, q4 +1/12
    assert by["single"].n == 3 and by["single"].delta == pytest.approx(0.0)
    assert by["multi"].delta == pytest.approx((1 / 3 - 0.25) / 2)
    assert by["multi"].contribution == pytest.approx((1 / 3 - 0.25) / 5)
    total = sum(PER_QUERY["A"]["mrr@10"].values()) / 5 - sum(PER_QUERY["B"]["mrr@10"].values()) / 5
    assert sum(r.contribution for r in rows) == pytest.approx(total)
    assert (by["single"].wins, by["single"].ties, by["single"].losses) == (1, 1, 1)


def test_bucketings() -> None:
    qrels = Qrels({"q1": {"a": 1}, "q2": {"a": 1, "b": 2, "c": 0}, "q3": {"a": 0, "b": 1}})
    assert dg.relevant_count_buckets(qrels, ["q1", "q2", "q3"]) == {
        "q1": "single-relevant", "q2": "multi-relevant", "q3": "single-relevant"}
    queries = Queries.from_queries([
        Query("q1", "one two three", {"lang": "en", "id2": "x1"}),
        Query("q2", " ".join(["w"] * 7), {"lang": "es", "id2": "x2"}),
        Query("q3", " ".join(["w"] * 30), {"lang": "en", "id2": "x3"}),
    ])
    assert dg.length_buckets(queries, ["q1", "q2", "q3"]) == {"q1": "1-5 words", "q2": "6-10 words", "q3": "21+ words"}
    assert dg.metadata_buckets(queries, ["q1", "q2", "q3"], "lang") == {"q1": "en", "q2": "es", "q3": "en"}
    assert dg.bucketable_metadata_fields(queries, ["q1", "q2", "q3"], max_values=2) == ["lang"]


def test_oracle() -> None:
    o = dg.oracle(PER_QUERY, "mrr@10", query_ids=QIDS)
    # per query best: 1, 1, 0.2, 1/3, 1 -> mean 3.5333/5
    assert o["mean"] == pytest.approx((1 + 1 + 0.2 + 1 / 3 + 1) / 5)
    assert o["best_arm"] == "A" and o["best_mean"] == pytest.approx((1 + 0.5 + 0 + 1 / 3 + 1) / 5)
    assert o["headroom"] == pytest.approx(o["mean"] - o["best_mean"])
    # sole best: A on q5; B on q2; C on q3; q1 tie A/B, q4 tie A/C
    assert o["sole_best"] == {"A": 1, "B": 1, "C": 1}
    assert o["all_zero"] == 0


def test_coverage_apart_from_failures() -> None:
    qrels = Qrels({"q1": {"d1": 1}, "q2": {"gone": 1}, "q3": {"d2": 1, "gone2": 1}, "q4": {"d3": 1}})
    corpus_ids = {"d1", "d2", "d3", "x"}
    cov = dg.coverage(qrels, corpus_ids, query_ids=["q1", "q2", "q3", "q4"])
    assert cov["uncoverable"] == ["q2"] and cov["partial"] == ["q3"] and cov["missing_relevant_docs"] == 2
    run = Run.from_scores("r", {"q1": {"d1": 1.0}, "q2": {"x": 1.0}, "q3": {"x": 2.0, "d2": 1.0}, "q4": {"x": 1.0}})
    # q2 fails too but is uncoverable -> not a retrieval failure; q4 is one
    assert dg.failures(run, qrels, k=1, query_ids=["q1", "q2", "q3", "q4"], exclude=cov["uncoverable"]) == ["q3", "q4"]
    assert dg.failures(run, qrels, k=2, query_ids=["q1", "q2", "q3", "q4"], exclude=cov["uncoverable"]) == ["q4"]


def test_matrix_export_csv_and_parquet(tmp_path) -> None:
    p = dg.write_matrix(tmp_path / "m.csv", PER_QUERY, query_ids=QIDS, measures=["mrr@10"])
    rows = list(csv.reader(p.open()))
    assert rows[0] == ["query_id", "measure", "A", "B", "C"]
    assert rows[4] == ["q4", "mrr@10", repr(1 / 3), "0.25", repr(1 / 3)]
    assert float(rows[4][2]) == 1 / 3  # lossless
    pq = pytest.importorskip("pyarrow.parquet")
    dg.write_matrix(tmp_path / "m.parquet", PER_QUERY, query_ids=QIDS, measures=["mrr@10"])
    t = pq.read_table(tmp_path / "m.parquet").to_pydict()
    assert t["query_id"] == QIDS and t["B"] == [1.0, 1.0, 0.0, 0.25, 0.5]
