"""The field's standard figures, as files for a paper or a pull request and inline in the HTML report.

* **P-R curves** (:func:`pr_curves`, drawn by :func:`pr_figure`): each arm's interpolated
  precision at the 11 standard recall levels, averaged over the compared queries -- trec_eval's
  ``iprec_at_recall`` (:func:`bakeoff.metrics.pr_curve`, equal to pytrec_eval's per query), at the
  report's relevance level.
* **Per-topic differences** (:func:`topic_diffs`, drawn by :func:`topic_figure`): for the verdict's
  two arms (the pick against the best, or the best against the runner-up), ``A - B`` on the
  verdict's measure for every query, sorted, one bar per query (above 0: A wins the query), as in
  TREC overview papers; the mean difference is a dashed line.

:func:`write_figures` writes each figure as SVG, PNG (150 dpi) and PDF into ``figures/`` of the
report folder; the HTML report inlines the SVGs. Drawing needs matplotlib (``bakeoff[figures]``);
without it the report is written without figures and says so.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.model import Qrels, Run
from ..errors import MissingDependencyError
from ..metrics import RECALL_LEVELS, pr_curve
from ..runner.results import StoredResults

__all__ = ["FORMATS", "figure_pair", "pr_curves", "pr_figure", "topic_diffs", "topic_figure", "write_figures"]

#: File formats each figure is written in.
FORMATS = ("svg", "png", "pdf")


def pr_curves(runs: Mapping[str, Run], qrels: Qrels, *, query_ids: Sequence[str], relevance_level: int = 1,
              arms: Sequence[str]) -> dict[str, Any]:
    """``{"levels": [0.0, ..., 1.0], "arms": {arm: [mean iprec per level]}}`` over ``query_ids``."""
    out: dict[str, list[float]] = {}
    for a in arms:
        if a in runs:
            c = pr_curve(runs[a], qrels, query_ids=query_ids, relevance_level=relevance_level, averaging="trec_eval-c")
            out[a] = list(c.mean)
    return {"levels": list(RECALL_LEVELS), "arms": out}


def figure_pair(report: Mapping[str, Any]) -> tuple[str, str] | None:
    """The two arms the per-topic figure compares: the verdict's pick against the best when they differ,
    else the best against the arm with the next highest mean; ``None`` with fewer than two arms."""
    v = report.get("verdict") or {}
    m = v.get("measure") or report.get("primary")
    arms = [a["name"] for a in report.get("arms") or []]
    if len(arms) < 2 or not m:
        return None
    best, pick = v.get("best"), v.get("pick")
    if best and pick and best != pick:
        return pick, best
    means: dict[str, float] = {}
    for a in report["arms"]:
        mean = (a["metrics"].get(m) or {}).get("mean")
        means[a["name"]] = float("-inf") if mean is None else mean
    order = sorted(arms, key=lambda a: -means[a])
    return order[0], order[1]


def topic_diffs(per_query: Mapping[str, Mapping[str, Mapping[str, float]]], a: str, b: str, measure: str,
                query_ids: Sequence[str]) -> dict[str, Any]:
    """``{"a", "b", "measure", "queries": [...], "diffs": [...]}``: ``A - B`` per query, sorted descending
    (ties by query id)."""
    pa, pb = per_query[a][measure], per_query[b][measure]
    pairs = sorted(((pa[q] - pb[q], q) for q in query_ids), key=lambda x: (-x[0], x[1]))
    return {"a": a, "b": b, "measure": measure, "queries": [q for _, q in pairs], "diffs": [d for d, _ in pairs]}


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependencyError("matplotlib", "figures", "the report's P-R and per-topic figures") from None
    plt.rcParams["svg.hashsalt"] = "bakeoff"  # the same figure gives the same SVG bytes
    plt.rcParams["svg.fonttype"] = "none"  # text stays text in the SVG
    return plt


def pr_figure(curves: Mapping[str, Any], *, title: str = "") -> Any:
    """A matplotlib figure of :func:`pr_curves`' data."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 4.0))
    markers = "osD^v<>pXh*"
    for i, (arm, ys) in enumerate(curves["arms"].items()):
        ax.plot(curves["levels"], ys, marker=markers[i % len(markers)], markersize=4, linewidth=1.4, label=arm)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xticks([x / 10 for x in range(11)])
    ax.set_xlabel("recall")
    ax.set_ylabel("interpolated precision")
    ax.grid(True, linewidth=0.4, alpha=0.5)
    ax.legend(fontsize=8, frameon=False)
    ax.set_title(title or "Interpolated precision-recall (11 points)", fontsize=10)
    fig.tight_layout()
    return fig


