"""The leak-matched table: synthetic queries weighted to the leak of people's queries.

A generator that copies its documents' words makes every lexical arm look perfect; people's queries
copy less (:mod:`bakeoff.data.leak_bins`). Rather than throw away the copying queries, each synthetic
query is **weighted** so that the weighted leak histogram equals a target's (post-stratification on
the five leak bins of :data:`~bakeoff.data.leak_bins.LEAK_BINS`):

    p_b = n_b / n                         (share of the n queries with a leak value in bin b)
    t_b = target share of bin b, renormalised over the bins that hold a query
    w_i = t_b(i) / p_b(i)                 (mean weight 1)
    weighted mean of arm a = Σ w_i x_ai / Σ w_i

A bin that holds no query but has target mass cannot be represented: that mass (``uncovered``) is
reported and the target renormalised over the other bins. How much the weighting costs is the
**effective sample size** (Kish): ``ESS = (Σ w_i)² / Σ w_i²`` (= n with equal weights).

* **CIs**: percentile bootstrap over queries (resample queries with replacement, recompute the
  weighted mean), ``n_resamples`` draws.
* **Paired test** (:func:`weighted_sign_flip`): the randomization test of ``Σ w_i d_i = 0`` for the
  paired differences ``d_i`` of two arms, flipping the sign of each ``d_i`` independently (exact
  enumeration when ``2ⁿ <= n_resamples``); two-sided, ``p = (1 + #{|T*| >= |T|}) / (R + 1)`` for
  ``R`` random flips. Holm across every pair of arms.
* **Queries needed** (:func:`queries_needed`): for the best arm and the runner-up, the effective
  sample size at which a two-sided test at ``alpha`` has 80 % power for the observed weighted mean
  difference ``δ`` and weighted standard deviation ``s`` of the differences,
  ``ESS* = ((z_{1-alpha/2} + z_{0.8}) s / δ)²``, turned into queries at the current efficiency
  ``ESS / n``: ``n* = ceil(ESS* n / ESS)``.

The verdict (:func:`bakeoff.report.verdict.build_verdict`) decides on this table when the report
has one, and names no winner when its effective sample size is below :data:`MIN_ESS`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..data.leak_bins import DEFAULT_LEAK_TARGET, LEAK_BINS, bin_labels, leak_bin, normalise_shares
from ..stats import DEFAULT_RESAMPLES, derive_rng, holm

__all__ = ["MAX_QUERIES_NEEDED", "MIN_ESS", "leak_matched", "leak_weights", "queries_needed", "weighted_sign_flip"]

#: Below this effective sample size the leak-matched table names no winner (the paired tests' normal
#: approximation and their power both fail well before; the same floor as a small unweighted sample).
MIN_ESS = 30.0

#: Above this many queries needed (:func:`queries_needed`), a headline says the arms differ too little to be
#: worth separating rather than print the number.
MAX_QUERIES_NEEDED = 10_000


def leak_weights(leak: Mapping[str, float], query_ids: Sequence[str], *,
                 target: Sequence[float] = DEFAULT_LEAK_TARGET) -> dict[str, Any]:
    """Post-stratification weights of ``query_ids`` to ``target`` (module docstring).

    Returns ``{"weights": {qid: w}, "counts": [n_b], "target": [t_b as given, normalised],
    "effective_target": [t_b renormalised over occupied bins], "uncovered": float, "ess": float, "n": int,
    "missing": int}`` (``missing``: queries without a leak value, left out with weight 0).
    """
    t = normalise_shares(target)
    have = [q for q in query_ids if isinstance(leak.get(q), (int, float)) and math.isfinite(float(leak[q]))]
    counts = [0] * (len(LEAK_BINS) + 1)
    bins = {q: leak_bin(float(leak[q])) for q in have}
    for b in bins.values():
        counts[b] += 1
    n = len(have)
    uncovered = sum(t[b] for b in range(len(t)) if counts[b] == 0)
    covered = 1.0 - uncovered
    eff = [(t[b] / covered if counts[b] and covered > 0 else 0.0) for b in range(len(t))]
    weights = {q: (eff[bins[q]] / (counts[bins[q]] / n)) for q in have} if n and covered > 0 else {}
    w = np.asarray(list(weights.values()), dtype=float)
    ess = float(w.sum() ** 2 / (w ** 2).sum()) if w.size and (w ** 2).sum() > 0 else 0.0
    return {"weights": weights, "counts": counts, "target": list(t), "effective_target": eff,
            "uncovered": float(uncovered), "ess": ess, "n": n, "missing": len(query_ids) - n}


def _wmean(x: np.ndarray, w: np.ndarray) -> float:
    return float((w * x).sum() / w.sum())


def weighted_sign_flip(d: Sequence[float] | np.ndarray, w: Sequence[float] | np.ndarray, *,
                       rng: np.random.Generator, n_resamples: int = DEFAULT_RESAMPLES) -> float:
    """Two-sided p-value of the sign-flip randomization test of ``Σ w_i d_i = 0`` (module docstring);
    NaN with fewer than two queries, 1.0 when every weighted difference is 0."""
    d = np.asarray(d, dtype=float)
    w = np.asarray(w, dtype=float)
    if d.shape != w.shape:
        raise ValueError(f"{d.size} differences for {w.size} weights")
    keep = w > 0
    d, w = d[keep], w[keep]
    if d.size < 2:
        return math.nan
    wd = w * d
    t_obs = abs(wd.sum())
    if t_obs == 0.0:
        return 1.0
    tol = 1e-12 * max(1.0, float(np.abs(wd).sum()))
    if 2.0 ** d.size <= n_resamples:
        signs = ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1) * 2 - 1
        t = np.abs(signs @ wd)
        return float((t >= t_obs - tol).mean())
    hits = 0
    done = 0
    while done < n_resamples:
        m = min(4096, n_resamples - done)
        signs = rng.integers(0, 2, size=(m, d.size)) * 2 - 1
        hits += int((np.abs(signs @ wd) >= t_obs - tol).sum())
        done += m
    return float((1 + hits) / (n_resamples + 1))


def queries_needed(d: Sequence[float] | np.ndarray, w: Sequence[float] | np.ndarray, *, alpha: float = 0.05,
                   power: float = 0.8) -> int | None:
    """Queries (at the current weighting's efficiency) for 80 % power on the observed weighted mean
    difference (module docstring); ``None`` when the difference is 0 or no query has weight."""
    from scipy.stats import norm

    d = np.asarray(d, dtype=float)
    w = np.asarray(w, dtype=float)
    if w.sum() <= 0 or d.size < 2:
        return None
    delta = _wmean(d, w)
    if delta == 0.0:
        return None
    s = math.sqrt(max(_wmean((d - delta) ** 2, w), 0.0))
    ess = w.sum() ** 2 / (w ** 2).sum()
    need_ess = ((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * s / abs(delta)) ** 2
    return math.ceil(need_ess * d.size / ess)


def leak_matched(per_query: Mapping[str, Mapping[str, Mapping[str, float]]], *, leak: Mapping[str, float],
                 arms: Sequence[str], measure: str, query_ids: Sequence[str],
                 target: Sequence[float] = DEFAULT_LEAK_TARGET, target_source: str = "default",
                 seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES, alpha: float = 0.05) -> dict[str, Any] | None:
    """The leak-matched table of ``arms`` on ``measure`` (module docstring)::

        {"measure", "target", "target_source", "effective_target", "bins", "counts", "uncovered", "n", "ess",
         "min_ess", "arms": {arm: {"mean", "ci_low", "ci_high", "unweighted"}},
         "by_bin": [{"bin", "n", "target", "means": {arm: mean}}],
         "pairs": [{"a", "b", "diff", "p", "p_holm", "significant"}], "alpha",
         "best", "runner_up", "queries_needed"}

    ``None`` when no query has a leak value. ``arms`` in report order; pairs ``a`` before ``b`` in it.
    """
    lw = leak_weights(leak, query_ids, target=target)
    if not lw["n"]:
        return None
    qs = [q for q in query_ids if q in lw["weights"]]
    w = np.asarray([lw["weights"][q] for q in qs], dtype=float)
    x = {a: np.asarray([float(per_query[a][measure].get(q, 0.0)) for q in qs], dtype=float) for a in arms}
    rng = derive_rng(seed, "leak-matched", measure)
    idx = rng.integers(0, len(qs), size=(n_resamples, len(qs)))
    wb = w[idx]
    table: dict[str, dict[str, float]] = {}
    for a in arms:
        boots = (wb * x[a][idx]).sum(axis=1) / wb.sum(axis=1)
        lo, hi = np.percentile(boots, [2.5, 97.5])
        table[a] = {"mean": _wmean(x[a], w), "ci_low": float(lo), "ci_high": float(hi),
                    "unweighted": float(x[a].mean())}
    labels = bin_labels()
    bins_of = np.asarray([leak_bin(float(leak[q])) for q in qs])
    by_bin = [{"bin": labels[b], "n": int((bins_of == b).sum()), "target": lw["target"][b],
               "means": {a: float(x[a][bins_of == b].mean()) for a in arms} if (bins_of == b).any() else {}}
              for b in range(len(labels))]
    pairs: list[dict[str, Any]] = []
    for i, a in enumerate(arms):
        for b in arms[i + 1:]:
            d = x[a] - x[b]
            p = weighted_sign_flip(d, w, rng=derive_rng(seed, "leak-matched-pair", measure, a, b),
                                   n_resamples=n_resamples)
            pairs.append({"a": a, "b": b, "diff": _wmean(d, w), "p": p})
    for pair, adj in zip(pairs, holm([p["p"] for p in pairs])):
        pair["p_holm"] = adj
        pair["significant"] = bool(not math.isnan(adj) and adj < alpha)
    order = sorted(arms, key=lambda a: -table[a]["mean"])
    needed = None
    if len(order) >= 2:
        needed = queries_needed(x[order[0]] - x[order[1]], w, alpha=alpha)
    return {"measure": measure, "target": lw["target"], "target_source": target_source,
            "effective_target": lw["effective_target"], "bins": labels, "counts": lw["counts"],
            "uncovered": lw["uncovered"], "n": lw["n"], "missing": lw["missing"], "ess": lw["ess"], "min_ess": MIN_ESS,
            "arms": table, "by_bin": by_bin, "pairs": pairs, "alpha": alpha,
            "best": order[0], "runner_up": order[1] if len(order) > 1 else None, "queries_needed": needed}
