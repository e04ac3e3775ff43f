"""The Arm interface: one retrieval strategy under test.

An arm is configured by keyword options, indexes a corpus once, then searches
a batch of queries. Its :meth:`Arm.config` holds every option that changes its
output and :meth:`Arm.versions` the versions of the libraries that do; both
feed :meth:`Arm.fingerprint`, the cache identity of the arm. Composite arms
(fusion, reranking) hold other arms in :meth:`Arm.children`, whose
fingerprints are part of theirs, so caching and timing apply to every node.

Rankings are built with :func:`bakeoff.data.ranking.top_k_indices` or
:func:`bakeoff.data.ranking.rank` only — the package's one tie rule.

**Masks** (as-of search): ``search(..., mask=M)`` where ``M`` maps a query id
to a boolean vector over corpus rows; ``False`` rows must not be returned for
that query. Queries absent from ``M`` search the whole corpus.
"""

from __future__ import annotations

import hashlib
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..cache import Cache, cache_key
from ..data.model import Corpus, Queries, Run

__all__ = ["ARM_TYPES", "Arm", "Context", "DocMask", "group_by_mask", "register_arm"]

DocMask = Mapping[str, np.ndarray]


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
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    from_cache: dict[str, bool] = field(default_factory=dict)
    _memo: dict[str, Run] = field(default_factory=dict, repr=False)
    _indexed: set[str] = field(default_factory=set, repr=False)

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
        t0 = time.perf_counter()
        arm.index(self.corpus, ctx=self)
        self.timings.setdefault(fp, {})["index_s"] = time.perf_counter() - t0
        self._indexed.add(fp)

    def search(self, arm: Arm, queries: Queries, *, k: int, mask: DocMask | None = None) -> Run:
        """``arm``'s top-``k`` run for ``queries`` (memoised, cached, timed)."""
        key = self.run_key(arm, queries, k=k, mask=mask)
        fp = arm.fingerprint()
        if key in self._memo:
            return self._memo[key].renamed(arm.name)
        if self.cache is not None:
            hit = self.cache.get_run(key, name=arm.name)
            if hit is not None:
                run, meta = hit
                self.timings[fp] = {**meta.get("timing", {}), **self.timings.get(fp, {})}
                self.from_cache[fp] = True
                self._memo[key] = run
                return run
        self.ensure_indexed(arm)
        t0 = time.perf_counter()
        run = arm.search(queries, k=k, ctx=self, mask=mask)
        elapsed = time.perf_counter() - t0
        timing = self.timings.setdefault(fp, {})
        timing["search_s"] = elapsed
        timing["n_queries"] = float(len(queries))
        timing["ms_per_query"] = 1000.0 * elapsed / max(1, len(queries))
        self.from_cache[fp] = False
        if self.cache is not None:
            self.cache.put_run(key, run, {"timing": dict(timing)})
        self._memo[key] = run
        return run


class Arm(ABC):
    """Base class of all arms. Subclasses set ``type`` and implement the abstract methods."""

    type: ClassVar[str] = "arm"

    def __init__(self, *, name: str | None = None) -> None:
        self.name = name or self.type

    @abstractmethod
    def config(self) -> dict[str, Any]:
        """Every option that changes output (JSON-serialisable, without the name)."""

    def versions(self) -> dict[str, str]:
        """Versions of libraries whose upgrade may change this arm's output."""
        return {}

    def children(self) -> Sequence[Arm]:
        """Arms this arm is built from (fusion inputs, the reranked base ...)."""
        return ()

    def fingerprint(self) -> str:
        """sha256 over type, config, versions and the children's fingerprints."""
        blob = json.dumps(
            {
                "type": self.type,
                "config": self.config(),
                "versions": self.versions(),
                "children": [c.fingerprint() for c in self.children()],
            },
            sort_keys=True,
            separators=(",", ":"),
            default=str,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    @abstractmethod
    def index(self, corpus: Corpus, *, ctx: Context) -> None:
        """Build whatever the arm needs over ``corpus`` (one-time cost)."""

    @abstractmethod
    def search(
        self, queries: Queries, *, k: int, ctx: Context, mask: DocMask | None = None
    ) -> Run:
        """Top-``k`` documents per query, ordered by the package tie rule."""

    def describe(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in sorted(self.config().items()))
        return f"{self.type}:{opts}" if opts else self.type


ArmFactory = Callable[..., Arm]
ARM_TYPES: dict[str, ArmFactory] = {}


def register_arm(type_name: str) -> Callable[[type[Arm]], type[Arm]]:
    """Class decorator: make an arm available to ``--arm TYPE:...`` and TOML configs.

    Registration happens when the defining module is imported by
    :func:`bakeoff.arms.registry.arm_types` (never at package import).
    """

    def deco(cls: type[Arm]) -> type[Arm]:
        cls.type = type_name
        ARM_TYPES[type_name] = cls
        return cls

    return deco


def group_by_mask(queries: Queries, mask: DocMask | None) -> Iterator[tuple[np.ndarray | None, list[int]]]:
    """Group query rows sharing one mask (by identity, then by content) so arms can
    search each group in one batch. Yields ``(mask or None, row indices)``."""
    if mask is None:
        yield None, list(range(len(queries)))
        return
    groups: dict[bytes | None, tuple[np.ndarray | None, list[int]]] = {}
    for i, qid in enumerate(queries.ids):
        m = mask.get(qid)
        key = None if m is None else np.packbits(np.asarray(m, dtype=bool)).tobytes()
        if key not in groups:
            groups[key] = (None if m is None else np.asarray(m, dtype=bool), [])
        groups[key][1].append(i)
    yield from groups.values()
