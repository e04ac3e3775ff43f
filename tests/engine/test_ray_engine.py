"""Ray engine: corpus encoding on a local Ray cluster is bit-identical to the local path."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bakeoff.data.model import Corpus, Document
from bakeoff.engine import make_engine
from bakeoff.errors import ConfigError
from bakeoff.runner.context import Context

pytest.importorskip("ray", reason="the [ray] extra is not installed")
pytest.importorskip("sentence_transformers", reason="the [dense] extra is not installed")


@pytest.fixture(scope="module")
def ray_local() -> Any:
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, object_store_memory=256 * 1024 * 1024, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    yield ray
    if started:
        ray.shutdown()


def _corpus(n: int = 96) -> Corpus:
    rng = np.random.default_rng(5)
    words = ["protein", "cell", "gene", "cancer", "risk", "trial", "dose", "mouse", "brain", "signal", "the", "of"]
    docs = []
    for i in range(n):
        length = int(rng.integers(3, 60))
        docs.append(Document(f"d{i:03d}", " ".join(rng.choice(words, size=length)), title=f"T{i % 7}"))
    return Corpus.from_documents(docs)


@pytest.mark.slow  # Ray
def test_ray_engine_bit_identical_to_local(ray_local: Any, tmp_path: Any) -> None:
    from bakeoff.arms.dense import DenseArm
    from bakeoff.cache import Cache

    corpus = _corpus()
    local_cache, ray_cache = Cache(tmp_path / "local"), Cache(tmp_path / "ray")
    local = DenseArm(name="d", batch_size=8, checkpoint_rows=24).embed_corpus(
        corpus, ctx=Context(corpus=corpus, cache=local_cache, progress=False))
    engine = make_engine({"ray": "auto", "actors": 2})
    ctx = Context(corpus=corpus, cache=ray_cache, progress=False, extras={"encode_engine": engine})
    arm = DenseArm(name="d", batch_size=8, checkpoint_rows=24)
    distributed = arm.embed_corpus(corpus, ctx=ctx)
    assert distributed.shape == local.shape == (96, 384)
    assert np.array_equal(np.asarray(distributed), np.asarray(local))
    assert distributed.tobytes() == np.asarray(local).tobytes()
    # the shards were assembled into the same cache entry layout, parts removed
    assert not list(ray_cache.root.rglob("*.parts"))


@pytest.mark.slow  # Ray
def test_ray_engine_resumes_from_existing_shards(ray_local: Any, cache: Any) -> None:
    from bakeoff.engine.ray_engine import RayEngine

    texts = [f"text number {i} " * (i % 5 + 1) for i in range(10)]

    class Factory:
        def __call__(self) -> Any:
            return lambda batch: np.array([[len(t), 1.0] for t in batch], dtype=np.float32)

    # a previous (crashed) run left shard 0-4
    part = cache.path("toy", "k1", "parts") / "0-4.npy"
    part.parent.mkdir(parents=True)
    np.save(part, np.full((4, 2), -1.0, dtype=np.float32))
    arr, hit = RayEngine(address="auto", actors=1).encode_rows(cache=cache, kind="toy", key="k1", texts=texts,
                                                                encoder_factory=Factory(), chunk_rows=4,
                                                                progress=False)
    assert not hit
    assert np.array_equal(arr[:4], np.full((4, 2), -1.0))  # kept, not recomputed
    assert np.array_equal(arr[4:, 0], [len(t) for t in texts[4:]])
    arr2, hit2 = RayEngine(address="auto").encode_rows(cache=cache, kind="toy", key="k1", texts=texts,
                                                       encoder_factory=Factory(), chunk_rows=4, progress=False)
    assert hit2 and np.array_equal(arr2, arr)


@pytest.mark.slow  # Ray, a real model
def test_ray_rerank_identical_to_local(ray_local: Any, tmp_path: Any) -> None:
    """Cross-encoder scoring of (query, document) pairs on Ray actors == the local rerank arm."""
    from bakeoff.arms.lexical import BM25Arm
    from bakeoff.arms.rerank import RerankArm
    from bakeoff.cache import Cache
    from bakeoff.data.model import Queries, Query

    corpus = _corpus(40)
    queries = Queries.from_queries([Query("q1", "protein cancer risk"), Query("q2", "mouse brain signal"),
                                    Query("q3", "gene dose trial")])
    runs, caches = {}, {}
    for mode in ("local", "ray"):
        caches[mode] = Cache(tmp_path / mode)
        extras = {"encode_engine": make_engine({"ray": "auto", "actors": 2})} if mode == "ray" else {}
        ctx = Context(corpus=corpus, cache=caches[mode], progress=False, extras=extras)
        arm = RerankArm(name="rr", base=BM25Arm(), top=12, batch_size=4, chunk=8)
        runs[mode] = ctx.search(arm, queries, k=10)
        assert ctx.timings[arm.fingerprint()]["pairs_scored"] == 36.0
    assert runs["ray"].ranked == runs["local"].ranked  # same documents, order and float scores
    assert all(len(r) == 10 for r in runs["ray"].ranked.values())
    assert not list(caches["ray"].root.rglob("*.parts"))  # shards assembled into the rerank entry
    names = lambda c: sorted(p.name for p in (c.root / "rerank").rglob("*.npy"))
    assert names(caches["ray"]) == names(caches["local"])  # same cache key: interchangeable entries


def test_make_engine_specs() -> None:
    assert make_engine(None) is None and make_engine("local") is None
    with pytest.raises(ConfigError, match="--engine must be local or ray"):
        make_engine("spark")
    eng = make_engine({"ray": "ray://head:10001", "actors": 3})
    assert eng.address == "ray://head:10001" and eng.actors == 3
    with pytest.raises(ConfigError, match=r"\[engine\]"):
        make_engine({"ray": "auto", "bogus": 1})


@pytest.mark.slow  # Ray
def test_ray_engine_resumes_from_the_local_checkpoint_parts(ray_local: Any, tmp_path: Any) -> None:
    """Ray and the local path share one checkpoint protocol (bakeoff.cache.RowCheckpoint): parts left by
    an interrupted local run are read by Ray, which computes only the missing chunks, and the entry Ray
    assembles is the one the local path serves next."""
    from bakeoff.arms.dense import DenseArm
    from bakeoff.cache import Cache, RowCheckpoint, checkpointed_rows

    texts = _corpus(60).full_texts()
    encoder = DenseArm(name="d", batch_size=8).encoder

    def compute(s: int, e: int) -> np.ndarray:
        return np.asarray(encoder.encode(texts[s:e], kind="doc", batch_size=8), dtype=np.float32)

    reference, _ = checkpointed_rows(None, "t", "k", len(texts), compute, batch_size=24, progress=False)
    cache = Cache(tmp_path / "c")
    # an interrupted local run left chunk 0-24; a marker value shows whether Ray reads it or recomputes it
    ckpt = RowCheckpoint(cache, "t", "k", len(texts), 24)
    ckpt.save_part(0, 24, np.full((24, 384), 7.0, dtype=np.float32))
    assert ckpt.pending() == [(24, 48), (48, 60)]
    engine = make_engine({"ray": "auto", "actors": 2})
    got, hit = engine.encode_rows(cache=cache, kind="t", key="k", texts=texts, encoder=encoder, batch_size=8,
                                  chunk_rows=24, progress=False)
    assert not hit and got.shape == (60, 384)
    assert np.all(got[:24] == 7.0)  # the local part, not recomputed
    assert got[24:].tobytes() == reference[24:].tobytes()  # the rest bit-identical to the local path
    assert ckpt.parts_dir is not None and not ckpt.parts_dir.exists() and cache.path("t", "k", "npy").exists()
    again, hit = checkpointed_rows(cache, "t", "k", len(texts), lambda s, e: 1 / 0, batch_size=24, progress=False)
    assert hit and again.tobytes() == got.tobytes()
