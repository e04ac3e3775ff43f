"""Cluster mode's leak filter (:func:`bakeoff.truth.generation.clusters.cluster_leak_filter`): leak against the
relevant documents recorded per question, leaky questions dropped with their judgments and hard
negatives, describe-mode-shaped statistics in provenance, and the report's leak buckets reading them."""

from __future__ import annotations

import pytest

from bakeoff.data.model import Corpus, Qrels, Queries
from bakeoff.truth.filters.leak import leak
from bakeoff.truth.generation.clusters import cluster_leak_filter
from bakeoff.truth.generation.synthetic import SyntheticTruth

DOCS = {
    "a": "Glycolysis converts glucose into pyruvate inside the cytoplasm.",
    "b": "Photosynthesis captures sunlight in chloroplasts of green plants.",
    "c": "Tectonic plates drift slowly and trigger earthquakes along faults.",
}


def _truth() -> tuple[SyntheticTruth, Corpus]:
    corpus = Corpus(tuple(DOCS), tuple(DOCS.values()), ("", "", ""), ({}, {}, {}))
    queries = Queries(("c1", "c2", "c3"),
                      ("glycolysis pyruvate cytoplasm", "how do leaves make food", "why does the ground shake"),
                      ({"cluster": 0}, {"cluster": 0}, {"cluster": 1}))
    qrels = Qrels({"c1": {"a": 3, "b": 2}, "c2": {"b": 3}, "c3": {"c": 3}})
    prov = {"mode": "clusters", "counts": {"kept": 3}, "hard_negatives": {"c1": ["c"], "c2": ["a"], "c3": ["a"]},
            "n_hard_negatives": 3}
    return SyntheticTruth(queries, qrels, prov), corpus


def test_cluster_leak_filter_drops_leaky_questions_and_records_statistics() -> None:
    truth, corpus = _truth()
    # c1 copies all three of its rare words from a + b: leak 3/3 = 1.0 (by hand); the others paraphrase
    assert leak("glycolysis pyruvate cytoplasm", f" {DOCS['a']}  {DOCS['b']}") == 1.0
    out = cluster_leak_filter(truth, corpus, threshold=0.35)
    assert out.queries.ids == ("c2", "c3")
    assert "c1" not in out.qrels and dict(out.qrels["c2"]) == {"b": 3}
    assert out.provenance["hard_negatives"] == {"c2": ["a"], "c3": ["a"]} and out.provenance["n_hard_negatives"] == 2
    lk = out.provenance["leak"]
    assert lk["rejection_rate"] == pytest.approx(1 / 3) and lk["threshold"] == 0.35
    assert lk["all_generations"]["n"] == 3 and lk["kept"]["n"] == 2
    assert lk["all_generations"]["histogram"]["0.90-1.00"] == 1
    assert out.provenance["counts"] == {"kept": 2, "rejected_leak": 1}
    for meta, text in zip(out.queries.metadata, out.queries.texts):
        rel = list(out.qrels[out.queries.ids[out.queries.texts.index(text)]])
        assert meta["leak"] == round(leak(text, " ".join(f" {DOCS[d]}" for d in rel)), 6)
        assert meta["cluster"] in (0, 1)
    # no threshold: every question kept, leak recorded
    everything = cluster_leak_filter(truth, corpus, threshold=None)
    assert len(everything.queries) == 3 and everything.queries.metadata[0]["leak"] == 1.0
    assert everything.provenance["leak"]["rejection_rate"] == 0.0


def test_report_leak_buckets_read_cluster_leak(tmp_path) -> None:
    from bakeoff.data.model import Dataset
    from bakeoff.report.model import find_leak

    truth, corpus = _truth()
    out = cluster_leak_filter(truth, corpus, threshold=None)
    ds = Dataset(name="t", corpus=corpus, queries=out.queries, qrels=out.qrels, split="test")
    found = find_leak(None, ds, list(out.queries.ids))
    assert found["per_query"] == {"c1": 1.0, "c2": out.queries.metadata[1]["leak"], "c3": out.queries.metadata[2]["leak"]}
