"""Gates for CI: an exit status a job can act on.

* :func:`fail_if_worse` (``bakeoff compare BASE NEW --fail-if-worse ndcg@10``): for each
  gated measure ``m`` and each pair of arms (an arm of BASE and the arm of NEW with the same
  name; when no name is shared and each set has one arm, those two), over the same queries,
  ``d_q = NEW_q - BASE_q``. The pair **fails** when ``mean(d) < -margin`` **and** the
  two-sided paired randomization test of ``mean(d) = 0`` (:func:`bakeoff.stats.paired_tests`,
  seeded by :func:`bakeoff.stats.derive_rng` exactly as the comparison report seeds the same
  pair, so the raw p-values agree) is
  significant after Holm correction across the gated pairs of that measure
  (``p_holm < alpha``). So a drop smaller than ``margin`` never fails, and neither does a
  larger drop the queries cannot distinguish from noise. A NEW arm flagged broken by the
  empty-run guard fails outright; a broken BASE arm is reported and not tested.
* :func:`fail_under` (``bakeoff run --fail-under ndcg@10=0.60``): an arm fails when its mean
  on the measure is below the floor (no test: a floor is an absolute requirement). A spec
  ``ARM:MEASURE=VALUE`` applies to one arm, ``MEASURE=VALUE`` to every arm; a broken arm fails.

Bad input -- the two result sets on different datasets, splits, query sets, judgments or
identical-id handling, a measure one of them did not compute, no arms to pair, an
unknown arm -- is an :class:`~bakeoff.errors.InputError` / :class:`~bakeoff.errors.ConfigError`
(one line, exit 2), raised before any statistics are computed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ConfigError, InputError
from ..metrics import parse_measure
from ..runner.results import StoredArm, StoredResults
from ..stats import DEFAULT_RESAMPLES, bootstrap_ci, derive_rng, holm, paired_tests

__all__ = [
    "GateCheck",
    "GateResult",
    "check_comparable",
    "fail_if_worse",
    "fail_under",
    "gate_files",
    "pair_arms",
    "parse_floor",
]


@dataclass(frozen=True)
class GateCheck:
    """One gated (measure, arm) check and its outcome."""

    measure: str
    base: str | None
    new: str
    mean_base: float | None
    mean_new: float | None
    diff: float | None = None
    diff_ci: tuple[float, float] | None = None
    p: float | None = None
    p_holm: float | None = None
    failed: bool = False
    line: str = ""


@dataclass
class GateResult:
    """Every check; ``failed`` when any failed; ``lines`` one line per check (failures first)."""

    checks: list[GateCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(c.failed for c in self.checks)

    @property
    def lines(self) -> list[str]:
        return [c.line for c in self.checks if c.failed] + [c.line for c in self.checks if not c.failed] + self.notes


def _canon(measure: str, *, where: str) -> str:
    try:
        return str(parse_measure(measure))
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _qids(results: StoredResults, measure: str) -> list[str]:
    return list(results.arms[0].per_query.get(measure, {})) if results.arms else []


def check_comparable(base: StoredResults, new: StoredResults, *, paths: Sequence[Path],
                     measures: Sequence[str]) -> None:
    """InputError (one line, naming NEW's file and field) unless BASE and NEW were computed on the
    same dataset, split, corpus, queries, judgments and identical-id handling, and both hold every
    measure in ``measures``."""
    db, dn = base.dataset, new.dataset
    for key in ("name", "split"):
        if getattr(db, key) != getattr(dn, key):
            raise InputError(f"BASE and NEW are on different datasets: BASE {key} {getattr(db, key)!r}, NEW "
                             f"{getattr(dn, key)!r}; a gate compares the same queries", path=paths[1],
                             field=f"dataset.{key}")
    fb, fn = base.fingerprints, new.fingerprints
    for key in ("corpus", "queries", "qrels"):
        if fb.get(key) != fn.get(key):
            raise InputError(f"BASE and NEW are on different data: their {key} fingerprints differ", path=paths[1],
                             field=f"dataset.fingerprints.{key}")
    if base.ignore_identical_ids != new.ignore_identical_ids:
        raise InputError("BASE and NEW differ in --ignore-identical-ids; rerun one of them", path=paths[1],
                         field="dataset.ignore_identical_ids")
    for key in ("averaging", "relevance_level"):
        if getattr(base, key) != getattr(new, key):
            raise InputError(f"BASE and NEW differ in --{key.replace('_', '-')} ({getattr(base, key)!r} vs "
                             f"{getattr(new, key)!r}); rerun one of them", path=paths[1], field=key)
    for m in measures:
        for res, label, path in ((base, "BASE", paths[0]), (new, "NEW", paths[1])):
            if m not in res.measures:
                raise InputError(f"{label} has no {m} (it computed {', '.join(res.measures)})",
                                 path=path, field="measures")
        qb, qn = set(_qids(base, m)), set(_qids(new, m))
        if qb != qn:
            raise InputError(f"BASE and NEW evaluated different queries on {m} ({len(qb)} vs {len(qn)}; "
                             f"{len(qb ^ qn)} differ)", path=paths[1], field="arms.per_query")


def pair_arms(base: StoredResults, new: StoredResults, *, paths: Sequence[Path]) -> list[tuple[str, str]]:
    """``(base arm, new arm)`` pairs: arms with the same name, else the only arm of each set."""
    nb, nn = base.arm_names, new.arm_names
    common = [n for n in nb if n in set(nn)]
    if common:
        return [(n, n) for n in common]
    if len(nb) == 1 and len(nn) == 1:
        return [(nb[0], nn[0])]
    raise InputError(f"no arm to pair: BASE has {', '.join(nb) or 'none'}, NEW has {', '.join(nn) or 'none'} "
                     "(the gate pairs arms with the same name, or the single arm of each)", path=paths[1],
                     field="arms")


def _empty_txt(arm: StoredArm) -> str:
    e = arm.empty or {}
    return f"empty ranking for {e.get('queries')} of {e.get('n')} queries ({float(e.get('share') or 0):.0%})"


def _p(p: float | None) -> str:
    if p is None or math.isnan(p):
        return "p=n/a"
    return "p<0.001" if p < 0.001 else f"p={p:.3g}"


def fail_if_worse(
    base: StoredResults,
    new: StoredResults,
    *,
    measures: Sequence[str],
    paths: Sequence[Path],
    alpha: float = 0.05,
    margin: float = 0.0,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    labels: Sequence[str] = ("A", "B"),
) -> GateResult:
    """The ``--fail-if-worse`` gate (see the module docstring).

    ``labels`` are the prefixes ``bakeoff compare`` gives arms present in both sets
    (:func:`bakeoff.report.inputs.merge_results`); the tests are seeded with the merged names,
    so a pair's raw p-value and difference CI equal the comparison report's for the same pair.
    """
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"--alpha must be between 0 and 1, got {alpha}")
    if margin < 0:
        raise ConfigError(f"--margin must be >= 0, got {margin}")
    ms = [_canon(m, where="--fail-if-worse") for m in measures]
    check_comparable(base, new, paths=paths, measures=ms)
    pairs = pair_arms(base, new, paths=paths)
    clash = set(base.arm_names) & set(new.arm_names)
    merged = ({n: f"{labels[0]}/{n}" for n in clash}, {n: f"{labels[1]}/{n}" for n in clash})
    out = GateResult()
    for m in ms:
        qids = _qids(base, m)
        tested: list[tuple[str, str, np.ndarray, np.ndarray, float]] = []
        for b, n in pairs:
            ab, an = base.arm(b), new.arm(n)
            mb, mn = ab.metrics.get(m), an.metrics.get(m)
            if an.broken:
                out.checks.append(GateCheck(m, b, n, mb, mn, failed=True,
                                            line=f"FAIL {m}: NEW arm {n} is broken ({_empty_txt(an)})"))
                continue
            if ab.broken:
                out.checks.append(GateCheck(m, b, n, mb, mn, line=f"ok   {m}: BASE arm {b} is broken "
                                            f"({_empty_txt(ab)}); NEW {n} not tested against it"))
                continue
            xb = np.array([ab.per_query[m][q] for q in qids], dtype=float)
            xn = np.array([an.per_query[m][q] for q in qids], dtype=float)
            kb, kn = merged[0].get(b, b), merged[1].get(n, n)
            t = paired_tests(xb, xn, rng=derive_rng(seed, "perm", m, kb, kn), n_resamples=n_resamples)
            tested.append((b, n, xb, xn, t["p_perm"]))
        for (b, n, xb, xn, p), ph in zip(tested, holm([t[4] for t in tested])):
            diff = float(np.mean(xn - xb)) if len(qids) else math.nan
            kb, kn = merged[0].get(b, b), merged[1].get(n, n)
            lo_, hi_ = bootstrap_ci(xb - xn, rng=derive_rng(seed, "diff", m, kb, kn), n_resamples=n_resamples)
            lo, hi = 0.0 - hi_, 0.0 - lo_  # (0.0 - x: no "-0.0")
            worse = diff < -margin and not math.isnan(ph) and ph < alpha
            who = n if b == n else f"{b} -> {n}"
            stats = (f"NEW {float(np.mean(xn)):.4f} vs BASE {float(np.mean(xb)):.4f}, diff {diff:+.4f} "
                     f"[{lo:+.4f}, {hi:+.4f}], Holm {_p(ph)}, {len(qids)} queries")
            if worse:
                line = f"FAIL {m} {who}: significantly worse ({stats}; alpha {alpha}, margin {margin})"
            elif diff < -margin:
                line = f"ok   {m} {who}: lower but not significantly ({stats}; alpha {alpha})"
            else:
                line = f"ok   {m} {who}: not worse by more than the margin {margin} ({stats})"
            out.checks.append(GateCheck(m, b, n, float(np.mean(xb)), float(np.mean(xn)), diff, (lo, hi), p, ph,
                                        worse, line))
    return out


def parse_floor(spec: str) -> tuple[str | None, str, float]:
    """``"ndcg@10=0.60"`` -> ``(None, "ndcg@10", 0.6)``; ``"bm25:ndcg@10=0.6"`` -> ``("bm25", ...)``
    (the arm is everything before the last ``:``, so arm names may hold ``:`` and ``=``)."""
    left, eq, value = spec.rpartition("=")
    if not eq or not left.strip():
        raise ConfigError(f"--fail-under {spec!r}: expected [ARM:]MEASURE=VALUE, e.g. ndcg@10=0.60")
    try:
        floor = float(value)
    except ValueError:
        raise ConfigError(f"--fail-under {spec!r}: {value!r} is not a number") from None
    if not math.isfinite(floor):
        raise ConfigError(f"--fail-under {spec!r}: the floor must be a finite number")
    arm, colon, measure = left.rpartition(":")
    return (arm.strip() if colon else None), _canon(measure.strip(), where=f"--fail-under {spec!r}"), floor


def fail_under(results: StoredResults, floors: Sequence[tuple[str | None, str, float]]) -> GateResult:
    """The ``--fail-under`` gate: each floor against each arm it names (see the module docstring).

    A floor on a measure the run did not compute, or on an unknown arm, is a ConfigError.
    """
    out = GateResult()
    names = results.arm_names
    for arm_name, m, floor in floors:
        if m not in results.measures:
            raise ConfigError(f"--fail-under {m}: the run did not compute {m} (it computed "
                              f"{', '.join(results.measures)}); add --measure {m}")
        if arm_name is not None and arm_name not in names:
            raise ConfigError(f"--fail-under {arm_name}:{m}: no arm named {arm_name!r} (arms: {', '.join(names)})")
        for a in results.arms:
            if arm_name is not None and a.name != arm_name:
                continue
            mean = a.metrics.get(m)
            if a.broken:
                out.checks.append(GateCheck(m, None, a.name, None, mean, failed=True,
                                            line=f"FAIL {m} {a.name}: broken ({_empty_txt(a)})"))
            elif mean is None or mean < floor:
                shown = "n/a" if mean is None else f"{mean:.4f}"
                out.checks.append(GateCheck(m, None, a.name, None, mean, failed=True,
                                            line=f"FAIL {m} {a.name}: {shown} < {floor}"))
            else:
                out.checks.append(GateCheck(m, None, a.name, None, mean,
                                            line=f"ok   {m} {a.name}: {mean:.4f} >= {floor}"))
    return out


def gate_files(base: str | Path, new: str | Path, *, measures: Sequence[str], alpha: float = 0.05,
               margin: float = 0.0, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> GateResult:
    """:func:`fail_if_worse` on two ``results.json`` files (or their folders)."""
    from ..runner.reopen import results_path
    from ..runner.results import read_results

    pb, pn = results_path(base), results_path(new)
    la, lb = pb.parent.name or "A", pn.parent.name or "B"  # as bakeoff.report.write.compare_results labels them
    if la == lb:
        la, lb = "A", "B"
    return fail_if_worse(read_results(pb), read_results(pn), measures=measures, paths=(pb, pn), alpha=alpha,
                         margin=margin, n_resamples=n_resamples, seed=seed, labels=(la, lb))
