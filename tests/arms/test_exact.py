"""The float32-screened exact search equals the float64 reference bit for bit (arms/exact.py).

The reference (:func:`exact_search_reference`, the former dense-arm search) is the
independent implementation: plain float64 BLAS matrix-vector products and the tie rule.
Inputs are adversarial: duplicated rows, rows one ulp apart, scaled copies (exact powers of
two and not), the query equal to a document, zero rows, masks, tiny document blocks, sizes
on both sides of OpenBLAS's multi-thread threshold (d * rows >= 460800), float64 / float16
inputs and non-finite values.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bakeoff.arms import exact as exact_mod
from bakeoff.arms.exact import GemvModel, exact_search, exact_search_reference, gemv_model, score_error_bound
from tests.support.forked import call_in_fork


def _adversarial(rng: np.random.Generator, n: int, d: int, *, normalise: bool, dtype: type) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    if normalise:
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    if n >= 4:
        src = rng.integers(0, n, size=n // 4)
        dst = rng.integers(0, n, size=n // 4)
        x[dst] = x[src]  # exact duplicates
        ulp = rng.integers(0, n, size=max(1, n // 8))
        col = rng.integers(0, d, size=ulp.size)
        x[ulp, col] = np.nextafter(x[ulp, col], np.float32(np.inf))  # one ulp apart from a duplicate
        sc = rng.integers(0, n, size=max(1, n // 8))
        x[sc] = x[src[: sc.size] % n] * np.float32(2.0)  # exactly scaled copies
        x[sc[: sc.size // 2]] *= np.float32(1 + 2**-23)  # scaled by one ulp of 1
        x[rng.integers(0, n)] = 0.0
    return x.astype(dtype)


@pytest.fixture(params=["onnxruntime", "numpy"])
def gemm_backend(request, monkeypatch):
    """The float32 screening product by ONNX Runtime (when installed) and by numpy's BLAS: both must hold."""
    if request.param == "numpy":
        monkeypatch.setattr(exact_mod, "_ort_gemm", lambda: None)
    elif exact_mod._ort_gemm() is None:
        pytest.skip("onnxruntime is not installed")
    return request.param


@pytest.mark.slow  # work at scale (thousands of queries, bootstrap loops)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1),
       shape=st.sampled_from([(40, 3), (300, 8), (500, 13), (1199, 384), (1203, 384), (1206, 384), (2593, 384),
                              (3000, 64), (7300, 64)]),
       nq=st.integers(1, 4), k=st.integers(1, 120), normalise=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float32, np.float32, np.float64, np.float16]),
       masked=st.booleans(), small_blocks=st.booleans())
def test_fast_equals_reference_on_adversarial_ties(gemm_backend, seed, shape, nq, k, normalise, dtype, masked,
                                                    small_blocks) -> None:
    rng = np.random.default_rng(seed)
    n, d = shape
    docs = _adversarial(rng, n, d, normalise=normalise, dtype=dtype)
    q = rng.standard_normal((nq, d)).astype(np.float32)
    q[0] = docs[rng.integers(0, n)].astype(np.float32)  # a query equal to a document: maximal ties
    if nq > 1:
        q[1] = docs[rng.integers(0, n)].astype(np.float32) * np.float32(0.5)
    ids = [f"d{v}" for v in rng.permutation(n)]  # tie-rule order differs from row order
    mask = rng.random(n) < 0.6 if masked else None
    max_block = 1 << 12 if small_blocks else 1 << 24
    want = exact_search_reference(q, docs, ids, k=k, mask=mask, max_block=max_block)
    got = exact_search(q, docs, ids, k=k, mask=mask, max_block=max_block)
    assert got == want  # same docs, same order, same float64 scores (== on floats: bit-equal up to -0.0)
    assert [[np.float64(s).tobytes() for _, s in r] for r in got] == [[np.float64(s).tobytes() for _, s in r]
                                                                        for r in want]


def test_fast_path_is_taken_here(monkeypatch) -> None:
    """On this machine's numpy (OpenBLAS wheel) the model applies: the reference is never called."""
    if gemv_model() is None:
        pytest.skip("numpy's BLAS is not the modelled OpenBLAS: exact_search runs the reference")
    rng = np.random.default_rng(3)
    docs = rng.standard_normal((2500, 384)).astype(np.float32)
    q = rng.standard_normal((3, 384)).astype(np.float32)
    ids = [f"d{i}" for i in range(2500)]
    want = exact_search_reference(q, docs, ids, k=50)
    monkeypatch.setattr(exact_mod, "exact_search_reference", lambda *a, **kw: pytest.fail("reference called"))
    assert exact_search(q, docs, ids, k=50) == want


