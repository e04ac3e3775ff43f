"""The verdict: from the report's numbers to what to deploy, in words the tests support.

:func:`build_verdict` reads a report (:func:`bakeoff.report.model.build_report`) and
decides, on the report's primary measure ``m``:

1. **best**: the valid arm with the highest mean ``m`` (the first listed on an exact tie);
2. **tied**: the other arms whose paired randomization test against the best is *not*
   significant after Holm correction (``p_holm >= alpha``; the family is every pair of
   arms on ``m``, as in the report's tables). The best arm and these are the
   **candidates**; an arm significantly below the best is never recommended.
3. **pick**: among the candidates, the cheapest to run. Costs are compared in this order:
   p50 single-query latency (``latency_ms``), machine + API ``$/1k queries``, one-time
   index build time (``index_total_s`` plus ``index_cached_total_s``: an index restored from the cache
   counts what building it took), model size on disk, peak memory added
   (``footprint.added_mb``). A cost decides only when one arm's figure is more than
   :data:`TOLERANCE` (10 %) above the other's **and** the difference exceeds the cost's
   noise floor (:func:`noise_floor`): for latency, twice the standard error of the difference
   of two medians, each the bootstrap standard error of the arm's median over its own ``n`` timed
   queries (:func:`median_se`; a result without the timings: ``se = 1.2533 σ / sqrt(n)`` with
   ``σ = (p95 - p50) / 1.645``); for the others the fixed floors of :data:`NOISE_FLOORS`
   (peak memory added: 16 MB, the granularity of the allocator and of the resident-set reading;
   index time: 0.1 s; model size: 1 MB; machine cost per 1k queries has the latency's
   relative noise). A figure missing for either arm skips that cost. The pick runs through
   the candidates in descending mean, replacing the current pick whenever the challenger is
   cheaper than both the current pick and the best arm. When no cost decides, the arms are
   **tied on cost too** and the simplest candidate is named (:func:`simplicity`: fewer arms
   inside it first, then lexical before dense before fusion before reranking, then the higher
   mean): one model less to run is the only difference left that is not noise.
4. **head-room**: the oracle (best arm per query, :func:`bakeoff.diagnose.oracle`) minus
   the best arm's mean -- what a perfect per-query router or fusion could add.
5. **caveats**: citation-mined labels (every measure is a lower bound); fewer than
   :data:`bakeoff.stats.SMALL_SAMPLE` queries; leak-heavy synthetic queries (more than
   :data:`LEAK_HEAVY_SHARE` of the queries with leak >= :data:`LEAK_HEAVY`); queries kept by
   an answerability filter whose model an arm ranks with (``report["filter_bias"]``); judged@k
   below :data:`JUDGED_LOW` for a candidate (when the report has judged@k); no pair of arms
   significantly different at all.
6. **leak check** (synthetic sets with leak buckets, :mod:`bakeoff.report.quality`): the
   paired tests inside the *lowest* leak bucket (queries that reuse few words of their
   source document). When one of them contradicts the overall decision -- an arm
   significantly better there (Holm within the bucket) than the pick, or than an arm the
   overall test calls better -- the verdict says so next to the decision and the headline
   points to it. The pick itself is not changed: a subgroup test is evidence to check
   (real queries, a stronger generator), not a licence to re-decide on a subset.

7. **leak-matched** (synthetic sets with per-query leak, :mod:`bakeoff.report.leak_match`):
   the decision is taken on the queries weighted to the leak of people's queries (the means,
   CIs and Holm-corrected tests of that table replace the unweighted ones); the unweighted
   best is named beside it. When the weighting leaves an effective sample below
   :data:`~bakeoff.report.leak_match.MIN_ESS` queries, no arm is picked (``pick`` is
   ``None``): the headline says why and how many queries it would take.

Broken arms (:mod:`bakeoff.runner.guards`: empty rankings for too many queries) are not
in the report's arms; the verdict lists them apart and never ranks them.

Wording rules: "best" is only ever "has the highest mean"; "better"/"worse" only for a
significant pair; a non-significant pair is "statistically tied (Holm p=...)", never
"as good as"; speed and size ratios are measurements, stated with both figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "JUDGED_LOW",
    "LEAK_HEAVY",
    "LEAK_HEAVY_SHARE",
    "NOISE_FLOORS",
    "TOLERANCE",
    "build_verdict",
    "costs_of",
    "fmt_p",
    "leak_check",
    "median_se",
    "noise_floor",
    "simplicity",
]

#: A cost decides between two arms only when one figure exceeds the other by more than this share.
TOLERANCE = 0.10
#: Fixed noise floors of the costs that are not timed per query (see :func:`noise_floor`): peak memory added (MB),
#: one-time index time (s), model size on disk (MB).
NOISE_FLOORS: dict[str, float] = {"memory_mb": 16.0, "index_s": 0.1, "model_mb": 1.0}
#: Order of simplicity of arm types (:func:`simplicity`): lexical, then dense, then fusion, then reranking, then the
#: rest (external services, plugins).
_TYPE_ORDER: dict[str, int] = {"tfidf": 0, "bm25": 0, "dense": 1, "ann": 1, "rrf": 2, "fuse": 2, "convex": 2,
                               "rerank": 3}
#: A query is leak-heavy when its leak (share of rare words copied from the source) is at least this.
LEAK_HEAVY = 0.5
#: The leak caveat applies when more than this share of the queries is leak-heavy.
LEAK_HEAVY_SHARE = 0.25
#: The judged@k caveat applies when a candidate's judged@k is below this.
JUDGED_LOW = 0.5

#: (key, label, unit, comparative phrase) of each cost, in the order they decide.
_COSTS: tuple[tuple[str, str, str, str], ...] = (
    ("latency_ms", "p50 latency", "ms", "faster per query"),
    ("usd_per_1k", "$/1k queries", "$", "cheaper per query"),
    ("index_s", "index time", "s", "faster to index"),
    ("model_mb", "model size", "MB", "smaller on disk"),
    ("memory_mb", "peak memory added", "MB", "lighter in memory"),
)


def fmt_p(p: float | None) -> str:
    """``p=0.41``, ``p=0.032``, ``p<0.001`` (``p=n/a`` when missing)."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "p=n/a"
    if p < 0.001:
        return "p<0.001"
    return f"p={p:.2g}" if p < 0.1 else f"p={p:.2f}"


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def costs_of(arm: Mapping[str, Any]) -> dict[str, float | None]:
    """The costs the verdict compares, from a report arm row (``None`` when not recorded)."""
    timing = arm.get("timing") or {}
    fp = arm.get("footprint") or {}
    model = _num(fp.get("model_bytes"))
    lat = timing.get("latency") or {}
    p50, p95, n = _num(lat.get("p50_ms")), _num(lat.get("p95_ms")), _num(lat.get("n"))
    se = None
    samples = [x for x in (_num(v) for v in lat.get("samples_ms") or ()) if x is not None]
    if p50 is not None and _num(arm.get("latency_ms")) == p50 and len(samples) >= 2:
        se = median_se(samples)
    elif p50 is not None and p95 is not None and n and n > 0 and _num(arm.get("latency_ms")) == p50:
        se = 1.2533 * max(p95 - p50, 0.0) / 1.645 / math.sqrt(n)
    return {
        "latency_ms": _num(arm.get("latency_ms")),
        "usd_per_1k": _num((arm.get("cost") or {}).get("usd_per_1k_queries")),
        "index_s": _build_s(timing),
        "model_mb": None if model is None else model / float(1 << 20),
        "memory_mb": _num(fp.get("added_mb")),
        "latency_se_ms": se,
    }


