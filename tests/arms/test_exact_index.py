"""The int8-screened prepared index equals the float64 reference bit for bit (arms/exact_index.py).

The reference (:func:`exact_search_reference`: plain float64 BLAS matrix-vector products and the tie rule) is
the independent implementation. Inputs are adversarial for an int8 screen: rows that quantise to the same
codes but differ below the quantisation step, duplicates, rows one ulp apart, scaled copies, zero and tiny
rows, queries equal to documents, masks, tiny screening blocks (the running bound L rises block by block),
float64 / float16 documents.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bakeoff.arms import exact_index as ei
from bakeoff.arms.exact import exact_search_reference, gemv_model
from bakeoff.arms.exact_index import ExactIndex
from tests.support.forked import call_in_fork


@pytest.fixture
def int8_path():
    """The int8 screening is available here (onnxruntime, a non-saturating kernel, the modelled BLAS)."""
    if gemv_model() is None or ei._ort_matmul_int() is None:
        pytest.skip("no exact int8 product or not the modelled OpenBLAS: the index runs exact_search")


def _docs(rng: np.random.Generator, n: int, d: int, *, dtype: type) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    if n >= 8:
        src, dst = rng.integers(0, n, n // 4), rng.integers(0, n, n // 4)
        x[dst] = x[src]  # exact duplicates
        near = rng.integers(0, n, n // 4)
        x[near] = x[src[: near.size]] + rng.uniform(-1e-4, 1e-4, (near.size, d)).astype(np.float32)  # same codes
        ulp = rng.integers(0, n, max(1, n // 8))
        col = rng.integers(0, d, ulp.size)
        x[ulp, col] = np.nextafter(x[ulp, col], np.float32(np.inf))
        sc = rng.integers(0, n, max(1, n // 8))
        x[sc] = x[src[: sc.size]] * np.float32(2.0)  # exactly scaled copies: another block's scale
        x[rng.integers(0, n)] = 0.0
        x[rng.integers(0, n)] = x[rng.integers(0, n)] * np.float32(2.0**-70)  # below the smallest scale
    return x.astype(dtype)


def _check(index: ExactIndex, q: np.ndarray, ids: list[str], *, k: int, mask: np.ndarray | None = None,
           max_block: int = 1 << 24) -> None:
    want = exact_search_reference(q, index.docs, ids, k=k, mask=mask, max_block=max_block)
    got = index.search(q, ids, k=k, mask=mask, max_block=max_block)
    assert got == want
    assert [[np.float64(s).tobytes() for _, s in r] for r in got] == [
        [np.float64(s).tobytes() for _, s in r] for r in want]


@pytest.mark.slow  # work at scale (thousands of queries, bootstrap loops)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1),
       shape=st.sampled_from([(40, 3), (300, 8), (1203, 384), (1206, 384), (2593, 384), (3000, 64)]),
       nq=st.integers(1, 4), k=st.integers(1, 120), block=st.sampled_from([16, 64, 4096]),
       dtype=st.sampled_from([np.float32, np.float32, np.float64, np.float16]), masked=st.booleans(),
       small_blocks=st.booleans(), workers=st.sampled_from([1, 2, 5]))
def test_index_equals_reference_on_adversarial_ties(int8_path, monkeypatch, seed, shape, nq, k, block, dtype,
                                                    masked, small_blocks, workers) -> None:
    monkeypatch.setattr(ei._exact, "exact_search", lambda *a, **kw: pytest.fail("fell back to exact_search"))
    monkeypatch.setattr(ei, "_WORKERS", workers)  # blocks split between threads as they come free: any split
    rng = np.random.default_rng(seed)
    n, d = shape
    docs = _docs(rng, n, d, dtype=dtype)
    q = rng.standard_normal((nq, d)).astype(np.float32)
    q[0] = docs[rng.integers(0, n)].astype(np.float32)  # a query equal to a document: maximal ties
    if nq > 1:
        q[1] = docs[rng.integers(0, n)].astype(np.float32) * np.float32(0.5)
    if nq > 2:
        q[2] = docs[rng.integers(0, n)].astype(np.float32) + np.float32(3e-5)  # near a group of near-duplicates
    ids = [f"d{v}" for v in rng.permutation(n)]  # tie-rule order differs from row order
    mask = rng.random(n) < 0.6 if masked else None
    index = ExactIndex.build(docs, block=block)
    assert index.usable
    _check(index, q, ids, k=k, mask=mask, max_block=1 << 12 if small_blocks else 1 << 24)


def test_screen_error_bounds_the_gap() -> None:
    """|s64 − s_x s_B I| ≤ e on real rows, with I the exact integer product (numpy int64) of the stored codes,
    and the gap uses a good part of the bound (it is not vacuous)."""
    rng = np.random.default_rng(7)
    docs = _docs(rng, 3000, 384, dtype=np.float32)
    index = ExactIndex.build(docs, block=256)
    q = rng.standard_normal((20, 384))
    for i, pos in enumerate(rng.integers(0, 3000, 10)):  # queries along a document's quantisation residual:
        y = docs[index.order[pos]].astype(np.float64)  # x̂·r_y close to Cauchy-Schwarz's ‖x̂‖‖r_y‖
        q[i] = y - index.scale[pos // 256] * (index.codes[pos].astype(np.float64) - 128)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    sx = ei._scale(np.abs(q).max(axis=1))
    x8, rx = ei._quantise(q, sx)
    xn, xh = ei._norm_up(q), sx * ei._norm_up(x8)
    used = []
    for b, s in enumerate(range(0, 3000, 256)):
        rows = index.order[s : s + 256]
        s64 = docs[rows].astype(np.float64) @ q.T
        exact_i = (index.codes[s : s + 256].astype(np.int64) - 128) @ x8.T.astype(np.int64)
        approx = exact_i * (sx * index.scale[b])[None, :]
        e = ei._screen_error(xh, rx, xn, index.resid[b], index.norm32[b], index.norm64[b], d=384, cast=False)
        assert (np.abs(s64 - approx) <= e[None, :]).all()
        used.append(float((np.abs(s64 - approx) / e[None, :]).max()))
    assert max(used) > 0.45, max(used)


def test_int8_kernel_is_exact_and_the_graph_is_onnx_helpers_output(int8_path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B", "za"], ["C"])], "matmul_u8s8",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, ["m", "d"]),
         helper.make_tensor_value_info("B", TensorProto.INT8, ["d", "n"])],
        [helper.make_tensor_value_info("C", TensorProto.INT32, ["m", "n"])],
        initializer=[helper.make_tensor("za", TensorProto.UINT8, [], [128])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)], ir_version=7)
    onnx.checker.check_model(model)
    assert model.SerializeToString() == ei._MATMUL_U8S8_ONNX
    rng = np.random.default_rng(9)
    a = rng.integers(1, 256, (4096, 384), dtype=np.uint8)
    a[:7] = 255
    b = rng.integers(-127, 128, (384, 100), dtype=np.int8)
    b[:, :3] = 127
    out = np.empty((4096, 100), dtype=np.int32)
    ei._int_product(ei._ort_matmul_int(), a, b, out)
    assert np.array_equal(out, (a.astype(np.int64) - 128) @ b.astype(np.int64))


def test_saturating_kernel_falls_back(monkeypatch) -> None:
    """A kernel that fails the saturation probe is not used: exact_search screens (same output)."""
    class Saturating:
        def run(self, _out, feeds):
            return [np.clip((feeds["A"].astype(np.int64) - 128) @ feeds["B"].astype(np.int64), -2**15, 2**15 - 1)]

    assert not ei._probe_exact(Saturating())
    monkeypatch.setattr(ei, "_ORT", {"pid": __import__("os").getpid(), "session": None})
    rng = np.random.default_rng(1)
    docs = rng.standard_normal((700, 16)).astype(np.float32)
    q = rng.standard_normal((2, 16)).astype(np.float32)
    ids = [f"d{i}" for i in range(700)]
    _check(ExactIndex.build(docs, block=64), q, ids, k=9)


@pytest.mark.slow  # work at scale (thousands of queries, bootstrap loops)
def test_many_queries_mass_ties_and_edges(int8_path) -> None:
    rng = np.random.default_rng(11)
    distinct = rng.standard_normal((6, 24)).astype(np.float32)
    docs = distinct[rng.integers(0, 6, 3100)]
    q = rng.standard_normal((300, 24)).astype(np.float32)  # two query blocks
    q[5] = 0.0  # every score 0: all documents tie
    ids = [f"d{v:05d}" for v in rng.permutation(3100)]
    mask = rng.random(3100) < 0.9
    index = ExactIndex.build(docs, block=128)
    for k, m, max_block in ((1, None, 1 << 24), (40, mask, 1 << 24), (250, None, 1 << 14), (7, mask, 1 << 14)):
        _check(index, q, ids, k=k, mask=m, max_block=max_block)


@pytest.mark.parametrize("workers", [1, 2, 7])
def test_screen_split_between_threads_is_exact(int8_path, monkeypatch, workers) -> None:
    """Thread counts, including more threads than it pays to use: the same run as the reference; a skewed
    split (one worker screens the large-magnitude blocks, so the others keep a low k-th bound) is exact too."""
    monkeypatch.setattr(ei, "_WORKERS", workers)
    rng = np.random.default_rng(5)
    docs = _docs(rng, 2600, 48, dtype=np.float32)
    docs[:300] *= 40  # sorted first: the blocks one worker may take while the others see only small scores
    q = rng.standard_normal((30, 48)).astype(np.float32)
    ids = [f"d{v}" for v in rng.permutation(2600)]
    index = ExactIndex.build(docs, block=64)
    for k in (1, 10, 120):
        _check(index, q, ids, k=k)
    assert ei._workers() == workers
    eye = ExactIndex.build(np.eye(4, dtype=np.float32))
    qq = np.array([[1, 1, 0, 0]], dtype=np.float32)
    assert eye.search(qq, ["a", "b", "c", "d"], k=0) == [()]
    assert eye.search(qq, ["a", "b", "c", "d"], k=10) == [(("b", 1.0), ("a", 1.0), ("d", 0.0), ("c", 0.0))]
    assert eye.search(qq, ["a", "b", "c", "d"], k=10, mask=np.array([False, True, False, False])) == [
        (("b", 1.0),)]


def test_outside_the_model_falls_back_with_the_same_output() -> None:
    """Non-finite documents, huge queries, an empty corpus: the index is unusable or defers to exact_search."""
    rng = np.random.default_rng(5)
    docs = rng.standard_normal((1500, 32)).astype(np.float32)
    ids = [f"d{i}" for i in range(1500)]
    q = rng.standard_normal((3, 32)).astype(np.float32)
    bad = docs.copy()
    bad[9, 1] = np.inf
    assert not ExactIndex.build(bad).usable
    with np.errstate(all="ignore"):
        _check(ExactIndex.build(bad), q, ids, k=5)
    index = ExactIndex.build(docs, block=256)
    _check(index, q * np.float32(1e30), ids, k=5)  # |x| > 2^50: float32 screening
    assert ExactIndex.build(docs[:0]).search(q, [], k=3) == [(), (), ()]


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_forked_child_searches(int8_path) -> None:
    """ONNX Runtime does not survive a fork: a child forked after the parent searched falls back, same output."""
    rng = np.random.default_rng(4)
    docs = rng.standard_normal((3000, 64)).astype(np.float32)
    q = rng.standard_normal((5, 64)).astype(np.float32)
    ids = [f"d{i}" for i in range(3000)]
    index = ExactIndex.build(docs)
    want = index.search(q, ids, k=20)
    assert want == exact_search_reference(q, docs, ids, k=20)
    assert call_in_fork(functools.partial(index.search, k=20), q, ids) == want


@pytest.mark.slow  # a real model
def test_dense_arm_builds_the_index_for_large_searches_with_the_same_run(monkeypatch) -> None:
    """The dense arm (real MiniLM) builds the index when a search is large enough and returns the same run."""
    pytest.importorskip("sentence_transformers")
    from bakeoff.arms import dense
    from bakeoff.data.model import Corpus, Document, Queries, Query
    from bakeoff.runner.context import Context

    texts = ["The cat sat on the mat.", "Dogs love to play fetch.", "Stock markets fell as rates rose.",
             "Photosynthesis converts light into energy.", "A kitten chased a ball of yarn.",
             "The central bank raised rates.", "Neural networks learn from data.", "The cat sat on the mat."]
    corpus = Corpus.from_documents([Document(f"d{i}", t, "") for i, t in enumerate(texts)])
    queries = Queries.from_queries([Query("q1", "feline pets"), Query("q2", "monetary policy"),
                                    Query("q3", "cat on a mat")])
    ctx = Context(corpus, cache=None, progress=False)
    arm = dense.DenseArm()
    arm.index(corpus, ctx=ctx)
    want = arm.search(queries, k=5, ctx=ctx)
    assert arm._exact_index is None  # 3 queries over 8 documents: float32 screening
    monkeypatch.setattr(dense, "_INDEX_MIN_QUERIES", 3)
    monkeypatch.setattr(dense, "_INDEX_MIN_DOCS", 8)
    got = arm.search(queries, k=5, ctx=ctx)
    assert arm._exact_index is not None and arm._exact_index.usable
    assert {q: got[q] for q in queries.ids} == {q: want[q] for q in queries.ids}
    assert got["q3"][0][1] == got["q3"][1][1]  # the duplicated document: an exact tie, same order both ways


def _indexed_dense_arm(corpus, ctx):
    """A dense arm (bundled MiniLM) with ``corpus`` indexed in ``ctx``."""
    from bakeoff.arms import dense

    arm = dense.DenseArm()
    arm.index(corpus, ctx=ctx)
    return arm


@pytest.mark.slow  # work at scale (thousands of queries, bootstrap loops)
def test_cached_index_round_trips(tmp_path, monkeypatch) -> None:
    """to_cache / from_cache: the same index (arrays memory-mapped back), refused for other documents; the dense
    arm stores it and a fresh arm loads it instead of building."""
    from bakeoff.cache import Cache

    rng = np.random.default_rng(12)
    docs = _docs(rng, 2000, 48, dtype=np.float32)
    q = rng.standard_normal((4, 48)).astype(np.float32)
    ids = [f"d{i}" for i in range(2000)]
    cache = Cache(tmp_path / "c")
    built = ExactIndex.build(docs, block=128)
    built.to_cache(cache, "k1")
    loaded = ExactIndex.from_cache(cache, "k1", docs)
    assert loaded is not None and isinstance(loaded.codes, np.memmap)
    for f in ("order", "codes", "scale", "resid", "norm32", "norm64"):
        assert np.array_equal(getattr(loaded, f), getattr(built, f))
    assert loaded.search(q, ids, k=30) == exact_search_reference(q, docs, ids, k=30)
    assert ExactIndex.from_cache(cache, "k1", docs[:1999]) is None
    assert ExactIndex.from_cache(cache, "k1", docs.astype(np.float64)) is None
    assert ExactIndex.from_cache(cache, "other", docs) is None

    pytest.importorskip("sentence_transformers")
    from bakeoff.arms import dense
    from bakeoff.data.model import Corpus, Document, Queries, Query
    from bakeoff.runner.context import Context

    corpus = Corpus.from_documents([Document(f"d{i}", t, "") for i, t in enumerate(
        ["cats purr", "dogs bark", "rates rose", "plants grow", "kittens play", "banks lend"])])
    queries = Queries.from_queries([Query("q1", "feline"), Query("q2", "interest rates")])
    monkeypatch.setattr(dense, "_INDEX_MIN_QUERIES", 1)
    monkeypatch.setattr(dense, "_INDEX_MIN_DOCS", 1)
    ctx = Context(corpus, cache=Cache(tmp_path / "arm"), progress=False)
    first = _indexed_dense_arm(corpus, ctx)
    want = first.search(queries, k=4, ctx=ctx)
    monkeypatch.setattr(ExactIndex, "build", classmethod(lambda *a, **kw: pytest.fail("built again")))
    second = _indexed_dense_arm(corpus, ctx)
    got = second.search(queries, k=4, ctx=ctx)
    assert isinstance(second._exact_index.codes, np.memmap)
    assert {q: got[q] for q in queries.ids} == {q: want[q] for q in queries.ids}


@pytest.mark.slow  # work at scale (thousands of queries, bootstrap loops)
def test_stored_index_serves_searches_below_the_threshold(tmp_path, monkeypatch) -> None:
    """Too few queries to pay for a build: none is built. Once a large search has stored the index, a fresh arm's
    small search of the same (large enough) corpus loads it (memory-mapped, never rebuilt) and returns the same
    run; below _STORED_INDEX_MIN_DOCS documents the float32 screen runs as before."""
    pytest.importorskip("sentence_transformers")
    from bakeoff.arms import dense
    from bakeoff.cache import Cache
    from bakeoff.data.model import Corpus, Document, Queries, Query
    from bakeoff.runner.context import Context

    corpus = Corpus.from_documents([Document(f"d{i}", t, "") for i, t in enumerate(
        ["cats purr", "dogs bark", "rates rose", "plants grow", "kittens play", "banks lend", "cats purr"])])
    small = Queries.from_queries([Query("q1", "feline"), Query("q2", "interest rates")])
    large = Queries.from_queries([*small, Query("q3", "cats")])
    monkeypatch.setattr(dense, "_INDEX_MIN_QUERIES", 3)
    monkeypatch.setattr(dense, "_INDEX_MIN_DOCS", 1)
    monkeypatch.setattr(dense, "_STORED_INDEX_MIN_DOCS", 1)
    ctx = Context(corpus, cache=Cache(tmp_path / "c"), progress=False)
    first = _indexed_dense_arm(corpus, ctx)
    want = first.search(small, k=4, ctx=ctx)
    assert first._exact_index is None  # nothing stored yet, and 2 queries do not pay for a build
    first.search(large, k=4, ctx=ctx)
    assert first._exact_index is not None and first._exact_index.usable
    monkeypatch.setattr(ExactIndex, "build", classmethod(lambda *a, **kw: pytest.fail("built again")))
    second = _indexed_dense_arm(corpus, ctx)
    got = second.search(small, k=4, ctx=ctx)
    assert second._exact_index is not None and isinstance(second._exact_index.codes, np.memmap)
    assert {q: got[q] for q in small.ids} == {q: want[q] for q in small.ids}
    assert got["q1"] and len(got["q1"]) == 4
    monkeypatch.setattr(dense, "_STORED_INDEX_MIN_DOCS", len(corpus.ids) + 1)  # a smaller corpus: the screen
    third = _indexed_dense_arm(corpus, ctx)
    assert {q: third.search(small, k=4, ctx=ctx)[q] for q in small.ids} == {q: want[q] for q in small.ids}
    assert third._exact_index is None
