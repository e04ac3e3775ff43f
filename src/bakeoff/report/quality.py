"""The *truth quality* section of a report: can these judgments be trusted to rank the arms?

``report["truth_quality"]`` (``None`` without the dataset and the runs)::

    {"k": int,
     "judged": {arm: mean judged@k},                       # share of the top k with any judgment
     "holes": {"k", "total", "disputed", "queries", "per_arm", "disputed_per_arm", "file"},
     "round_trip": {"n", "ks", "field", "depth", "arms": {arm: {"top10", "top100"}}} | null,
     "leak_buckets": {"edges", "counts": {bucket: n}, "measure",
                      "pairs": [{"a", "b", "delta", "rows": [{"bucket", "n", "mean_a", "mean_b", "delta",
                                 "wins", "ties", "losses", "p_perm", "p_perm_holm", "significant"}]}]} | null}

* **judged@k** — :func:`bakeoff.diagnose.judged_at_k`. With one known answer per query
  (synthetic sets), judged@10 near 0.1 means nine of ten top documents are unknown, and
  every measure counts them as wrong.
* **holes** — unjudged documents of the arms' pooled top ``k``
  (:func:`bakeoff.data.pool.holes`), counted per arm; the list goes to ``holes.tsv``
  (:func:`write_holes`); ``bakeoff assess`` can grade them with an LLM.
* **round trip** — :func:`bakeoff.diagnose.round_trip`: share of synthetic queries whose
  source document is in an arm's top 10 / top 100. Reported only, never a filter.
* **leak buckets** — the *leak-robust verdict*: for the best arm on the primary measure
  against every other arm, the delta inside each leak bucket
  (:func:`bakeoff.diagnose.leak_buckets`, :func:`bakeoff.diagnose.decompose`) with a
  paired randomization test inside the bucket (:func:`bakeoff.stats.paired_tests`,
  seeded per bucket and pair by :func:`bakeoff.stats.derive_rng`), Holm-corrected across
  the pairs within each bucket. A win that holds only in the high-leak bucket is a win
  on copied words.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .. import diagnose as dg
from ..data.ids import source_path
from ..data.leak_bins import DEFAULT_LEAK_TARGET
from ..data.model import Dataset, Run
from ..data.pool import holes
from ..runner.results import StoredResults
from ..stats import DEFAULT_RESAMPLES, derive_rng, holm, paired_tests

__all__ = ["HOLES_FILE", "leak_verdict", "quick_quality", "truth_quality", "write_holes"]

HOLES_FILE = "holes.tsv"


def leak_verdict(per_query: Mapping[str, Mapping[str, Mapping[str, float]]], *, leak: Mapping[str, float],
                 arms: Sequence[str], measure: str, query_ids: Sequence[str], edges: Sequence[float] = dg.LEAK_EDGES,
                 seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES, alpha: float = 0.05) -> dict[str, Any]:
    """Deltas of ``arms[0]`` against each other arm inside each leak bucket (see the module docstring)."""
    buckets = dg.leak_buckets(leak, query_ids, edges=edges)
    order = {b: i for i, b in enumerate(dg.leak_bucket_labels(edges))}
    counts = {b: 0 for b in order}
    for q in query_ids:
        counts[buckets[q]] += 1
    counts = {b: n for b, n in counts.items() if n}
    best = arms[0]
    pairs = []
    for other in arms[1:]:
        rows = sorted((asdict(r) for r in dg.decompose(per_query, best, other, measure, buckets=buckets,
                                                       query_ids=query_ids)), key=lambda r: order[r["bucket"]])
        va, vb = per_query[best][measure], per_query[other][measure]
        for r in rows:
            qs = [q for q in query_ids if buckets[q] == r["bucket"]]
            t = paired_tests([va[q] for q in qs], [vb[q] for q in qs],
                             rng=derive_rng(seed, "leak-bucket", measure, best, other, r["bucket"]),
                             n_resamples=n_resamples)
            r["p_perm"] = t["p_perm"]
        delta = sum(r["contribution"] for r in rows)
        pairs.append({"a": best, "b": other, "delta": delta, "rows": rows})
    for label in counts:  # Holm across the pairs, within one bucket
        cells = [r for p in pairs for r in p["rows"] if r["bucket"] == label]
        for r, adj in zip(cells, holm([r["p_perm"] for r in cells])):
            r["p_perm_holm"] = adj
            r["significant"] = bool(not math.isnan(adj) and adj < alpha)
    return {"edges": [float(e) for e in edges], "counts": counts, "measure": measure, "alpha": alpha, "pairs": pairs}


def truth_quality(results: StoredResults, *, dataset: Dataset | None, runs: Mapping[str, Run] | None,
                  query_ids: Sequence[str], primary: str, arm_order: Sequence[str], leak: Mapping[str, Any] | None,
                  seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES, alpha: float = 0.05) -> dict[str, Any] | None:
    """The section (see the module docstring); ``arm_order`` puts the best arm first."""
    per_query = {a.name: a.per_query for a in results.arms}
    k = results.k
    out: dict[str, Any] = {"k": k, "judged": None, "holes": None, "round_trip": None, "leak_buckets": None,
                           "leak_matched": None}
    if dataset is not None and runs:
        arm_runs = {a: runs[a] for a in arm_order if a in runs}
        out["judged"] = {a: v["mean"] for a, v in dg.judged_at_k(arm_runs, dataset.qrels, k=k,
                                                                   query_ids=query_ids).items()}
        hs = holes(arm_runs, dataset.qrels, k=k, query_ids=query_ids)
        out["holes"] = {**dg.hole_counts(hs, list(arm_runs), k=k), "file": HOLES_FILE}
        rt = dg.round_trip(arm_runs, dataset.queries, query_ids=query_ids, ks=(10, 100))
        out["round_trip"] = rt if rt["n"] else None
    per_q_leak = (leak or {}).get("per_query")
    if isinstance(per_q_leak, Mapping) and per_q_leak and len(arm_order) >= 2:
        out["leak_buckets"] = leak_verdict(per_query, leak=per_q_leak, arms=arm_order, measure=primary,
                                           query_ids=query_ids, seed=seed, n_resamples=n_resamples, alpha=alpha)
        from .leak_match import leak_matched

        target = (leak or {}).get("target") or DEFAULT_LEAK_TARGET
        source = (leak or {}).get("target_source") or ("recorded" if (leak or {}).get("target") else "default")
        out["leak_matched"] = leak_matched(per_query, leak=per_q_leak, arms=arm_order, measure=primary,
                                           query_ids=query_ids, target=target, target_source=source, seed=seed,
                                           n_resamples=n_resamples, alpha=alpha)
    if all(out[key] is None for key in ("judged", "round_trip", "leak_buckets")):
        return None
    return out


def quick_quality(dataset: Dataset, runs: Mapping[str, Run], *, k: int = 10,
                  query_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """Judged@k, hole counts and round trip (top 10 / top 100) of ``runs`` on ``dataset``, without the
    statistics of a full report (for ``bakeoff demo``): ``{"k", "judged": {arm: mean}, "holes": {...},
    "round_trip": {...} | None}``. ``query_ids`` default: the dataset's queries that have judgments."""
    qids = list(query_ids) if query_ids is not None else [q for q in dataset.queries.ids if q in dataset.qrels]
    judged = {a: v["mean"] for a, v in dg.judged_at_k(runs, dataset.qrels, k=k, query_ids=qids).items()}
    hs = holes(runs, dataset.qrels, k=k, query_ids=qids)
    rt = dg.round_trip(runs, dataset.queries, query_ids=qids, ks=(10, 100))
    return {"k": k, "judged": judged, "holes": dg.hole_counts(hs, list(runs), k=k), "round_trip": rt if rt["n"] else None}


