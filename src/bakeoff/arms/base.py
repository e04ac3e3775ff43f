"""The Arm interface: one retrieval strategy under test.

An arm is configured by keyword options, indexes a corpus once, then searches
a batch of queries. Its :meth:`Arm.config` holds every option that changes its
output, :meth:`Arm.versions` the versions of the libraries that do and
:attr:`Arm.code_version` the version of its own scoring code (bumped by the
developer whenever the code's output changes); all three feed
:meth:`Arm.fingerprint`, the cache identity of the arm. Composite arms
(fusion, reranking) hold other arms in :meth:`Arm.children`, whose
fingerprints are part of theirs, so caching and timing apply to every node.

Rankings are built with :func:`bakeoff.data.ranking.top_k_indices` or
:func:`bakeoff.data.ranking.rank` only — the package's one tie rule.

**Timing and usage** are recorded by the runner's context
(:mod:`bakeoff.runner.context`); an arm reports API counters through
:meth:`Arm.usage` and may add its own figures to ``ctx.timings[fp]``.

**Masks** (as-of search): ``search(..., mask=M)`` where ``M`` maps a query id
to a boolean vector over corpus rows; ``False`` rows must not be returned for
that query. Queries absent from ``M`` search the whole corpus.
"""

from __future__ import annotations

import builtins
import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np

from ..cache import Cache
from ..data.model import Corpus, Queries, Run

__all__ = ["ARM_TYPES", "Arm", "ArmContext", "DocMask", "all_single_latency", "group_by_mask", "register_arm", "subtree",
           "subtree_sum", "usage_delta"]

DocMask = Mapping[str, np.ndarray]


class ArmContext(Protocol):
    """What an arm may use while indexing and searching (the runner's
    :class:`bakeoff.runner.context.Context` implements it).

    ``corpus`` is the corpus being searched; ``cache`` is ``None`` when caching
    is off; ``progress`` enables progress bars; ``extras`` is free-form per-run
    state (e.g. an execution engine); ``timings[fp]`` is where an arm may add
    its own figures (e.g. encode throughput). :meth:`search` returns another
    arm's run (memoised, cached, timed): composite arms get their inputs through
    it. :meth:`ensure_indexed` indexes an arm once.
    """

    corpus: Corpus
    cache: Cache | None
    progress: bool
    extras: dict[str, Any]
    timings: dict[str, dict[str, Any]]

    def search(self, arm: Arm, queries: Queries, *, k: int, mask: DocMask | None = None) -> Run: ...

    def ensure_indexed(self, arm: Arm) -> None: ...


class Versioned(Protocol):
    """A class whose code computes part of an arm's output, with its own ``code_version``."""

    code_version: str


