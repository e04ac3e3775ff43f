"""``bakeoff tune``: choose an arm's parameters on a development split, then test the choice once.

1. **Validate** before anything runs (one line, exit 2, nothing written): the tuned arm exists,
   every swept option is one of its type's (closest name suggested), the grid is not empty,
   every setting builds, the measure parses, the dev split is not the test split and shares no
   query with it (:mod:`bakeoff.tune.devsplit`).
2. **Sweep**: each setting of the space (:mod:`bakeoff.tune.space`, in trial order) is a normal
   arm, searched through one :class:`~bakeoff.runner.context.Context` with the cache, so every
   trial is a cached run (a re-sweep reads them back) and the tuned arm's inputs (a fusion's or
   reranker's base arms) are searched once. Each trial is scored on the dev queries only.
   The configured arm (*defaults*: the arm exactly as the config gives it) is scored too.
3. **Choose** the setting with the highest mean of ``measure`` over the dev queries;
   **ties go to the first in trial order** (grid order, or the draw order of random search).
   With ``kfold:N`` one setting is chosen per fold on the other folds.
4. **Test once**: the defaults and the chosen setting (arm ``NAME-tuned``) are run on the test
   queries by :func:`~bakeoff.runner.run.run_bakeoff` (latency, cost, every measure), and
   compared on ``measure`` with :func:`bakeoff.stats.comparison`: each mean with its bootstrap
   (BCa) CI, the paired difference with its CI, the two-sided paired randomization test
   (one pair, so Holm changes nothing). With ``kfold`` the tuned run takes each query's ranking
   from the setting chosen without that query's fold.

Written into ``out`` (each file atomically, ``tune.json`` last): ``results.json`` + ``runs/``
(the two test arms, renderable by ``bakeoff report``, with the sweep under the key ``tune``
so the HTML report draws the metric-vs-parameter plots) and ``tune.json`` (the sweep alone).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write_json
from ..arms.base import Arm
from ..arms.registry import ArmTypeInfo, arm_type_info, resolve_references
from ..cache import Cache, cache_key
from ..data.model import Dataset, Run
from ..errors import ConfigError
from ..metrics import parse_measure, score_run
from ..runner.config import ArmSpec, BakeoffConfig, build_arms
from ..runner.context import Context
from ..runner.results import ArmResult, Results
from ..runner.run import run_bakeoff
from ..stats import DEFAULT_RESAMPLES, comparison
from ..validation import closest
from .devsplit import DevSplit, assign_folds, leaks, slice_queries
from .space import SearchSpace, check_options

__all__ = ["TUNE_KEYS", "TuneOutput", "TuneSpec", "run_tune", "tune_spec_from_table"]

log = logging.getLogger("bakeoff")

#: Keys of a ``[tune]`` table (``[tune.params]`` holds the space).
TUNE_KEYS = ("arm", "measure", "dev", "search", "trials", "seed", "drop_leaks", "params")
TIE_RULE = "highest mean on the dev queries; ties go to the first setting in trial order"


@dataclass(frozen=True, kw_only=True)
class TuneSpec:
    """What to tune (``arm``), over which ``space``, chosen on which ``dev`` split by which ``measure``.
    ``seed`` draws slices/folds (and random search, through the space); ``drop_leaks`` drops
    dev queries equal to test queries instead of refusing."""

    arm: str
    space: SearchSpace
    dev: DevSplit
    measure: str = "ndcg@10"
    seed: int = 0
    drop_leaks: bool = False


def tune_spec_from_table(table: Mapping[str, Any], *, where: str = "[tune]") -> TuneSpec:
    """A :class:`TuneSpec` from a ``[tune]`` TOML table::

        [tune]
        arm = "bm25"          # the arm (by name) whose options are swept
        measure = "ndcg@10"   # chosen by its dev mean
        dev = "train"         # a split name, "slice:0.3" or "kfold:5"
        search = "grid"       # or "random" (then trials = N)
        seed = 0
        [tune.params]
        k1 = [0.9, 1.2, 1.5]
        b = [0.4, 0.75]        # random search also takes {low = 0.1, high = 1.0, log = false}
    """
    t = dict(table)
    unknown = sorted(set(t) - set(TUNE_KEYS))
    if unknown:
        close = closest(unknown[0], TUNE_KEYS)
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}" + (f"; did you mean {close!r}?" if close else
                                                                    f"; keys: {', '.join(TUNE_KEYS)}"))
    if "arm" not in t:
        raise ConfigError(f"{where}: missing 'arm' (the name of the arm to tune)")
    if not isinstance(t.get("params"), Mapping):
        raise ConfigError(f"{where}: missing [tune.params] (option = [values, ...])")
    seed = int(t.get("seed", 0))
    space = SearchSpace.build(t["params"], search=str(t.get("search", "grid")), trials=t.get("trials"), seed=seed,
                              where=f"{where} params")
    dev = DevSplit.parse(str(t.get("dev", "train")), where=f"{where} dev")
    return TuneSpec(arm=str(t["arm"]), space=space, dev=dev,
                    measure=str(t.get("measure", "ndcg@10")), seed=seed, drop_leaks=bool(t.get("drop_leaks", False)))


@dataclass
class TuneOutput:
    """The sweep (``tune``, the ``tune.json`` content), the test results, the folder and files written."""

    tune: dict[str, Any]
    results: Results
    folder: Path | None = None
    written: list[str] = field(default_factory=list)


# --- arms -------------------------------------------------------------------------------------
def _variant(spec: ArmSpec, type_info: ArmTypeInfo, built: Mapping[str, Arm], setting: Mapping[str, Any], *,
             name: str) -> Arm:
    """The arm of ``spec`` (of the type ``type_info`` describes) with ``setting`` overriding its options;
    inputs named by ``arms=``/``base=`` are the already built objects (so they are indexed and searched
    once; :func:`~bakeoff.arms.registry.resolve_references`)."""
    opts = resolve_references({**spec.options, **setting}, built, where=f"[tune] arm {spec.name!r}")
    try:
        return type_info.factory(name=name, **opts)
    except TypeError as exc:
        raise ConfigError(f"[tune] arm {spec.name!r} ({spec.type}) with {dict(setting)}: {exc}") from None
    except ConfigError as exc:
        raise ConfigError(f"[tune] arm {spec.name!r} with {dict(setting)}: {exc}") from None


def _defaults(spec: ArmSpec, type_info: ArmTypeInfo, names: Sequence[str]) -> dict[str, Any]:
    """The configured value of each swept option: the config's, else the arm type's default."""
    return {n: spec.options[n] if n in spec.options else type_info.options[n] for n in names}


@dataclass(frozen=True)
class _Plan:
    """What the sweep needs, validated before any search: the tuned arm's spec and type, the canonical
    ``measure``, the bake-off's arms as built (``built``), the settings in trial order with their
    fingerprints, the configured values of the swept options and the tuned arm's name."""

    aspec: ArmSpec
    type_info: ArmTypeInfo
    measure: str
    built: Mapping[str, Arm]
    settings: list[dict[str, Any]]
    trial_fps: list[str]
    defaults: dict[str, Any]
    tuned_name: str

    def variant(self, built: Mapping[str, Arm], setting: Mapping[str, Any], *, name: str) -> Arm:
        return _variant(self.aspec, self.type_info, built, setting, name=name)