def _build_s(timing: Mapping[str, Any]) -> float | None:
    """Seconds to build the arm's index: this run's index time plus the index work it restored from the cache,
    as long as that took when it was done (``index_cached_total_s``, :mod:`bakeoff.runner.costs`)."""
    measured = _num(timing.get("index_total_s", timing.get("index_s")))
    restored = _num(timing.get("index_cached_total_s")) or 0.0
    return None if measured is None else measured + restored


#: Bootstrap resamples of :func:`median_se` (seeded: the same timings give the same floor).
MEDIAN_SE_RESAMPLES = 2000


def median_se(samples: Sequence[float], *, resamples: int = MEDIAN_SE_RESAMPLES, seed: int = 0) -> float:
    """Bootstrap standard error of the median of ``samples``: the standard deviation (ddof 1) of the medians of
    ``resamples`` resamples with replacement drawn by ``np.random.default_rng(seed)``. Unlike the normal
    approximation it stays wide when the timings have two modes (a thread pool that is sometimes awake), where
    the median jumps between them from one run to the next."""
    x = np.asarray(samples, dtype=np.float64)
    rows = np.random.default_rng(seed).integers(0, len(x), size=(resamples, len(x)))
    return float(np.median(x[rows], axis=1).std(ddof=1))


def noise_floor(key: str, a: Mapping[str, float | None], b: Mapping[str, float | None]) -> float:
    """The smallest difference of cost ``key`` between arms ``a`` and ``b`` (:func:`costs_of` dicts) that is
    not measurement noise (module docstring, rule 3): for latency ``2 sqrt(se_a² + se_b²)`` (0 when a
    standard error is unknown); for ``$/1k queries`` the latency floor's share of the larger latency, times the
    larger cost (machine cost is time times a rate); else :data:`NOISE_FLOORS`."""
    se_a, se_b = a.get("latency_se_ms"), b.get("latency_se_ms")
    lat_floor = 2.0 * math.sqrt(se_a ** 2 + se_b ** 2) if se_a is not None and se_b is not None else 0.0
    if key == "latency_ms":
        return lat_floor
    if key == "usd_per_1k":
        la, lb, ca, cb = a.get("latency_ms"), b.get("latency_ms"), a.get(key), b.get(key)
        if lat_floor and la and lb and ca is not None and cb is not None:
            return lat_floor / max(la, lb) * max(ca, cb)
        return 0.0
    return NOISE_FLOORS.get(key, 0.0)


