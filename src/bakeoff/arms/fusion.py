"""Fusion arms: combine the runs of other arms into one ranking.

A fused arm is pure composition: it holds its input arms (:meth:`children`,
so its fingerprint covers theirs) and obtains their runs through
:meth:`bakeoff.runner.context.Context.search`, so an input run already computed or
cached for the same corpus, queries, depth and mask is reused, never
recomputed. Each input contributes its top ``depth`` documents per query
(its *candidates*); the fused ranking is ordered by the package tie rule
(:func:`bakeoff.data.ranking.top_k`: score desc, then doc id desc) and cut to
``k``. Masks are passed to the inputs unchanged, so a masked document can
never appear in a fused run.

**RRF** (Cormack, Clarke & Büttcher, 2009)::

    score(d) = sum over inputs i containing d of 1 / (k_rrf + rank_i(d))

with ``rank_i(d)`` the 1-based position of ``d`` in input ``i``'s run (which is
already in tie-rule order) and ``k_rrf`` the RRF constant (default 60; CLI
key ``k``). A document absent from an input's top ``depth`` gets nothing from
that input. Terms are added in input order (deterministic floating point).

**Convex** score fusion::

    score(d) = sum_i w_i * norm_i(s_i(d))        (w_i >= 0, sum_i w_i = 1)

``norm_i`` normalises input ``i``'s candidate scores *per query*:

* ``minmax``: ``(s - min) / (max - min)``, so the best candidate gets 1 and the
  worst 0;
* ``zscore``: ``(s - mean) / std`` with the population standard deviation
  (``ddof=0``).

Conventions: a document missing from input ``i``'s candidates gets input
``i``'s *normalised minimum* (0 for minmax; ``(min - mean) / std`` for
zscore), i.e. it is treated like that input's worst candidate, never better.
An input whose candidates all share one score (including a single candidate)
carries no information and normalises every document, present or missing, to
0; an input with no candidates for a query contributes 0 to every document.
With two inputs, ``weight=w`` means ``w`` for the first and ``1 - w`` for the
second; with more, give ``weights`` (a list, or ``"0.5+0.3+0.2"`` on the CLI).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..data.model import Queries, Run
from ..data.ranking import top_k
from ..errors import ConfigError
from ..validation import Fraction, NonNegative, PositiveInt
from .base import Arm, ArmContext, DocMask, register_arm

__all__ = ["NORMS", "ConvexArm", "RRFArm", "convex_scores", "normalize_scores", "rrf_scores"]

NORMS = ("minmax", "zscore")

Ranked = Sequence[tuple[str, float]]


def rrf_scores(rankings: Sequence[Ranked], *, k_rrf: float) -> dict[str, float]:
    """Reciprocal-rank-fused scores of ranked lists (each already in tie-rule order)."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for r, (doc, _score) in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k_rrf + r)
    return fused


def normalize_scores(scores: Sequence[float], *, norm: str) -> tuple[list[float], float]:
    """Normalised ``scores`` and the value a missing document gets (see module docstring)."""
    if not scores:
        return [], 0.0
    lo, hi = min(scores), max(scores)
    if hi == lo:
        return [0.0] * len(scores), 0.0
    if norm == "minmax":
        span = hi - lo
        return [(s - lo) / span for s in scores], 0.0
    if norm == "zscore":
        n = len(scores)
        mean = math.fsum(scores) / n
        std = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / n)
        if std == 0.0:  # pragma: no cover - only reachable through rounding
            return [0.0] * n, 0.0
        return [(s - mean) / std for s in scores], (lo - mean) / std
    raise ConfigError(f"norm must be one of {', '.join(NORMS)}, got {norm!r}")


def convex_scores(rankings: Sequence[Ranked], *, weights: Sequence[float], norm: str) -> dict[str, float]:
    """Convex-fused scores over the union of the inputs' candidates."""
    normed: list[tuple[dict[str, float], float]] = []
    for ranking in rankings:
        values, missing = normalize_scores([float(s) for _, s in ranking], norm=norm)
        normed.append(({d: v for (d, _), v in zip(ranking, values, strict=True)}, missing))
    docs: dict[str, None] = {}
    for ranking in rankings:
        docs.update((d, None) for d, _ in ranking)
    fused: dict[str, float] = {}
    for doc in docs:
        total = 0.0
        for w, (table, missing) in zip(weights, normed, strict=True):
            total += w * table.get(doc, missing)
        fused[doc] = total
    return fused


def _arm_list(arms: Any, *, type_name: str, name: str | None) -> list[Arm]:
    if isinstance(arms, Arm):
        arms = [arms]
    arms = list(arms or [])
    if len(arms) < 2 or not all(isinstance(a, Arm) for a in arms):
        raise ConfigError(f"arm {name or type_name!r} ({type_name}): arms= needs at least two arms, e.g. arms=bm25+dense")
    return arms


def _positive_int(value: Any, key: str, type_name: str) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{type_name}: {key} must be an integer, got {value!r}") from None
    if out < 1 or out != float(value):
        raise ConfigError(f"{type_name}: {key} must be a positive integer, got {value!r}")
    return out