def _plan(cfg: BakeoffConfig, spec: TuneSpec) -> _Plan:
    """Step 1 of the module docstring: everything checked (one ConfigError line) before anything runs."""
    specs = {s.name: s for s in cfg.arms}
    if spec.arm not in specs:
        close = closest(spec.arm, specs)
        raise ConfigError(f"[tune] arm {spec.arm!r} is not an arm of the bake-off"
                          + (f"; did you mean {close!r}?" if close else f"; arms: {', '.join(specs)}"))
    aspec = specs[spec.arm]
    type_info = arm_type_info(aspec.type)  # the one question to the registry
    check_options(spec.space, type_info, arm=spec.arm)
    measure = str(parse_measure(spec.measure))
    spec.dev.check_against(cfg.dataset.split)
    built = {a.name: a for a in build_arms(cfg.arms)}
    settings = spec.space.settings()
    tuned_name = f"{spec.arm}-tuned"
    while tuned_name in built:
        tuned_name += "-"
    trial_fps = [_variant(aspec, type_info, built, s, name=spec.arm).fingerprint()  # every setting builds
                 for s in settings]
    return _Plan(aspec=aspec, type_info=type_info, measure=measure, built=built, settings=settings,
                 trial_fps=trial_fps, defaults=_defaults(aspec, type_info, spec.space.names), tuned_name=tuned_name)


