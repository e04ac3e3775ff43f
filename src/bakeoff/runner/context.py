"""The run context: memo, cache, timing, usage and latency of every arm searched in one bake-off.

:class:`Context` implements :class:`bakeoff.arms.base.ArmContext`, the narrow
protocol arms see. It is how the runner *and composite arms* obtain an arm's
run: a memoised or cached run when one exists for the same arm fingerprint,
corpus, queries, depth and mask, otherwise the arm is indexed (once) and
searched, and wall times are recorded.

**Timing** (per arm fingerprint in ``ctx.timings[fp]``; all wall-clock seconds
from ``time.perf_counter``):

* ``index_s``: the one-time cost of :meth:`Arm.index` (index build, corpus
  encode) for this arm alone;
* ``search_s``: wall time of the batch :meth:`Arm.search` call, and
  ``own_search_s``: the same minus time spent inside nested ``ctx.search``
  calls (a composite arm's inputs), so a composite's own work (fusing,
  cross-encoding) is separated from its children's; ``ms_per_query`` is
  ``1000 * own_search_s / n_queries`` (batch throughput, not latency);
* ``latency`` (from :meth:`Context.measure_latency`): per-query p50/p95/mean ms
  of single-query searches on a seeded sample, end to end (``*_ms``, children
  searched for real, nothing cached) and own (``own_*_ms``). A composite's
  end-to-end latency includes its inputs', so it is valid only together with
  the measurements of its inputs: each measurement gets an id
  (:attr:`Context.latency_stamps`), a composite records the ids of its
  subtree's measurements, and it is re-measured whenever any of them changed
  (an input re-measured in this run, or restored from a different cached run).

**Usage** (API arms): :meth:`Arm.usage` returns cumulative counters such as
``tokens``, ``requests`` and ``cost_usd``; the context records their increase
during index and search in ``ctx.usage[fp] = {"index": {...}, "search": {...}}``.
Timings and usage are stored with a cached run and restored on a hit.

**Memory** (:class:`bakeoff.runner.footprint.PeakMemory`): the peak resident set size of the
process while the arm indexed and searched (with any input it searched for the first time
inside that call), in ``timings[fp]["memory"]``
(``peak_rss_mb``, ``start_rss_mb``, ``added_mb``, ``method``); stored and restored with the
run like the times.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..arms.base import Arm, DocMask, all_single_latency, subtree, subtree_sum, usage_delta
from ..cache import Cache, cache_key
from ..data.model import Corpus, Queries, Run
from .footprint import PeakMemory

__all__ = ["SINGLE_QUERY_BLAS_THREADS", "Context"]

#: Threads numpy's BLAS may use while single queries are timed (:meth:`Context.measure_latency`). A one-query
#: product is too small to split, and with more threads the BLAS pool and the encoder's OpenMP pool (which
#: spins after each call) fight over the cores: on 2 cores a dense query took 30-110 ms, in two modes, instead
#: of about 10 ms. A server answering one query at a time would run one BLAS thread too.
SINGLE_QUERY_BLAS_THREADS = 1


@dataclass
class Context:
    """What every arm may use while indexing and searching, for one corpus.

    ``cache`` is ``None`` when caching is off; ``progress`` enables progress
    bars; ``extras`` is free-form per-run state (e.g. an execution engine).

    :meth:`search` is how the runner *and composite arms* obtain an arm's run:
    it returns a memoised or cached run when one exists for the same arm
    fingerprint, corpus, queries, depth and mask, and otherwise indexes the
    arm (once) and searches, recording wall times in :attr:`timings`.
    """

    corpus: Corpus
    cache: Cache | None = None
    progress: bool = True
    extras: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, dict[str, Any]] = field(default_factory=dict)
    from_cache: dict[str, bool] = field(default_factory=dict)
    usage: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    #: fingerprint -> ``{"id": measurement id, "inputs": {fingerprint: id}}`` of the arm's latency in
    #: ``timings[fp]["latency"]`` and of the subtree measurements it was taken with (stored with cached runs).
    latency_stamps: dict[str, dict[str, Any]] = field(default_factory=dict)
    _memo: dict[str, Run] = field(default_factory=dict, repr=False)
    _indexed: set[str] = field(default_factory=set, repr=False)
    _frames: list[float] = field(default_factory=list, repr=False)
    _hit_keys: set[str] = field(default_factory=set, repr=False)
    _memory: PeakMemory | None = field(default=None, repr=False)

    def was_cached(self, arm: Arm, queries: Queries, *, k: int, mask: DocMask | None = None) -> bool:
        """Whether this exact run (arm, queries, depth, mask) came from the cache, as opposed to
        :attr:`from_cache`, which records the arm's latest search at any depth."""
        return self.run_key(arm, queries, k=k, mask=mask) in self._hit_keys

    def _nested_call(self, fn: Callable[[], Any]) -> tuple[Any, float, float]:
        """Run ``fn`` as a timing frame: returns ``(result, elapsed_s, nested_s)`` where
        ``nested_s`` is the time spent in nested frames; ``elapsed_s`` is charged to the
        enclosing frame (so a parent's own time excludes its children's)."""
        self._frames.append(0.0)
        t0 = time.perf_counter()
        try:
            out = fn()
        finally:
            elapsed = time.perf_counter() - t0
            nested = self._frames.pop()
            if self._frames:
                self._frames[-1] += elapsed
        return out, elapsed, nested

    def _record_usage(self, arm: Arm, stage: str, before: Mapping[str, float]) -> None:
        delta = usage_delta(before, arm.usage())
        if delta:
            self.usage.setdefault(arm.fingerprint(), {})[stage] = delta

    def run_key(self, arm: Arm, queries: Queries, *, k: int, mask: DocMask | None = None) -> str:
        """Cache key of ``arm``'s run: arm fingerprint, data fingerprints, depth, mask."""
        mask_fp = None
        if mask is not None:
            h = hashlib.sha256()
            for qid in sorted(mask):
                h.update(qid.encode() + b"\0" + np.packbits(np.asarray(mask[qid], dtype=bool)).tobytes())
            mask_fp = h.hexdigest()
        return cache_key({"kind": "run", "arm": arm.fingerprint(), "corpus": self.corpus.fingerprint(),
                          "queries": queries.fingerprint(), "k": k, "mask": mask_fp})

    def ensure_indexed(self, arm: Arm) -> None:
        """Index ``arm`` over the corpus unless it already was (timed as ``index_s``)."""
        fp = arm.fingerprint()
        if fp in self._indexed:
            return
        before = arm.usage()
        _, elapsed, _nested = self._nested_call(lambda: arm.index(self.corpus, ctx=self))
        self.timings.setdefault(fp, {})["index_s"] = elapsed
        self._record_usage(arm, "index", before)
        self._indexed.add(fp)

    def search(self, arm: Arm, queries: Queries, *, k: int, mask: DocMask | None = None) -> Run:
        """``arm``'s top-``k`` run for ``queries`` (memoised, cached, timed)."""
        run: Run = self._nested_call(lambda: self._search(arm, queries, k=k, mask=mask))[0]
        return run

    def _search(self, arm: Arm, queries: Queries, *, k: int, mask: DocMask | None) -> Run:
        key = self.run_key(arm, queries, k=k, mask=mask)
        fp = arm.fingerprint()
        if key in self._memo:
            return self._memo[key].renamed(arm.name)
        if self.cache is not None:
            hit = self.cache.get_run(key, name=arm.name)
            if hit is not None:
                run, meta = hit
                mine = self.timings.get(fp, {})
                if "latency" not in mine and "latency_stamp" in meta:  # the latency comes from this entry
                    self.latency_stamps[fp] = meta["latency_stamp"]
                self.timings[fp] = {**meta.get("timing", {}), **mine}
                if meta.get("usage"):
                    self.usage[fp] = {**meta["usage"], **self.usage.get(fp, {})}
                self.from_cache[fp] = True
                self._hit_keys.add(key)
                self._memo[key] = run
                return run
        if self._memory is None:
            self._memory = PeakMemory()
        with self._memory.frame() as memory:
            self.ensure_indexed(arm)
            before = arm.usage()
            run, elapsed, nested = self._nested_call(lambda: arm.search(queries, k=k, ctx=self, mask=mask))
        timing = self.timings.setdefault(fp, {})
        timing["memory"] = memory
        timing["search_s"] = elapsed
        timing["own_search_s"] = max(0.0, elapsed - nested)
        timing["n_queries"] = float(len(queries))
        timing["ms_per_query"] = 1000.0 * timing["own_search_s"] / max(1, len(queries))
        self._record_usage(arm, "search", before)
        self.from_cache[fp] = False
        self._memo[key] = run
        self._store(arm, queries, k=k, mask=mask, run=run)
        return run

    def _store(self, arm: Arm, queries: Queries, *, k: int, mask: DocMask | None, run: Run) -> None:
        """(Re)write ``run`` to the cache with the arm's current timings and usage."""
        if self.cache is None:
            return
        fp = arm.fingerprint()
        meta: dict[str, Any] = {"timing": dict(self.timings.get(fp, {}))}
        if self.usage.get(fp):
            meta["usage"] = self.usage[fp]
        if fp in self.latency_stamps:
            meta["latency_stamp"] = self.latency_stamps[fp]
        self.cache.put_run(self.run_key(arm, queries, k=k, mask=mask), run, meta)

    def measure_latency(
        self,
        arm: Arm,
        queries: Queries,
        *,
        k: int,
        sample: int = 50,
        seed: int = 0,
        mask: DocMask | None = None,
    ) -> dict[str, Any]:
        """Per-query latency of ``arm``, stored in ``timings[fp]["latency"]`` (and in the
        cached run's metadata, so a warm re-run reports it without re-measuring).

        Method ``single-query`` (default): ``min(sample, len(queries))`` queries are drawn
        without replacement by ``np.random.default_rng(seed)``, and timed with numpy's BLAS limited to
        :data:`SINGLE_QUERY_BLAS_THREADS` thread (threadpoolctl; recorded as ``blas_threads``); one untimed
        warm-up search
        (the first sampled query) is followed by one timed ``search`` per sampled query,
        each through a fresh cache-less context sharing this context's indexes, so a
        composite arm's inputs are searched for real. ``p50_ms``/``p95_ms``/``mean_ms``
        are end to end (numpy's linear-interpolation percentiles); ``own_*_ms`` exclude
        time spent in the inputs; ``samples_ms`` are the timed queries' end-to-end times, in the order timed
        (the verdict's noise floor resamples them). Arms with ``latency_mode = "batch"`` (e.g. remote APIs
        billed per call) report the batch mean instead (method ``batch-mean``).

        The arm's inputs are measured first (the same way). A previous measurement (this run's,
        or one restored with a cached run) is reused when it has the same ``k``, ``sample`` and
        ``seed`` **and** was taken with the current measurements of every arm below it (their
        ids in :attr:`latency_stamps`); otherwise it is measured again, so a composite's
        latency never mixes with a re-measured input's.
        """
        fp = arm.fingerprint()
        timing = self.timings.setdefault(fp, {})
        n = len(queries)
        if sample <= 0 or n == 0:
            return {}
        for child in arm.children():
            self.measure_latency(child, queries, k=k, sample=sample, seed=seed, mask=mask)
        inputs = {node.fingerprint(): self.latency_stamps.get(node.fingerprint(), {}).get("id")
                  for node in subtree(arm) if node.fingerprint() != fp}
        prev = timing.get("latency")
        single = getattr(arm, "latency_mode", "single") != "batch" and all_single_latency(arm)
        want: dict[str, Any] = {"k": k, "sample": sample, "seed": seed}
        if single:
            want["blas_threads"] = SINGLE_QUERY_BLAS_THREADS
        stamp = self.latency_stamps.get(fp)
        if (isinstance(prev, dict) and all(prev.get(key) == v for key, v in want.items())
                and stamp is not None and stamp.get("inputs") == inputs):
            return prev
        if not single:
            ms = 1000.0 * subtree_sum(arm, self.timings, "own_search_s") / max(1.0, float(timing.get("n_queries", n)))
            own = float(timing.get("ms_per_query", ms))
            lat = {"method": "batch-mean", **want, "n": n, "p50_ms": ms, "p95_ms": ms, "mean_ms": ms,
                   "own_p50_ms": own, "own_p95_ms": own, "own_mean_ms": own}
        else:
            rng = np.random.default_rng(seed)
            rows = sorted(int(i) for i in rng.choice(n, size=min(sample, n), replace=False))
            for node in subtree(arm):
                self.ensure_indexed(node)
            e2e: list[float] = []
            own_ms: list[float] = []
            from threadpoolctl import threadpool_limits

            with threadpool_limits(limits=SINGLE_QUERY_BLAS_THREADS, user_api="blas"):
                self._time_queries(arm, queries, rows, k=k, mask=mask, e2e=e2e, own_ms=own_ms)
            a, b = np.asarray(e2e), np.asarray(own_ms)
            lat = {"method": "single-query", **want, "n": len(e2e),
                   "p50_ms": float(np.percentile(a, 50)), "p95_ms": float(np.percentile(a, 95)),
                   "mean_ms": float(a.mean()),
                   "own_p50_ms": float(np.percentile(b, 50)), "own_p95_ms": float(np.percentile(b, 95)),
                   "own_mean_ms": float(b.mean()), "samples_ms": [round(float(x), 4) for x in a]}
        timing["latency"] = lat
        self.latency_stamps[fp] = {"id": uuid.uuid4().hex, "inputs": inputs}
        key = self.run_key(arm, queries, k=k, mask=mask)
        if key in self._memo:
            self._store(arm, queries, k=k, mask=mask, run=self._memo[key])
        return lat

    def _time_queries(self, arm: Arm, queries: Queries, rows: list[int], *, k: int, mask: DocMask | None,
                      e2e: list[float], own_ms: list[float]) -> None:
        """One untimed warm-up search (``rows[0]``), then one timed search per row, each through a fresh
        cache-less context sharing this context's indexes; end-to-end and own milliseconds appended."""
        fp = arm.fingerprint()
        for j, row in enumerate([rows[0], *rows]):
            qid = queries.ids[row]
            one = queries.subset([qid])
            sub = None if mask is None or qid not in mask else {qid: mask[qid]}
            probe = Context(corpus=self.corpus, cache=None, progress=False, extras=self.extras,
                            _indexed=self._indexed)
            probe.search(arm, one, k=k, mask=sub)
            if j == 0:
                continue  # warm-up
            t = probe.timings[fp]
            e2e.append(1000.0 * t["search_s"])
            own_ms.append(1000.0 * t["own_search_s"])
