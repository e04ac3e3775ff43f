"""The cache: the one checkpoint protocol (RowCheckpoint) and code versions in every key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bakeoff.cache import Cache, RowCheckpoint, checkpointed_rows
from bakeoff.data.model import Corpus, Document, Queries
from bakeoff.runner.context import Context


def _rows(s: int, e: int) -> np.ndarray:
    return np.arange(s, e, dtype=np.float32)[:, None] * np.ones((1, 3), dtype=np.float32)


# --- checkpoint protocol ---------------------------------------------------------------------
def test_checkpoint_parts_layout_resume_and_assembly(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    calls: list[tuple[int, int]] = []

    def crash_after_two(s: int, e: int) -> np.ndarray:
        if len(calls) == 2:
            raise KeyboardInterrupt  # a crash between chunks
        calls.append((s, e))
        return _rows(s, e)

    with pytest.raises(KeyboardInterrupt):
        checkpointed_rows(cache, "emb", "abc123", 10, crash_after_two, batch_size=4, progress=False)
    parts = cache.root / "emb" / "ab" / "abc123.parts"
    assert sorted(p.name for p in parts.iterdir()) == ["0-4.npy", "4-8.npy"]
    ckpt = RowCheckpoint(cache, "emb", "abc123", 10, 4)
    assert ckpt.chunks() == [(0, 4), (4, 8), (8, 10)] and ckpt.pending() == [(8, 10)]
    assert ckpt.parts_dir == parts and np.array_equal(ckpt.load_part(4, 8), _rows(4, 8))
    calls.clear()
    out, hit = checkpointed_rows(cache, "emb", "abc123", 10, lambda s, e: (calls.append((s, e)), _rows(s, e))[1],
                                 batch_size=4, progress=False)
    assert not hit and calls == [(8, 10)]  # only the missing chunk
    assert out.tobytes() == _rows(0, 10).tobytes()
    assert not parts.exists() and (cache.root / "emb" / "ab" / "abc123.npy").exists()
    again, hit = checkpointed_rows(cache, "emb", "abc123", 10, lambda s, e: 1 / 0, batch_size=4, progress=False)
    assert hit and again.tobytes() == out.tobytes()


def test_checkpoint_policies(tmp_path: Path) -> None:
    stale = np.full((4, 3), -1.0, dtype=np.float32)
    refresh = Cache(tmp_path, policy="refresh")
    RowCheckpoint(refresh, "emb", "k1", 8, 4).save_part(0, 4, stale)
    out, hit = checkpointed_rows(refresh, "emb", "k1", 8, _rows, batch_size=4, progress=False)
    assert not hit and out.tobytes() == _rows(0, 8).tobytes()  # refresh does not trust earlier parts
    off = Cache(tmp_path / "off", policy="off")
    out, hit = checkpointed_rows(off, "emb", "k1", 8, _rows, batch_size=4, progress=False)
    assert not hit and out.tobytes() == _rows(0, 8).tobytes() and not (tmp_path / "off").exists()
    ckpt = RowCheckpoint(None, "emb", "k1", 8, 4)
    assert ckpt.parts_dir is None and ckpt.pending() == [(0, 4), (4, 8)] and ckpt.cached() is None
    with pytest.raises(ValueError, match="got 3 rows"):
        ckpt.save_part(0, 4, _rows(0, 3))


# --- code versions in keys -------------------------------------------------------------------
CORPUS = Corpus.from_documents([Document(f"d{i}", t) for i, t in enumerate(["cats sit", "dogs run", "a cat"])])
QUERIES = Queries.from_dict({"q1": "cat", "q2": "dogs"})


def test_bumping_an_arm_code_version_misses_the_cached_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bakeoff.arms.lexical import BM25Arm

    cache = Cache(tmp_path)
    arm = BM25Arm(name="b")
    Context(corpus=CORPUS, cache=cache, progress=False).search(arm, QUERIES, k=3)
    warm = Context(corpus=CORPUS, cache=cache, progress=False)
    warm.search(BM25Arm(name="b"), QUERIES, k=3)
    assert warm.from_cache[arm.fingerprint()]
    old = arm.fingerprint()
    monkeypatch.setattr(BM25Arm, "code_version", "2")
    bumped = BM25Arm(name="b")
    assert bumped.code_versions() == {"bm25": "2"} and bumped.fingerprint() != old
    cold = Context(corpus=CORPUS, cache=cache, progress=False)
    cold.search(bumped, QUERIES, k=3)
    assert cold.from_cache[bumped.fingerprint()] is False  # an entry of older code is never served


def test_composite_fingerprint_covers_its_inputs_code(monkeypatch: pytest.MonkeyPatch) -> None:
    from bakeoff.arms.fusion import RRFArm
    from bakeoff.arms.lexical import BM25Arm, TfidfArm

    before = RRFArm(name="h", arms=[BM25Arm(), TfidfArm()]).fingerprint()
    monkeypatch.setattr(TfidfArm, "code_version", "9")
    assert RRFArm(name="h", arms=[BM25Arm(), TfidfArm()]).fingerprint() != before


@pytest.mark.slow  # a real model
def test_encoder_and_cross_encoder_versions_reach_the_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sentence_transformers", reason="the [dense] extra is not installed")
    from bakeoff.arms.dense import DenseArm
    from bakeoff.arms.lexical import BM25Arm
    from bakeoff.arms.rerank import RerankArm
    from bakeoff.models.cross_encoders import CrossEncoderScorer
    from bakeoff.models.encoders.st import SentenceTransformerEncoder

    dense = DenseArm(name="d")
    assert dense.encoder.identity(kind="query")["code_version"] == "1"
    doc_key, query_key, fp = dense._key("doc", "x"), dense._key("query", "x"), dense.fingerprint()
    monkeypatch.setattr(SentenceTransformerEncoder, "code_version", "2")
    assert dense._key("doc", "x") != doc_key and dense._key("query", "x") != query_key
    assert dense.fingerprint() != fp
    rerank = RerankArm(name="r", base=BM25Arm())
    assert rerank.code_versions() == {"rerank": "1", "CrossEncoderScorer": "1"}
    fp = rerank.fingerprint()
    monkeypatch.setattr(CrossEncoderScorer, "code_version", "2")
    assert rerank.fingerprint() != fp


@pytest.mark.slow  # a real model
def test_openvino_dense_fingerprint_covers_the_query_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openvino", reason="the [fast] extra is not installed")
    from bakeoff.arms.dense import DenseArm
    from bakeoff.models.encoders.st import SentenceTransformerEncoder

    arm = DenseArm(name="ov", backend="openvino")
    fp = arm.fingerprint()
    monkeypatch.setattr(SentenceTransformerEncoder, "code_version", "2")  # queries run on the fp32 torch path
    assert arm.fingerprint() != fp


def test_llm_request_key_holds_the_client_code_version(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pydantic")
    from pydantic import BaseModel

    from bakeoff.truth.llm.client import ChatRequest, LLMClient, LLMConfig

    class Answer(BaseModel):
        query: str

    client = LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    req = ChatRequest(messages=({"role": "user", "content": "hi"},), schema=Answer)
    key = client.request_key(req)
    monkeypatch.setattr(LLMClient, "code_version", "2")
    assert client.request_key(req) != key