# --- data -------------------------------------------------------------------------------------
def _subset(ds: Dataset, ids: Sequence[str], *, note: str) -> Dataset:
    return dataclasses.replace(ds, queries=ds.queries.subset(ids), info={**dict(ds.info), "query_subset": note})


def _judged(ds: Dataset) -> list[str]:
    return [q for q in ds.queries.ids if any(g > 0 for g in ds.qrels.get(q).values())]


def _open(cfg: BakeoffConfig, spec: TuneSpec) -> tuple[Dataset, Any, Dataset, Any, dict[str, Any]]:
    """(dev dataset, dev mask, test dataset, test mask, dev record) -- refusing leaks."""
    from ..data.datasets import open_dataset

    test, tmask = open_dataset(cfg.dataset)
    dev = spec.dev
    info: dict[str, Any] = dev.as_dict()
    if dev.kind == "split":
        dds, dmask = open_dataset(dataclasses.replace(cfg.dataset, split=str(dev.split)))
        if dds.corpus.fingerprint() != test.corpus.fingerprint():
            raise ConfigError(f"--dev {dev.split}: its corpus differs from the test split's; tune on the same corpus")
        found = leaks(dict(zip(dds.queries.ids, dds.queries.texts)), dict(zip(test.queries.ids, test.queries.texts)))
        if found and not spec.drop_leaks:
            q, t, why = found[0]
            raise ConfigError(f"--dev {dev.split} shares {len(found)} quer{'y' if len(found) == 1 else 'ies'} with the "
                              f"test split {cfg.dataset.split!r} (e.g. dev {q!r} ~ test {t!r}: {why}); "
                              "tune on disjoint queries or pass --drop-leaks")
        if found:
            drop = {q for q, _, _ in found}
            log.warning("dropped %d dev queries equal to test queries: %s", len(drop),
                        ", ".join(f"{q}~{t}" for q, t, _ in found))
            dds = _subset(dds, [q for q in dds.queries.ids if q not in drop], note="dev queries minus leaks")
            info["dropped_leaks"] = [[q, t, why] for q, t, why in found]
        return dds, dmask, test, tmask, info
    texts = dict(zip(test.queries.ids, test.queries.texts))
    ids = _judged(test)
    if dev.kind == "slice":
        dev_ids, test_ids = slice_queries(ids, texts, fraction=float(dev.fraction or 0), seed=spec.seed)
        info.update(seed=spec.seed, n_dev=len(dev_ids), n_test=len(test_ids))
        return (_subset(test, dev_ids, note=f"tune dev slice {dev.fraction:g} (seed {spec.seed})"), tmask,
                _subset(test, test_ids, note=f"tune test part: 1 - {dev.fraction:g} (seed {spec.seed})"), tmask, info)
    folds = assign_folds(ids, texts, folds=int(dev.folds or 0), seed=spec.seed)
    info.update(seed=spec.seed, fold_of=folds)
    judged = _subset(test, ids, note="judged queries")
    return judged, tmask, judged, tmask, info


# --- the sweep --------------------------------------------------------------------------------
def _mean(values: Mapping[str, float], ids: Sequence[str]) -> float:
    xs = [values[q] for q in ids if q in values]
    return float(np.mean(xs)) if xs else math.nan


def _best(means: Sequence[float]) -> int:
    """Index of the highest mean, the first on ties (NaN never wins)."""
    best = -1
    for i, m in enumerate(means):
        if not math.isnan(m) and (best < 0 or m > means[best]):
            best = i
    if best < 0:
        raise ConfigError("no trial could be scored on the dev queries (no judged dev query?)")
    return best


