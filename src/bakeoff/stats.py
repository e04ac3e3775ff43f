"""Statistics for comparing arms on the same queries: CIs, paired tests, Holm correction, effect size.

All tests are **paired**: two arms are scored on the same queries, and what varies
is the per-query difference ``d_i = a_i - b_i`` (i = 1..n).

* **Bootstrap CI of a mean** (:func:`bootstrap_ci`): ``scipy.stats.bootstrap`` with
  the BCa method (bias-corrected and accelerated), 10,000 resamples by default, a
  caller-supplied :class:`numpy.random.Generator`. The CI of a paired difference is
  the bootstrap CI of the mean of ``d`` (resampling queries, keeping pairs together).
  Constant data (every value equal) has the degenerate CI ``[v, v]``; BCa falls back to
  the percentile method if it cannot be computed (e.g. all but one value equal).
* **Paired randomization test** (:func:`paired_tests`): ``scipy.stats.permutation_test``
  with ``permutation_type="samples"`` on the statistic ``mean(d)``: under H0 the
  two labels of each query are exchangeable, i.e. every ``d_i`` may flip its sign
  (scipy's one-sample ``"samples"`` mode, equivalent to swapping ``a_i`` and ``b_i``).
  With ``2**n <= n_resamples`` scipy enumerates all ``2**n`` sign patterns (an exact
  test); otherwise it draws ``n_resamples`` random patterns and the p-value counts the
  observed statistic too (``(b + 1) / (R + 1)``). Two-sided.
* **Paired t-test**: ``scipy.stats.ttest_rel(a, b)``; ``t = mean(d) / (sd(d) / sqrt(n))``
  with ``sd`` the ``ddof=1`` standard deviation.
* **Effect size**: Cohen's ``d_z = mean(d) / sd(d)`` (``ddof=1``), the paired
  standardized mean difference (Lakens 2013). Rough reading: 0.2 small, 0.5 medium, 0.8 large.
* **Holm correction** (:func:`holm`) across the pairs of arms, separately for each
  measure: the family is "every pair of arms on this measure". Step-down: with the m
  p-values sorted ascending ``p_(1) <= ... <= p_(m)``, the adjusted value is
  ``p~_(i) = max_{j <= i} min(1, (m - j + 1) * p_(j))``. A difference is *significant*
  when its Holm-adjusted randomization p-value is below ``alpha`` (default 0.05).
  (``scipy.stats.false_discovery_control`` is Benjamini-Hochberg, a different, FDR
  procedure; it is not used.)

Degenerate cases never raise: when every ``d_i == 0`` both tests give ``p = 1``,
``t = 0`` and ``d_z = 0``; when ``d`` is a non-zero constant the t statistic and
``d_z`` are infinite (``sd = 0``) and the t-test p-value is 0, while the randomization
test still gives its exact p-value. Fewer than two queries: p-values are NaN.
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_RESAMPLES",
    "SMALL_SAMPLE",
    "Comparison",
    "MeanStat",
    "PairStat",
    "bootstrap_ci",
    "cohens_dz",
    "comparison",
    "derive_rng",
    "holm",
    "paired_tests",
    "small_sample_note",
]

#: Bootstrap resamples and randomization-test permutations by default.
DEFAULT_RESAMPLES = 10_000
#: Below this many queries the report warns that the statistics are fragile.
SMALL_SAMPLE = 30


def derive_rng(seed: int, *key: str) -> np.random.Generator:
    """A generator for one named computation (e.g. ``("ndcg@10", "bm25", "dense")``).

    Keyed by content, not by call order, so adding an arm does not change the
    resampling of the other pairs: ``default_rng(SeedSequence([seed, crc32(key)]))``.
    """
    h = zlib.crc32("\x1f".join(key).encode("utf-8"))
    return np.random.default_rng(np.random.SeedSequence([int(seed), h]))


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    rng: np.random.Generator,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Bootstrap ``confidence`` CI of the mean of ``values`` (BCa; see module docstring)."""
    from scipy import stats

    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return (math.nan, math.nan)
    if x.size == 1 or np.ptp(x) == 0.0:
        v = float(x[0])
        return (v, v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((x,), _mean, vectorized=True, n_resamples=n_resamples, confidence_level=confidence,
                              method="BCa", random_state=rng)
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            res = stats.bootstrap((x,), _mean, vectorized=True, n_resamples=n_resamples,
                                  confidence_level=confidence, method="percentile", random_state=rng)
            lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return (lo, hi)


def cohens_dz(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Paired effect size ``d_z = mean(a - b) / sd(a - b, ddof=1)``; 0 when every difference is 0."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if d.size < 2:
        return math.nan
    m = float(np.mean(d))
    sd = float(np.std(d, ddof=1))
    if sd == 0.0:
        return 0.0 if m == 0.0 else math.copysign(math.inf, m)
    return m / sd


def paired_tests(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    rng: np.random.Generator,
    n_resamples: int = DEFAULT_RESAMPLES,
) -> dict[str, float]:
    """Two-sided paired randomization test and paired t-test of ``mean(a) == mean(b)``.

    Returns ``{"p_perm", "p_ttest", "t", "exact"}`` (``exact`` is 1.0 when all ``2**n``
    sign patterns were enumerated).
    """
    from scipy import stats

    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.size} vs {y.size}")
    n = x.size
    if n < 2:
        return {"p_perm": math.nan, "p_ttest": math.nan, "t": math.nan, "exact": 0.0}
    d = x - y
    if not np.any(d):
        return {"p_perm": 1.0, "p_ttest": 1.0, "t": 0.0, "exact": 1.0}
    exact = 2.0**n <= n_resamples
    # One sample with permutation_type="samples" = independent sign flips of each d_i, which is the
    # same null distribution as swapping a_i and b_i in ((a, b), mean(a - b)) (and the same p-value
    # for the same generator), ~10x faster.
    perm = stats.permutation_test((d,), _mean, permutation_type="samples", vectorized=True,
                                  n_resamples=n_resamples, alternative="two-sided", random_state=rng)
    p_perm = float(min(1.0, perm.pvalue))
    if np.ptp(d) == 0.0:  # non-zero constant difference: sd = 0
        t, p_t = math.copysign(math.inf, float(d[0])), 0.0
    else:
        tt = stats.ttest_rel(x, y)
        t, p_t = float(tt.statistic), float(tt.pvalue)
    return {"p_perm": p_perm, "p_ttest": p_t, "t": t, "exact": 1.0 if exact else 0.0}


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order (NaN stays NaN, not counted in m)."""
    p = [float(v) for v in pvalues]
    idx = [i for i, v in enumerate(p) if not math.isnan(v)]
    m = len(idx)
    out = [math.nan] * len(p)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda j: (p[j], j))):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


@dataclass(frozen=True)
class MeanStat:
    """One arm's mean on one measure with its bootstrap CI."""

    arm: str
    measure: str
    n: int
    mean: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class PairStat:
    """Arm ``a`` minus arm ``b`` on one measure, over the same ``n`` queries."""

    measure: str
    a: str
    b: str
    n: int
    mean_a: float
    mean_b: float
    diff: float
    diff_ci_low: float
    diff_ci_high: float
    p_perm: float
    p_ttest: float
    t: float
    d_z: float
    p_perm_holm: float
    p_ttest_holm: float
    significant: bool
    exact: bool


@dataclass(frozen=True)
class Comparison:
    """Every arm's mean CI and every pair's tests, for every measure."""

    means: tuple[MeanStat, ...]
    pairs: tuple[PairStat, ...]
    n_queries: int
    n_resamples: int
    confidence: float
    alpha: float
    seed: int
    note: str | None

    def mean(self, arm: str, measure: str) -> MeanStat:
        for m in self.means:
            if m.arm == arm and m.measure == measure:
                return m
        raise KeyError((arm, measure))

    def pair(self, a: str, b: str, measure: str) -> PairStat:
        for p in self.pairs:
            if p.measure == measure and {p.a, p.b} == {a, b}:
                return p
        raise KeyError((a, b, measure))

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_queries": self.n_queries,
            "n_resamples": self.n_resamples,
            "confidence": self.confidence,
            "alpha": self.alpha,
            "seed": self.seed,
            "correction": "holm (per measure, across pairs of arms)",
            "test": "paired randomization (sign-flip) test, two-sided; paired t-test alongside",
            "ci": "bootstrap BCa",
            "note": self.note,
            "means": [_finite(asdict(m)) for m in self.means],
            "pairs": [_finite(asdict(p)) for p in self.pairs],
        }


