"""A prepared exact-search index: an int8 copy of the corpus screens, float64 re-checks, bit-identical output.

:class:`ExactIndex` returns what :func:`~bakeoff.arms.exact.exact_search_reference` returns (same documents,
order and float64 scores, bit for bit), like :func:`~bakeoff.arms.exact.exact_search`, but screens with an
exact integer product instead of a float32 one (ONNX Runtime's MLAS ``MatMulInteger``: uint8 × int8 summed
in int32, AVX-512 VNNI on this CPU, ~4-7× the float32 product's speed). What it costs once, at
:meth:`ExactIndex.build` (reported separately, like a FAISS build):

- the rows sorted by their largest magnitude ``m_y = max_i |ỹ_i|`` (``ỹ = fl32(y)``), so that a block of
  ``B`` consecutive sorted rows shares one scale ``s_B = fl32(max(m_y, 2^-60) / 127)`` with little loss;
- codes ``y8 = clip(round(ỹ / s_B), −127, 127)`` stored as ``uint8`` (``y8 + 128``: zero point 128);
- per block the maxima of rigorous upper bounds of ``ρ_y = ‖ỹ − s_B·y8‖``, ``‖ỹ‖`` and ``‖y‖``.

**Search** (queries ``x``, float64): ``s_x = fl32(max(max_i |x_i|, 2^-60) / 127)``,
``x8 = clip(round(x / s_x), −127, 127)``, ``r_x = x − s_x·x8``. ``I = x8 · y8`` is computed exactly in
int32 (``|I| ≤ 127²·d < 2^31`` for ``d ≤ 2^17``; a probe at session start checks that the kernel does
not saturate, otherwise the float32 screening of :func:`exact_search` is used). Since ``x̂ = s_x·x8`` and
``ŷ = s_B·y8`` are exact reals with ``x̂·ŷ = s_x s_B I``::

    x·y = s_x s_B I + x̂·r_y + r_x·ỹ + x·(y − ỹ)

and the reference's float64 score ``s64`` differs from ``x·y`` by at most ``γ(u64)‖x‖‖y‖`` (Higham,
Lemma 3.1, any summation order), so with the block maxima ``ρ_B``, ``Ỹ_B ≥ ‖ỹ‖``, ``Y_B ≥ ‖y‖``::

    |s64 − fl64(s_x s_B I)| ≤ e := (‖x̂‖ρ_B + ‖r_x‖Ỹ_B + (c_cast·u32 + γ(u64))‖x‖Y_B
                                    + 4·u64·‖x̂‖(Ỹ_B + ρ_B))·(1 + 2^-20) + d·2^-100(1 + ‖x‖)(1 + Y_B)

(``c_cast = 1`` for float64 documents, whose float32 rounding ``‖y − ỹ‖ ≤ u32‖y‖`` enters; ``0`` otherwise;
the ``4·u64`` term covers evaluating ``s_x s_B I`` in float64, the last term underflow). As in
:func:`exact_search`, ``L`` (per query) is the ``k``-th largest lower bound ``s − e`` seen so far, and a
document is kept iff ``I ≥ ⌊(L − e)/(s_x s_B) − slack⌋``: one int32 comparison per (document, query).

The kept pairs (~900 documents per query, 0.09 %, at 1M random unit vectors, k = 100) then pass a **float32
middle stage**: ``ŝ = fl32(x̃·ỹ)`` of the gathered rows (read in document order), within
``c·‖x‖‖y‖`` (+ underflow; ``c`` = :func:`~bakeoff.arms.exact.score_error_bound`) of ``s64``, pruned with the
``k``-th largest lower bound again (~100.3 per query left); those are scored exactly as the
reference scores them (:func:`bakeoff.arms.exact._recheck`: same BLAS kernel per position class) and ranked
by the tie rule. The documents must not change after the build (the index keeps a reference to them).

Anything outside this model (non-finite or values above 2^50, no onnxruntime, a saturating kernel, numpy's BLAS not
the modelled OpenBLAS) runs :func:`exact_search` on the original rows: the output is the same in every case.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..progress import progress_bar
from . import exact as _exact

__all__ = ["INDEX_FORMAT", "ExactIndex"]

Ranked = tuple[tuple[str, float], ...]

_U32 = 2.0**-24
_U64 = 2.0**-53
_TINY = 2.0**-60  # scales are at least this / 127: rows and queries below it are all rounding residual
_HUGE = 2.0**50  # larger magnitudes: exact_search instead (keeps d·|x||y| far below float32's overflow)
_BLOCK = 4096  # sorted rows per screening block: 1.5 MiB of codes, L2-resident while MLAS sums them
_MID_ROWS = 16384  # candidate rows gathered per float32 middle-stage batch (24 MiB at d = 384)
# ONNX Runtime intra-op threads: half the CPUs this process may use, at least 1 (measured at 1M on this 2-core
# machine under load: 1 thread 0.14 s for all the products, 2 threads 0.14-0.30 s: a split product of ~0.5 ms
# waits for its slower half while other processes hold a core); an int overrides
_THREADS: int | None = None
_WORKERS: int | None = None  # screening threads (see _workers); an int overrides
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1
INDEX_FORMAT = 1  # of the cached index (to_cache / from_cache): bump when the stored codes or bounds change meaning

# C = MatMulInteger(A uint8 [m, d], B int8 [d, n], a_zero_point = 128), int32 out, as serialised by
# onnx.helper.make_model (tests/arms/test_exact_index.py rebuilds it and compares)
_MATMUL_U8S8_ONNX = bytes.fromhex(
    "08073a7c0a1c0a01410a01420a027a61120143220d4d61744d756c496e7465676572120b6d61746d756c5f753873382a0a10022a0280"
    "0142027a615a150a014112100a0e0802120a0a0312016d0a031201645a150a014212100a0e0803120a0a031201640a0312016e62150a"
    "014312100a0e0806120a0a0312016d0a0312016e42040a00100a")

_ORT: dict[str, Any] = {}  # {"pid": the process that made it, "session": the session or None}


def _probe_exact(sess: Any) -> bool:
    """Whether the session's int8 kernel sums extreme codes exactly (an AVX2 ``vpmaddubsw`` kernel saturates
    pairs of 255·127 in int16; AVX-512 VNNI does not)."""
    rng = np.random.default_rng(0)
    d, m, n = 512, 40, 24
    a = rng.choice(np.array([1, 255, 128, 2, 254], dtype=np.uint8), size=(m, d))
    a[0], a[1] = 255, 1  # whole rows of extremes
    b = rng.choice(np.array([-127, 127, 0, -126, 126], dtype=np.int8), size=(d, n))
    b[:, 0], b[:, 1] = 127, -127
    want = (a.astype(np.int64) - 128) @ b.astype(np.int64)
    got = sess.run(None, {"A": a, "B": b})[0]
    return bool(np.array_equal(got.astype(np.int64), want))


def _ort_matmul_int() -> Any:
    """An ONNX Runtime session computing ``(A − 128)·B`` exactly in int32 (one per process), or ``None``.

    ``None`` without a working onnxruntime, when the kernel fails the saturation probe, and in a process forked
    after the session was made (ONNX Runtime's thread pool does not survive a fork).
    """
    if _ORT:
        return _ORT["session"] if _ORT["pid"] == os.getpid() else None
    session = None
    try:  # any failure leaves the float32 screening of exact_search: same output
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = _THREADS or max(1, _exact._cpus() // 2)
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        opts.log_severity_level = 3
        session = ort.InferenceSession(_MATMUL_U8S8_ONNX, opts, providers=["CPUExecutionProvider"])
        if not _probe_exact(session):
            session = None
    except Exception:  # noqa: BLE001 - an optional accelerator; the fallback is exact too
        session = None
    _ORT.update(pid=os.getpid(), session=session)
    return session


def _int_product(sess: Any, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``(a − 128) @ b`` in int32 into ``out`` (``a`` uint8 ``[m, d]``, ``b`` int8 ``[d, n]``, C-contiguous)."""
    bind = sess.io_binding()
    bind.bind_input("A", "cpu", 0, np.uint8, list(a.shape), a.ctypes.data)
    bind.bind_input("B", "cpu", 0, np.int8, list(b.shape), b.ctypes.data)
    bind.bind_output("C", "cpu", 0, np.int32, list(out.shape), out.ctypes.data)
    sess.run_with_iobinding(bind)
    return out


def _norm_up(rows64: np.ndarray) -> np.ndarray:
    """Upper bounds of the L2 norms of float64 rows: float64 sum of squares (relative error ≤ (d+2)·u64,
    any order), underflowed squares (each < 2^-1000 unless a row entry is ≥ 2^-500) and the square root."""
    d = rows64.shape[1]
    sq = np.einsum("ij,ij->i", rows64, rows64)
    return (np.sqrt(sq) + math.sqrt(d) * 2.0**-500) * (1.0 + 2.0**-30)


def _quantise(rows64: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes ``clip(round(rows / scale), −127, 127)`` (float64 values) and upper bounds of the residual norms
    ``‖rows − scale·codes‖`` (``scale`` float32 values: ``scale·code`` is exact in float64)."""
    sc = scale[:, None]
    c = np.divide(rows64, sc)
    np.rint(c, out=c)
    np.clip(c, -127, 127, out=c)
    r = np.multiply(c, sc)
    np.subtract(rows64, r, out=r)
    return c, _norm_up(r)


def _screen_error(xh: np.ndarray, rx: np.ndarray, xn: np.ndarray, resid: Any, norm32: Any, norm64: Any, *,
                  d: int, cast: bool) -> np.ndarray:
    """``e`` of the module docstring per query: ``xh ≥ ‖x̂‖``, ``rx ≥ ‖r_x‖``, ``xn ≥ ‖x‖``; a block's ``ρ_B``,
    ``Ỹ_B``, ``Y_B``; ``cast``: the documents are float64 (their float32 rounding enters)."""
    g64 = d * _U64 / (1.0 - d * _U64)
    rel = (_U32 if cast else 0.0) + g64
    return ((xh * resid + rx * norm32 + rel * xn * norm64 + 4.0 * _U64 * xh * (norm32 + resid)) * (1.0 + 2.0**-20)
            + d * 2.0**-100 * (1.0 + xn) * (1.0 + norm64))


def _scale(mx: np.ndarray | float) -> np.ndarray:
    return (np.maximum(np.asarray(mx, dtype=np.float64), _TINY) / 127.0).astype(np.float32).astype(np.float64)


@dataclass(frozen=True, eq=False)
class ExactIndex:
    """The int8 screening copy of ``docs`` (module docstring); :meth:`search` = the float64 reference's output."""

    docs: np.ndarray  # the original rows: the float64 stages read them
    order: np.ndarray  # int64 [n]: sorted position -> original row
    codes: np.ndarray  # uint8 [n, d]: y8 + 128 in sorted order
    scale: np.ndarray  # float64 [blocks]: s_B (float32 values)
    resid: np.ndarray  # float64 [blocks]: ρ_B
    norm32: np.ndarray  # float64 [blocks]: Ỹ_B
    norm64: np.ndarray  # float64 [blocks]: Y_B
    block: int
    usable: bool  # False: search runs exact_search on docs (non-finite/huge values, d > 2^17, not floating)

    @classmethod
    def build(cls, docs: np.ndarray, *, block: int = _BLOCK, progress: bool = False,
              desc: str = "exact index") -> ExactIndex:
        """Quantise ``docs`` (rows; memory-mapped is fine, read in blocks) once; ``O(n·d)`` time, ``n·d`` bytes.
        ``progress`` shows a bar over the rows quantised."""
        n = docs.shape[0] if docs.ndim == 2 else 0
        d = docs.shape[1] if docs.ndim == 2 else 0
        empty = np.empty(0)

        def unusable() -> ExactIndex:
            return cls(docs, np.empty(0, np.int64), np.empty((0, d), np.uint8), empty, empty, empty, empty, block,
                       False)

        if (docs.ndim != 2 or n == 0 or d == 0 or d > 1 << 17 or not np.issubdtype(docs.dtype, np.floating)
                or docs.dtype.itemsize > 8):
            return unusable()
        mx = np.empty(n, dtype=np.float32)
        for s in range(0, n, 1 << 16):  # ỹ = fl32(y): its largest magnitude per row
            mx[s : s + (1 << 16)] = np.abs(np.asarray(docs[s : s + (1 << 16)], dtype=np.float32)).max(axis=1)
        if not (np.isfinite(mx).all() and float(mx.max()) <= _HUGE):
            return unusable()
        order = np.argsort(mx, kind="stable")
        where = np.empty(n, dtype=np.int64)  # original row -> sorted position
        where[order] = np.arange(n)
        nb = -(-n // block)
        scale = _scale(mx[order[np.minimum(np.arange(1, nb + 1) * block, n) - 1]])  # each block's largest row
        codes = np.empty((n, d), dtype=np.uint8)
        resid, norm32, norm64 = np.zeros(nb), np.zeros(nb), np.zeros(nb)
        bar = progress_bar(total=n, desc=desc, enabled=True, unit="doc") if progress else None
        for s in range(0, n, 4096):  # rows read in order (cache-sized chunks), codes written to sorted positions
            y = np.asarray(docs[s : s + 4096])
            y32 = y.astype(np.float64) if y.dtype == np.float32 else y.astype(np.float32).astype(np.float64)
            pos = where[s : s + y.shape[0]]
            blk = pos // block
            c, r = _quantise(y32, scale[blk])
            c += 128
            codes[pos] = c.astype(np.uint8)
            n32 = _norm_up(y32)
            np.maximum.at(resid, blk, r)
            np.maximum.at(norm32, blk, n32)
            np.maximum.at(norm64, blk, _norm_up(y.astype(np.float64)) if docs.dtype == np.float64 else n32)
            if bar is not None:
                bar.update(y.shape[0])
        if bar is not None:
            bar.close()
        _ort_matmul_int()  # the screening session (and its exactness probe) is part of the build
        return cls(docs, order.astype(np.int64), codes, scale, resid, norm32, norm64, block, True)

    # kept in a bakeoff cache (arrays memory-mapped back; the documents are the caller's) -------------------
    def to_cache(self, cache: Any, key: str) -> None:
        """Store the index under ``key``: codes and order as arrays, the rest as JSON written last (floats
        round-trip exactly), so a reader sees either the whole index or none."""
        if not self.usable:
            return
        cache.put_array("exact-index-codes", key, self.codes)
        cache.put_array("exact-index-order", key, self.order)
        cache.put_json("exact-index", key, {
            "format": INDEX_FORMAT, "n": int(self.docs.shape[0]), "d": int(self.docs.shape[1]),
            "dtype": str(self.docs.dtype), "block": self.block,
            **{f: getattr(self, f).tolist() for f in ("scale", "resid", "norm32", "norm64")}})

    @classmethod
    def from_cache(cls, cache: Any, key: str, docs: np.ndarray) -> ExactIndex | None:
        """The index stored under ``key`` for these ``docs`` (same shape and dtype), or ``None``."""
        meta = cache.get_json("exact-index", key)
        if not meta or meta.get("format") != INDEX_FORMAT or docs.ndim != 2 or (meta.get("n"), meta.get("d"), meta.get(
                "dtype")) != (docs.shape[0], docs.shape[1], str(docs.dtype)):
            return None
        codes = cache.get_array("exact-index-codes", key, mmap=True)
        order = cache.get_array("exact-index-order", key, mmap=True)
        scale, resid, norm32, norm64 = stats = [np.asarray(meta[f], dtype=np.float64)
                                                for f in ("scale", "resid", "norm32", "norm64")]
        nb = -(-docs.shape[0] // int(meta["block"]))
        if (codes is None or order is None or codes.shape != docs.shape or codes.dtype != np.uint8
                or order.shape != (docs.shape[0],) or order.dtype != np.int64 or any(a.shape != (nb,) for a in stats)):
            return None
        _ort_matmul_int()
        return cls(docs, order, codes, scale, resid, norm32, norm64, int(meta["block"]), True)

    def search(self, q: np.ndarray, doc_ids: Sequence[str], *, k: int, mask: np.ndarray | None = None,
               max_block: int = 1 << 24, progress: bool = False, desc: str = "exact search") -> list[Ranked]:
        """Top-``k`` ``(doc id, score)`` per row of ``q``: :func:`exact_search_reference`'s output, bit for bit.

        ``max_block`` is the reference's (it fixes the float64 document blocks, hence the kernel classes);
        ``progress`` shows a bar over documents × queries screened.
        """
        docs = self.docs
        q = np.asarray(q)
        n, nq = docs.shape[0], q.shape[0]
        if n == 0 or k <= 0 or nq == 0:
            return [() for _ in range(nq)]
        q64 = np.asarray(q, dtype=np.float64) if q.ndim == 2 else q
        model = _exact.gemv_model() if _exact._fast_ok(q, docs) else None
        qmax = np.abs(q64).max(axis=1) if q.ndim == 2 and q.shape[1] == docs.shape[1] else None
        if (not self.usable or model is None or qmax is None or not np.isfinite(qmax).all()
                or float(qmax.max()) > _HUGE or _ort_matmul_int() is None):
            return _exact.exact_search(q, docs, doc_ids, k=k, mask=mask, max_block=max_block, progress=progress,
                                       desc=desc)
        d = docs.shape[1]
        cast = docs.dtype == np.float64
        sx = _scale(qmax)
        x8, rx = _quantise(q64, sx)
        xn = _norm_up(q64)
        xh = sx * _norm_up(x8)
        allowed = None if mask is None else np.asarray(mask, dtype=bool)[self.order]
        sess = _ort_matmul_int()
        cands = _exact._Candidates(nq)
        q_block = 256
        nblocks = -(-n // self.block)
        workers = max(1, min(_workers(), nblocks))
        bar = progress_bar(total=n * nq, desc=desc, enabled=True, unit="pair") if progress else None
        for qs in range(0, nq, q_block):
            qe = min(nq, qs + q_block)
            x8t = np.ascontiguousarray(x8[qs:qe].T.astype(np.int8))
            errs = _screen_error(xh[None, qs:qe], rx[None, qs:qe], xn[None, qs:qe], self.resid[:, None],
                                 self.norm32[:, None], self.norm64[:, None], d=d, cast=cast)  # [blocks, m]
            sss = sx[None, qs:qe] * self.scale[:, None]  # exact: two float32 values
            screen = _Screen(self, sess, x8t, errs, sss, allowed, qs=qs, k=k, bar=bar)
            parts = _split(screen, nblocks, workers)
            top = parts[0][0]
            for other, _ in parts[1:]:  # each worker's k largest lower bounds -> the overall k largest
                both = np.concatenate([top, other], axis=1)
                top = np.partition(both, both.shape[1] - k, axis=1)[:, -k:]
            for _, part in parts:
                for piece in part.parts:
                    cands.add(*piece)
            cands.prune(qs, top[:, 0], final=True)
        if bar is not None:
            bar.close()
        qi, pos = cands.sorted()
        doc = self.order[pos]
        o = np.argsort(qi * n + doc)  # by query, then document (unique keys)
        qi, doc, pos = qi[o], doc[o], pos[o]
        qi, doc = _middle(q, docs, qi, doc, pos, xn, self.norm64[pos // self.block], k=k)
        return _exact._recheck(q64, docs, doc_ids, qi, doc, k=k, model=model,
                               doc_block=_exact._ref_doc_block(n, max_block))


def _split(screen: _Screen, nblocks: int, workers: int) -> list[tuple[np.ndarray, _exact._Candidates]]:
    """``screen`` over blocks ``0..nblocks-1`` on ``workers`` threads, each taking the next unscreened block when
    it is free (so a core shared with another process does not hold the others up); one result per thread."""
    if workers == 1:
        return [screen.run(range(nblocks))]
    counter = iter(range(nblocks))
    lock = threading.Lock()

    def blocks() -> Iterator[int]:
        while True:
            with lock:
                b = next(counter, None)
            if b is None:
                return
            yield b

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda _: screen.run(blocks()), range(workers)))


def _workers() -> int:
    """Screening threads: the CPUs this process may use divided by ONNX Runtime's intra-op threads (``_THREADS``
    or half the CPUs), at least 1 (``_WORKERS`` overrides)."""
    if _WORKERS:
        return _WORKERS
    cpus = _exact._cpus()
    return max(1, cpus // (_THREADS or max(1, cpus // 2)))


class _Screen:
    """One query chunk's integer screen over any subset of the sorted blocks.

    ``run(blocks)`` screens the blocks it is handed and returns ``(top, candidates)``: each query's ``k`` largest
    lower bounds seen *in those blocks* and every (query, document) whose upper bound reaches that row's ``k``-th.
    Exact for any split of the blocks between workers: a worker's ``k``-th lower bound ``L_w`` is attained by
    ``k`` of its own documents, so the overall ``k``-th largest score is ``≥ L_w``, and a document dropped because
    its upper bound is ``< L_w`` cannot be in the top ``k``. Merging keeps every worker's candidates and prunes
    them with the merged (larger) ``L``. Threads share the ONNX Runtime session (``run`` is thread-safe and
    releases the GIL, as do numpy's large array operations).
    """

    def __init__(self, index: ExactIndex, sess: Any, x8t: np.ndarray, errs: np.ndarray, sss: np.ndarray,
                 allowed: np.ndarray | None, *, qs: int, k: int, bar: Any) -> None:
        self.index, self.sess, self.x8t, self.errs, self.sss = index, sess, x8t, errs, sss
        self.allowed, self.qs, self.k, self.bar = allowed, qs, k, bar

    def run(self, blocks: Iterable[int]) -> tuple[np.ndarray, _exact._Candidates]:
        ix, k, qs, allowed = self.index, self.k, self.qs, self.allowed
        n, m = ix.docs.shape[0], self.x8t.shape[1]
        cands = _exact._Candidates(qs + m)
        top = np.full((m, k), -np.inf)
        ibuf = np.empty(min(n, ix.block) * m, dtype=np.int32)
        sbuf = np.empty(ibuf.size, dtype=bool)
        for b in blocks:
            s = b * ix.block
            e_ = min(n, s + ix.block)
            I = _int_product(self.sess, ix.codes[s:e_], self.x8t, ibuf[: (e_ - s) * m].reshape(e_ - s, m))
            ss, err = self.sss[b], self.errs[b]
            L = top[:, 0]
            if e_ - s >= k and np.isneginf(L).any() and (allowed is None or allowed[s:e_].all()):
                kth = np.partition(I, e_ - s - k, axis=0)[e_ - s - k].astype(np.float64) * ss
                L = np.maximum(L, kth - err - 2.0**-50 * (np.abs(kth) + err))
            with np.errstate(invalid="ignore", over="ignore"):
                t = (L - err) / ss
                t = np.floor(t - 2.0**-40 * (np.abs(L) + err) / ss - 1.0)
            np.maximum(t, _I32_MIN, out=t)  # -inf (no bound yet): every document
            np.minimum(t, _I32_MAX, out=t)
            thr = t.astype(np.int32)
            # one flat comparison against the thresholds tiled per row: 3x faster than broadcasting a row of m
            sel = np.greater_equal(I.reshape(-1), np.tile(thr, e_ - s), out=sbuf[: I.size])
            if allowed is not None and not allowed[s:e_].all():
                sel.reshape(I.shape)[~allowed[s:e_]] = False
            flat = np.flatnonzero(sel)
            if flat.size:
                rows, qq = np.divmod(flat, m)
                o = np.argsort(qq.astype(np.uint8), kind="stable")  # m <= 256: a radix sort
                rows, qq = rows[o], qq[o]
                a = I[rows, qq].astype(np.float64) * ss[qq]
                slack = err[qq] + 2.0**-50 * (np.abs(a) + err[qq])
                top = _exact._merge_top(top, qq, a - slack, k)
                cands.add(qq + qs, rows + s, a + slack)
                cands.prune(qs, top[:, 0])
            if self.bar is not None:
                self.bar.update((e_ - s) * m)
        return top, cands


def _middle(q: np.ndarray, docs: np.ndarray, qi: np.ndarray, doc: np.ndarray, pos: np.ndarray, xn: np.ndarray,
            ynorm: np.ndarray, *, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The candidates ``(qi, doc)`` (sorted by query, then document) that a float32 dot product cannot rule out.

    ``ŝ = fl32(x̃·ỹ)`` (any summation order) is within ``e = c·‖x‖‖y‖ + d·2^-100(1+‖x‖)(1+‖y‖)`` of ``s64``
    (``c`` = :func:`~bakeoff.arms.exact.score_error_bound`, the float32 screening's bound, ``‖y‖`` bounded by its
    block's ``Y_B`` = ``ynorm[pos]``); a candidate is kept iff ``ŝ + e`` reaches its query's ``k``-th largest
    ``ŝ − e`` among the candidates (``k`` documents score at least that). Rows are read in document order.
    """
    if qi.size == 0:
        return qi, doc
    d = docs.shape[1]
    cast = docs.dtype != np.float32 or q.dtype != np.float32
    c = _exact.score_error_bound(d, cast=cast)
    q32 = np.ascontiguousarray(q, dtype=np.float32)
    base = np.asarray(docs)  # a memory map's ndarray view: no copy
    by_doc = np.argsort(doc, kind="stable")
    lo = np.empty(qi.size)
    hi = np.empty(qi.size)
    for a in range(0, qi.size, _MID_ROWS):
        at = by_doc[a : a + _MID_ROWS]
        y = base[doc[at]]
        if y.dtype != np.float32:
            y = y.astype(np.float32)
        s = np.einsum("ij,ij->i", q32[qi[at]], y, dtype=np.float32).astype(np.float64)
        yn = ynorm[at]
        e = (c * xn[qi[at]] * yn + d * 2.0**-100 * (1.0 + xn[qi[at]]) * (1.0 + yn)) + 2.0**-50 * np.abs(s)
        finite = np.isfinite(s)  # (cannot overflow below _HUGE; if it did: a candidate, never a bound)
        lo[at] = np.where(finite, s - e, -np.inf)
        hi[at] = np.where(finite, s + e, np.inf)
    top = _exact._merge_top(np.full((q.shape[0], k), -np.inf), qi, lo, k)
    keep = hi >= top[qi, 0]
    return qi[keep], doc[keep]