@dataclass
class _DevScorer:
    """An arm's per-query ``measure`` values on the dev queries, searched at ``depth`` through ``ctx``."""

    cfg: BakeoffConfig
    ctx: Context
    dev_ds: Dataset
    dev_mask: Any
    depth: int
    measure: str
    cache: Cache | None
    metrics_code: str  # _metrics_code()

    def score(self, arm: Arm) -> tuple[Mapping[str, float], bool, float]:
        """``(values, cached, seconds)``: from the score cache (keyed by the run's cache key, the dev
        judgments, the measure and the metric code), else from the arm's (cached) run."""
        cfg, ctx, dev_ds, cache = self.cfg, self.ctx, self.dev_ds, self.cache
        # non-default conventions join the score cache key (the defaults keep the keys of earlier releases)
        conventions = {key: value for key, value, default in (("averaging", cfg.averaging, "bakeoff"),
                                                              ("relevance_level", cfg.relevance_level, 1))
                       if value != default}
        s0 = time.perf_counter()
        key = cache_key({"kind": "tune-score", "run": ctx.run_key(arm, dev_ds.queries, k=self.depth, mask=self.dev_mask),
                         "qrels": dev_ds.qrels.fingerprint(), "measure": self.measure,
                         "metrics_code": self.metrics_code, **conventions})
        hit = cache.get_json("tune-score", key) if cache is not None else None
        if isinstance(hit, dict):
            return hit, True, time.perf_counter() - s0
        run = ctx.search(arm, dev_ds.queries, k=self.depth, mask=self.dev_mask)
        values = dict(score_run(run, dev_ds.qrels, [self.measure], query_ids=dev_ds.queries.ids,
                               averaging=cfg.averaging, relevance_level=cfg.relevance_level).per_query[self.measure])
        if cache is not None:
            cache.put_json("tune-score", key, values)
        return values, ctx.was_cached(arm, dev_ds.queries, k=self.depth, mask=self.dev_mask), time.perf_counter() - s0


def _sweep(plan: _Plan, scorer: _DevScorer, *, progress: bool) -> tuple[list[dict[str, Any]], list[Mapping[str, float]]]:
    """Step 2: each setting's trial record (``index``, ``params``, ``fingerprint``, ``cached``, ``seconds``)
    and its per-query dev values, in trial order."""
    trials: list[dict[str, Any]] = []
    per_query: list[Mapping[str, float]] = []
    for i, (setting, fp) in enumerate(zip(plan.settings, plan.trial_fps)):
        arm = plan.variant(plan.built, setting, name=plan.aspec.name)
        values, cached, secs = scorer.score(arm)
        del arm  # drop the trial's index (k-fold reads the chosen runs back from the cache)
        per_query.append(values)
        trials.append({"index": i, "params": dict(setting), "fingerprint": fp, "cached": cached,
                       "seconds": round(secs, 4)})
        if progress:
            log.info("trial %d/%d %s: %s", i + 1, len(plan.settings), dict(setting),
                     "cached" if cached else f"{secs:.2f}s")
    return trials, per_query


def _choose(dev: DevSplit, trials: list[dict[str, Any]], per_query: Sequence[Mapping[str, float]],
            dev_ids: Sequence[str], fold_of: Mapping[str, int]) -> dict[str, Any]:
    """Step 3: the best setting by dev mean (one per fold with ``kfold``); sets each trial's ``dev`` (and
    ``dev_folds``)."""
    if dev.kind == "kfold":
        picks = []
        for f in range(int(dev.folds or 0)):
            train_ids = [q for q in dev_ids if fold_of.get(q) != f]
            means = [_mean(v, train_ids) for v in per_query]
            picks.append(_best(means))
            for t, m in zip(trials, means):
                t.setdefault("dev_folds", []).append(m)
        for t, v in zip(trials, per_query):
            t["dev"] = _mean(v, dev_ids)
        return {"per_fold": [{"fold": f, "index": b, "params": trials[b]["params"],
                              "dev": trials[b]["dev_folds"][f]} for f, b in enumerate(picks)]}
    for t, v in zip(trials, per_query):
        t["dev"] = _mean(v, dev_ids)
    b = _best([t["dev"] for t in trials])
    return {"index": b, "params": trials[b]["params"], "dev": trials[b]["dev"]}


