"""Self-retrieval datasets (queries that are documents, as in ArguAna and Quora): the detection, and
bakeoff's figures against BEIR's ``EvaluateRetrieval.evaluate`` and MTEB's retrieval evaluator, with and
without their ``ignore_identical_ids``, on the same runs.

The set is made here (ArguAna's shape): 60 short "arguments", 25 of them also queries (same id, same text),
each judged against 1-3 other arguments; one query judged only with grade 0 (so that the averaging rule
matters: BEIR and MTEB average it as 0, bakeoff's default rule excludes it).
"""

from __future__ import annotations

import random

import pytest

from bakeoff.data.model import Corpus, Dataset, Document, Qrels, Queries, Query
from bakeoff.runner.guards import self_retrieval
from bakeoff.runner.run import run_bakeoff

WORDS = ["nuclear", "power", "safe", "clean", "school", "uniform", "expression", "tax", "wealth", "climate", "carbon", "energy", "vote", "age", "health", "care", "free", "speech", "privacy", "police", "drugs", "prison", "zoo", "animal", "meat", "diet", "sport", "doping", "music", "art", "science", "space", "budget", "army", "peace", "trade", "tariff", "rent", "housing", "city", "car", "bike", "rail"]
K_VALUES = [1, 3, 5, 10]


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    rng = random.Random(7)
    docs = [Document(f"arg-{i:02d}", " ".join(rng.sample(WORDS, 8))) for i in range(60)]
    queries = Queries.from_queries([Query(d.id, d.text) for d in docs[:25]])
    qrels: dict[str, dict[str, int]] = {}
    for q in queries:
        others = [d for d in docs if d.id != q.id]
        # answers share words with the query, so retrieval is neither trivial nor hopeless
        scored = sorted(others, key=lambda d: -len(set(d.text.split()) & set(q.text.split())))
        picks = rng.sample(scored[:8], rng.randint(1, 3))
        qrels[q.id] = {d.id: 1 for d in picks}
    qrels["arg-24"] = {d: 0 for d in qrels["arg-24"]}  # judged, nothing relevant
    return Dataset(Corpus.from_documents(docs), queries, Qrels(qrels), name="self-retrieval")


def _beir_style(run) -> dict[str, dict[str, float]]:
    return {q: {d: float(s) for d, s in run.get(q)} for q in run}


def _ours(result, prefix_map) -> dict[str, float]:
    means = result.arms[0].evaluation.means
    return {f"{name}@{k}": means[f"{ours}@{k}"] for name, ours in prefix_map.items() for k in K_VALUES}


MEASURES = [f"{m}@{k}" for m in ("ndcg", "map", "recall", "precision", "mrr", "hit") for k in K_VALUES]
NAMES = {"NDCG": "ndcg", "MAP": "map", "Recall": "recall", "P": "precision"}


@pytest.mark.slow  # SciFact
def test_detection(dataset, scifact) -> None:
    assert self_retrieval(dataset) == {"queries": 25, "n": 25, "self_retrieval": True}
    assert self_retrieval(scifact)["self_retrieval"] is False  # no SciFact query id is a document id
    renamed = Dataset(dataset.corpus, Queries.from_queries([Query(q.id, "something else entirely")
                                                             for q in dataset.queries]), dataset.qrels)
    assert self_retrieval(renamed)["self_retrieval"] is False  # ids shared, texts not (CISI's case)
    # CQADupStack's shape: the query is the title of its own document (a question's title, the body below)
    titled = Corpus.from_documents([Document(f"p{i}", f"body text {i}", title=f"How do I fix error {i}?")
                                    for i in range(4)])
    asks = Queries.from_queries([Query(f"p{i}", f"how do I  fix error {i}?") for i in range(3)])
    assert self_retrieval(Dataset(titled, asks, Qrels({})))["self_retrieval"] is True


@pytest.fixture(scope="module")
def runs(dataset):
    kw = {"k": 10, "depth": 100, "measures": MEASURES, "cache": None, "progress": False, "latency_sample": 0}
    return {name: run_bakeoff(dataset, ["bm25"], averaging=avg, ignore_identical_ids=ign, **kw)
            for name, avg, ign in (("keep", "trec_eval", False), ("auto", "trec_eval", None),
                                   ("auto-bakeoff", "bakeoff", None))}


def test_default_removes_own_ids_and_records_it(runs) -> None:
    auto, keep = runs["auto"], runs["keep"]
    assert auto.dataset["identical_ids"] == {"removed": True, "how": "auto", "own_document_queries": 25}
    assert auto.arms[0].extra["identical_ids_removed"] == 25  # bm25 retrieves every query's own text
    assert keep.arms[0].run["arg-00"][0][0] == "arg-00" and auto.arms[0].run["arg-00"][0][0] != "arg-00"
    assert auto.to_dict()["averaging"] == "trec_eval"


def _qrels(dataset: Dataset) -> dict[str, dict[str, int]]:
    return {q: dict(v) for q, v in dataset.qrels.judgments.items()}


def _check(ours: dict[str, float], theirs: dict[str, float], ignore: bool) -> None:
    assert theirs.keys() == ours.keys()
    for key, value in theirs.items():  # BEIR and MTEB round to 5 decimals (MTEB's MRR: not rounded)
        assert ours[key] == pytest.approx(value, abs=5.01e-6), (ignore, key, ours[key], value)
    assert len(theirs) >= 16


def test_equals_beir_evaluate_with_and_without_ignore_identical_ids(runs, dataset) -> None:
    evaluation = pytest.importorskip("beir.retrieval.evaluation", reason="beir (test extra) is the reference")
    raw = runs["keep"].arms[0].run  # the arm's own ranking, own ids included
    for result, ignore in ((runs["keep"], False), (runs["auto"], True)):
        ndcg, _map, recall, prec = evaluation.EvaluateRetrieval.evaluate(
            _qrels(dataset), _beir_style(raw), K_VALUES, ignore_identical_ids=ignore)
        _check(_ours(result, NAMES), {**ndcg, **_map, **recall, **prec}, ignore)
    # bakeoff's default rule drops the judged-0-only query, so it differs from BEIR's average there
    assert runs["auto-bakeoff"].n_evaluated == 24 and runs["auto"].n_evaluated == 25


def test_equals_mteb_retrieval_evaluator(runs, dataset) -> None:
    """MTEB 2's ``RetrievalEvaluator.evaluate`` (an instance method that uses no instance state: called on the
    class with ``None``), which also reports MRR@k and HitRate@k."""
    mteb_eval = pytest.importorskip("mteb._evaluators.retrieval_evaluator", reason="mteb (test extra) is the reference")
    raw = runs["keep"].arms[0].run
    for result, ignore in ((runs["keep"], False), (runs["auto"], True)):
        out = mteb_eval.RetrievalEvaluator.evaluate(None, _qrels(dataset), _beir_style(raw), K_VALUES,
                                                    ignore_identical_ids=ignore)
        theirs = {**out.ndcg, **out.map, **out.recall, **out.precision, **out.mrr, **out.hit_rate}
        _check(_ours(result, {**NAMES, "MRR": "mrr", "HitRate": "hit"}), theirs, ignore)
