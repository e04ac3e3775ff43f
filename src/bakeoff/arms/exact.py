"""Exact top-``k`` inner-product search: float32 BLAS screening, float64 re-check, bit-identical output.

:func:`exact_search_reference` is the definition: for every query ``x`` (a row of ``q``)
and every document ``y`` (a row of ``docs``), the score is the float64 matrix-vector
product ``s64 = (docs64[block] @ x64)[j]`` over fixed document blocks of
``max(1, min(n, max_block // 64))`` rows (both operands cast to float64, which is exact
for float32 embeddings), and the top ``k`` follow the package tie rule
(:func:`~bakeoff.data.ranking.top_k_indices`: score desc, doc id desc; masked rows
and NaN never returned). It costs one float64 pass over the corpus per query.

:func:`exact_search` returns **the same documents, order and float64 scores, bit for
bit**, much faster:

1. **Screen in float32.** Scores ``ŝ = fl32(x̃·ỹ)`` for a block of queries × a block of
   documents come from one float32 matrix product ``sgemm`` (``x̃ = fl32(x)``, ``ỹ = fl32(y)``):
   ONNX Runtime's MLAS kernel when ``onnxruntime`` is installed and the product has at least
   2^31 multiply-adds or its session already exists in this process (AVX-512 where the CPU has
   it; numpy's OpenBLAS wheel may run its AVX2 "Haswell" kernels, ~2× slower here), numpy's BLAS
   otherwise. Both sum float32 products in float32, in some order: all that step 2 assumes.
   Memory is bounded: at most 256 queries × ``min(B, max_block // queries)`` (at least 1024)
   documents of scores per block (``B`` = 32,768 with ONNX Runtime, 131,072 with numpy), in one
   buffer reused across blocks.
2. **Bound the error.** For inputs ``x, y`` of dimension ``d``, with ``u32 = 2^-24`` and
   ``u64 = 2^-53`` and ``γ(u) = d·u / (1 − d·u)`` (Higham, *Accuracy and Stability of
   Numerical Algorithms*, 2nd ed., Lemma 3.1 and §3.1: it holds for any summation order,
   hence for blocked / FMA BLAS kernels):

   - cast: ``|x̃_i ỹ_i − x_i y_i| ≤ (2·u32 + u32²)·|x_i y_i|`` (exactly 0 for float32 inputs);
   - float32 dot product: ``|ŝ − x̃·ỹ| ≤ γ(u32)·Σ|x̃_i ỹ_i| ≤ γ(u32)(1+u32)²·Σ|x_i y_i|``;
   - float64 reference: ``|s64 − x·y| ≤ γ(u64)·Σ|x_i y_i|``;
   - ``Σ|x_i y_i| ≤ ‖x‖·‖y‖`` (Cauchy–Schwarz).

   So ``|ŝ − s64| ≤ e := c·‖x‖·‖y‖ + a`` with
   ``c = (γ(u32)(1+u32)² + 2u32 + u32² + γ(u64))·(1 + 2^-20)`` (the last factor covers
   rounding in evaluating the bound and the norms) and an absolute term
   ``a = d·2^-100·(1+‖x‖)(1+‖y‖)`` that covers underflow (gradual or flushed to zero,
   inputs or products, each below ``2^-126·max(1, |x_i|, |y_i|)``). ``‖y‖`` is bounded
   above per document block from float32 sums of squares:
   ``‖y‖² ≤ (fl32(Σỹ_i²) + d·2^-126)/(1 − γ(u32))``, then ``‖y‖ ≤ (‖ỹ‖ + √d·2^-126)/(1−u32)``.
3. **Keep every possible winner.** Let ``L`` be the ``k``-th largest ``ŝ − e`` seen so far
   (``−∞`` until ``k`` documents were seen): ``k`` documents have ``s64 ≥ L``, so a
   document with ``ŝ + e < L`` has ``s64 < L ≤`` the final ``k``-th score and can be
   neither in the top ``k`` nor tied with its last entry. Every other document is a
   candidate (also every document whose float32 score is not finite, so inf/NaN inputs
   and float32 overflow behave exactly as in the reference). Per block, one comparison
   ``ŝ ≥ fl32↓(L − e)`` selects the candidates of all its queries; ``L`` starts at the
   ``k``-th ``ŝ − e`` of the first ``64·k`` documents and rises as the per-query ``k`` largest
   ``ŝ − e`` are merged block by block; candidates are kept in flat arrays, pruned as ``L`` rises.
4. **Re-check in float64, exactly as the reference computes it.** The reference's value
   for a document depends on which OpenBLAS ``dgemv_t`` kernel summed it, and that is a
   function of its position: the x86-64 kernel (``kernel/x86_64/dgemv_t_4.c``) sums
   columns four at a time (``4x4``), then a trailing pair (``4x2``, another summation
   order) and a trailing single (``4x1``) of each thread's range; a product is split over
   ``nthreads`` ranges of ``ceil(rest / threads left)`` columns when
   ``d·rows ≥ 115200·GEMM_MULTITHREAD_THRESHOLD`` (``driver/level2/gemv_thread.c``,
   ``interface/gemv.c``, OpenBLAS ≥ 0.3.27). Each candidate's position class in the
   reference's block is computed from those rules and its score is produced by the same
   BLAS on a 4-row (``4x4``), 2-row (``4x2``) or 3-row (last row: ``4x1``) matrix holding
   it — the same kernel, the same float64 operations (four ``4x4`` candidates share one 4-row
   matrix: that kernel sums each of its four columns with its own accumulators), for all
   queries' candidates in a few ``matmul`` calls (one ``gemv`` per small matrix). The final ranking
   is the tie rule over the candidates (:func:`~bakeoff.data.ranking.rank_rows`, the same order
   as :func:`~bakeoff.data.ranking.top_k_indices`; a NaN names the same document).

Where that model does not describe numpy's BLAS (not OpenBLAS, another threading layer,
an untested version, column-major or strided inputs, ``d == 0``), :func:`exact_search`
runs :func:`exact_search_reference` itself, so the output is the reference's in every case.
The property tests compare both functions on adversarial near-ties.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..data.ranking import rank_rows, top_k_indices
from ..progress import progress_bar

__all__ = ["GemvModel", "exact_search", "exact_search_reference", "gemv_model", "score_error_bound"]

Ranked = tuple[tuple[str, float], ...]

_U32 = 2.0**-24
_U64 = 2.0**-53
_FLT_MAX = float(np.finfo(np.float32).max)


def _ref_doc_block(n: int, max_block: int) -> int:
    return max(1, min(n, max_block // 64))


def exact_search_reference(
    q: np.ndarray,
    docs: np.ndarray,
    doc_ids: Sequence[str],
    *,
    k: int,
    mask: np.ndarray | None = None,
    max_block: int = 1 << 24,
) -> list[Ranked]:
    """Top-``k`` ``(doc id, score)`` per row of ``q`` by exact dot product (float64), tie rule order.

    The definition that :func:`exact_search` reproduces bit for bit. Work is chunked so
    that no score block exceeds ``max_block`` entries; each query's scores come from its
    own matrix-vector products over fixed document blocks, so a query's scores do not
    depend on which other queries (or mask groups) share its batch. Rows with
    ``mask == False`` score ``-inf`` and are never returned.
    """
    n = docs.shape[0]
    out: list[Ranked] = []
    if n == 0:
        return [() for _ in range(q.shape[0])]
    doc_block = _ref_doc_block(n, max_block)
    q_block = max(1, min(256, max_block // n))
    for qs in range(0, q.shape[0], q_block):
        qc = np.asarray(q[qs : qs + q_block], dtype=np.float64)
        scores = np.empty((qc.shape[0], n), dtype=np.float64)
        for ds in range(0, n, doc_block):
            block = np.asarray(docs[ds : ds + doc_block], dtype=np.float64)
            for j in range(qc.shape[0]):  # one matrix-vector product per query: batch-independent scores
                scores[j, ds : ds + block.shape[0]] = block @ qc[j]
        if mask is not None:
            scores[:, ~mask] = -np.inf
        for row in scores:
            idx = top_k_indices(row, doc_ids, k)
            out.append(tuple((doc_ids[i], float(row[i])) for i in idx))
    return out


# --- the float64 reference's BLAS, modelled ---------------------------------------------------
@dataclass(frozen=True)
class GemvModel:
    """How numpy's OpenBLAS splits a ``dgemv_t`` over threads (see module docstring)."""

    nthreads: int
    threshold: int  # products with d * rows below this run on one thread

    def ranges(self, rows: int, d: int) -> np.ndarray:
        """Start offsets of the thread ranges of a ``rows × d`` product, plus ``rows`` at the end."""
        if self.nthreads <= 1 or d * rows < self.threshold:
            return np.array([0, rows], dtype=np.int64)
        bounds, left, used = [0], rows, 0
        while left > 0:
            width = max(4, (left + self.nthreads - used - 1) // (self.nthreads - used))
            width = min(width, left)
            bounds.append(bounds[-1] + width)
            used += 1
            left -= width
        return np.array(bounds, dtype=np.int64)

    def classes(self, local: np.ndarray, rows: int, d: int) -> np.ndarray:
        """Kernel class of each position ``local`` of a ``rows``-row product: 4 (``4x4``), 2 or 1."""
        bounds = self.ranges(rows, d)
        r = np.searchsorted(bounds, local, side="right") - 1
        start, length = bounds[r], bounds[r + 1] - bounds[r]
        off = local - start
        body = length & ~3
        cls = np.full(local.shape, 4, dtype=np.int8)
        tail = off >= body
        cls[tail & ((length & 2) != 0) & (off < body + 2)] = 2
        cls[tail & ~(((length & 2) != 0) & (off < body + 2))] = 1
        return cls


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


@functools.lru_cache(maxsize=1)
def _numpy_blas() -> Any:
    """threadpoolctl's controller of the BLAS numpy loaded (``numpy.libs`` or numpy's own folder), or
    ``None``. Found once per process: scanning the loaded libraries takes milliseconds."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    import os

    base = os.path.dirname(os.path.dirname(np.__file__))
    libs = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
    mine = [c for c in libs if str(c.filepath).startswith(
        (os.path.join(base, "numpy.libs"), os.path.join(base, "numpy") + os.sep))]
    if not mine and len(libs) == 1:
        mine = libs
    return mine[0] if len(mine) == 1 else None


def gemv_model() -> GemvModel | None:
    """The model of numpy's BLAS ``dgemv``, or ``None`` when it is not the modelled OpenBLAS.

    The library is found with :mod:`threadpoolctl` (once per process); ``nthreads`` is its
    thread count now (a cheap call), so call this at search time.
    """
    lib = _numpy_blas()
    if lib is None:
        return None
    info = lib.info()
    version = _version_tuple(str(info.get("version") or ""))
    if (info.get("internal_api") != "openblas" or info.get("threading_layer") != "pthreads"
            or not (0, 3, 27) <= version < (0, 4, 0)
            or str(info.get("architecture", "")).lower() not in
            ("haswell", "zen", "skylakex", "cooperlake", "sapphirerapids")):
        return None
    return GemvModel(nthreads=max(1, int(info.get("num_threads") or 1)), threshold=115200 * 4)


def _reference_scores(docs: np.ndarray, rows: np.ndarray, xs: np.ndarray, which: np.ndarray,
                      cls: np.ndarray) -> np.ndarray:
    """float64 scores ``docs[rows[j]] · xs[which[j]]`` as the reference's kernels of class ``cls[j]`` compute them.

    Each product is a BLAS ``dgemv`` of a small row-major float64 matrix by one query vector (numpy's
    ``matmul`` of a stack of matrices by a stack of ``(d, 1)`` columns runs one ``gemv`` per matrix), holding
    the row where the reference's kernel of that class sums it: four rows of one query per 4-row matrix for
    ``4x4`` (that kernel sums each row on its own), the row twice in a 2-row matrix for ``4x2``, three times
    in a 3-row matrix (the last row, summed by ``4x1``) for ``4x1``. Rows are cast to float64 (exact) as
    they are copied in.
    """
    out = np.empty(rows.size, dtype=np.float64)
    d = docs.shape[1]
    sel = np.flatnonzero(cls == 4)
    if sel.size:  # rows of one query, four per matrix; a query's last matrix padded with zero rows
        w = which[sel]
        counts = np.bincount(w, minlength=xs.shape[0])
        slots = -(-counts // 4) * 4
        first = np.cumsum(slots) - slots
        before = np.cumsum(counts) - counts
        order = np.argsort(w, kind="stable")
        slot = np.empty(sel.size, dtype=np.int64)
        slot[order] = first[w[order]] + np.arange(sel.size) - before[w[order]]
        mats = np.zeros((int(slots.sum()), d), dtype=np.float64)
        mats[slot] = docs[rows[sel]]
        cols = np.repeat(xs, slots // 4, axis=0)[:, :, None]
        out[sel] = np.matmul(mats.reshape(-1, 4, d), cols).reshape(-1)[slot]
    for c, width, pick in ((2, 2, 0), (1, 3, 2)):
        sel = np.flatnonzero(cls == c)
        if sel.size == 0:
            continue
        mats = np.empty((sel.size, width, d), dtype=np.float64)
        mats[:] = docs[rows[sel]][:, None, :]
        out[sel] = np.matmul(mats, xs[which[sel]][:, :, None])[:, pick, 0]
    return out


# --- the fast path ------------------------------------------------------------------------------
# documents per screening block (at most 256 queries: 32 MiB of float32 scores with ONNX Runtime, 128 MiB with
# numpy's BLAS, whose sgemm gains from longer blocks); max_block caps both
_DOC_BLOCK = 1 << 15
_DOC_BLOCK_BLAS = 1 << 17
# ONNX Runtime screens when its session exists in this process or the product is large enough to repay
# importing it and making the session (~0.1 s) at numpy's ~2x slower sgemm here: 2^31 multiply-adds
_ORT_MIN_WORK = 1 << 31
_RECHECK_ROWS = 512  # candidates re-scored per batch of small gemvs (1.5 MiB float64 buffers)

# The ONNX graph ``C = Gemm(A, B, transB=1) = A·Bᵀ`` (float32 in, float32 out), as serialised by
# ``onnx.helper.make_model`` (tests/arms/test_exact.py rebuilds it and compares): ONNX Runtime's MLAS sgemm
# has AVX-512 kernels where numpy's OpenBLAS may run its AVX2 (Haswell) ones, and importing onnx costs 0.15 s.
_GEMM_ONNX = bytes.fromhex(
    "080712003a6f0a1e0a01410a0142120143220447656d6d2a0d0a067472616e73421801a00102120867656d6d5f6162745a150a0141"
    "12100a0e0801120a0a0312016d0a031201645a150a014212100a0e0801120a0a0312016e0a0312016462150a014312100a0e080112"
    "0a0a0312016d0a0312016e42040a00100d")


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


_ORT: dict[str, Any] = {}  # {"pid": the process that made it, "session": the session or None}


def _ort_gemm() -> Any:
    """An ONNX Runtime session computing ``A·Bᵀ`` in float32 (one per process), or ``None``.

    ``None`` without a working onnxruntime, and in a process forked after the session was made: ONNX Runtime's
    global thread pool and locks do not survive a fork (a new session there hangs), so a forked child
    screens with numpy's BLAS. Intra-op threads = the CPUs this process may use, no busy-waiting.
    """
    if _ORT:
        return _ORT["session"] if _ORT["pid"] == os.getpid() else None
    session = None
    try:  # any failure (not installed, a broken install, an old version) leaves numpy's BLAS: same output
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = _cpus()
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        opts.log_severity_level = 3
        session = ort.InferenceSession(_GEMM_ONNX, opts, providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 - an optional accelerator; the fallback is exact too
        session = None
    _ORT.update(pid=os.getpid(), session=session)
    return session


def _sgemm(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None, *, ort: bool = True) -> np.ndarray:
    """``a @ b.T`` for C-contiguous float32 ``a``, ``b``: float32 products summed in float32 in some order
    (all the error bound assumes), by ONNX Runtime when installed and ``ort``, else numpy's BLAS. Written
    into ``out`` (C-contiguous float32, reused across blocks: fresh memory is slow to fault in) when given."""
    sess = _ort_gemm() if ort else None
    if sess is None:
        return np.matmul(a, b.T, out=out)
    if out is None:
        return sess.run(None, {"A": a, "B": b})[0]
    bind = sess.io_binding()
    for name, arr in (("A", a), ("B", b)):
        bind.bind_input(name, "cpu", 0, np.float32, list(arr.shape), arr.ctypes.data)
    bind.bind_output("C", "cpu", 0, np.float32, list(out.shape), out.ctypes.data)
    sess.run_with_iobinding(bind)
    return out


def score_error_bound(d: int, *, cast: bool = True) -> float:
    """The relative coefficient ``c`` of the module docstring for dimension ``d``."""

    def gamma(u: float) -> float:
        return d * u / (1.0 - d * u)

    c = gamma(_U32) * (1.0 + _U32) ** 2 + gamma(_U64)
    if cast:
        c += 2.0 * _U32 + _U32**2
    return c * (1.0 + 2.0**-20)


def _norm_upper(block32: np.ndarray, d: int) -> np.ndarray:
    """Upper bounds on the L2 norms of the original rows (see module docstring)."""
    sq = np.einsum("ij,ij->i", block32, block32, dtype=np.float32).astype(np.float64)
    g = d * _U32 / (1.0 - d * _U32)
    nrm = np.sqrt((sq + d * 2.0**-126) / (1.0 - g))
    return (nrm + math.sqrt(d) * 2.0**-126) / (1.0 - _U32) * (1.0 + 2.0**-40)


def _down32(x: np.ndarray) -> np.ndarray:
    """Largest float32 values ``<=`` the float64 ``x`` (``-inf`` stays, NaN becomes ``-inf``)."""
    x = np.where(np.isnan(x), -np.inf, x)
    y = x.astype(np.float32)
    over = y.astype(np.float64) > x
    y[over] = np.nextafter(y[over], np.float32(-np.inf))
    return y


def _fast_ok(q: np.ndarray, docs: np.ndarray) -> bool:
    if docs.ndim != 2 or q.ndim != 2 or docs.shape[1] == 0 or q.shape[1] != docs.shape[1]:
        return False
    if not (np.issubdtype(docs.dtype, np.floating) and np.issubdtype(q.dtype, np.floating)):
        return False
    if docs.dtype.itemsize > 8 or q.dtype.itemsize > 8:
        return False
    # the reference's float64 block must be row-major (a gemv_t over rows): row-contiguous input
    return docs.shape[1] == 1 or docs.strides[1] == docs.dtype.itemsize


def exact_search(
    q: np.ndarray,
    docs: np.ndarray,
    doc_ids: Sequence[str],
    *,
    k: int,
    mask: np.ndarray | None = None,
    max_block: int = 1 << 24,
    progress: bool = False,
    desc: str = "exact search",
) -> list[Ranked]:
    """:func:`exact_search_reference`'s output (same docs, order, float64 scores), fast.

    float32 ``sgemm`` screening over blocks of at most ``max_block`` query × document
    entries, a rigorous error bound, and a float64 re-check of the few candidates
    (module docstring). ``progress`` shows a bar over documents × queries screened.
    """
    q = np.asarray(q)
    n = docs.shape[0]
    nq = q.shape[0]
    if n == 0 or k <= 0:
        return [() for _ in range(nq)]
    model = gemv_model() if _fast_ok(q, docs) else None
    if model is None:
        return exact_search_reference(q, docs, doc_ids, k=k, mask=mask, max_block=max_block)
    d = docs.shape[1]
    cast = docs.dtype != np.float32 or q.dtype != np.float32
    c = score_error_bound(d, cast=cast)
    q64 = np.asarray(q, dtype=np.float64)
    qn = np.sqrt(np.einsum("ij,ij->i", q64, q64)) * (1.0 + 2.0**-40)
    q32 = np.ascontiguousarray(q, dtype=np.float32)
    allowed = None if mask is None else np.asarray(mask, dtype=bool)

    q_block = max(1, min(nq, 256))
    use_ort = (_ORT.get("pid") == os.getpid() or nq * n * d >= _ORT_MIN_WORK) and _ort_gemm() is not None
    d_block = max(1024, min(_DOC_BLOCK if use_ort else _DOC_BLOCK_BLAS, max_block // q_block))
    cands = _Candidates(nq)
    s_buf = np.empty(min(nq, q_block) * min(n, d_block), dtype=np.float32)  # scores of one block
    sel_buf = np.empty(s_buf.size, dtype=bool)
    bar = progress_bar(total=n * nq, desc=desc, enabled=True, unit="pair") if progress else None
    for qs in range(0, nq, q_block):
        qe = min(nq, qs + q_block)
        qb = q32[qs:qe]
        qnb = qn[qs:qe]
        top = np.full((qe - qs, k), -np.inf)  # the k largest lower bounds s - e seen per query
        for ds in range(0, n, d_block):
            de = min(n, ds + d_block)
            blk = np.ascontiguousarray(docs[ds:de], dtype=np.float32)
            ymax = float(_norm_upper(blk, d).max())
            S = _sgemm(qb, blk, out=s_buf[: (qe - qs) * (de - ds)].reshape(qe - qs, de - ds), ort=use_ort)
            if allowed is not None and not allowed[ds:de].all():
                S[:, ~allowed[ds:de]] = -np.inf
            with np.errstate(over="ignore", invalid="ignore"):
                e = c * qnb * ymax + d * 2.0**-100 * (1.0 + qnb) * (1.0 + ymax)
            safe = bool(np.isfinite(e).all()) and float(qnb.max()) * ymax * 2.0 < _FLT_MAX
            L = top[:, 0]  # the k-th largest (top is partitioned: its first column is its minimum)
            if safe and de - ds >= k and np.isneginf(L).any():
                # a first bound: the k-th score among the block's first 64·k documents (any k documents
                # bound L from below; a partition over the whole block would cost more than it saves)
                sub = S[:, : min(S.shape[1], max(k, 64 * k, 4096))]
                kth = np.partition(sub, sub.shape[1] - k, axis=1)[:, sub.shape[1] - k].astype(np.float64)
                with np.errstate(invalid="ignore"):
                    L = np.maximum(L, np.where(np.isfinite(kth), kth - e, -np.inf))
            with np.errstate(invalid="ignore"):
                thr = _down32(L - e)
            thr[np.isneginf(thr)] = -_FLT_MAX  # -inf scores (masked rows) never pass
            sel = np.greater_equal(S, thr[:, None], out=sel_buf[: S.size].reshape(S.shape))
            if not safe:  # inputs large, inf or NaN: every non-finite unmasked score is a candidate
                bad = ~np.isfinite(S)
                if allowed is not None:
                    bad &= allowed[ds:de][None, :]
                sel |= bad
            flat = np.flatnonzero(sel)  # 1-D: several times faster than a 2-D nonzero
            if flat.size:
                rows, cols = np.divmod(flat, S.shape[1])
                s64 = S.reshape(-1)[flat].astype(np.float64)
                er = e[rows]
                finite = np.isfinite(s64) & np.isfinite(er)
                with np.errstate(invalid="ignore"):
                    lo = np.where(finite, s64 - er, -np.inf)
                    hi = np.where(finite, s64 + er, np.inf)
                top = _merge_top(top, rows, lo, k)
                cands.add(rows + qs, cols + ds, hi)
                cands.prune(qs, top[:, 0])
            if bar is not None:
                bar.update((de - ds) * (qe - qs))
        cands.prune(qs, top[:, 0], final=True)
    if bar is not None:
        bar.close()
    qi, doc = cands.sorted()
    return _recheck(q64, docs, doc_ids, qi, doc, k=k, model=model, doc_block=_ref_doc_block(n, max_block))


def _merge_top(top: np.ndarray, rows: np.ndarray, lo: np.ndarray, k: int) -> np.ndarray:
    """``top`` (queries × k largest values) updated with the values ``lo`` of rows ``rows`` (sorted)."""
    counts = np.bincount(rows, minlength=top.shape[0])
    width = int(counts.max())
    pad = np.full((top.shape[0], k + width), -np.inf)
    pad[:, :k] = top
    starts = np.cumsum(counts) - counts
    pad[rows, k + np.arange(rows.size) - starts[rows]] = lo
    return np.partition(pad, width, axis=1)[:, width:]


class _Candidates:
    """Every (query, document) that may still reach its query's top ``k``: flat arrays, pruned as ``L`` rises."""

    def __init__(self, nq: int) -> None:
        self.nq = nq
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.size = 0
        self.limit = 1 << 16

    def add(self, qi: np.ndarray, doc: np.ndarray, hi: np.ndarray) -> None:
        self.parts.append((qi, doc, hi))
        self.size += qi.size

    def _joined(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if len(self.parts) != 1:
            qi, doc, hi = (np.concatenate(a) for a in zip(*self.parts, strict=True))
            self.parts = [(qi, doc, hi)]
        return self.parts[0]

    def prune(self, qs: int, L: np.ndarray, *, final: bool = False) -> None:
        """Drop the candidates of queries ``qs..`` whose upper bound is below that query's ``L``."""
        if not self.parts or (not final and self.size < self.limit):
            return
        qi, doc, hi = self._joined()
        bound = np.full(self.nq, -np.inf)
        bound[qs : qs + L.size] = L
        keep = hi >= bound[qi]
        self.parts = [(qi[keep], doc[keep], hi[keep])]
        self.size = int(keep.sum())
        self.limit = max(self.limit, 2 * self.size)

    def sorted(self) -> tuple[np.ndarray, np.ndarray]:
        """``(query, document)`` of every candidate, ordered by query, then document."""
        if not self.parts:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        qi, doc, _ = self._joined()
        order = np.lexsort((doc, qi))
        return qi[order], doc[order]


def _recheck(q64: np.ndarray, docs: np.ndarray, doc_ids: Sequence[str], qi: np.ndarray, doc: np.ndarray, *,
             k: int, model: GemvModel, doc_block: int) -> list[Ranked]:
    """Each query's top ``k`` among its candidates ``(qi, doc)`` (sorted by query, then document), scored in
    float64 exactly as the reference does and ordered by the tie rule (:func:`rank_rows`)."""
    n, d = docs.shape
    out: list[Ranked] = [() for _ in range(q64.shape[0])]
    if doc.size == 0:
        return out
    cls = np.empty(doc.size, dtype=np.int8)
    block = doc // doc_block
    for b in np.unique(block).tolist():  # the reference's document blocks: each its own thread split
        at = block == b
        s0 = b * doc_block
        cls[at] = model.classes(doc[at] - s0, min(doc_block, n - s0), d)
    vals = np.empty(doc.size, dtype=np.float64)
    for a in range(0, doc.size, _RECHECK_ROWS):  # bounded buffers: fresh memory is slow to fault in
        b = min(doc.size, a + _RECHECK_ROWS)
        vals[a:b] = _reference_scores(docs, doc[a:b], q64, qi[a:b], cls[a:b])
    order = rank_rows(qi, vals, lambda rows: [doc_ids[j] for j in doc[rows].tolist()])
    order = order[vals[order] > -np.inf]  # masked documents are never returned
    g = qi[order]
    first = np.searchsorted(g, np.arange(q64.shape[0] + 1))
    keep = np.arange(order.size) - first[g] < k
    order, g = order[keep], g[keep]
    ids = [doc_ids[j] for j in doc[order].tolist()]
    scores = vals[order].tolist()
    cuts = np.searchsorted(g, np.arange(q64.shape[0] + 1)).tolist()
    for i in range(q64.shape[0]):
        if cuts[i] < cuts[i + 1]:
            out[i] = tuple(zip(ids[cuts[i] : cuts[i + 1]], scores[cuts[i] : cuts[i + 1]], strict=True))
    return out