def _test_once(cfg: BakeoffConfig, spec: TuneSpec, plan: _Plan, *, trials: Sequence[Mapping[str, Any]],
               chosen: Mapping[str, Any], test_ds: Dataset, test_mask: Any, dev_ds: Dataset, dev_mask: Any,
               fold_of: Mapping[str, int], cache: Cache | None, progress: bool,
               latency_sample: int | None) -> Results:
    """Step 4: the defaults and the chosen setting run on the test queries (k-fold: each query ranked by
    the setting chosen without its fold)."""
    from ..metrics import default_measures

    k, depth, measure = cfg.k, max(cfg.k, cfg.depth), plan.measure
    lat = latency_sample if latency_sample is not None else cfg.latency_sample
    ms = list(cfg.measures) if cfg.measures else [str(m) for m in default_measures(k, depth)]
    kw = dict(k=k, depth=depth, measures=ms if measure in ms else [measure, *ms], cache=cache, progress=progress,
              mask=test_mask,
              latency_sample=lat, latency_seed=cfg.latency_seed, averaging=cfg.averaging,
              relevance_level=cfg.relevance_level, ignore_identical_ids=cfg.ignore_identical_ids,
              **({"hourly_rate": cfg.hourly_rate} if cfg.hourly_rate is not None else {}))
    fresh = {a.name: a for a in build_arms(cfg.arms)}  # a fresh context indexes what it searches
    base = fresh[spec.arm]
    if spec.dev.kind != "kfold":
        tuned = plan.variant(fresh, chosen["params"], name=plan.tuned_name)
        return run_bakeoff(test_ds, [base, tuned], **kw)
    results = run_bakeoff(test_ds, [base], **kw)
    picks_fp = [trials[p["index"]]["fingerprint"] for p in chosen["per_fold"]]
    again = Context(corpus=dev_ds.corpus, cache=cache, progress=progress)  # indexes afresh if not cached
    runs = {trials[p["index"]]["fingerprint"]:
            again.search(plan.variant(fresh, p["params"], name=spec.arm), dev_ds.queries, k=depth, mask=dev_mask)
            for p in chosen["per_fold"]}
    ranked = {q: runs[picks_fp[fold_of[q]]].get(q) for q in test_ds.queries.ids if q in fold_of}
    cv_run = Run.from_ranked(plan.tuned_name, ranked)
    ev = score_run(cv_run, test_ds.qrels, results.measures, query_ids=test_ds.queries.ids,
                  averaging=cfg.averaging, relevance_level=cfg.relevance_level)
    fp = hashlib.sha256(json.dumps(picks_fp).encode()).hexdigest()
    results.arms.append(ArmResult(name=plan.tuned_name, type=plan.aspec.type,
                                  config={"per_fold": [p["params"] for p in chosen["per_fold"]]},
                                  fingerprint=fp, run=cv_run, evaluation=ev, timing={}, cached=False,
                                  extra={"tuned": "k-fold: each query ranked by the setting chosen "
                                                  "without its fold"}))
    return results


def _test_result(results: Results, measure: str, *, n_resamples: int, stats_seed: int,
                 alpha: float) -> tuple[dict[str, Any], int]:
    """Step 5: tuned against defaults on ``measure`` over the test queries both answered (the ``result``
    record of ``tune.json``, differences as tuned - defaults) and the number of those queries."""
    names = [a.name for a in results.arms]
    pq = {a.name: {measure: a.evaluation.per_query[measure]} for a in results.arms}
    # resampled in the order `bakeoff report` reads them back from results.json (keys sorted), so the
    # CIs and p-value here are the ones the report of these results shows
    # (under trec_eval's averaging rule an arm may not answer every query: the pair is over those both answered)
    qids = sorted(set.intersection(*(set(a.evaluation.per_query[measure]) for a in results.arms)))
    comp = comparison(pq, query_ids=qids, measures=[measure], n_resamples=n_resamples, seed=stats_seed, alpha=alpha)
    pair = comp.pair(names[0], names[1], measure)
    sign = 1.0 if pair.a == names[1] else -1.0  # report tuned - defaults

    def mean_ci(name: str) -> dict[str, float]:
        m = comp.mean(name, measure)
        return {"mean": m.mean, "ci_low": m.ci_low, "ci_high": m.ci_high}

    lo, hi = pair.diff_ci_low * sign + 0.0, pair.diff_ci_high * sign + 0.0  # + 0.0: no negative zero
    return {"defaults": mean_ci(names[0]), "tuned": mean_ci(names[1]),
            "diff": pair.diff * sign + 0.0, "diff_ci_low": min(lo, hi), "diff_ci_high": max(lo, hi),
            "p_perm": pair.p_perm, "p_ttest": pair.p_ttest, "d_z": pair.d_z * sign + 0.0,
            "significant": pair.significant, "alpha": alpha, "n_resamples": n_resamples,
            "seed": stats_seed, "confidence": comp.confidence}, len(qids)