class Arm(ABC):
    """Base class of all arms. Subclasses set ``type`` and implement the abstract methods."""

    type: ClassVar[str] = "arm"
    #: ``"single"``: per-query latency is measured by timing single-query searches;
    #: ``"batch"``: the arm cannot (or should not, e.g. a paid API) be probed per query,
    #: so latency is the batch mean. See :meth:`bakeoff.runner.context.Context.measure_latency`.
    latency_mode: ClassVar[str] = "single"
    #: Version of the code that computes this arm's output (its *scoring code*). **Bump it in the
    #: same commit as any change that changes the arm's runs** (a scoring fix, a new tie handling,
    #: a different tokenisation ...): it is part of :meth:`fingerprint` and of the arm's other
    #: cache keys, so results cached by older code are never served. ``tests/arms/test_golden_runs.py``
    #: fails when a run changes while the version stays (regenerate its goldens after bumping).
    #: Keep it unchanged for refactors that leave every output bit-identical.
    code_version: ClassVar[str] = "1"
    #: Classes (not config) whose code computes part of the output, each with its own
    #: ``code_version`` (e.g. the rerank arm's cross-encoder scorer); see :meth:`code_versions`.
    #: Components that appear in :meth:`config` (an encoder's identity) carry theirs there.
    code_components: ClassVar[tuple[builtins.type[Versioned], ...]] = ()

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

    def usage(self) -> dict[str, float]:
        """Cumulative resource counters of this arm object, for cost accounting.

        API arms return e.g. ``{"tokens": 1234, "requests": 10, "cost_usd": 0.0002}``
        (``cost_usd`` only where a price per token is configured). Counters only grow;
        the context records their increase during ``index`` and ``search``. Local arms
        return ``{}`` (their cost is machine time, see :mod:`bakeoff.runner.costs`).
        """
        return {}

    def provenance(self) -> dict[str, Any] | None:
        """Where this arm's model came from, when that matters to a reader of the results
        (e.g. ``{"trained_on": ..., "split": ...}`` for a model fine-tuned by bakeoff, stored
        as ``fine_tuned`` in results.json); ``None`` for arms with nothing to declare."""
        return None

    def code_versions(self) -> dict[str, str]:
        """Scoring-code versions behind this arm's own output: ``{type: code_version}`` plus
        ``{class name: code_version}`` of each of :attr:`code_components` (children carry theirs
        in their own fingerprints)."""
        out = {self.type: str(self.code_version)}
        for comp in self.code_components:
            out[comp.__name__] = str(comp.code_version)
        return out

    def fingerprint(self) -> str:
        """sha256 over type, config, library versions, scoring-code versions and the children's
        fingerprints: the cache identity of the arm's runs."""
        blob = json.dumps(
            {
                "type": self.type,
                "config": self.config(),
                "versions": self.versions(),
                "code": self.code_versions(),
                "children": [c.fingerprint() for c in self.children()],
            },
            sort_keys=True,
            separators=(",", ":"),
            default=str,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    @abstractmethod
    def index(self, corpus: Corpus, *, ctx: ArmContext) -> None:
        """Build whatever the arm needs over ``corpus`` (one-time cost)."""

    @abstractmethod
    def search(
        self, queries: Queries, *, k: int, ctx: ArmContext, mask: DocMask | None = None
    ) -> Run:
        """Top-``k`` documents per query, ordered by the package tie rule."""

    def describe(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in sorted(self.config().items()))
        return f"{self.type}:{opts}" if opts else self.type


ArmFactory = Callable[..., Arm]
ARM_TYPES: dict[str, ArmFactory] = {}


def register_arm(type_name: str, *, code_version: str | None = None) -> Callable[[type[Arm]], type[Arm]]:
    """Class decorator: make an arm available to ``--arm TYPE:...`` and TOML configs, and set its
    :attr:`Arm.code_version` when given (``@register_arm("rrf", code_version="2")``: **bump it when the
    arm's output changes**).

    Registration happens when the defining module is imported by
    :func:`bakeoff.arms.registry.arm_types` (never at package import).
    """

    def deco(cls: type[Arm]) -> type[Arm]:
        cls.type = type_name
        if code_version is not None:
            cls.code_version = str(code_version)
        ARM_TYPES[type_name] = cls
        return cls

    return deco


def usage_delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """What ``after`` adds to ``before``: each numeric (not bool) entry of ``after`` minus the same entry of
    ``before`` (0 when absent), keeping only the entries that changed."""
    out: dict[str, float] = {}
    for key, value in after.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            d = value - before.get(key, 0)
            if d:
                out[key] = d
    return out


def subtree(arm: Arm) -> list[Arm]:
    """``arm`` and every arm below it, each once (children before parents)."""
    seen: dict[str, Arm] = {}

    def visit(a: Arm) -> None:
        for c in a.children():
            visit(c)
        seen.setdefault(a.fingerprint(), a)

    visit(arm)
    return list(seen.values())


def all_single_latency(arm: Arm) -> bool:
    """Whether every arm of ``arm``'s subtree has ``latency_mode == "single"`` (can be timed one query at a time)."""
    return all(getattr(a, "latency_mode", "single") == "single" for a in subtree(arm))


def subtree_sum(arm: Arm, timings: Mapping[str, Mapping[str, Any]], key: str) -> float:
    """Sum of ``timings[fp][key]`` over the distinct arms of ``arm``'s subtree."""
    return float(sum(float(timings.get(a.fingerprint(), {}).get(key, 0.0) or 0.0) for a in subtree(arm)))


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