def test_non_finite_inputs_and_huge_values(gemm_backend) -> None:
    from bakeoff.data.ranking import NaNScoreError

    rng = np.random.default_rng(5)
    docs = rng.standard_normal((1500, 384)).astype(np.float32)
    docs[9, 1] = np.inf
    docs[11, 2] = -np.inf
    docs[20] = docs[21] * np.float32(3e18)  # float32 dot products overflow, float64 ones do not
    q = rng.standard_normal((3, 384)).astype(np.float32)
    ids = [f"d{i}" for i in range(1500)]
    for k in (1, 5, 40):
        with np.errstate(all="ignore"):
            assert exact_search(q, docs, ids, k=k) == exact_search_reference(q, docs, ids, k=k)
    docs[3, 7] = docs[700, 0] = np.nan  # NaN cannot be ranked: both refuse, naming the same document
    for qq in (q, np.where(np.arange(384) == 5, np.float32(np.inf), q)):
        errors = []
        for fn in (exact_search, exact_search_reference):
            with np.errstate(all="ignore"), pytest.raises(NaNScoreError) as info:
                fn(qq, docs, ids, k=5)
            errors.append(str(info.value))
        assert errors[0] == errors[1]


def test_edges(gemm_backend) -> None:
    docs = np.eye(4, dtype=np.float32)
    ids = ["a", "b", "c", "d"]
    q = np.array([[1, 1, 0, 0]], dtype=np.float32)
    assert exact_search(q, docs, ids, k=0) == [()]
    assert exact_search(q, docs[:0], [], k=3) == [()]
    assert exact_search(q, docs, ids, k=10) == [(("b", 1.0), ("a", 1.0), ("d", 0.0), ("c", 0.0))]
    mask = np.array([False, True, False, False])
    assert exact_search(q, docs, ids, k=10, mask=mask) == [(("b", 1.0),)]
    fortran = np.asfortranarray(np.random.default_rng(0).standard_normal((300, 5)).astype(np.float32))
    qq = np.ones((2, 5), dtype=np.float32)
    fid = [str(i) for i in range(300)]
    assert exact_search(qq, fortran, fid, k=9) == exact_search_reference(qq, fortran, fid, k=9)


def test_gemv_model_ranges_follow_openblas_split() -> None:
    """driver/level2/gemv_thread.c: width = ceil(rest / threads left), at least 4."""
    m = GemvModel(nthreads=2, threshold=460800)
    assert m.ranges(1199, 384).tolist() == [0, 1199]  # 1199 * 384 < 460800: one thread
    assert m.ranges(1206, 384).tolist() == [0, 603, 1206]
    assert m.ranges(5183, 384).tolist() == [0, 2592, 5183]
    assert GemvModel(nthreads=3, threshold=0).ranges(10, 1).tolist() == [0, 4, 8, 10]  # ceil(10/3)=4, ceil(6/2)=3 -> 4, rest 2
    assert GemvModel(nthreads=4, threshold=0).ranges(6, 1).tolist() == [0, 4, 6]
    # classes: 4x4 body, then the 4x2 pair, then the 4x1 single of each range
    cls = m.classes(np.arange(1206), 1206, 384)
    assert cls[[599, 600, 601, 602, 603, 1202, 1203, 1204, 1205]].tolist() == [4, 2, 2, 1, 4, 4, 2, 2, 1]


def test_error_bound_coefficient() -> None:
    """c = gamma_d(2^-24)(1+2^-24)^2 + 2*2^-24 + 2^-48 + gamma_d(2^-53), times (1 + 2^-20): d = 384 by hand."""
    g32 = 384 * 2**-24 / (1 - 384 * 2**-24)
    g64 = 384 * 2**-53 / (1 - 384 * 2**-53)
    assert score_error_bound(384, cast=False) == pytest.approx((g32 * (1 + 2**-24) ** 2 + g64) * (1 + 2**-20), rel=1e-15)
    assert score_error_bound(384) == pytest.approx((g32 * (1 + 2**-24) ** 2 + 2 * 2**-24 + 2**-48 + g64)
                                                   * (1 + 2**-20), rel=1e-15)
    # and it does bound the float32 vs float64 gap on real data
    rng = np.random.default_rng(1)
    x = rng.standard_normal((200, 384)).astype(np.float32)
    y = rng.standard_normal(384).astype(np.float32)
    gap = np.abs((x @ y).astype(np.float64) - x.astype(np.float64) @ y.astype(np.float64))
    bound = score_error_bound(384, cast=False) * np.linalg.norm(x.astype(np.float64), axis=1) * np.linalg.norm(y)
    assert (gap <= bound).all() and gap.max() > 0