def topic_figure(diffs: Mapping[str, Any], *, title: str = "") -> Any:
    """A matplotlib figure of :func:`topic_diffs`' data: one bar per query, sorted."""
    plt = _pyplot()
    ds = list(diffs["diffs"])
    n = len(ds)
    fig, ax = plt.subplots(figsize=(max(5.2, min(12.0, 0.02 * n + 4)), 3.6))
    colors = ["#2a7ab0" if d > 0 else "#c0392b" if d < 0 else "#999999" for d in ds]
    ax.bar(range(n), ds, width=1.0 if n > 60 else 0.8, color=colors, linewidth=0)
    ax.axhline(0, color="black", linewidth=0.6)
    mean = sum(ds) / n if n else 0.0
    ax.axhline(mean, color="#555555", linewidth=0.8, linestyle="--", label=f"mean difference {mean:+.4f}")
    wins, losses = sum(d > 0 for d in ds), sum(d < 0 for d in ds)
    top = max([abs(d) for d in ds] + [0.05]) * 1.08  # symmetric: wins above, losses below, same scale
    ax.set_ylim(-top, top)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_xticks([])
    ax.set_xlabel(f"{n} queries, sorted: {wins} won by {diffs['a']}, {n - wins - losses} tied, "
                  f"{losses} won by {diffs['b']}", fontsize=8)
    ax.set_ylabel(f"difference in {diffs['measure']}")
    ax.legend(fontsize=8, frameon=False, loc="lower left")
    ax.set_title(title or f"Per query: {diffs['a']} - {diffs['b']} on {diffs['measure']}", fontsize=10)
    fig.tight_layout()
    return fig


def _save(fig: Any, base: Path, formats: Sequence[str]) -> tuple[list[str], str]:
    """Write ``fig`` as ``base.<fmt>`` for each format (atomically); return the files and the SVG text."""
    from .._io import atomic_write_bytes

    written, svg = [], ""
    for fmt in formats:
        buf = io.BytesIO()
        meta = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(fmt)  # reproducible bytes
        fig.savefig(buf, format=fmt, dpi=150, metadata=meta)
        data = buf.getvalue()
        if fmt == "svg":
            svg = data.decode("utf-8")
        atomic_write_bytes(base.with_suffix(f".{fmt}"), data)
        written.append(base.with_suffix(f".{fmt}").name)
    return written, svg


def write_figures(folder: Path, report: Mapping[str, Any], *, results: StoredResults,
                  runs: Mapping[str, Run] | None, qrels: Qrels | None, query_ids: Sequence[str],
                  formats: Sequence[str] = FORMATS) -> tuple[list[str], dict[str, str]]:
    """Write the P-R curves (when the runs and judgments are at hand) and the per-topic differences
    (two arms or more) into ``folder``; return the files (relative to ``folder``'s parent) and
    ``{figure name: SVG text}`` for the HTML report."""
    plt = _pyplot()
    files: list[str] = []
    svgs: dict[str, str] = {}
    arms = [a["name"] for a in report.get("arms") or []]
    level = int(report.get("relevance_level", 1))
    if runs is not None and qrels is not None and arms:
        curves = pr_curves(runs, qrels, query_ids=query_ids, relevance_level=level, arms=arms)
        if curves["arms"]:
            fig = pr_figure(curves, title=f"Interpolated P-R, {len(query_ids)} queries, relevant: grade >= {level}")
            written, svgs["pr_curves"] = _save(fig, folder / "pr_curves", formats)
            plt.close(fig)
            files += [f"{folder.name}/{w}" for w in written]
    pair = figure_pair(report)
    if pair is not None:
        m = (report.get("verdict") or {}).get("measure") or report["primary"]
        per_query = {a.name: a.per_query for a in results.arms}
        if all(m in per_query.get(x, {}) for x in pair):
            diffs = topic_diffs(per_query, pair[0], pair[1], m, query_ids)
            fig = topic_figure(diffs)
            written, svgs["per_topic"] = _save(fig, folder / "per_topic", formats)
            plt.close(fig)
            files += [f"{folder.name}/{w}" for w in written]
    return files, svgs