def simplicity(arm: Mapping[str, Any]) -> tuple[int, int]:
    """Sort key of an arm row (simplest first): how many arms it runs (itself and its inputs), then its type's
    rank (lexical 0, dense 1, fusion 2, reranking 3, anything else 4)."""
    return 1 + len(arm.get("children") or ()), _TYPE_ORDER.get(str(arm.get("type") or ""), 4)


def _ratio(a: float, b: float) -> float:
    """``b / a`` for costs (how many times ``a`` is cheaper); inf when ``a`` is 0 and ``b`` is not."""
    if a <= 0:
        return math.inf if b > 0 else 1.0
    return b / a


def _decider(a: Mapping[str, float | None], b: Mapping[str, float | None]) -> tuple[str, float] | None:
    """The first cost on which ``a`` is cheaper than ``b`` by more than the tolerance: ``(key, ratio)``;
    ``None`` when ``b`` is cheaper first or no cost decides."""
    for key, *_ in _COSTS:
        x, y = a.get(key), b.get(key)
        if x is None or y is None or abs(x - y) <= noise_floor(key, a, b):
            continue
        if _ratio(x, y) > 1.0 + TOLERANCE:
            return key, _ratio(x, y)
        if _ratio(y, x) > 1.0 + TOLERANCE:
            return None
    return None


def _fmt_cost(key: str, v: float | None) -> str:
    if v is None:
        return "-"
    if key == "usd_per_1k":
        return "0" if v == 0 else (f"{v:.4f}" if v >= 1e-4 else f"{v:.2e}")
    if v == 0:
        return "0"
    if key in ("latency_ms", "index_s"):
        return f"{v:.0f}" if v >= 100 else (f"{v:.1f}" if v >= 10 else f"{v:.2f}")
    return f"{v:.0f}" if v >= 10 else f"{v:.1f}"


def _x(r: float) -> str:
    if math.isinf(r):
        return "free vs paid"
    return f"{r:.0f}x" if r >= 10 else f"{r:.1f}x"