def run_tune(cfg: BakeoffConfig, spec: TuneSpec, *, cache: Cache | None, out: Path | None = None,
             progress: bool = True, n_resamples: int = DEFAULT_RESAMPLES, stats_seed: int = 0,
             alpha: float = 0.05, latency_sample: int | None = None) -> TuneOutput:
    """Sweep, choose on dev, test once (module docstring); write into ``out`` when given."""
    t_start = time.perf_counter()
    plan = _plan(cfg, spec)  # 1. validate everything before any search
    dev_ds, dev_mask, test_ds, test_mask, dev_info = _open(cfg, spec)

    # 2. sweep on the dev queries
    t0 = time.perf_counter()
    scorer = _DevScorer(cfg=cfg, ctx=Context(corpus=dev_ds.corpus, cache=cache, progress=progress), dev_ds=dev_ds,
                        dev_mask=dev_mask, depth=max(cfg.k, cfg.depth), measure=plan.measure, cache=cache,
                        metrics_code=_metrics_code())
    fold_of: dict[str, int] = dev_info.pop("fold_of", {})
    trials, per_query = _sweep(plan, scorer, progress=progress)
    d_values, _, _ = scorer.score(plan.built[spec.arm])
    dev_ids = list(d_values)
    sweep_s = time.perf_counter() - t0

    chosen = _choose(spec.dev, trials, per_query, dev_ids, fold_of)  # 3. choose

    t1 = time.perf_counter()  # 4. test once
    results = _test_once(cfg, spec, plan, trials=trials, chosen=chosen, test_ds=test_ds, test_mask=test_mask,
                         dev_ds=dev_ds, dev_mask=dev_mask, fold_of=fold_of, cache=cache, progress=progress,
                         latency_sample=latency_sample)
    test_s = time.perf_counter() - t1
    if spec.dev.kind == "slice":  # the report reopens the whole split; only these queries are evaluated
        from ..data.datasets import open_dataset

        full, _ = open_dataset(cfg.dataset)
        results.dataset = {**results.dataset, "fingerprints": {**results.dataset["fingerprints"],
                                                               "queries": full.queries.fingerprint()}}
    results.dataset = {**results.dataset, "source": cfg.dataset.as_dict()}

    result, n_test = _test_result(results, plan.measure, n_resamples=n_resamples, stats_seed=stats_seed,
                                  alpha=alpha)  # 5. statistics on the test queries
    tune = {
        "schema": "bakeoff.tune", "schema_version": 1,
        "arm": spec.arm, "type": plan.aspec.type, "tuned_arm": plan.tuned_name,
        "measure": plan.measure, "tie_rule": TIE_RULE, "averaging": results.averaging,
        "relevance_level": results.relevance_level,
        "space": spec.space.as_dict(), "defaults": plan.defaults, "options": list(plan.type_info.options),
        "dev": {**dev_info, "describe": spec.dev.describe(), "split": dev_ds.split, "n_queries": len(dev_ids),
                "default_score": _mean(d_values, dev_ids),
                **({"folds_of_queries": {str(f): sum(1 for q in dev_ids if fold_of.get(q) == f)
                                         for f in range(int(spec.dev.folds or 0))}} if fold_of else {})},
        "test": {"split": test_ds.split, "n_queries": n_test, "query_subset": test_ds.info.get("query_subset")},
        "trials": trials, "chosen": chosen, "result": result,
        "timing": {"sweep_s": round(sweep_s, 3), "test_s": round(test_s, 3),
                   "total_s": round(time.perf_counter() - t_start, 3),
                   "trials": len(trials), "trials_from_cache": sum(1 for t in trials if t["cached"])},
    }
    tune = _finite(tune)
    output = TuneOutput(tune, results)
    if out is not None:
        results.extra = {"tune": tune}
        path = results.write(out)
        atomic_write_json(Path(out) / "tune.json", tune)
        output.folder, output.written = Path(out), [path.name, "runs/", "tune.json"]
    return output


def _metrics_code() -> str:
    """sha256 of the metric code, so cached dev scores never outlive a change to it."""
    from .. import metrics

    return hashlib.sha256(Path(metrics.__file__).read_bytes()).hexdigest()


def _finite(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, Mapping):
        return {str(k): _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    return x