def _finite(d: dict[str, Any]) -> dict[str, Any]:
    """JSON has no NaN/inf: non-finite floats become ``None``."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def small_sample_note(n: int) -> str | None:
    """A sentence for reports when there are fewer than :data:`SMALL_SAMPLE` queries."""
    if n >= SMALL_SAMPLE:
        return None
    return (f"Only {n} queries (fewer than {SMALL_SAMPLE}): a single query moves a mean by up to "
            f"{1.0 / max(n, 1):.3f}, confidence intervals are wide and the tests have little power; "
            "treat differences as indicative, not conclusive.")


def comparison(
    per_query: Mapping[str, Mapping[str, Mapping[str, float]]],
    *,
    query_ids: Sequence[str],
    measures: Sequence[str],
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    alpha: float = 0.05,
    seed: int = 0,
    progress: bool = False,
) -> Comparison:
    """Statistics for every arm and every pair of arms on every measure.

    ``per_query[arm][measure][qid]`` holds per-query values; every arm must have a
    value for every query in ``query_ids`` (a missing value is an error, never a 0).
    Pairs are ``(a, b)`` for ``a`` before ``b`` in the arms' order; ``diff = mean(a - b)``.
    """
    arms = list(per_query)
    qids = list(query_ids)
    mats: dict[tuple[str, str], np.ndarray] = {}
    for arm in arms:
        for m in measures:
            vals = per_query[arm].get(m)
            if vals is None:
                raise KeyError(f"arm {arm!r} has no per-query values for {m}")
            missing = [q for q in qids if q not in vals]
            if missing:
                raise KeyError(f"arm {arm!r} has no {m} value for {len(missing)} queries (e.g. {missing[0]!r})")
            mats[(arm, m)] = np.array([vals[q] for q in qids], dtype=float)
    from .progress import progress_bar

    n_pairs = len(arms) * (len(arms) - 1) // 2
    bar = progress_bar(total=len(measures) * (len(arms) + n_pairs), desc="statistics", enabled=progress,
                       unit="test")
    means: list[MeanStat] = []
    for m in measures:
        for arm in arms:
            x = mats[(arm, m)]
            lo, hi = bootstrap_ci(x, rng=derive_rng(seed, "mean", m, arm), n_resamples=n_resamples,
                                  confidence=confidence)
            means.append(MeanStat(arm, m, x.size, float(np.mean(x)) if x.size else math.nan, lo, hi))
            bar.update(1)
    pairs: list[PairStat] = []
    for m in measures:
        raw = []
        for a, b in combinations(arms, 2):
            x, y = mats[(a, m)], mats[(b, m)]
            tests = paired_tests(x, y, rng=derive_rng(seed, "perm", m, a, b), n_resamples=n_resamples)
            lo, hi = bootstrap_ci(x - y, rng=derive_rng(seed, "diff", m, a, b), n_resamples=n_resamples,
                                  confidence=confidence)
            raw.append((a, b, x, y, tests, lo, hi))
            bar.update(1)
        adj_perm = holm([r[4]["p_perm"] for r in raw])
        adj_t = holm([r[4]["p_ttest"] for r in raw])
        for (a, b, x, y, tests, lo, hi), pp, pt in zip(raw, adj_perm, adj_t):
            pairs.append(PairStat(
                measure=m, a=a, b=b, n=x.size,
                mean_a=float(np.mean(x)) if x.size else math.nan,
                mean_b=float(np.mean(y)) if y.size else math.nan,
                diff=float(np.mean(x - y)) if x.size else math.nan,
                diff_ci_low=lo, diff_ci_high=hi,
                p_perm=tests["p_perm"], p_ttest=tests["p_ttest"], t=tests["t"], d_z=cohens_dz(x, y),
                p_perm_holm=pp, p_ttest_holm=pt,
                significant=bool(not math.isnan(pp) and pp < alpha),
                exact=bool(tests["exact"]),
            ))
    bar.close()
    return Comparison(tuple(means), tuple(pairs), len(qids), n_resamples, confidence, alpha, seed,
                      small_sample_note(len(qids)))