def write_holes(path: str | Path, runs: Mapping[str, Run], dataset: Dataset, *, k: int,
                query_ids: Sequence[str]) -> Path:
    """``holes.tsv``: ``query_id  doc_id  best_rank  n_arms  disputed  arms  query  title  path`` (tab-separated,
    tabs and newlines in text replaced by spaces; ``path`` is the original file of a document read from a folder
    when its id differs, :func:`bakeoff.data.ids.source_path`, else empty), atomically."""
    from .._io import atomic_write_text

    def clean(s: str) -> str:
        return " ".join(str(s).split())

    lines = ["query_id\tdoc_id\tbest_rank\tn_arms\tdisputed\tarms\tquery\ttitle\tpath"]
    for h in holes(runs, dataset.qrels, k=k, query_ids=query_ids):
        qtext = dataset.queries[h.query_id].text if h.query_id in dataset.queries else ""
        pos = dataset.corpus.position.get(h.doc_id)
        title = dataset.corpus.titles[pos] if pos is not None else ""
        source = (source_path(dataset.corpus.metadata[pos], h.doc_id) if pos is not None else None) or ""
        lines.append("\t".join([h.query_id, h.doc_id, str(h.best_rank), str(len(h.arms)), "yes" if h.disputed else "no",
                                ",".join(h.arms), clean(qtext), clean(title), clean(source)]))
    p = Path(path)
    atomic_write_text(p, "\n".join(lines) + "\n")
    return p