def _names(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _pair(report: Mapping[str, Any], a: str, b: str, m: str) -> Mapping[str, Any] | None:
    for p in report["stats"]["pairs"]:
        if p["measure"] == m and {p["a"], p["b"]} == {a, b}:
            return p
    return None


def _caveats(report: Mapping[str, Any], candidates: Sequence[str], m: str, any_significant: bool,
             n_arms: int, *, weighted_ess: float | None = None) -> list[str]:
    out: list[str] = []
    prov = (report.get("dataset") or {}).get("provenance") or {}
    if prov.get("label_kind") == "citation":
        out.append("Labels are citation-mined: only cited documents are known relevant, so every measure is a "
                   "lower bound and an arm finding uncited relevant documents is not credited.")
    n = int(report.get("n_queries") or 0)
    if report.get("note") or n < 30:
        out.append(f"Only {n} queries: the tests have little power, and a tie here may hide a real difference.")
    leak = report.get("leak") or {}
    values = leak.get("values") or list((leak.get("per_query") or {}).values())
    if values:
        heavy = sum(1 for v in values if v >= LEAK_HEAVY) / len(values)
        if heavy > LEAK_HEAVY_SHARE:
            out.append(f"{heavy:.0%} of the queries are leak-heavy (leak >= {LEAK_HEAVY}: they reuse most of the "
                       "rare words of their source document), which favours lexical arms; read the leak-bucket "
                       "section before trusting a lexical win.")
    bias = report.get("filter_bias") or {}
    if bias.get("arms"):
        out.append(f"The queries were kept by the answerability score of {bias['model']}, the model that "
                   f"{_names(bias['arms'])} rank{'s' if len(bias['arms']) == 1 else ''} with: the filter chose "
                   "queries this model finds easy, which favours "
                   f"{'it' if len(bias['arms']) == 1 else 'them'}; regenerate with another scorer "
                   "(`--answerability use`) or check on real queries before trusting their lead.")
    judged = ((report.get("truth_quality") or {}).get("judged") or {})
    k = report.get("k")
    low = [(a, judged[a]) for a in candidates if isinstance(judged.get(a), (int, float)) and judged[a] < JUDGED_LOW]
    if low:
        out.append(f"judged@{k} is low for " + ", ".join(f"{a} ({v:.2f})" for a, v in low) + ": most of their top "
                   f"{k} has no judgment and counts as non-relevant, so {m} may understate them.")
    if n_arms >= 2 and not any_significant:
        these = ("these queries" if weighted_ess is None else
                 f"these queries weighted to the leak target (effective sample size {weighted_ess:.1f})")
        out.append(f"No pair of arms differs significantly on {m}: with {these} the test cannot separate any "
                   "of them.")
    return out


def leak_check(report: Mapping[str, Any], *, best: str, pick: str, below: Sequence[str]) -> list[dict[str, Any]]:
    """Contradictions between the overall decision and the lowest leak bucket (rule 6).

    Reads ``report["truth_quality"]["leak_buckets"]`` (the best arm against each other arm,
    per bucket, Holm within the bucket). Returns one entry per contradiction,
    ``{"bucket", "n", "winner", "loser", "mean_winner", "mean_loser", "p_holm", "overall"}``,
    where ``overall`` is ``"tied"`` (the pick was chosen among arms the overall test could
    not separate, yet the bucket separates them) or ``"reversed"`` (the overall test
    ranks ``loser`` significantly above ``winner``). Empty when there is no leak section,
    its best arm is not the verdict's, or nothing contradicts.
    """
    lb = ((report.get("truth_quality") or {}).get("leak_buckets")) or {}
    pairs = lb.get("pairs") or []
    if not pairs or pairs[0].get("a") != best:
        return []
    labels = [b for b in lb.get("counts") or {} if b != "(no leak value)"]
    if len(labels) < 2:  # one bucket holds every query with a leak value: the overall test already speaks
        return []
    low = labels[0]
    out = []
    for pair in pairs:
        other = pair["b"]
        row = next((r for r in pair["rows"] if r["bucket"] == low), None)
        if row is None or not row.get("significant"):
            continue
        a_wins = float(row["delta"]) > 0
        winner, loser = (best, other) if a_wins else (other, best)
        mean_w, mean_l = (row["mean_a"], row["mean_b"]) if a_wins else (row["mean_b"], row["mean_a"])
        if a_wins and other == pick and pick != best:
            overall = "tied"  # the best beats the chosen (tied) arm on the queries that copy little
        elif not a_wins and other == pick:
            continue  # the pick (tied overall, cheaper) is the better one here: it agrees with the decision
        elif not a_wins and other not in below:
            overall = "tied"  # an arm tied overall beats the best here
        elif not a_wins:
            overall = "reversed"  # significantly below overall, significantly above here
        else:
            continue  # the best beats an arm here too: no contradiction
        out.append({"bucket": low, "n": int(row["n"]), "winner": winner, "loser": loser,
                    "mean_winner": float(mean_w), "mean_loser": float(mean_l), "p_holm": row.get("p_perm_holm"),
                    "overall": overall})
    return out


def _leak_lines(checks: Sequence[Mapping[str, Any]], m: str, pick: str) -> list[str]:
    lines = []
    for c in checks:
        what = ("although the overall test cannot separate them" if c["overall"] == "tied"
                else f"although overall {c['loser']} is significantly better")
        lines.append(f"Leak check: on the {c['n']} queries with the least leak ({c['bucket']}), {c['winner']} is "
                     f"significantly better than {c['loser']} on {m} ({c['mean_winner']:.4f} vs "
                     f"{c['mean_loser']:.4f}, Holm {fmt_p(c['p_holm'])} within the bucket), {what}. Queries that "
                     "copy their answer's words favour lexical arms, so the overall result may come from the leak: "
                     f"check on real queries (`bakeoff label`, then `bakeoff compare`) or on queries from a stronger "
                     f"generator before deploying {pick}.")
    return lines


def build_verdict(report: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict of ``report`` (rules in the module docstring)::

        {"measure", "alpha", "best", "pick", "candidates": [name, ...],
         "tied": [{"name", "mean", "diff", "p_holm"}], "below": [{"name", "mean", "diff", "p_holm"}],
         "reason": {"cost", "ratio"} | null, "oracle": {"mean", "headroom"} | null,
         "costs": {arm: {cost: value}}, "broken": [{"name", "empty", "n", "share"}],
         "caveats": [str], "leak_check": [{...}], "headline": str, "lines": [str]}

    ``headline`` is the decision sentence; ``lines`` the headline, then the leak check,
    head-room, broken arms and caveats, each one sentence.
    """
    m = report["primary"]
    alpha = float(report["stats"]["alpha"])
    matched = ((report.get("truth_quality") or {}).get("leak_matched")) or None
    if matched is not None and matched.get("measure") == m and len(report["arms"]) >= 2:
        unweighted = {a["name"]: float(a["metrics"][m]["mean"]) for a in report["arms"]}
        report = leak_matched_view(report, matched)
    else:
        matched, unweighted = None, {}
    broken = [{"name": b["name"], **{key: (b.get("empty") or {}).get(key) for key in ("queries", "n", "share",
                                                                                      "max_share")}}
              for b in report.get("broken_arms") or []]
    out: dict[str, Any] = {"measure": m, "alpha": alpha, "best": None, "pick": None, "candidates": [], "tied": [],
                           "below": [], "reason": None, "oracle": None, "costs": {}, "broken": broken,
                           "caveats": [], "leak_check": [], "headline": "", "lines": [], "leak_matched": None}
    broken_lines = [f"Broken, left out of the ranking and the tests: {b['name']} (empty ranking for {b['queries']} "
                    f"of {b['n']} queries, {b['share']:.0%} > {b['max_share']:.0%})." for b in broken]
    if not report["arms"]:
        out["headline"] = "No valid arm: every arm returned empty rankings; nothing to recommend."
        out["lines"] = [out["headline"], *broken_lines]
        return out
    d = _decide(report, m)
    out.update(costs=d.costs, best=d.best, tied=d.tied, below=d.below, candidates=d.candidates, pick=d.pick,
               reason=d.reason)
    head = _headline(d)
    checks = leak_check(report, best=d.best, pick=d.pick, below=[r["name"] for r in d.below])
    out["leak_check"] = checks
    if checks:
        head = head.replace(f"→ deploy {d.pick}.", f"→ deploy {d.pick}, but the leak check below disagrees.", 1)
    matched_lines: list[str] = []
    if matched is not None:
        out["leak_matched"] = {key: matched.get(key) for key in ("target", "target_source", "n", "ess", "uncovered",
                                                                 "queries_needed", "min_ess")}
        head, matched_lines = _matched_lines(head, matched, unweighted, m=m, best=d.best, out=out)
    lines = [head, *matched_lines, *_leak_lines(checks, m, d.pick), *_fastest_lines(d)]
    out["oracle"] = _oracle(report, m, n_arms=d.n_arms)
    if out["oracle"] is not None:
        lines.append(f"Head-room: picking the best arm for each query (oracle) would reach {out['oracle']['mean']:.4f} "
                     f"{m}, {out['oracle']['headroom'] or 0:+.4f} over {d.best}; a router or a fusion can gain at most "
                     "that much.")
    lines.extend(broken_lines)
    n_sig = any(p.get("significant") for p in report["stats"]["pairs"] if p["measure"] == m)
    out["caveats"] = _caveats(report, d.candidates, m, n_sig, d.n_arms,
                              weighted_ess=None if matched is None else matched.get("ess"))
    lines.extend(f"Caveat: {c}" for c in out["caveats"])
    out["headline"] = head
    out["lines"] = lines
    return out


@dataclass(frozen=True)
class _Decision:
    """The decision on measure ``m`` (module docstring, rules 1-3): ``best`` (highest mean), the arms
    ``tied`` with it and ``below`` it (``{"name", "mean", "diff", "p_holm"}``, in descending mean), the
    ``candidates`` (best, then the tied), the ``pick``, and why: ``reason`` ``{"cost", "ratio"}`` (the cost
    that decided, or ``simplicity``) or ``None``; ``simple`` is the pick when simplicity named it."""

    m: str
    n_arms: int
    mean: dict[str, float]
    ci: dict[str, tuple[Any, Any]]
    costs: dict[str, dict[str, float | None]]
    best: str
    tied: list[dict[str, Any]]
    below: list[dict[str, Any]]
    candidates: list[str]
    pick: str
    simple: str | None
    reason: dict[str, Any] | None


def _decide(report: Mapping[str, Any], m: str) -> _Decision:
    """Rank the report's arms on ``m``, split them into tied with the best and below it by the paired test,
    and pick among the candidates (:func:`_pick`)."""
    arms = list(report["arms"])
    mean = {a["name"]: float(a["metrics"][m]["mean"]) for a in arms}
    ci = {a["name"]: (a["metrics"][m].get("ci_low"), a["metrics"][m].get("ci_high")) for a in arms}
    costs = {a["name"]: costs_of(a) for a in arms}
    order = sorted(mean, key=lambda a: -mean[a])  # stable: the first listed wins an exact tie
    best = order[0]
    tied: list[dict[str, Any]] = []
    below: list[dict[str, Any]] = []
    for other in order[1:]:
        p = _pair(report, best, other, m)
        p_holm = None if p is None else p.get("p_perm_holm")
        row = {"name": other, "mean": mean[other], "diff": mean[best] - mean[other], "p_holm": p_holm}
        (below if p is not None and p.get("significant") else tied).append(row)
    candidates = [best, *(t["name"] for t in tied)]
    pick, reason, simple = _pick(candidates, costs, rows={a["name"]: a for a in arms}, mean=mean)
    return _Decision(m=m, n_arms=len(arms), mean=mean, ci=ci, costs=costs, best=best, tied=tied, below=below,
                     candidates=candidates, pick=pick, simple=simple,
                     reason=({"cost": reason[0], "ratio": reason[1]} if reason is not None
                             else {"cost": "simplicity", "ratio": None} if simple is not None else None))


def _pick(candidates: Sequence[str], costs: Mapping[str, Mapping[str, float | None]], *,
          rows: Mapping[str, Mapping[str, Any]],
          mean: Mapping[str, float]) -> tuple[str, tuple[str, float] | None, str | None]:
    """``(pick, (cost, ratio) that decided or None, the pick when simplicity named it or None)`` among the
    ``candidates`` (the best first): a challenger replaces the current pick when it is cheaper (:func:`_decider`)
    than both the current pick and the best; when none is, the simplest arm not separated from the best on any
    cost (:func:`simplicity`, then the higher mean) if it is simpler than the best."""
    best = candidates[0]
    pick, reason = best, None
    for c in candidates[1:]:  # a challenger must be cheaper than the current pick and than the best
        if _decider(costs[c], costs[pick]) is not None and _decider(costs[c], costs[best]) is not None:
            pick = c
    if pick != best:
        reason = _decider(costs[pick], costs[best])
    simple = None
    if pick == best and len(candidates) > 1:  # tied on quality; a cost that is not noise decides, else simplicity
        level = [c for c in candidates
                 if c == best or (_decider(costs[c], costs[best]) is None and _decider(costs[best], costs[c]) is None)]
        simplest = min(level, key=lambda c: (*simplicity(rows[c]), -mean[c]))
        if simplest != best and simplicity(rows[simplest]) < simplicity(rows[best]):
            pick, simple = simplest, simplest
    return pick, reason, simple


def _headline(d: _Decision) -> str:
    """The decision sentence, ending ``→ deploy <arm>.``: one valid arm; the best significantly better than
    every other; the best among arms tied with it; the simpler of tied arms; a cheaper tied arm."""
    best, m, mean = d.best, d.m, d.mean
    if d.n_arms == 1:
        return f"Only one valid arm, {best}: {m} = {mean[best]:.4f}; nothing to compare it with → {best}."
    if not d.tied:
        worst_p = max((r["p_holm"] for r in d.below if r["p_holm"] is not None), default=None)
        return (f"{_best_text(d)} and is significantly better than every other arm (Holm "
                f"{fmt_p(worst_p).replace('p=', 'p≤')} for the closest) → deploy {best}.")
    if d.pick == best:
        tied_txt = _names([f"{t['name']} (Holm {fmt_p(t['p_holm'])})" for t in d.tied])
        return (f"{_best_text(d)}; {tied_txt} {'is' if len(d.tied) == 1 else 'are'} statistically tied with it "
                f"(no significant difference after Holm); {_why_best(d)} → deploy {best}.")
    pick = d.pick
    p = next(t for t in d.tied if t["name"] == pick)
    if d.simple is not None:
        head = (f"{best} and {pick} are statistically tied on {m} (Holm {fmt_p(p['p_holm'])}; {best} "
                f"{mean[best]:.4f} vs {pick} {mean[pick]:.4f}) and on cost (no difference beyond its measurement "
                f"noise), so the simpler arm is named (fewer arms inside it; lexical before dense before fusion "
                f"before reranking) → deploy {pick}.")
    else:
        r = d.reason
        assert r is not None
        key = r["cost"]
        figures = f"{_fmt_cost(key, d.costs[pick][key])} vs {_fmt_cost(key, d.costs[best][key])} {_unit(key)}"
        head = (f"{best} and {pick} are statistically tied on {m} (Holm {fmt_p(p['p_holm'])}; {best} "
                f"{mean[best]:.4f} vs {pick} {mean[pick]:.4f}); {pick} is {_x(r['ratio'])} {_label(key)} "
                f"({_cost_name(key)} {figures}) → deploy {pick}.")
    others = [t for t in d.tied if t["name"] != pick]
    if others:
        head += (" Also tied with the best: " + _names([f"{t['name']} (Holm {fmt_p(t['p_holm'])})" for t in others])
                 + ".")
    return head


def _best_text(d: _Decision) -> str:
    """``<best> has the highest mean <m> (<mean>, 95% CI [<low>, <high>])`` (no CI when not recorded)."""
    lo, hi = d.ci[d.best]
    return f"{d.best} has the highest mean {d.m} ({d.mean[d.best]:.4f}" + (
        f", 95% CI [{lo:.4f}, {hi:.4f}])" if lo is not None and hi is not None else ")")


def _why_best(d: _Decision) -> str:
    """Why the best is named among arms tied with it: no latency measured; it is also the cheapest (the first
    cost on which it beats the first tied arm, with both figures); or no cost nor simplicity separates them."""
    best, costs = d.best, d.costs
    if all(costs[c].get("latency_ms") is None for c in d.candidates):
        return "no latency was measured to tell them apart, so the higher mean decides"
    wins = [_decider(costs[best], costs[t["name"]]) for t in d.tied]
    if all(w is not None for w in wins):
        key, ratio = wins[0]  # type: ignore[misc]
        first = d.tied[0]["name"]
        return (f"{best} is also the cheapest of them to run ({_x(ratio)} {_label(key)} than {first}: "
                f"{_cost_name(key)} {_fmt_cost(key, costs[best][key])} vs "
                f"{_fmt_cost(key, costs[first][key])} {_unit(key)})")
    return ("no cost tells them apart beyond its measurement noise (more than 10% and above its noise "
            "floor), and none is simpler, so the higher mean decides")


def _fastest_lines(d: _Decision) -> list[str]:
    """The line on the fastest arm (lowest p50 latency) when it is significantly below the best, else none."""
    if not (d.below and d.n_arms > 1):
        return []
    costs = d.costs
    fastest = min((a for a in d.mean if costs[a]["latency_ms"] is not None),
                  key=lambda a: costs[a]["latency_ms"], default=None)  # type: ignore[arg-type,return-value]
    below = next((r for r in d.below if r["name"] == fastest), None)
    if below is None or fastest is None:
        return []
    return [(f"The fastest arm, {fastest} (p50 {_fmt_cost('latency_ms', costs[fastest]['latency_ms'])} ms), "
             f"is significantly below {d.best} on {d.m} by {below['diff']:.4f} (Holm {fmt_p(below['p_holm'])}).")]


def _oracle(report: Mapping[str, Any], m: str, *, n_arms: int) -> dict[str, Any] | None:
    """``{"mean", "headroom"}`` of the report's oracle on ``m`` (rule 4), when there are arms to choose from."""
    oracle = ((report.get("diagnostics") or {}).get("oracle") or {}).get(m)
    if oracle and n_arms > 1 and oracle.get("mean") is not None:
        return {"mean": oracle["mean"], "headroom": oracle.get("headroom")}
    return None


def leak_matched_view(report: Mapping[str, Any], matched: Mapping[str, Any]) -> dict[str, Any]:
    """``report`` with the primary measure's means, CIs and pairwise tests replaced by those of the
    leak-matched table (:func:`bakeoff.report.leak_match.leak_matched`); other measures as they were."""
    m = matched["measure"]
    arms = []
    for a in report["arms"]:
        row = matched["arms"].get(a["name"])
        if row is None:
            arms.append(a)
            continue
        metrics = {**a["metrics"], m: {"mean": row["mean"], "ci_low": row["ci_low"], "ci_high": row["ci_high"]}}
        arms.append({**a, "metrics": metrics})
    pairs = [p for p in report["stats"]["pairs"] if p["measure"] != m]
    pairs += [{"measure": m, "a": p["a"], "b": p["b"], "diff": p["diff"], "p_perm": p["p"],
               "p_perm_holm": p["p_holm"], "significant": p["significant"]} for p in matched["pairs"]]
    return {**report, "arms": arms, "stats": {**report["stats"], "pairs": pairs}}


def _matched_lines(head: str, matched: Mapping[str, Any], unweighted: Mapping[str, float], *, m: str, best: str,
                   out: dict[str, Any]) -> tuple[str, list[str]]:
    """The headline and lines of a leak-matched decision (rule 7); clears the pick when the effective sample is
    too small to name one."""
    from .leak_match import MAX_QUERIES_NEEDED, MIN_ESS

    n, ess = int(matched["n"]), float(matched["ess"])
    src = matched.get("target_source") or "default"
    target = ", ".join(f"{x:.0%}" for x in matched["target"])
    where = f"weighted to the leak of people's queries (target {src}: {target} in the five leak bins)"
    ub = max(unweighted, key=lambda a: unweighted[a]) if unweighted else None
    need = matched.get("queries_needed")
    lines = []
    uncovered = float(matched.get("uncovered") or 0.0)
    if uncovered > 0:
        lines.append(f"Leak match: {uncovered:.0%} of the target lies in leak bins that hold no query; the weights "
                     "spread it over the other bins, so the table says nothing about queries of that leak.")
    if ess < MIN_ESS:
        out["pick"] = None
        out["reason"] = {"cost": "leak-matched sample too small", "ratio": None}
        runner = matched.get("runner_up")
        if need and runner and need > MAX_QUERIES_NEEDED:  # a difference this small is no reason to generate more
            more = (f" {matched['best']} and {runner} differ so little on {m} that more than "
                    f"{MAX_QUERIES_NEEDED:,} queries at this leak mix would be needed to separate them.")
        else:
            more = (f" About {need} queries at this leak mix would separate {matched['best']} from {runner} on {m} "
                    "(fewer from a generator that copies less)." if need and runner else "")
        head = (f"No pick: {where}, these {n} synthetic queries count as {ess:.1f} (effective sample size, below "
                f"{MIN_ESS:.0f}): the generator's queries copy their documents' words far more than people's do. "
                f"Unweighted, {ub} has the highest mean {m} ({unweighted[ub] if ub is not None else float('nan'):.4f}), which may come "
                f"from the copied words.{more}")
        return head, lines
    head = f"On the {n} queries {where}, effective sample size {ess:.1f}: {head}"
    if ub is not None and ub != best:
        lines.append(f"Unweighted, {ub} has the highest mean {m} ({unweighted[ub]:.4f} vs {best} "
                     f"{unweighted.get(best, float('nan')):.4f}): the difference comes from how much the queries copy.")
    if out.get("tied") and need:
        lines.append(f"About {need} queries at this leak mix would give an 80% chance to separate {best} from "
                     f"{matched.get('runner_up')} on {m}.")
    return head, lines


def _label(key: str) -> str:
    return next(c[3] for c in _COSTS if c[0] == key)


def _cost_name(key: str) -> str:
    return next(c[1] for c in _COSTS if c[0] == key)


def _unit(key: str) -> str:
    return next(c[2] for c in _COSTS if c[0] == key)


def cost_rows(verdict: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the candidates' cost table (every valid arm; candidates marked)."""
    header = ["arm", "status", *[f"{c[1]} ({c[2]})" for c in _COSTS]]
    rows = []
    cands = set(verdict.get("candidates") or [])
    for name, costs in (verdict.get("costs") or {}).items():
        status = "pick" if name == verdict.get("pick") else ("tied with best" if name in cands else "below best")
        if name == verdict.get("best") and name != verdict.get("pick"):
            status = "best mean"
        rows.append([name, status, *[_fmt_cost(c[0], costs.get(c[0])) for c in _COSTS]])
    return header, rows
