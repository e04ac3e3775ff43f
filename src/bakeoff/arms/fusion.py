"""Fusion arms: combine the runs of other arms into one ranking.

A fused arm is pure composition: it holds its input arms (:meth:`children`,
so its fingerprint covers theirs) and obtains their runs through
:meth:`bakeoff.runner.context.Context.search`, so an input run already computed or
cached for the same corpus, queries, depth and mask is reused, never
recomputed. Each input contributes its top ``depth`` documents per query
(its *candidates*, ``R_i``, in tie-rule order); the fused ranking is ordered by the
package tie rule (:func:`bakeoff.data.ranking.top_k`: score desc, then doc id desc)
and cut to ``k``. Masks are passed to the inputs unchanged, so a masked document can
never appear in a fused run. Scores are computed by the pure functions of this module
(:func:`rrf_scores`, :func:`fuse_scores` ...) from per-query ranked lists, so they can be
used without any arm. Throughout, ``r_i(d)`` is the 1-based position of ``d`` in ``R_i``
and sums run over the inputs in their given order (deterministic floating point).

Three arm types:

* ``rrf`` -- (weighted) reciprocal rank fusion;
* ``convex`` -- a convex combination of normalised scores (weights sum to 1; a document
  missing from an input gets that input's *worst* normalised score);
* ``fuse`` -- the classic metasearch methods (``method=``) with the normalisations
  (``norm=``) of ranx's ``fuse`` (Bassani, ECIR 2022), which it reproduces to 1e-9
  (``tests/arms/test_fusion_ranx.py``).

**RRF** (Cormack, Clarke & Büttcher, 2009), weighted::

    score(d) = sum over inputs i with d in R_i of w_i / (k_rrf + r_i(d))

``k_rrf`` is the RRF constant (default 60; option ``rank_constant``, Elasticsearch's and OpenSearch's
name for it, not ``k``, which is the cutoff of every other option), ``w_i`` the input's weight
(default 1 each: plain RRF). A document absent from an input's top ``depth`` gets
nothing from that input.

**Convex** score fusion (arm ``convex``)::

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

**The fuse arm** (ranx's definitions; ``n_i = |R_i|``, ``eps = 1e-9``). First each input's
candidate scores are normalised per query (:func:`normalize`, option ``norm``):

* ``minmax``: ``(s - min) / max(max - min, eps)``;
* ``zscore``: ``(s - mean) / max(std, eps)``, population std (``ddof=0``) (ranx ``zmuv``);
* ``sum``: ``(s - min) / max(sum(s) - n_i * min, eps)`` (shifted to 0, then sums to 1);
* ``rank``: ``1 - (r_i(d) - 1) / n_i`` (1 for the first, ``1/n_i`` for the last);
* ``none``: the raw scores.

A constant input normalises to 0 (minmax, zscore, sum). Then, with ``s_i(d)`` the
normalised score and **a document missing from R_i contributing 0** (for ``zscore`` that
is the input's mean -- unlike the ``convex`` arm, which gives it the input's minimum):

* ``method=sum`` (CombSUM; weighted: ranx ``wsum``): ``sum_{i: d in R_i} w_i * s_i(d)``;
* ``method=mnz`` (CombMNZ; weighted: ranx ``wmnz``):
  ``(sum_{i: d in R_i} s_i(d)) * (sum_{i: d in R_i} w_i)`` -- with unit weights, the sum
  times the number of inputs that retrieved ``d``;
* ``method=max`` (CombMAX): ``max_{i: d in R_i} s_i(d)``;
* ``method=rrf``: weighted RRF as above (scores play no part, so ``norm`` is refused);
* ``method=isr`` (inverse square rank, Mourão et al. 2015):
  ``(sum_{i: d in R_i} 1 / r_i(d)^2) * |{i: d in R_i}|``;
* ``method=borda`` (BordaFuse, Aslam & Montague 2001; weighted: ranx ``w_bordafuse``):
  with ``C`` the union of the candidates and ``N = |C|``, input ``i`` gives ``N - r_i(d) + 1``
  points to each ``d`` in ``R_i`` and ``(N - n_i + 1) / 2`` to each other document of ``C``;
  ``score(d) = sum_i w_i * points_i(d)``.

* ``method=min`` (CombMIN): ``min_{i: d in R_i} s_i(d)``;
* ``method=med`` (CombMED): the median of ``{s_i(d): d in R_i}`` (mean of the middle two when even);
* ``method=anz`` (CombANZ): ``(sum_{i: d in R_i} s_i(d)) / |{i: d in R_i}|``;
* ``method=gmnz`` (CombGMNZ, Lee 1997; option ``gamma``, default 1 = CombMNZ):
  ``(sum_{i: d in R_i} s_i(d)) * |{i: d in R_i}|^gamma``;
* ``method=log_isr``: ``(sum_{i: d in R_i} 1 / r_i(d)^2) * ln |{i: d in R_i}|``;
* ``method=logn_isr`` (option ``sigma`` in [0, 1], default 0.01):
  ``(sum_{i: d in R_i} 1 / r_i(d)^2) * ln(|{i: d in R_i}| + sigma)``.

**Other names.** ranx's spellings and the literature's are accepted and mean the methods above
(:data:`METHOD_ALIASES`, :data:`NORM_ALIASES`): ``wsum``/``combsum`` = ``sum``, ``wmnz``/``combmnz`` =
``mnz``, ``combmax`` = ``max``, ``combmin``, ``combmed``, ``combanz``, ``combgmnz``, ``bordafuse`` and
``w_bordafuse`` = ``borda``; norms ``min-max`` = ``minmax``, ``zmuv`` = ``zscore``. ranx's fusion
methods that are **not** here, and why (:data:`UNSUPPORTED_METHODS`): ``bayesfuse``, ``mapfuse``,
``posfuse``, ``probfuse``, ``segfuse`` and ``slidefuse`` are *supervised*: each learns
per-position relevance probabilities of every input from judged training queries (ranx's
``*_train`` functions), so a bake-off would need a training split for them (``bakeoff tune``'s dev
split is the natural one; not wired); ``mixed`` builds on the same trained probabilities;
``condorcet``, ``w_condorcet`` and ``rbc`` are unsupervised and could be added (pairwise
majority voting, rank-biased centroids), not done yet.

Weights (``weights=w1+w2+...``, one per input, >= 0, not all 0; default 1 each) apply to
``rrf``, ``sum``, ``mnz`` and ``borda``; ``max`` and ``isr`` take none. ``norm`` (default
``minmax``, ranx's default) applies to ``sum``, ``mnz`` and ``max``; ``rank_constant`` (the RRF
constant) only to ``rrf``. An option a method does not use is refused rather than ignored.

Ties: ranx orders its inputs by score with an unstable sort, so rank-based methods can
differ from ranx where an input has tied scores; bakeoff ranks every input by the package
tie rule first, and computes exactly ranx's formulas on that order.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..data.model import Queries, Run
from ..data.ranking import NaNScoreError, top_k
from ..errors import ConfigError
from ..validation import Fraction, NonNegative, PositiveInt
from .base import Arm, ArmContext, DocMask, register_arm

__all__ = [
    "FUSE_METHODS",
    "FUSE_NORMS",
    "METHOD_ALIASES",
    "NORMS",
    "NORM_ALIASES",
    "UNSUPPORTED_METHODS",
    "ConvexArm",
    "FuseArm",
    "RRFArm",
    "borda_scores",
    "canonical_method",
    "canonical_norm",
    "comb_anz",
    "comb_gmnz",
    "comb_max",
    "comb_med",
    "comb_min",
    "comb_mnz",
    "comb_sum",
    "convex_scores",
    "fuse_scores",
    "isr_scores",
    "log_isr_scores",
    "logn_isr_scores",
    "normalize",
    "normalize_scores",
    "rrf_scores",
]

NORMS = ("minmax", "zscore")
#: Methods of the ``fuse`` arm.
FUSE_METHODS = ("sum", "mnz", "max", "min", "med", "anz", "gmnz", "rrf", "isr", "log_isr", "logn_isr", "borda")
#: Normalisations of the ``fuse`` arm (ranx's ``min-max``, ``zmuv``, ``sum``, ``rank``, ``None``).
FUSE_NORMS = ("minmax", "zscore", "sum", "rank", "none")
#: ranx's method names (``ranx.fuse(method=...)``) and the literature's CombX names, for the methods above.
METHOD_ALIASES = {"wsum": "sum", "combsum": "sum", "comb_sum": "sum", "wmnz": "mnz", "combmnz": "mnz",
                  "comb_mnz": "mnz", "combmax": "max", "comb_max": "max", "combmin": "min", "comb_min": "min",
                  "combmed": "med", "comb_med": "med", "combanz": "anz", "comb_anz": "anz", "combgmnz": "gmnz",
                  "comb_gmnz": "gmnz", "bordafuse": "borda", "w_bordafuse": "borda"}
#: ranx's normalisation names (``ranx.fuse(norm=...)``).
NORM_ALIASES = {"min-max": "minmax", "min_max": "minmax", "zmuv": "zscore", "z-score": "zscore"}
#: ranx methods bakeoff does not compute, and why (module docstring).
UNSUPPORTED_METHODS = {
    **dict.fromkeys(("bayesfuse", "mapfuse", "posfuse", "probfuse", "segfuse", "slidefuse"),
                    "supervised: it learns per-position relevance probabilities from judged training queries "
                    "(ranx's *_train), which a bake-off has no split for"),
    "mixed": "supervised: built on probabilities learnt from judged training queries",
    **dict.fromkeys(("condorcet", "w_condorcet", "rbc"), "not implemented yet (unsupervised; could be added)"),
}
_WEIGHTED = ("sum", "mnz", "rrf", "borda")
_SCORE_BASED = ("sum", "mnz", "max", "min", "med", "anz", "gmnz")
_EPS = 1e-9
log = logging.getLogger("bakeoff")

Ranked = Sequence[tuple[str, float]]


def _weights_or_ones(weights: Sequence[float] | None, n: int) -> Sequence[float]:
    if weights is None:
        return (1.0,) * n
    if len(weights) != n:
        raise ValueError(f"{len(weights)} weights for {n} rankings")
    return weights


def rrf_scores(rankings: Sequence[Ranked], *, k_rrf: float, weights: Sequence[float] | None = None) -> dict[str, float]:
    """Weighted reciprocal-rank-fused scores of ranked lists (each already in tie-rule order):
    ``sum_i w_i / (k_rrf + r_i(d))`` (unit weights when ``weights`` is None)."""
    fused: dict[str, float] = {}
    if weights is None:
        for ranking in rankings:
            for r, (doc, _score) in enumerate(ranking, start=1):
                fused[doc] = fused.get(doc, 0.0) + 1.0 / (k_rrf + r)
        return fused
    for w, ranking in zip(_weights_or_ones(weights, len(rankings)), rankings, strict=True):
        for r, (doc, _score) in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + w * (1.0 / (k_rrf + r))
    return fused


def normalize_scores(scores: Sequence[float], *, norm: str) -> tuple[list[float], float]:
    """Normalised ``scores`` and the value a missing document gets (the ``convex`` arm's
    conventions, see module docstring)."""
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


def normalize(ranking: Ranked, *, norm: str) -> dict[str, float]:
    """One input's candidates normalised per query with the ``fuse`` arm's (ranx's)
    formulas: ``minmax``, ``zscore``, ``sum``, ``rank`` or ``none`` (module docstring)."""
    n = len(ranking)
    if n == 0:
        return {}
    docs = [d for d, _ in ranking]
    if norm == "rank":
        return {d: 1.0 - i / n for i, d in enumerate(docs)}
    s = np.fromiter((float(v) for _, v in ranking), dtype=np.float64, count=n)
    with np.errstate(invalid="ignore"):  # ±inf gives NaN, reported with the arm and query by the search
        out = _normalized(s, norm=norm, n=n)
    return dict(zip(docs, out.tolist()))


def _normalized(s: np.ndarray, *, norm: str, n: int) -> np.ndarray:
    if norm == "none":
        out = s
    elif norm == "minmax":
        lo = s.min()
        out = (s - lo) / max(float(s.max() - lo), _EPS)
    elif norm == "zscore":
        out = (s - s.mean()) / max(float(s.std()), _EPS)
    elif norm == "sum":
        lo = s.min()
        out = (s - lo) / max(float(s.sum() - lo * n), _EPS)
    else:
        raise ConfigError(f"norm must be one of {', '.join(FUSE_NORMS)}, got {norm!r}")
    return out


def _union(tables: Sequence[Any]) -> dict[str, None]:
    docs: dict[str, None] = {}
    for t in tables:
        docs.update((d, None) for d in (t if isinstance(t, dict) else (d for d, _ in t)))
    return docs


def comb_sum(tables: Sequence[dict[str, float]], *, weights: Sequence[float] | None = None) -> dict[str, float]:
    """CombSUM (weighted): ``sum_{i: d in t_i} w_i * t_i(d)`` over the union of the tables."""
    ws = _weights_or_ones(weights, len(tables))
    return {d: sum([w * t.get(d, 0.0) for w, t in zip(ws, tables)]) for d in _union(tables)}


def comb_mnz(tables: Sequence[dict[str, float]], *, weights: Sequence[float] | None = None) -> dict[str, float]:
    """CombMNZ (weighted as ranx's ``wmnz``): ``(sum_{i: d in t_i} t_i(d)) * (sum_{i: d in t_i} w_i)``."""
    ws = _weights_or_ones(weights, len(tables))
    out: dict[str, float] = {}
    for d in _union(tables):
        hits = [(t[d], w) for w, t in zip(ws, tables) if d in t]
        out[d] = sum([s for s, _ in hits]) * sum([w for _, w in hits])
    return out


def canonical_method(method: str, *, where: str = "fuse") -> str:
    """The method ``method`` names (one of :data:`FUSE_METHODS` or ``convex``; ranx's and the CombX spellings
    accepted); a ranx method bakeoff does not compute is a ConfigError saying why."""
    m = str(method).strip().lower()
    m = METHOD_ALIASES.get(m, m)
    if m in UNSUPPORTED_METHODS:
        raise ConfigError(f"{where}: method {method!r} is not supported: {UNSUPPORTED_METHODS[m]}")
    return m


def canonical_norm(norm: str | None) -> str | None:
    """The normalisation ``norm`` names (ranx's ``min-max`` and ``zmuv`` accepted); None stays None."""
    if norm is None:
        return None
    n = str(norm).strip().lower()
    return NORM_ALIASES.get(n, n)


def _combine(tables: Sequence[dict[str, float]], how: Any) -> dict[str, float]:
    """``how(scores of d in the inputs that hold it, in input order)`` for every ``d`` of the union."""
    return {d: how([t[d] for t in tables if d in t]) for d in _union(tables)}


def comb_min(tables: Sequence[dict[str, float]]) -> dict[str, float]:
    """CombMIN: ``min_{i: d in t_i} t_i(d)``."""
    return _combine(tables, min)


def comb_med(tables: Sequence[dict[str, float]]) -> dict[str, float]:
    """CombMED: the median of the scores of ``d`` (numpy's: the mean of the middle two when even)."""
    return _combine(tables, lambda xs: float(np.median(np.asarray(xs, dtype=np.float64))))


def comb_anz(tables: Sequence[dict[str, float]]) -> dict[str, float]:
    """CombANZ: ``(sum_{i: d in t_i} t_i(d)) / |{i: d in t_i}|``."""
    return _combine(tables, lambda xs: sum(xs) / len(xs))


def comb_gmnz(tables: Sequence[dict[str, float]], *, gamma: float = 1.0) -> dict[str, float]:
    """CombGMNZ: ``(sum_{i: d in t_i} t_i(d)) * |{i: d in t_i}|^gamma`` (``gamma=1``: CombMNZ)."""
    return _combine(tables, lambda xs: sum(xs) * (len(xs) ** gamma))


def _isr_tables(rankings: Sequence[Ranked]) -> list[dict[str, float]]:
    return [{d: 1.0 / (r * r) for r, (d, _) in enumerate(ranking, start=1)} for ranking in rankings]


def log_isr_scores(rankings: Sequence[Ranked]) -> dict[str, float]:
    """Log-ISR: ``(sum_{i: d in R_i} 1 / r_i(d)^2) * ln |{i: d in R_i}|``."""
    return _combine(_isr_tables(rankings), lambda xs: sum(xs) * math.log(len(xs)))


def logn_isr_scores(rankings: Sequence[Ranked], *, sigma: float = 0.01) -> dict[str, float]:
    """LogN-ISR: ``(sum_{i: d in R_i} 1 / r_i(d)^2) * ln(|{i: d in R_i}| + sigma)``."""
    return _combine(_isr_tables(rankings), lambda xs: sum(xs) * math.log(len(xs) + sigma))


def comb_max(tables: Sequence[dict[str, float]]) -> dict[str, float]:
    """CombMAX: ``max_{i: d in t_i} t_i(d)``."""
    return {d: max(t[d] for t in tables if d in t) for d in _union(tables)}


def isr_scores(rankings: Sequence[Ranked]) -> dict[str, float]:
    """Inverse square rank: ``(sum_{i: d in R_i} 1 / r_i(d)^2) * |{i: d in R_i}|``."""
    return comb_mnz([{d: 1.0 / (r * r) for r, (d, _) in enumerate(ranking, start=1)} for ranking in rankings])


def borda_scores(rankings: Sequence[Ranked], *, weights: Sequence[float] | None = None) -> dict[str, float]:
    """BordaFuse (weighted): ``sum_i w_i * points_i(d)`` over the union ``C`` of the candidates,
    ``points_i(d) = N - r_i(d) + 1`` for ``d`` in ``R_i``, else ``(N - n_i + 1) / 2`` (``N = |C|``)."""
    cand = _union(rankings)
    big_n = len(cand)
    tables = []
    for ranking in rankings:
        pts = {d: float(big_n - i) for i, (d, _) in enumerate(ranking)}
        unranked = (big_n - len(ranking) + 1) / 2
        tables.append({d: pts.get(d, unranked) for d in cand})
    return comb_sum(tables, weights=weights)


def fuse_scores(rankings: Sequence[Ranked], *, method: str, norm: str = "minmax", k_rrf: float = 60.0,
                weights: Sequence[float] | None = None, gamma: float = 1.0, sigma: float = 0.01) -> dict[str, float]:
    """The ``fuse`` arm's scores of one query's input rankings (each in tie-rule order; module
    docstring). ``norm`` is used by the score-based methods (``sum``/``mnz``/``max``/``min``/``med``/
    ``anz``/``gmnz``), ``k_rrf`` by ``rrf``, ``weights`` by ``sum``/``mnz``/``rrf``/``borda`` (None: unit
    weights), ``gamma`` by ``gmnz``, ``sigma`` by ``logn_isr``."""
    if method == "rrf":
        return rrf_scores(rankings, k_rrf=k_rrf, weights=weights)
    if method == "isr":
        return isr_scores(rankings)
    if method == "log_isr":
        return log_isr_scores(rankings)
    if method == "logn_isr":
        return logn_isr_scores(rankings, sigma=sigma)
    if method == "borda":
        return borda_scores(rankings, weights=weights)
    tables = [normalize(r, norm=norm) for r in rankings]
    if method == "sum":
        return comb_sum(tables, weights=weights)
    if method == "mnz":
        return comb_mnz(tables, weights=weights)
    if method == "max":
        return comb_max(tables)
    if method == "min":
        return comb_min(tables)
    if method == "med":
        return comb_med(tables)
    if method == "anz":
        return comb_anz(tables)
    if method == "gmnz":
        return comb_gmnz(tables, gamma=gamma)
    raise ConfigError(f"fuse: method must be one of {', '.join(FUSE_METHODS)}, got {method!r}")


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
        raise ConfigError(f"arm {name or type_name!r} ({type_name}): arms= needs at least two arms, "
                          "e.g. arms=bm25+dense")
    return arms


def _positive_int(value: Any, key: str, type_name: str) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{type_name}: {key} must be an integer, got {value!r}") from None
    if out < 1 or out != float(value):
        raise ConfigError(f"{type_name}: {key} must be a positive integer, got {value!r}")
    return out


def _rrf_constant(k: Any, type_name: str) -> float:
    try:
        out = float(k)
    except (TypeError, ValueError):
        raise ConfigError(f"{type_name}: rank_constant (the RRF constant) must be a number, got {k!r}") from None
    if not (out >= 0 and math.isfinite(out)):
        raise ConfigError(f"{type_name}: rank_constant (the RRF constant) must be >= 0, got {k!r}")
    return out


def _split_numbers(value: Any, key: str, type_name: str) -> tuple[float, ...]:
    if isinstance(value, str):
        parts: list[Any] = [p for p in value.replace(";", "+").split("+") if p.strip()]
    elif isinstance(value, (int, float)):
        parts = [value]
    else:
        parts = list(value)
    try:
        return tuple(float(p) for p in parts)
    except (TypeError, ValueError):
        raise ConfigError(f"{type_name}: {key} must be numbers, got {value!r}") from None


def _free_weights(weights: Any, n: int, type_name: str) -> tuple[float, ...] | None:
    """Non-negative weights, one per input, not all zero; ``None`` when absent or all 1 (plain)."""
    if weights is None:
        return None
    ws = _split_numbers(weights, "weights", type_name)
    if len(ws) != n:
        raise ConfigError(f"{type_name}: {len(ws)} weights for {n} arms")
    if any(not (math.isfinite(w) and w >= 0) for w in ws) or not any(ws):
        raise ConfigError(f"{type_name}: weights must be >= 0 and not all 0, got {list(ws)}")
    return None if all(w == 1.0 for w in ws) else ws


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
        out = {}
        for qid in queries.ids:
            rankings = [run.get(qid) for run in runs]
            try:
                out[qid] = top_k(self._fuse(rankings), k)
            except NaNScoreError as exc:  # an input's ±inf normalised to NaN: say whose
                raise exc.within(f"arm {self.name!r}, query {qid!r}{_not_finite(runs, rankings)}") from None
        return Run.from_ranked(self.name, out)


def _not_finite(runs: Sequence[Run], rankings: Sequence[Ranked]) -> str:
    """`` (input 'a' scores document 'd' inf: ...)`` for the first input score that is not finite, else ``""``."""
    for run, ranking in zip(runs, rankings, strict=True):
        for doc, score in ranking:
            if not math.isfinite(score):
                return (f" (input {run.name!r} scores document {doc!r} {score}: score fusion normalises scores, "
                        "which needs finite ones; use rrf, or fuse with norm=rank)")
    return ""


@register_arm("rrf", code_version="1")
class RRFArm(_FusionArm):
    """(Weighted) reciprocal rank fusion of two or more arms (formula in the module docstring).

    Options: ``arms`` (the inputs, ``a+b`` on the CLI), ``rank_constant`` (the RRF constant
    ``k_rrf``, default 60), ``depth`` (candidates taken from
    each input, default 100), ``weights`` (one per input, ``2+1`` on the CLI, >= 0;
    default 1 each).
    """

    def __init__(self, *, name: str | None = None, arms: Any = None, rank_constant: NonNegative | None = None,
                 depth: PositiveInt = 100, weights: Any = None) -> None:
        super().__init__(name=name, arms=arms, depth=depth)
        self.k_rrf = _rrf_constant(60 if rank_constant is None else rank_constant, "rrf")
        self.weights = _free_weights(weights, len(self.arms), "rrf")

    def config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"k_rrf": self.k_rrf, "depth": self.depth}
        if self.weights is not None:  # absent when plain, so unweighted fingerprints stay as they were
            cfg["weights"] = list(self.weights)
        return cfg

    def _fuse(self, rankings: Sequence[Ranked]) -> dict[str, float]:
        return rrf_scores(rankings, k_rrf=self.k_rrf, weights=self.weights)


def _parse_weights(weight: Any, weights: Any, n: int) -> tuple[float, ...]:
    if weights is not None:
        ws = _split_numbers(weights, "weights", "convex")
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


@register_arm("fuse", code_version="1")  # new methods and options leave the old ones' configs unchanged
class FuseArm(_FusionArm):
    """CombSUM, CombMNZ, CombMAX, CombMIN, CombMED, CombANZ, CombGMNZ, RRF, ISR, Log-ISR, LogN-ISR or
    BordaFuse of two or more arms, as ranx's ``fuse`` computes them (formulas and conventions in the
    module docstring; ranx's method and norm names accepted).

    Options: ``arms``, ``method`` (``sum`` default, ``mnz``, ``max``, ``min``, ``med``, ``anz``, ``gmnz``,
    ``rrf``, ``isr``, ``log_isr``, ``logn_isr``, ``borda``; ``gamma`` for gmnz, ``sigma`` for logn_isr),
    ``norm`` (``minmax`` default, ``zscore``, ``sum``, ``rank``, ``none``; for the score-based methods),
    ``weights`` (one per input, >= 0; for sum/mnz/rrf/borda), ``rank_constant`` (the RRF constant,
    default 60; for rrf only), ``depth`` (candidates per input,
    default 100). An option the method does not use is refused.
    """

    def __init__(self, *, name: str | None = None, arms: Any = None, method: str = "sum", norm: str | None = None,
                 weights: Any = None, rank_constant: float | None = None, depth: int = 100,
                 gamma: float | None = None, sigma: float | None = None) -> None:
        super().__init__(name=name, arms=arms, depth=depth)
        self.method = canonical_method(method)
        norm = canonical_norm(norm)
        if gamma is not None and self.method != "gmnz":
            raise ConfigError(f"fuse: gamma= is for method=gmnz only (method={self.method})")
        if sigma is not None and self.method != "logn_isr":
            raise ConfigError(f"fuse: sigma= is for method=logn_isr only (method={self.method})")
        self.gamma = _finite_number(1.0 if gamma is None else gamma, "gamma") if self.method == "gmnz" else None
        self.sigma = _finite_number(0.01 if sigma is None else sigma, "sigma") if self.method == "logn_isr" else None
        if self.sigma is not None and not 0.0 <= self.sigma <= 1.0:
            raise ConfigError(f"fuse: sigma must lie in [0, 1] (as ranx requires), got {sigma!r}")
        if self.method not in FUSE_METHODS:
            raise ConfigError(f"fuse: method must be one of {', '.join(FUSE_METHODS)}, got {method!r}")
        if norm is not None and self.method not in _SCORE_BASED:
            raise ConfigError(f"fuse: norm= is for methods {', '.join(_SCORE_BASED)}; method={self.method} "
                              "uses ranks only")
        self.norm = None if self.method not in _SCORE_BASED else str(norm or "minmax").lower()
        if self.norm is not None and self.norm not in FUSE_NORMS:
            raise ConfigError(f"fuse: norm must be one of {', '.join(FUSE_NORMS)}, got {norm!r}")
        if rank_constant is not None and self.method != "rrf":
            raise ConfigError(f"fuse: rank_constant= is the RRF constant, for method=rrf only (method={self.method})")
        self.k_rrf = _rrf_constant(60 if rank_constant is None else rank_constant, "fuse") if self.method == "rrf" \
            else None
        if weights is not None and self.method not in _WEIGHTED:
            raise ConfigError(f"fuse: weights= is for methods {', '.join(_WEIGHTED)}, not {self.method}")
        self.weights = _free_weights(weights, len(self.arms), "fuse")

    def config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"method": self.method, "depth": self.depth}
        if self.norm is not None:
            cfg["norm"] = self.norm
        if self.k_rrf is not None:
            cfg["k_rrf"] = self.k_rrf
        if self.weights is not None:
            cfg["weights"] = list(self.weights)
        if self.gamma is not None:
            cfg["gamma"] = self.gamma
        if self.sigma is not None:
            cfg["sigma"] = self.sigma
        return cfg

    def _fuse(self, rankings: Sequence[Ranked]) -> dict[str, float]:
        return fuse_scores(rankings, method=self.method, norm=self.norm or "minmax", k_rrf=self.k_rrf or 0.0,
                           weights=self.weights, gamma=1.0 if self.gamma is None else self.gamma,
                           sigma=0.01 if self.sigma is None else self.sigma)


def _finite_number(value: Any, key: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"fuse: {key} must be a number, got {value!r}") from None
    if not math.isfinite(out):
        raise ConfigError(f"fuse: {key} must be finite, got {value!r}")
    return out
