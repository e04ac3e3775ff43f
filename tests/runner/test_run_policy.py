"""The runner asks its arms and its dataset instead of importing train or truth:
arms declare their provenance, the dataset its label kind, and metrics hold the measure policy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bakeoff.arms.lexical import BM25Arm
from bakeoff.data.model import Corpus, Dataset, Qrels, Queries
from bakeoff.errors import ConfigError
from bakeoff.metrics import measures_for
from bakeoff.models.training_record import TRAINING_FILE, training_mark
from bakeoff.runner.run import run_bakeoff

DOCS = ("cats sat on the mat", "dogs chase cats", "stock markets fell")


def _dataset(info: dict | None = None) -> Dataset:
    corpus = Corpus(("d1", "d2", "d3"), DOCS, ("", "", ""), ({}, {}, {}))
    queries = Queries.from_dict({"q1": "cats mat", "q2": "markets"})
    return Dataset(corpus, queries, Qrels({"q1": {"d1": 1}, "q2": {"d3": 1}}), name="tiny", info=info or {})


def test_the_measure_policy_by_label_kind():
    assert [str(m) for m in measures_for("judged", k=10, depth=100)] == [
        "ndcg@10", "recall@10", "mrr@10", "precision@10", "hit@10", "map@10", "recall@100"]
    assert [str(m) for m in measures_for("judged", k=5, depth=5, requested=["P@5", "ndcg@5"])] == ["precision@5",
                                                                                                  "ndcg@5"]
    assert [str(m) for m in measures_for("citation", k=5, depth=100)] == ["recall@5", "mrr@5", "recall@100"]
    assert [str(m) for m in measures_for("citation", k=5, depth=5)] == ["recall@5", "mrr@5"]
    assert [str(m) for m in measures_for("citation", k=5, depth=5, requested=["hit@3"])] == ["hit@3"]
    with pytest.raises(ConfigError, match=r"map@5, ndcg@5 cannot be computed on citation-mined labels"):
        measures_for("citation", k=5, depth=5, requested=["recall@5", "map@5", "ndcg@5"])


def test_the_dataset_says_its_label_kind_and_the_runner_obeys():
    plain = _dataset()
    cited = _dataset({"provenance": {"label_kind": "citation"}})
    assert plain.label_kind == "judged" and cited.label_kind == "citation"
    assert _dataset({"provenance": {"label_kind": "synthetic"}}).label_kind == "judged"
    res = run_bakeoff(cited, [BM25Arm()], k=2, depth=3, progress=False, latency_sample=0)
    assert res.measures == ["recall@2", "mrr@2", "recall@3"]
    with pytest.raises(ConfigError, match="precision@2"):
        run_bakeoff(cited, [BM25Arm()], k=2, measures=["precision@2"], progress=False, latency_sample=0)
    assert "ndcg@2" in run_bakeoff(plain, [BM25Arm()], k=2, progress=False, latency_sample=0).measures


class _Declared(BM25Arm):
    """BM25 that says its (fictional) model was fine-tuned: the runner must record exactly this."""

    def provenance(self) -> dict:
        return {"trained_on": "tiny:train", "split": "train", "kind": "embedder"}


def test_arms_declare_their_provenance():
    res = run_bakeoff(_dataset(), [BM25Arm(name="plain"), _Declared(name="declared")], k=2, progress=False,
                      latency_sample=0)
    plain, declared = (a.to_dict() for a in res.arms)
    assert "fine_tuned" not in plain
    assert declared["fine_tuned"] == {"trained_on": "tiny:train", "split": "train", "kind": "embedder"}


def test_training_mark_reads_the_model_folder(tmp_path: Path):
    model = tmp_path / "ft"
    model.mkdir()
    (model / TRAINING_FILE).write_text(json.dumps({"trained_on": "syn:train", "split": "train", "kind": "reranker",
                                                   "base_model": "minilm", "data_fingerprint": "abc"}))
    cfg = {"top": 10, "encoder": {"encoder": "sentence-transformers", "model": str(model), "weights": "x" * 64}}
    assert training_mark(cfg) == {"model": str(model), "option": "encoder.model", "trained_on": "syn:train",
                                  "split": "train", "kind": "reranker", "base_model": "minilm",
                                  "data_fingerprint": "abc"}
    assert training_mark({"model": "minilm"}) is None and training_mark({"model": str(tmp_path)}) is None


def test_the_runner_imports_neither_train_nor_truth():
    code = ("import sys, bakeoff.runner.run, bakeoff.runner.results, bakeoff.runner.config; "
            "print(sorted(m for m in sys.modules if m.startswith(('bakeoff.train', 'bakeoff.truth'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