class _FusionArm(Arm):
    """Shared plumbing: inputs, candidate depth, fetching the inputs' runs."""

    def __init__(self, *, name: str | None, arms: Any, depth: int) -> None:
        super().__init__(name=name)
        self.arms = _arm_list(arms, type_name=self.type, name=name)
        self.depth = _positive_int(depth, "depth", self.type)

    def children(self) -> Sequence[Arm]:
        return tuple(self.arms)

    def index(self, corpus: Any, *, ctx: ArmContext) -> None:
        """Nothing of its own: inputs are indexed by ``ctx.search`` when first needed."""

    def _input_runs(self, queries: Queries, *, ctx: ArmContext, mask: DocMask | None) -> list[Run]:
        return [ctx.search(arm, queries, k=self.depth, mask=mask) for arm in self.arms]

    def _fuse(self, rankings: Sequence[Ranked]) -> dict[str, float]:
        raise NotImplementedError

    def search(self, queries: Queries, *, k: int, ctx: ArmContext, mask: DocMask | None = None) -> Run:
        runs = self._input_runs(queries, ctx=ctx, mask=mask)
        out = {qid: top_k(self._fuse([run.get(qid) for run in runs]), k) for qid in queries.ids}
        return Run.from_ranked(self.name, out)


@register_arm("rrf", code_version="1")
class RRFArm(_FusionArm):
    """Reciprocal rank fusion of two or more arms (formula in the module docstring).

    Options: ``arms`` (the inputs, ``a+b`` on the CLI), ``k`` (the RRF constant
    ``k_rrf``, default 60 — not the cutoff), ``depth`` (candidates taken from
    each input, default 100).
    """

    def __init__(self, *, name: str | None = None, arms: Any = None, k: NonNegative = 60,
                 depth: PositiveInt = 100) -> None:
        super().__init__(name=name, arms=arms, depth=depth)
        try:
            self.k_rrf = float(k)
        except (TypeError, ValueError):
            raise ConfigError(f"rrf: k (the RRF constant) must be a number, got {k!r}") from None
        if not self.k_rrf >= 0:
            raise ConfigError(f"rrf: k (the RRF constant) must be >= 0, got {k!r}")

    def config(self) -> dict[str, Any]:
        return {"k_rrf": self.k_rrf, "depth": self.depth}

    def _fuse(self, rankings: Sequence[Ranked]) -> dict[str, float]:
        return rrf_scores(rankings, k_rrf=self.k_rrf)


def _parse_weights(weight: Any, weights: Any, n: int) -> tuple[float, ...]:
    if weights is not None:
        if isinstance(weights, str):
            parts = [p for p in weights.replace(";", "+").split("+") if p.strip()]
        elif isinstance(weights, (int, float)):
            parts = [weights]
        else:
            parts = list(weights)
        try:
            ws = tuple(float(p) for p in parts)
        except (TypeError, ValueError):
            raise ConfigError(f"convex: weights must be numbers, got {weights!r}") from None
    elif weight is not None:
        if n != 2:
            raise ConfigError(f"convex: weight= is for two arms; give weights=w1+w2+... for {n} arms")
        w = float(weight)
        ws = (w, 1.0 - w)
    else:
        ws = tuple(1.0 / n for _ in range(n))
    if len(ws) != n:
        raise ConfigError(f"convex: {len(ws)} weights for {n} arms")
    if any(not (0.0 <= w <= 1.0) for w in ws) or abs(math.fsum(ws) - 1.0) > 1e-9:
        raise ConfigError(f"convex: weights must lie in [0, 1] and sum to 1, got {list(ws)}")
    return ws


@register_arm("convex", code_version="1")
class ConvexArm(_FusionArm):
    """Convex combination of per-query normalised scores (formula and the
    missing-document convention in the module docstring).

    Options: ``arms``, ``weight`` (two arms: first gets ``weight``, second
    ``1 - weight``; default 0.5) or ``weights`` (one per arm, summing to 1),
    ``norm`` (``minmax`` or ``zscore``), ``depth`` (candidates per input).
    """

    def __init__(
        self,
        *,
        name: str | None = None,
        arms: Any = None,
        weight: Fraction | None = None,
        weights: Any = None,
        norm: str = "minmax",
        depth: PositiveInt = 100,
    ) -> None:
        super().__init__(name=name, arms=arms, depth=depth)
        if weight is not None and weights is not None:
            raise ConfigError("convex: give weight= (two arms) or weights=, not both")
        self.weights = _parse_weights(weight, weights, len(self.arms))
        self.norm = str(norm).lower()
        if self.norm not in NORMS:
            raise ConfigError(f"convex: norm must be one of {', '.join(NORMS)}, got {norm!r}")

    def config(self) -> dict[str, Any]:
        return {"weights": list(self.weights), "norm": self.norm, "depth": self.depth}

    def _fuse(self, rankings: Sequence[Ranked]) -> dict[str, float]:
        return convex_scores(rankings, weights=self.weights, norm=self.norm)
