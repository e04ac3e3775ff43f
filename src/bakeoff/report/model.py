"""The report as data (``report.json``): statistics + diagnostics built from a results set.

Renderers (:mod:`.terminal`, :mod:`.html`, :mod:`.latex`) are functions of this dict.

Schema (``schema_version`` 1)::

    {
      "schema": "bakeoff.report", "schema_version": 1, "bakeoff_version": str, "created": ISO-8601,
      "sources": [path, ...],                        # the results.json file(s) reported
      "dataset": {...},                              # as in results.json
      "k": int, "measures": [str, ...], "primary": str,   # primary = ndcg@k when computed
      "n_queries": int, "note": str | null,          # note: the fewer-than-30-queries warning
      "averaging": str, "relevance_level": int,      # as in results.json (bakeoff.metrics.conventions)
      "arms": [{"name", "type", "children": [...], "timing": {...}, "cached": bool, "cost": {...} | null,
                "latency_ms": float | null, "latency_kind": str,   # see latency_ms()
                "metrics": {measure: {"mean", "ci_low", "ci_high"}},
                "beats": {measure: [arm, ...]}}],    # arms it is significantly better than (Holm)
      "stats": {"n_resamples", "confidence", "alpha", "seed", "means": [...],
                "pairs": [{"measure", "a", "b", "n", "mean_a", "mean_b", "diff", "diff_ci_low",
                           "diff_ci_high", "p_perm", "p_ttest", "t", "d_z", "p_perm_holm",
                           "p_ttest_holm", "significant", "exact"}]},
      "diagnostics": {
        "win_tie_loss": {measure: [{"a", "b", "wins", "ties", "losses"}]},   # every ordered pair
        "disagreements": [{"a", "b", "measure", "queries": [{"query_id", "text", "a", "b", "delta"}]}],
        "churn": [{"base", "new", "k", "n_queries", "gained", "lost", "both", "rescued", "broken",
                   "docs_gained", "docs_lost", "gained_queries", "lost_queries"}],
        "decomposition": [{"a", "b", "measure", "by", "delta",
                           "rows": [{"bucket", "n", "mean_a", "mean_b", "delta", "contribution",
                                     "wins", "ties", "losses"}]}],
        "oracle": {measure: {"mean", "best_arm", "best_mean", "headroom", "sole_best", "all_zero"}},
        "coverage": {"n_queries", "uncoverable", "partial", "missing_relevant_docs"} | null,
        "failures": {arm: {"count", "queries"}} | null    # coverable queries, no relevant doc in top k
      },
      "leak": {"values": [...], "per_query": {qid: leak}, "mean", "source", ...} | null,
      "truth_quality": {"k", "judged", "holes", "round_trip", "leak_buckets"} | null,
                       # judged@k, unjudged pooled documents, round trip, leak-robust verdict
                       # (bakeoff.report.quality)
      "filter_bias": {"model", "scorer", "arms", "file"} | null,
                       # arms ranking with the answerability filter's model (find_filter_bias)
      "broken_arms": [{"name", "type", "empty": {"queries", "n", "share", "max_share", "broken"}, "metrics"}],
                                                     # left out of arms, stats and diagnostics (runner.guards)
      "verdict": {...}                               # bakeoff.report.verdict.build_verdict
    }

Each arm row also carries ``footprint`` (model size, peak memory) and ``empty`` from results.json.

Non-finite floats are written as ``null``. Readers ignore unknown keys; a breaking
change bumps ``schema_version``.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from itertools import combinations
from pathlib import Path
from typing import Any

from .. import diagnose as dg
from ..data.model import Dataset, Run
from ..library_versions import bakeoff_version
from ..runner.results import StoredArm, StoredResults
from ..stats import DEFAULT_RESAMPLES, Comparison, comparison

__all__ = ["REPORT_SCHEMA_VERSION", "build_report", "composite_pairs", "find_leak", "primary_measure",
           "report_and_stats"]

log = logging.getLogger("bakeoff")

REPORT_SCHEMA_VERSION = 1


def primary_measure(results: StoredResults) -> str:
    """``ndcg@k`` when computed, else the first measure."""
    want = f"ndcg@{results.k}"
    return want if want in results.measures else results.measures[0]


def _children(arm: StoredArm) -> list[str]:
    """Names of the arms an arm is built from: ``children`` in results.json, else config ``base``/``arms``."""
    if arm.children:
        return list(arm.children)
    cfg = arm.config
    out: list[str] = []
    base = cfg.get("base")
    if isinstance(base, str):
        out.append(base)
    elif isinstance(base, Mapping) and "name" in base:
        out.append(str(base["name"]))
    arms = cfg.get("arms")
    if isinstance(arms, str):
        out.extend(a for a in arms.split("+") if a)
    elif isinstance(arms, (list, tuple)):
        out.extend(str(a["name"]) if isinstance(a, Mapping) and "name" in a else str(a) for a in arms)
    return out


def composite_pairs(results: StoredResults) -> list[tuple[str, str]]:
    """``(child, composite)`` pairs among the reported arms (an arm and its reranked/fused version)."""
    names = set(results.arm_names)
    pairs = []
    for a in results.arms:
        for c in _children(a):
            if c in names and c != a.name:
                pairs.append((c, a.name))
    return pairs


def latency_ms(arm: StoredArm) -> tuple[float | None, str]:
    """An arm's per-query latency for the quality/latency plot, and what it is.

    The end-to-end single-query median (``timing.latency.p50_ms``) when measured; else the
    end-to-end batch time per query (``ms_per_query_total``, inputs of composite arms
    included); else the arm's own batch ``ms_per_query``.
    """
    timing = arm.timing
    lat = timing.get("latency") or {}
    if isinstance(lat.get("p50_ms"), (int, float)):
        return float(lat["p50_ms"]), "p50 single-query latency"
    for key, what in (("ms_per_query_total", "batch ms/query incl. inputs"), ("ms_per_query", "batch ms/query")):
        if isinstance(timing.get(key), (int, float)):
            return float(timing[key]), what
    return None, "not measured"


def _finite(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, Mapping):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def find_leak(dataset_source: Mapping[str, Any] | None, dataset: Dataset | None,
              query_ids: Sequence[str]) -> dict[str, Any] | None:
    """Leak statistics of a synthetic set, if any (lenient; ``None`` when there are none).

    Looked for, in order: a numeric ``leak`` field in the queries' metadata; a JSON
    provenance file beside the data (``provenance*.json``, ``*provenance*.json``,
    ``synthetic*.json``, ``meta*.json``) with a ``leak`` section holding per-query values
    (``per_query`` as {qid: value} or a list, ``values``, or ``ratios``), or a
    pre-binned ``histogram`` ``{"edges": [...], "counts": [...]}``.
    """
    found = _provenance_leak(dataset_source, query_ids)
    if dataset is not None:
        vals: dict[str, float] = {}
        for q in query_ids:
            if q in dataset.queries:
                v = dataset.queries[q].metadata.get("leak") if isinstance(dataset.queries[q].metadata, Mapping) else None
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    vals[q] = float(v)
        if vals:
            out = _leak_summary({"per_query": vals}, source="queries metadata field 'leak'", query_ids=query_ids)
            if out is not None and found is not None:
                out.update({k: found[1][k] for k in ("target", "target_source") if k in found[1]})
            return out
    return None if found is None else found[1]


def _provenance_leak(dataset_source: Mapping[str, Any] | None,
                     query_ids: Sequence[str]) -> tuple[Path, dict[str, Any]] | None:
    """The first provenance file beside the data with a usable ``leak`` section, and its summary (with the
    generation's leak ``target`` shares and ``target_source`` when recorded)."""
    folders = _source_folders(dataset_source)
    seen: set[Path] = set()
    for folder in folders:
        try:
            folder = folder.resolve()
        except OSError:
            continue
        if folder in seen or not folder.is_dir():
            continue
        seen.add(folder)
        cands = sorted({*folder.glob("*provenance*.json"), *folder.glob("synthetic*.json"), *folder.glob("meta*.json")})
        for path in cands:
            try:
                obj = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            leak = _dig_leak(obj)
            if leak is not None:
                out = _leak_summary(leak, source=str(path), query_ids=query_ids)
                if out is not None:
                    target = leak.get("target") if isinstance(leak, Mapping) else None
                    if (isinstance(target, list) and len(target) == 5
                            and all(isinstance(x, (int, float)) and x >= 0 for x in target) and sum(target) > 0):
                        out["target"] = [float(x) for x in target]
                        out["target_source"] = str(leak.get("target_source") or path)
                    return path, out
    return None


def _source_folders(dataset_source: Mapping[str, Any] | None) -> list[Path]:
    """Folders where a dataset's provenance may lie: the BEIR folder, the queries' and qrels' folders."""
    folders: list[Path] = []
    src = dataset_source if isinstance(dataset_source, Mapping) else {}  # bakeoff demo records a string
    for key in ("beir", "queries", "qrels", "corpus"):
        if src.get(key):
            p = Path(str(src[key]))
            folders.append(p if p.is_dir() else p.parent)
            if key == "qrels":
                folders.append(p.parent.parent)
    return folders


def _weights_in(node: Any) -> set[str]:
    """Every ``weights`` hash recorded anywhere in an arm's config (encoders, cross-encoders)."""
    out: set[str] = set()
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "weights" and isinstance(value, str) and value:
                out.add(value)
            else:
                out |= _weights_in(value)
    elif isinstance(node, (list, tuple)):
        for value in node:
            out |= _weights_in(value)
    return out


def find_filter_bias(results: StoredResults, *, sources: Sequence[str] = ()) -> dict[str, Any] | None:
    """The arms that rank with the model whose answerability score kept the queries, if any.

    A synthetic set written by ``bakeoff generate`` / ``bakeoff demo`` records its answerability
    scorer in ``provenance.json`` (``answerability.scorer``: model name and ``weights`` hash).
    An arm whose config records the same weights hash (a dense encoder, a cross-encoder) was, in
    effect, used to choose the queries, and so is every arm that fuses or reranks it
    (``children``). Returns ``{"model", "scorer", "arms": [...], "file"}`` or ``None``
    (no provenance, no answerability filter, or no arm concerned)."""
    folders = _source_folders(results.source)
    if results.dataset.truth:  # bakeoff demo: the truth folder, recorded relative to where it ran
        folders.append(Path(results.dataset.truth))
        folders.extend(Path(src).parent / "truth" for src in sources)
    for folder in folders:
        path = folder / "provenance.json"
        try:
            prov = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        ident = ((prov.get("answerability") or {}).get("scorer") or {}) if isinstance(prov, Mapping) else {}
        wanted = ident.get("weights") if isinstance(ident, Mapping) else None
        if not wanted:
            return None
        same = [a.name for a in results.arms if wanted in _weights_in(a.config)]
        for a in results.arms:  # fusions and rerankers over a concerned arm
            if a.name not in same and any(c in same for c in a.children):
                same.append(a.name)
        if not same:
            return None
        return {"model": str(ident.get("model") or ident.get("encoder") or "?"), "scorer": str(ident.get("scorer")),
                "arms": same, "file": str(path)}
    return None


def _dig_leak(obj: Any, depth: int = 0) -> Any:
    if depth > 3 or not isinstance(obj, Mapping):
        return None
    for key in ("leak", "leak_stats", "leakage"):
        if key in obj:
            return obj[key]
    for v in obj.values():
        found = _dig_leak(v, depth + 1)
        if found is not None:
            return found
    return None


def _leak_summary(leak: Any, *, source: str, query_ids: Sequence[str] = ()) -> dict[str, Any] | None:
    values: list[float] | None = None
    hist = None
    extra: dict[str, Any] = {}
    if isinstance(leak, (list, tuple)):
        values = [float(v) for v in leak if isinstance(v, (int, float))]
    elif isinstance(leak, Mapping):
        for key in ("per_query", "values", "ratios", "leaks"):
            v = leak.get(key)
            if isinstance(v, Mapping):
                qset = set(query_ids)
                items = [(q, x) for q, x in v.items() if isinstance(x, (int, float))]
                if qset and any(q in qset for q, _ in items):
                    items = [(q, x) for q, x in items if q in qset]
                    extra["per_query"] = {str(q): float(x) for q, x in items}  # leak by query id (leak buckets)
                values = [float(x) for _, x in items]
                break
            if isinstance(v, (list, tuple)):
                values = [float(x) for x in v if isinstance(x, (int, float))]
                break
        h = leak.get("histogram")
        if isinstance(h, Mapping) and isinstance(h.get("counts"), list):
            edges = h.get("edges") or h.get("bins")
            if isinstance(edges, list) and len(edges) == len(h["counts"]) + 1:
                hist = {"edges": [float(e) for e in edges], "counts": [int(c) for c in h["counts"]]}
        for key in ("mean", "threshold", "rejection_rate", "rejected", "kept"):
            if isinstance(leak.get(key), (int, float)):
                extra[key] = leak[key]
    if not values and hist is None:
        return None
    out: dict[str, Any] = {"source": source, **extra}
    if values:
        out["values"] = values
        out.setdefault("mean", sum(values) / len(values))
    if hist is not None:
        out["histogram"] = hist
    return out


def build_report(
    results: StoredResults,
    *,
    dataset: Dataset | None = None,
    runs: Mapping[str, Run] | None = None,
    measures: Sequence[str] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    alpha: float = 0.05,
    seed: int = 0,
    deltas: Sequence[tuple[str, str]] = (),
    n_disagree: int = 10,
    sources: Sequence[str] = (),
    progress: bool = False,
    leak: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Statistics and diagnostics of a results set (see module docstring).

    ``leak`` (``{"per_query": {qid: leak}, "target": [5 shares], "target_source": str}``) replaces the leak
    :func:`find_leak` would find beside the data.

    ``dataset`` and ``runs`` (arm name -> Run) enable the diagnostics that need
    text, judgments or rankings (disagreement text, churn, buckets, coverage).
    ``deltas`` adds ``(a, b)`` pairs to decompose, besides every (arm, composite) pair.
    """
    return report_and_stats(results, dataset=dataset, runs=runs, measures=measures, n_resamples=n_resamples,
                            confidence=confidence, alpha=alpha, seed=seed, deltas=deltas, n_disagree=n_disagree,
                            sources=sources, progress=progress, leak=leak)[0]


def report_and_stats(
    results: StoredResults,
    *,
    dataset: Dataset | None = None,
    runs: Mapping[str, Run] | None = None,
    measures: Sequence[str] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    alpha: float = 0.05,
    seed: int = 0,
    deltas: Sequence[tuple[str, str]] = (),
    n_disagree: int = 10,
    sources: Sequence[str] = (),
    progress: bool = False,
    leak: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], Comparison | None]:
    """:func:`build_report`'s report and the statistics its ``stats`` section holds (``None`` when every arm
    is broken: there are none)."""
    results, broken = _without_broken(results)
    if not results.arms:
        return _broken_only_report(results, broken, measures=measures, sources=sources, alpha=alpha, seed=seed,
                                   n_resamples=n_resamples, confidence=confidence), None
    measures = list(measures or results.measures)
    primary = primary_measure(results) if primary_measure(results) in measures else measures[0]
    per_query, qids, paired_note = _paired_queries(results, measures[0])
    comp = comparison(per_query, query_ids=qids, measures=measures, n_resamples=n_resamples, confidence=confidence,
                   alpha=alpha, seed=seed, progress=progress)
    arm_rows = [_arm_row(arm, comp, measures) for arm in results.arms]
    diag = _diagnostics(results, per_query, qids, comp, measures=measures, primary=primary, dataset=dataset,
                        runs=runs, deltas=deltas, n_disagree=n_disagree)
    leak = _report_leak(leak, results, dataset, qids)
    quality = _truth_quality(results, dataset=dataset, runs=runs, qids=qids, primary=primary, comp=comp, leak=leak,
                             seed=seed, n_resamples=n_resamples, alpha=alpha)
    report = {
        "schema": "bakeoff.report",
        "schema_version": REPORT_SCHEMA_VERSION,
        "bakeoff_version": bakeoff_version(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "sources": list(sources),
        "dataset": results.dataset.to_dict(),
        "k": results.k,
        "measures": measures,
        "primary": primary,
        "n_queries": len(qids),
        "note": " ".join(n for n in (comp.note, paired_note) if n) or None,
        "averaging": results.averaging,
        "relevance_level": results.relevance_level,
        "arms": arm_rows,
        "stats": comp.to_dict(),
        "diagnostics": diag,
        "leak": leak,
        "truth_quality": quality,
        "filter_bias": find_filter_bias(results, sources=sources),
        **({"tune": results.tune} if results.tune else {}),  # a `bakeoff tune` sweep
        "broken_arms": broken,
    }
    return _with_verdict(_finite(report)), comp


#: Arm -> measure -> query id -> value.
_PerQuery = dict[str, Mapping[str, Mapping[str, float]]]


def _paired_queries(results: StoredResults, measure: str) -> tuple[_PerQuery, list[str], str | None]:
    """The per-query values the arms are compared on (arm -> measure -> query id -> value), the query ids
    (the first arm's order) and a note when they are not every arm's own.

    Every arm must have been evaluated on the same queries on ``measure`` (a :class:`ValueError`
    otherwise), except under trec_eval's averaging, which averages each arm over the queries it answered:
    the paired comparison is then over the queries every arm answered, and the note says so."""
    per_query: _PerQuery = {a.name: a.per_query for a in results.arms}
    qids = list(results.arms[0].per_query[measure])
    for other in results.arms[1:]:
        if set(other.per_query[measure]) != set(qids):
            if results.averaging != "trec_eval":
                raise ValueError(f"arm {other.name!r} was evaluated on different queries than "
                                 f"{results.arm_names[0]!r}")
            common = set.intersection(*(set(b.per_query[measure]) for b in results.arms))
            qids = [q for q in qids if q in common]
            per_query = {n: {m: {q: v[q] for q in qids} for m, v in pq.items()} for n, pq in per_query.items()}
            return per_query, qids, (f"averaging trec_eval: the arms answered different queries; the comparison is "
                                     f"over the {len(qids)} queries every arm answered (each arm's own mean is in "
                                     "results.json)")
    return per_query, qids, None


def _arm_row(arm: StoredArm, comp: Comparison, measures: Sequence[str]) -> dict[str, Any]:
    """An arm's row of the report: its results.json figures, latency (:func:`latency_ms`), each measure's mean
    with its CI, and per measure the arms it is significantly better than (``beats``, Holm)."""
    metrics = {}
    beats: dict[str, list[str]] = {}
    for m in measures:
        ms = comp.mean(arm.name, m)
        metrics[m] = {"mean": ms.mean, "ci_low": ms.ci_low, "ci_high": ms.ci_high}
        beats[m] = [(p.b if p.a == arm.name else p.a) for p in comp.pairs
                    if p.measure == m and p.significant and arm.name in (p.a, p.b)
                    and ((p.diff > 0) if p.a == arm.name else (p.diff < 0))]
    lat, lat_kind = latency_ms(arm)
    return {"name": arm.name, "type": arm.type, "children": _children(arm),
            "timing": dict(arm.timing), "latency_ms": lat, "latency_kind": lat_kind,
            "cost": arm.cost, "cached": arm.cached, "footprint": arm.footprint, "empty": arm.empty,
            "metrics": metrics, "beats": beats}


def _diagnostics(results: StoredResults, per_query: _PerQuery, qids: Sequence[str], comp: Comparison, *,
                 measures: Sequence[str], primary: str, dataset: Dataset | None, runs: Mapping[str, Run] | None,
                 deltas: Sequence[tuple[str, str]], n_disagree: int) -> dict[str, Any]:
    """The report's ``diagnostics`` section (module docstring): win/tie/loss, disagreements, churn,
    decomposition, oracle, coverage and failures. Those that need text, judgments or rankings need
    ``dataset`` (and ``runs``); without them churn and decomposition are empty and coverage and failures
    ``None``."""
    arms = results.arm_names
    diag: dict[str, Any] = {}
    diag["win_tie_loss"] = {m: [{"a": w.a, "b": w.b, "wins": w.wins, "ties": w.ties, "losses": w.losses}
                                for w in dg.win_tie_loss_matrix(per_query, m, query_ids=qids, arms=arms)]
                            for m in measures}
    queries = dataset.queries if dataset is not None else None
    diag["disagreements"] = [
        {"a": a, "b": b, "measure": primary,
         "queries": [{"query_id": r["query_id"], "text": r["text"], "a": r[a], "b": r[b], "delta": r["delta"]}
                     for r in dg.disagreements(per_query, a, b, primary, query_ids=qids, queries=queries,
                                               n=n_disagree)]}
        for a, b in combinations(arms, 2)
    ]
    pairs = composite_pairs(results)
    diag["churn"] = _churn(pairs, qids, dataset=dataset, runs=runs, k=results.k)
    diag["decomposition"] = []
    if dataset is not None:
        decomp_pairs = _decomposition_pairs(pairs, deltas, arms, comp, primary)
        diag["decomposition"] = _decomposition(decomp_pairs, per_query, qids, comp, dataset=dataset,
                                               measures=measures, primary=primary, k=results.k)
    diag["oracle"] = {}
    for m in measures:
        o = dg.oracle(per_query, m, query_ids=qids, arms=arms)
        o.pop("per_query", None)
        diag["oracle"][m] = o
    diag["coverage"] = None
    diag["failures"] = None
    if dataset is not None:
        cov = dg.coverage(dataset.qrels, dataset.corpus, query_ids=qids)
        diag["coverage"] = cov
        if runs is not None:
            diag["failures"] = _failures(arms, qids, cov["uncoverable"], dataset=dataset, runs=runs, k=results.k)
    return diag


def _churn(pairs: Sequence[tuple[str, str]], qids: Sequence[str], *, dataset: Dataset | None,
           runs: Mapping[str, Run] | None, k: int) -> list[dict[str, Any]]:
    """Churn (:func:`bakeoff.diagnose.churn`) of each ``(base, new)`` composite pair whose runs are given."""
    out: list[dict[str, Any]] = []
    if runs is not None and dataset is not None:
        for base, new in pairs:
            if base in runs and new in runs:
                out.append(dg.churn(runs[base], runs[new], dataset.qrels, k=k, query_ids=qids,
                                    base_name=base, new_name=new).to_dict())
    return out


def _decomposition_pairs(pairs: Sequence[tuple[str, str]], deltas: Sequence[tuple[str, str]],
                         arms: Sequence[str], comp: Comparison, primary: str) -> list[tuple[str, str]]:
    """The ``(a, b)`` pairs whose difference is decomposed: each composite before its input, then ``deltas``
    (duplicates once); when there are none, the two arms with the highest mean ``primary``."""
    decomp_pairs = list(dict.fromkeys([*((new, base) for base, new in pairs), *deltas]))
    if not decomp_pairs and len(arms) >= 2:
        ranked = sorted(arms, key=lambda a: -comp.mean(a, primary).mean)
        decomp_pairs = [(ranked[0], ranked[1])]
    return decomp_pairs


def _decomposition(decomp_pairs: Sequence[tuple[str, str]], per_query: _PerQuery, qids: Sequence[str],
                   comp: Comparison, *, dataset: Dataset, measures: Sequence[str], primary: str,
                   k: int) -> list[dict[str, Any]]:
    """Each pair's difference ``mean(a) - mean(b)`` on ``primary`` and ``mrr@k`` (those reported) split by
    bucket (:func:`bakeoff.diagnose.decompose`) of every bucketing (:func:`_bucketings`)."""
    bucketings = _bucketings(dataset, qids)
    out: list[dict[str, Any]] = []
    for a, b in decomp_pairs:
        if a not in per_query or b not in per_query:
            raise ValueError(f"cannot decompose {a} - {b}: unknown arm")
        for m in dict.fromkeys([primary, f"mrr@{k}"]):
            if m not in measures:
                continue
            delta = comp.pair(a, b, m).diff * (1 if comp.pair(a, b, m).a == a else -1)
            for by, buckets in bucketings:
                rows = dg.decompose(per_query, a, b, m, buckets=buckets, query_ids=qids)
                out.append({"a": a, "b": b, "measure": m, "by": by, "delta": delta,
                            "rows": [asdict(r) for r in rows]})
    return out


def _bucketings(dataset: Dataset, qids: Sequence[str]) -> list[tuple[str, dict[str, str]]]:
    """``(by, {query id: bucket})`` for the decomposition: relevant documents, query length, and each
    bucketable metadata field of the queries."""
    bucketings: list[tuple[str, dict[str, str]]] = [
        ("relevant documents", dg.relevant_count_buckets(dataset.qrels, qids)),
        ("query length", dg.length_buckets(dataset.queries, qids)),
    ]
    for f in dg.bucketable_metadata_fields(dataset.queries, qids):
        bucketings.append((f"metadata: {f}", dg.metadata_buckets(dataset.queries, qids, f)))
    return bucketings


def _failures(arms: Sequence[str], qids: Sequence[str], uncoverable: Any, *, dataset: Dataset,
              runs: Mapping[str, Run], k: int) -> dict[str, Any]:
    """Per arm with a run, the coverable queries with no relevant document in its top ``k``
    (:func:`bakeoff.diagnose.failures`): ``{arm: {"count", "queries"}}``."""
    out: dict[str, Any] = {}
    for a in arms:
        if a in runs:
            fails = dg.failures(runs[a], dataset.qrels, k=k, query_ids=qids, exclude=uncoverable)
            out[a] = {"count": len(fails), "queries": fails}
    return out


def _report_leak(leak: Mapping[str, Any] | None, results: StoredResults, dataset: Dataset | None,
                 qids: Sequence[str]) -> dict[str, Any] | None:
    """The report's ``leak`` section: the ``leak`` given to :func:`build_report` (source ``given``, its
    per-query values as ``values``), else the one :func:`find_leak` finds."""
    if leak is None:
        return find_leak(results.source, dataset, qids)
    return {"source": "given", "values": list(leak.get("per_query", {}).values()), **dict(leak)}


def _truth_quality(results: StoredResults, *, dataset: Dataset | None, runs: Mapping[str, Run] | None,
                   qids: Sequence[str], primary: str, comp: Any, leak: Mapping[str, Any] | None, seed: int,
                   n_resamples: int, alpha: float) -> dict[str, Any] | None:
    """The truth-quality section (:mod:`bakeoff.report.quality`), arms ordered best first on ``primary``."""
    from .quality import truth_quality

    order = sorted(results.arm_names, key=lambda a: -comp.mean(a, primary).mean)
    return truth_quality(results, dataset=dataset, runs=runs, query_ids=qids, primary=primary, arm_order=order,
                         leak=leak, seed=seed, n_resamples=n_resamples, alpha=alpha)


# --- guards and verdict (bakeoff.runner.guards, bakeoff.report.verdict) ------------------------------

def _without_broken(results: StoredResults) -> tuple[StoredResults, list[dict[str, Any]]]:
    """``results`` without its broken arms (empty rankings for too many queries, recorded by the
    run in ``empty.broken``), and those arms as ``{"name", "type", "empty", "metrics"}``: they are
    listed apart, never ranked, tested or diagnosed. Composite arms built on a broken arm stay."""
    broken = [a for a in results.arms if a.broken]
    if not broken:
        return results, []
    rows = [{"name": a.name, "type": a.type, "empty": a.empty, "metrics": a.metrics} for a in broken]
    return results.with_arms([a for a in results.arms if not a.broken]), rows


def _with_verdict(report: dict[str, Any]) -> dict[str, Any]:
    from .verdict import build_verdict

    report["verdict"] = _finite(build_verdict(report))
    return report


def _broken_only_report(results: StoredResults, broken: list[dict[str, Any]], *, measures: Sequence[str] | None,
                        sources: Sequence[str], alpha: float, seed: int, n_resamples: int,
                        confidence: float) -> dict[str, Any]:
    """The report when every arm is broken: no statistics, no diagnostics, the broken list and the verdict."""
    measures = list(measures or results.measures)
    first = broken[0]["empty"] or {}
    report = {
        "schema": "bakeoff.report", "schema_version": REPORT_SCHEMA_VERSION, "bakeoff_version": bakeoff_version(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"), "sources": list(sources),
        "dataset": results.dataset.to_dict(), "k": results.k, "measures": measures,
        "primary": primary_measure(results) if primary_measure(results) in measures else measures[0],
        "n_queries": int(first.get("n") or 0), "note": None, "arms": [],
        "averaging": results.averaging, "relevance_level": results.relevance_level,
        "stats": {"n_resamples": n_resamples, "confidence": confidence, "alpha": alpha, "seed": seed,
                  "means": [], "pairs": []},
        "diagnostics": {"win_tie_loss": {m: [] for m in measures}, "disagreements": [], "churn": [],
                        "decomposition": [], "oracle": {}, "coverage": None, "failures": None},
        "leak": None, "truth_quality": None, "broken_arms": broken,
    }
    return _with_verdict(_finite(report))