def test_gemm_model_is_onnx_helpers_output() -> None:
    """The embedded ONNX graph is exactly what onnx.helper builds for C = Gemm(A, B, transB=1), and it computes A·Bᵀ."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Gemm", ["A", "B"], ["C"], transB=1)], "gemm_abt",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["m", "d"]),
         helper.make_tensor_value_info("B", TensorProto.FLOAT, ["n", "d"])],
        [helper.make_tensor_value_info("C", TensorProto.FLOAT, ["m", "n"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7, producer_name="")
    onnx.checker.check_model(model)
    assert model.SerializeToString() == exact_mod._GEMM_ONNX
    if exact_mod._ort_gemm() is None:
        pytest.skip("onnxruntime is not installed")
    rng = np.random.default_rng(2)
    a = rng.standard_normal((7, 33)).astype(np.float32)
    b = rng.integers(-8, 8, (50, 33)).astype(np.float32)  # small integers: every product and sum exact in float32
    a = np.round(a * 4).astype(np.float32)
    got = exact_mod._sgemm(a, b)
    assert got.dtype == np.float32 and got.flags.writeable
    assert np.array_equal(got, (a.astype(np.float64) @ b.T.astype(np.float64)).astype(np.float32))


@pytest.mark.slow  # work at scale (thousands of queries, bootstrap loops)
def test_many_queries_and_mass_ties(gemm_backend) -> None:
    """Two query blocks (> 256 queries) and corpora made of a few repeated vectors: most documents tie, so the
    candidate store grows past its pruning limit; a mask and a tiny block size cut the corpus differently."""
    rng = np.random.default_rng(11)
    distinct = rng.standard_normal((6, 24)).astype(np.float32)
    docs = distinct[rng.integers(0, 6, 3100)]
    q = rng.standard_normal((300, 24)).astype(np.float32)
    q[5] = 0.0  # every score 0: all documents tie
    ids = [f"d{v:05d}" for v in rng.permutation(3100)]
    mask = rng.random(3100) < 0.9
    for k, m, max_block in ((1, None, 1 << 24), (40, mask, 1 << 24), (250, None, 1 << 14), (7, mask, 1 << 14)):
        assert exact_search(q, docs, ids, k=k, mask=m, max_block=max_block) == exact_search_reference(
            q, docs, ids, k=k, mask=m, max_block=max_block)


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")  # Python >= 3.12
def test_forked_child_searches(gemm_backend) -> None:
    """A child forked after the parent searched (so after ONNX Runtime's thread pool started) searches too,
    with the same result (ONNX Runtime does not survive a fork: the child screens with numpy's BLAS)."""
    rng = np.random.default_rng(4)
    docs = rng.standard_normal((3000, 64)).astype(np.float32)
    q = rng.standard_normal((5, 64)).astype(np.float32)
    ids = [f"d{i}" for i in range(3000)]
    want = exact_search(q, docs, ids, k=20)
    assert want == exact_search_reference(q, docs, ids, k=20)
    assert call_in_fork(functools.partial(exact_search, k=20), q, docs, ids) == want


def test_without_onnxruntime_numpy_screens(monkeypatch) -> None:
    """onnxruntime missing (or failing to load): numpy's BLAS screens, with the same output, on a product large
    enough that ONNX Runtime would have been used."""
    import sys

    monkeypatch.setattr(exact_mod, "_ORT", {})
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    monkeypatch.setattr(exact_mod, "_ORT_MIN_WORK", 1)
    rng = np.random.default_rng(8)
    docs = rng.standard_normal((2100, 32)).astype(np.float32)
    q = rng.standard_normal((3, 32)).astype(np.float32)
    ids = [f"d{i}" for i in range(2100)]
    assert exact_search(q, docs, ids, k=15) == exact_search_reference(q, docs, ids, k=15)
    assert exact_mod._ORT == {"pid": __import__("os").getpid(), "session": None}
