"""Synthetic vs real: does a synthetic query set rank the arms the way real queries do?

Given two result sets on the **same corpus** with **different queries** (e.g. LLM-written
queries and 20 real ones judged by a person with ``bakeoff label``), and the arms both
ran (matched by name):

* each set's arm means on one measure (default: the primary measure, ``ndcg@k``);
* **Kendall's τ** between the two orderings: ``scipy.stats.kendalltau`` (τ-b, which
  handles ties), +1 = same order, -1 = reversed;
* a **bootstrap CI** of τ: ``n_resamples`` times, resample the queries of each set with
  replacement, independently (the sets share no queries), recompute both sets' arm means
  and their τ; the CI is the percentile interval of the finite values (a resample whose
  means are all tied has no τ; those are counted as ``undefined``). Seeded by a
  :class:`numpy.random.Generator` from :func:`bakeoff.stats.derive_rng`.
* a plain **verdict**: *same order* (τ = 1 and the CI's lower end above 0), *same order, not
  reliably* (τ = 1 but the CI reaches 0: resampling reorders the arms), *broadly the same
  order* (τ > 0 and the CI above 0), else *does not reliably rank the arms as the real queries
  do*; and whether both sets name the same best arm.

Which set is synthetic: the one whose BEIR folder holds a ``provenance.json`` of ``bakeoff
generate`` (``mode`` describe/clusters) or a ``bakeoff demo`` truth; when neither or both
do, the first argument is taken as the synthetic set.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..runner.results import StoredResults
from ..stats import derive_rng

__all__ = ["is_synthetic", "kendall_tau", "ranking_agreement"]


def kendall_tau(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Kendall's τ-b of two score vectors (``scipy.stats.kendalltau``); NaN when undefined."""
    from scipy.stats import kendalltau

    with np.errstate(invalid="ignore", divide="ignore"):
        return float(kendalltau(np.asarray(x, dtype=float), np.asarray(y, dtype=float)).statistic)


def is_synthetic(results: StoredResults) -> bool:
    """True when the results were computed on generated queries (see the module docstring)."""
    if results.dataset.truth:
        return True
    src = results.source
    for key in ("beir", "queries"):
        if src.get(key):
            p = Path(str(src[key]))
            folder = p if p.is_dir() else p.parent
            prov = folder / "provenance.json"
            try:
                obj = json.loads(prov.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(obj, Mapping) and obj.get("mode") in ("describe", "clusters"):
                return True
    return False


def _matrix(results: StoredResults, arms: Sequence[str], measure: str) -> np.ndarray:
    by = {a.name: a.per_query[measure] for a in results.arms}
    qids = list(by[arms[0]])
    return np.array([[by[a][q] for a in arms] for q in qids], dtype=float)


def ranking_agreement(first: StoredResults, second: StoredResults, *, labels: Sequence[str],
                      paths: Sequence[Path] = (Path("A"), Path("B")), measure: str | None = None,
                      n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> dict[str, Any]:
    """The agreement of two result sets' arm orderings (see the module docstring)."""
    names_b = set(second.arm_names)
    arms = [a for a in first.arm_names if a in names_b]
    if len(arms) < 2:
        raise InputError(f"the two result sets share {len(arms)} arm name(s); ranking agreement needs at least 2",
                         path=paths[1], field="arms")
    if measure is None:
        k = first.k
        measure = f"ndcg@{k}" if f"ndcg@{k}" in first.measures else first.measures[0]
    for res, p in ((first, paths[0]), (second, paths[1])):
        if measure not in res.measures:
            raise InputError(f"no {measure} in this result set", path=p, field="measures")
    ma, mb = _matrix(first, arms, measure), _matrix(second, arms, measure)
    if ma.shape[0] == 0 or mb.shape[0] == 0:
        raise InputError("a result set has no evaluated queries", path=paths[0 if ma.shape[0] == 0 else 1])
    mean_a, mean_b = ma.mean(axis=0), mb.mean(axis=0)
    tau = kendall_tau(mean_a, mean_b)
    rng = derive_rng(seed, "kendall", measure)
    taus = np.empty(n_resamples)
    for r in range(n_resamples):
        ia = rng.integers(0, ma.shape[0], ma.shape[0])
        ib = rng.integers(0, mb.shape[0], mb.shape[0])
        taus[r] = kendall_tau(ma[ia].mean(axis=0), mb[ib].mean(axis=0))
    finite = taus[np.isfinite(taus)]
    alpha = 1.0 - confidence
    lo, hi = ((float(np.quantile(finite, alpha / 2)), float(np.quantile(finite, 1 - alpha / 2)))
              if finite.size else (math.nan, math.nan))
    syn_a, syn_b = is_synthetic(first), is_synthetic(second)
    synthetic = 1 if (syn_b and not syn_a) else 0
    real = 1 - synthetic
    best = [arms[int(np.argmax(mean_a))], arms[int(np.argmax(mean_b))]]
    same_best = best[0] == best[1]
    reliable = math.isfinite(lo) and lo > 0
    if math.isfinite(tau) and tau >= 1.0 - 1e-12:
        verdict = "same order" if reliable else "same order, not reliably"
    elif math.isfinite(tau) and tau > 0 and reliable:
        verdict = "broadly the same order"
    else:
        verdict = "not reliably the same order"
    sentence = {
        "same order": "ranks the arms exactly as the real queries do, and reliably (τ's CI is above 0)",
        "same order, not reliably": "puts the arms in the same order as the real queries here, but NOT reliably: "
                                    "resampling the queries reorders them (τ's CI reaches 0 or below; the arms are "
                                    "too close to tell apart)",
        "broadly the same order": "ranks the arms broadly as the real queries do (τ > 0, its CI above 0)",
        "not reliably the same order": "does NOT reliably rank the arms as the real queries do (τ's CI reaches 0 "
                                       "or below)",
    }[verdict]
    lab = list(labels)
    text = (f"The synthetic set ({lab[synthetic]}) {sentence}: Kendall's τ = {tau:.3f} "
            f"[{int(confidence * 100)}% CI {lo:.3f}, {hi:.3f}] over {len(arms)} arms on {measure}; best arm "
            + (f"{best[0]} in both." if same_best else
               f"{best[synthetic]} on the synthetic set but {best[real]} on the real queries ({lab[real]})."))
    return {
        "schema": "bakeoff.agreement",
        "measure": measure,
        "labels": lab,
        "synthetic": lab[synthetic],
        "real": lab[real],
        "synthetic_detected": [syn_a, syn_b],
        "arms": arms,
        "n_queries": [int(ma.shape[0]), int(mb.shape[0])],
        "means": [{a: float(v) for a, v in zip(arms, mean_a)}, {a: float(v) for a, v in zip(arms, mean_b)}],
        "best": best,
        "same_best": same_best,
        "tau": tau,
        "ci_low": lo,
        "ci_high": hi,
        "confidence": confidence,
        "n_resamples": n_resamples,
        "undefined_resamples": int(n_resamples - finite.size),
        "seed": seed,
        "method": "scipy.stats.kendalltau (tau-b) of arm means; percentile bootstrap resampling queries within "
                  "each set independently",
        "verdict": verdict,
        "text": text,
    }
