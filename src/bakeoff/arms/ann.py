"""The ``ann`` arm: approximate nearest-neighbour search (FAISS) over a dense arm's embeddings.

``--arm 'hnsw=ann:base=dense,index=hnsw,M=32,ef_search=64'`` searches the
``base`` dense arm's corpus embeddings (``embed_corpus``) with the query
embeddings it computes (``embed_queries``), through a FAISS index:

* ``index=flat``  — ``IndexFlatIP``/``IndexFlatL2``: exact, a cross-check of the base arm;
* ``index=hnsw``  — ``IndexHNSWFlat(d, M)`` with ``ef_construction``; searched with ``ef_search``;
* ``index=ivfpq`` — ``IVF{nlist},PQ{m}x{nbits}``, trained on the corpus (k-means seed ``seed``,
  at most ``train_size`` rows, chosen with ``numpy.random.default_rng(seed)``); searched with ``nprobe``.

``metric=ip`` (default; for the normalised embeddings of sentence encoders it
is the cosine) or ``l2`` (score = minus the squared L2 distance). Scores are
FAISS's; hits are ordered with the package tie rule.

**Built once, cached like embeddings**: the serialised index is stored in the
cache (kind ``ann-index``) under a key of the corpus fingerprint, the base
arm's fingerprint, the index options and the FAISS version; a later run loads
it without touching the embeddings. Rows are added in chunks of
``add_batch`` from the (memory-mapped, when the base arm caches them)
embedding matrix. Builds run on ``build_threads`` OpenMP threads (default 1:
HNSW insertion is order-dependent, so one thread makes the index — and every
number from it — reproducible).

**Recall of exact**: :meth:`AnnArm.extra_metrics` compares each query's top-``k``
with the base (exact) arm's top-``k`` — ``|ANN_k ∩ exact_k| / |exact_k|``,
averaged over queries whose exact list is non-empty — and the runner reports
it as ``ann_recall@k`` beside quality and latency.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..cache import cache_key
from ..data.model import Corpus, Queries, Run
from ..data.ranking import rank
from ..errors import ConfigError, MissingDependencyError
from ..progress import progress_bar, ticking
from ..validation import NonNegativeInt, PositiveInt
from .base import Arm, ArmContext, DocMask, group_by_mask, register_arm

__all__ = ["AnnArm", "recall_of_exact"]

_KINDS = ("flat", "hnsw", "ivfpq")


def _faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise MissingDependencyError("faiss-cpu", "ann", "the ann arm") from None
    return faiss


def recall_of_exact(approx: Run, exact: Run, *, k: int, query_ids: list[str] | tuple[str, ...]) -> float:
    """Mean over queries of ``|approx_k ∩ exact_k| / |exact_k|`` (queries with empty exact lists skipped)."""
    vals = []
    for q in query_ids:
        ex = set(exact.doc_ids(q, k)) if q in exact else set()
        if not ex:
            continue
        ap = set(approx.doc_ids(q, k)) if q in approx else set()
        vals.append(len(ap & ex) / len(ex))
    return float(np.mean(vals)) if vals else float("nan")


@register_arm("ann", code_version="1")
class AnnArm(Arm):
    """FAISS flat/HNSW/IVF-PQ search over the ``base`` dense arm's embeddings (see module docstring)."""

    def __init__(
        self,
        *,
        name: str | None = None,
        base: Arm,
        index: str = "hnsw",
        metric: str = "ip",
        M: PositiveInt = 32,
        ef_construction: PositiveInt = 40,
        ef_search: PositiveInt = 64,
        nlist: PositiveInt | None = None,
        nprobe: PositiveInt = 8,
        m: PositiveInt = 16,
        nbits: PositiveInt = 8,
        train_size: PositiveInt = 100_000,
        seed: NonNegativeInt = 0,
        build_threads: PositiveInt = 1,
        add_batch: PositiveInt = 65_536,
    ) -> None:
        super().__init__(name=name)
        if not isinstance(base, Arm) or not hasattr(base, "embed_corpus") or not hasattr(base, "embed_queries"):
            raise ConfigError(f"ann arm {self.name!r}: base= must name a dense arm (embed_corpus/embed_queries)")
        if index not in _KINDS:
            raise ConfigError(f"ann arm {self.name!r}: index must be one of {', '.join(_KINDS)}, got {index!r}")
        if metric not in ("ip", "l2"):
            raise ConfigError(f"ann arm {self.name!r}: metric must be ip or l2, got {metric!r}")
        self.base, self.kind, self.metric = base, index, metric
        self.M, self.ef_construction, self.ef_search = int(M), int(ef_construction), int(ef_search)
        self.nlist, self.nprobe, self.m, self.nbits = (None if nlist is None else int(nlist)), int(nprobe), int(m), int(nbits)
        self.train_size, self.seed, self.build_threads = int(train_size), int(seed), int(build_threads)
        self.add_batch = int(add_batch)
        self._index: Any = None
        self._corpus: Corpus | None = None
        self.built_from_cache = False

    def config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"index": self.kind, "metric": self.metric}
        if self.kind == "hnsw":
            cfg.update(M=self.M, ef_construction=self.ef_construction, ef_search=self.ef_search,
                       build_threads=self.build_threads)
        elif self.kind == "ivfpq":
            cfg.update(nlist=self.nlist, nprobe=self.nprobe, m=self.m, nbits=self.nbits, train_size=self.train_size,
                       seed=self.seed, build_threads=self.build_threads)
        return cfg

    def versions(self) -> dict[str, str]:
        return {"faiss": str(getattr(_faiss(), "__version__", "?"))}

    def children(self) -> tuple[Arm, ...]:
        return (self.base,)

    # building ---------------------------------------------------------------
    def _build_options(self) -> dict[str, Any]:
        """Options that shape the index structure (search-time ones excluded, so one index serves many)."""
        opts: dict[str, Any] = {"index": self.kind, "metric": self.metric}
        if self.kind == "hnsw":
            opts.update(M=self.M, ef_construction=self.ef_construction, build_threads=self.build_threads)
        elif self.kind == "ivfpq":
            opts.update(nlist=self.nlist, m=self.m, nbits=self.nbits, train_size=self.train_size, seed=self.seed,
                        build_threads=self.build_threads)
        return opts

    def _build(self, emb: np.ndarray, *, ctx: ArmContext) -> Any:
        faiss = _faiss()
        n, d = emb.shape
        mt = faiss.METRIC_INNER_PRODUCT if self.metric == "ip" else faiss.METRIC_L2
        if self.kind == "flat":
            index = faiss.IndexFlatIP(d) if self.metric == "ip" else faiss.IndexFlatL2(d)
        elif self.kind == "hnsw":
            index = faiss.IndexHNSWFlat(d, self.M, mt)
            index.hnsw.efConstruction = self.ef_construction
        else:
            if d % self.m:
                raise ConfigError(f"ann arm {self.name!r}: m={self.m} must divide the dimension {d}")
            nlist = self.nlist or max(1, min(65536, int(4 * np.sqrt(n))))
            index = faiss.index_factory(d, f"IVF{nlist},PQ{self.m}x{self.nbits}", mt)
            ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
            ivf.cp.seed = self.seed  # coarse k-means
            ivf.pq.cp.seed = self.seed  # sub-quantiser k-means
            ivf.do_polysemous_training = False  # slow annealing that only serves Hamming pre-filtering
            rows = np.arange(n) if n <= self.train_size else np.sort(
                np.random.default_rng(self.seed).choice(n, size=self.train_size, replace=False))
            with ticking(progress_bar(total=n, desc=f"index {self.name}", enabled=ctx.progress, unit="vec"),
                         phase=f"training IVF{nlist},PQ{self.m} on {len(rows)} rows") as bar:
                index.train(np.ascontiguousarray(emb[rows], dtype=np.float32))
            bar.close()
        # FAISS reports nothing during an add: chunks advance the bar, a ticking thread keeps the
        # elapsed time moving inside each chunk (an HNSW chunk of 65,536 rows can take minutes).
        bar = progress_bar(total=n, desc=f"index {self.name}", enabled=ctx.progress, unit="vec")
        phase = {"flat": "adding", "hnsw": f"HNSW insert (M={self.M}, efC={self.ef_construction})",
                 "ivfpq": "encoding + adding"}[self.kind]
        with ticking(bar, phase=phase):
            for s in range(0, n, self.add_batch):
                chunk = np.ascontiguousarray(emb[s : s + self.add_batch], dtype=np.float32)
                index.add(chunk)
                bar.update(len(chunk))
        bar.close()
        return index

    def index(self, corpus: Corpus, *, ctx: ArmContext) -> None:
        faiss = _faiss()
        key = cache_key({"kind": "ann-index", "corpus": corpus.fingerprint(), "base": self.base.fingerprint(),
                         "options": self._build_options(), "versions": self.versions(),
                         "code": self.code_versions()})
        blob = None if ctx.cache is None else ctx.cache.get_array("ann-index", key)
        if blob is not None:
            self._index = faiss.deserialize_index(np.asarray(blob, dtype=np.uint8))
            self.built_from_cache = True
            # index work restored, not done: what building it took (bakeoff.runner.costs)
            built = (ctx.cache.get_json("ann-index-meta", key) or {}) if ctx.cache is not None else {}
            if "build_s" in built:
                ctx.timings.setdefault(self.fingerprint(), {})["index_cached_s"] = float(built["build_s"])
        else:
            emb = self.base.embed_corpus(corpus, ctx=ctx)
            prev = faiss.omp_get_max_threads()
            faiss.omp_set_num_threads(max(1, self.build_threads))
            t0 = time.perf_counter()
            try:
                self._index = self._build(emb, ctx=ctx)
            finally:
                faiss.omp_set_num_threads(prev)
            build_s = time.perf_counter() - t0
            if ctx.cache is not None:
                ctx.cache.put_array("ann-index", key, faiss.serialize_index(self._index))
                ctx.cache.put_json("ann-index-meta", key, {"build_s": build_s})
            self.built_from_cache = False
        if self._index.ntotal != len(corpus):
            raise ConfigError(f"ann arm {self.name!r}: index holds {self._index.ntotal} vectors, corpus {len(corpus)}")
        self._corpus = corpus

    # searching --------------------------------------------------------------
    def _params(self, selector: Any) -> Any:
        faiss = _faiss()
        if self.kind == "hnsw":
            return faiss.SearchParametersHNSW(efSearch=self.ef_search, sel=selector)
        if self.kind == "ivfpq":
            return faiss.SearchParametersIVF(nprobe=self.nprobe, sel=selector)
        return None if selector is None else faiss.SearchParameters(sel=selector)

    def search(self, queries: Queries, *, k: int, ctx: ArmContext, mask: DocMask | None = None) -> Run:
        faiss = _faiss()
        if self._index is None or self._corpus is None:
            raise RuntimeError("index() must run before search()")
        q = np.ascontiguousarray(self.base.embed_queries(queries, ctx=ctx), dtype=np.float32)
        ids = self._corpus.ids
        out: dict[str, tuple[tuple[str, float], ...]] = {}
        for m, rows in group_by_mask(queries, mask):
            bits = None if m is None else np.packbits(np.asarray(m, dtype=bool), bitorder="little")
            selector = None if m is None or bits is None else faiss.IDSelectorBitmap(len(m), faiss.swig_ptr(bits))
            params = self._params(selector)
            sub = q[rows]
            kk = min(k, len(ids))
            D, I = (self._index.search(sub, kk, params=params) if params is not None
                    else self._index.search(sub, kk))
            for j, i in enumerate(rows):
                pairs = [(ids[int(x)], float(s) if self.metric == "ip" else -float(s))
                         for x, s in zip(I[j], D[j]) if x >= 0]
                out[queries.ids[i]] = rank(pairs)[:k]
            del bits, selector
        return Run.from_ranked(self.name, {qid: out[qid] for qid in queries.ids})

    # reporting --------------------------------------------------------------
    def extra_metrics(self, *, ctx: ArmContext, run: Run, queries: Queries, k: int, depth: int) -> dict[str, float]:
        """``ann_recall@k``: recall of the base arm's exact top-``k`` (see module docstring)."""
        exact = ctx.search(self.base, queries, k=depth)
        return {f"ann_recall@{k}": recall_of_exact(run, exact, k=k, query_ids=queries.ids)}
