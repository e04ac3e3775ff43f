"""The HTML report: one self-contained, offline file (plotly.js inlined, no CDN, no fetches).

Sections: summary table (means, CIs, significance letters), quality-vs-latency scatter with
the Pareto front, per-arm metric bars with CI whiskers, the win/tie/loss heat map, a leak
histogram for synthetic sets, the pairwise tests, diagnostics (oracle, coverage, churn,
decompositions, disagreeing queries) and a query explorer (search the queries; for one
query, each arm's top 10 side by side, relevant documents highlighted, metric per arm).

Safety: every text from the corpus, the queries or arm names reaches the page either
through :func:`html.escape` (server-side tables) or through ``textContent`` (the explorer,
which never uses ``innerHTML``). The data is embedded as JSON in a
``<script type="application/json">`` block with ``<``, ``>``, ``&`` and U+2028/2029
written as ``\\uXXXX`` escapes (:func:`json_for_html`), so a document containing
``</script><script>...`` cannot end the block. A Content-Security-Policy forbids every
network request.

Pareto front: an arm is on it when no other arm is at least as fast (ms/query) and at
least as good (primary measure) while strictly better on one of the two.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ..data.ids import source_path
from ..data.model import Dataset, Run
from ..errors import MissingDependencyError
from ..metrics import conventions_line
from .terminal import (
    arm_letters,
    leak_bucket_rows,
    leak_matched_line,
    leak_matched_rows,
    pair_rows,
    report_rows,
    truth_quality_rows,
    verdict_measure,
)
from .tuning import tuning_section

__all__ = [
    "explorer_data",
    "json_for_html",
    "label_offsets",
    "natural_key",
    "pareto_front",
    "plotly_js",
    "render_html",
    "write_html",
]

SNIPPET_CHARS = 220
TOP_N = 10


def json_for_html(obj: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<``, ``>``, ``&``, U+2028/2029."""
    s = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return (s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def plotly_js() -> str:
    """plotly.js as bundled in the ``plotly`` Python package (the ``report`` extra)."""
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        raise MissingDependencyError("plotly", "report", "the HTML report's plots") from None
    js = get_plotlyjs()
    # A literal "</script" inside the bundle would close our <script>; in JS source "<\/" == "</".
    return js.replace("</script", "<\\/script")


def pareto_front(points: Sequence[tuple[str, float, float]]) -> list[str]:
    """Names on the Pareto front of ``(name, cost, quality)``: lower cost and higher quality are better."""
    front = []
    for name, c, q in points:
        if math.isnan(c) or math.isnan(q):
            continue
        dominated = any((c2 <= c and q2 >= q and (c2 < c or q2 > q))
                        for n2, c2, q2 in points if n2 != name and not (math.isnan(c2) or math.isnan(q2)))
        if not dominated:
            front.append(name)
    return front


def label_offsets(points: Sequence[tuple[str, float, float]], *, width: float = 420.0, height: float = 290.0,
                  char_px: float = 7.5, line_px: float = 16.0) -> list[tuple[float, float]]:
    """Pixel offsets ``(ax, ay)`` (plotly annotation convention: ``ay`` grows downwards) of the
    label of each ``(name, x, y)`` point of a plot with a log x axis, so that labels overlap
    neither each other nor the markers. The points are placed on a ``width`` x ``height`` px
    plot area (each axis spanning its data range padded 8% a side); from the highest point
    down, each label takes the first free spot on rings of 24, 44, 64 and 84 px around its
    point (above, below, the four diagonals, right, left), its box ``char_px`` per character
    wide and ``line_px`` high; a label with no free spot goes right above its point."""
    if not points:
        return []
    xs = [math.log10(x) for _, x, _ in points]
    ys = [y for _, _, y in points]

    def scale(v: float, lo: float, hi: float, size: float) -> float:
        span = (hi - lo) or 1.0
        return (v - (lo - 0.08 * span)) / (span * 1.16) * size

    px = [scale(x, min(xs), max(xs), width) for x in xs]
    py = [scale(y, min(ys), max(ys), height) for y in ys]
    spots = [(r * math.cos(math.radians(a)), r * math.sin(math.radians(a)))
             for r in (24, 44, 64, 84) for a in (90, 270, 45, 135, 315, 225, 0, 180)]

    def box(i: int, dx: float, dy: float) -> tuple[float, float, float, float]:
        w = char_px * len(points[i][0]) + 4
        cx = px[i] + dx + (w / 2 - 8 if dx > 1 else -(w / 2 - 8) if dx < -1 else 0)  # side labels lean outwards
        cy = py[i] + dy
        return cx - w / 2, cy - line_px / 2, cx + w / 2, cy + line_px / 2

    def meets(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
        return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

    markers = [(px[i] - 7, py[i] - 7, px[i] + 7, py[i] + 7) for i in range(len(points))]
    placed: list[tuple[float, float, float, float]] = []
    out: list[tuple[float, float]] = [(0.0, -24.0)] * len(points)
    for i in sorted(range(len(points)), key=lambda j: (-py[j], px[j])):
        free = next(((dx, dy) for dx, dy in spots
                     if not any(meets(box(i, dx, dy), b) for b in [*placed, *markers])), (0.0, 24.0))
        placed.append(box(i, *free))
        w = char_px * len(points[i][0]) + 4
        lean = (w / 2 - 8) if free[0] > 1 else -(w / 2 - 8) if free[0] < -1 else 0.0
        out[i] = (round(free[0] + lean, 1), round(-free[1], 1))
    return out


def _num(v: Any) -> float:
    return math.nan if v is None else float(v)


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key ordering digit runs by value: ``q2`` before ``q10``, ``doc-9`` before ``doc-10``."""
    import re

    return tuple((0, int(t)) if t.isdigit() else (1, t) for t in re.findall(r"\d+|\D+", text))


def _positive_or_nan(v: float) -> float:
    return v if v > 0 else math.nan


def _figures(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    arms = [a["name"] for a in report["arms"]]
    primary = report["primary"]
    k = report["k"]
    figs: list[dict[str, Any]] = []

    # A latency of 0 (e.g. a cached arm whose time was not measured) cannot sit on a log axis: left out.
    pts = [(a["name"], _positive_or_nan(_num(a.get("latency_ms"))), _num(a["metrics"][primary]["mean"]))
           for a in report["arms"]]
    kinds = sorted({a.get("latency_kind", "batch ms/query") for a in report["arms"] if (a.get("latency_ms") or 0) > 0})
    front = set(pareto_front(pts))
    fpts = sorted([p for p in pts if p[0] in front], key=lambda p: p[1])
    ok = [p for p in pts if not math.isnan(p[1])]
    figs.append({
        "id": "plot-pareto",
        "data": [
            {"type": "scatter", "mode": "markers", "name": "arms", "x": [p[1] for p in ok], "y": [p[2] for p in ok],
             "text": [p[0] for p in ok], "hovertemplate": "%{text}: %{y:.4f}, %{x:.3g} ms<extra></extra>",
             "marker": {"size": 11}},
            {"type": "scatter", "mode": "lines", "name": "Pareto front", "x": [p[1] for p in fpts],
             "y": [p[2] for p in fpts], "line": {"dash": "dash", "shape": "hv"}},
        ],
        "layout": {"title": {"text": f"{primary} vs latency (Pareto front dashed)"},
                   "xaxis": {"title": {"text": f"ms / query, log scale ({'; '.join(kinds) or 'not measured'})"},
                             "type": "log"},
                   "yaxis": {"title": {"text": primary}}, "showlegend": True, "margin": {"t": 50},
                   # labels as annotations placed apart (label_offsets), each with a thin line to its point
                   "annotations": [{"x": math.log10(p[1]), "y": p[2], "xref": "x", "yref": "y", "text": html.escape(p[0]),
                                    "showarrow": True, "arrowhead": 0, "arrowwidth": 0.6, "arrowcolor": "#999",
                                    "ax": ax, "ay": ay, "font": {"size": 12}, "standoff": 5, "name": "pareto-label"}
                                   for p, (ax, ay) in zip(ok, label_offsets(ok))]},
    })

    bar_measures = [m for m in (f"ndcg@{k}", f"recall@{k}", f"mrr@{k}") if m in report["measures"]] or report["measures"][:3]
    data = []
    for m in bar_measures:
        means = [_num(a["metrics"][m]["mean"]) for a in report["arms"]]
        hi = [_num(a["metrics"][m]["ci_high"]) - v for a, v in zip(report["arms"], means)]
        lo = [v - _num(a["metrics"][m]["ci_low"]) for a, v in zip(report["arms"], means)]
        data.append({"type": "bar", "name": m, "x": arms, "y": means,
                     "error_y": {"type": "data", "array": hi, "arrayminus": lo, "visible": True}})
    figs.append({"id": "plot-bars", "data": data,
                 "layout": {"title": {"text": f"Means with {int(report['stats']['confidence'] * 100)}% bootstrap CIs"},
                            "barmode": "group", "yaxis": {"range": [0, 1]}, "margin": {"t": 50}}})

    wtl_m = verdict_measure(report)
    wtl = {(w["a"], w["b"]): w for w in report["diagnostics"]["win_tie_loss"][wtl_m]}
    z, text = [], []
    for a in arms:
        zr: list[float | None] = []
        tr: list[str] = []
        for b in arms:
            w = wtl.get((a, b))
            if w is None:
                zr.append(None)
                tr.append("")
            else:
                n = w["wins"] + w["ties"] + w["losses"]
                zr.append((w["wins"] - w["losses"]) / n if n else 0.0)
                tr.append(f"{w['wins']}/{w['ties']}/{w['losses']}")
        z.append(zr)
        text.append(tr)
    figs.append({"id": "plot-wtl", "data": [{
        "type": "heatmap", "x": arms, "y": arms, "z": z, "text": text, "texttemplate": "%{text}",
        "colorscale": "RdBu", "zmid": 0, "zmin": -1, "zmax": 1,
        "hovertemplate": "row %{y} vs column %{x}: W/T/L %{text}<extra></extra>",
        "colorbar": {"title": {"text": "(W-L)/n"}}}],
        "layout": {"title": {"text": f"Win/tie/loss of row vs column, {wtl_m}"},
                   "yaxis": {"autorange": "reversed"}, "margin": {"t": 50, "l": 140}}})

    leak = report.get("leak")
    if leak:
        if leak.get("values"):
            trace = {"type": "histogram", "x": leak["values"], "nbinsx": 20, "name": "leak"}
        else:
            h = leak["histogram"]
            trace = {"type": "bar", "x": [(a + b) / 2 for a, b in zip(h["edges"], h["edges"][1:])], "y": h["counts"],
                     "name": "leak"}
        figs.append({"id": "plot-leak", "data": [trace],
                     "layout": {"title": {"text": "Leak: share of a query's rare words found in its source document"},
                                "xaxis": {"title": {"text": "leak"}}, "yaxis": {"title": {"text": "queries"}},
                                "margin": {"t": 50}}})
    return figs


def explorer_data(report: Mapping[str, Any], *, dataset: Dataset | None, runs: Mapping[str, Run] | None,
                  per_query: Mapping[str, Mapping[str, Mapping[str, float]]], query_ids: Sequence[str],
                  top_n: int = TOP_N, snippet_chars: int = SNIPPET_CHARS) -> dict[str, Any]:
    """Data for the query explorer: queries with per-arm metrics, top-``top_n`` ids, doc snippets (with the
    original file path ``p`` of a document read from a folder whose id differs from it), judgments."""
    arms = [a["name"] for a in report["arms"]]
    k = report["k"]
    ms = [m for m in dict.fromkeys([report["primary"], f"mrr@{k}", f"recall@{k}"]) if m in report["measures"]]
    queries = []
    query_ids = sorted(query_ids, key=natural_key)
    for q in query_ids:
        text = dataset.queries[q].text if dataset is not None and q in dataset.queries else ""
        queries.append({"id": q, "text": text,
                        "metrics": {a: {m: _clean(per_query[a][m].get(q)) for m in ms} for a in arms}})
    tops: dict[str, dict[str, list[str]]] = {}
    needed: set[str] = set()
    if runs is not None:
        for a in arms:
            if a in runs:
                tops[a] = {q: runs[a].doc_ids(q, top_n) for q in query_ids}
                for ids in tops[a].values():
                    needed.update(ids)
    rel: dict[str, dict[str, int]] = {}
    if dataset is not None:
        for q in query_ids:
            rel[q] = {d: int(g) for d, g in dataset.qrels.get(q).items()}
            needed.update(d for d, g in rel[q].items() if g > 0)
    docs: dict[str, dict[str, str]] = {}
    if dataset is not None:
        pos = dataset.corpus.position
        for d in sorted(needed):
            i = pos.get(d)
            if i is None:
                continue
            t = dataset.corpus.texts[i]
            docs[d] = {"t": dataset.corpus.titles[i],
                       "x": t if len(t) <= snippet_chars else t[:snippet_chars].rstrip() + "\u2026"}
            path = source_path(dataset.corpus.metadata[i], d)
            if path:
                docs[d]["p"] = path
    return {"arms": arms, "measures": ms, "queries": queries, "tops": tops, "docs": docs, "rel": rel}


def _clean(v: Any) -> Any:
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, left: int = 1, cls: str = "") -> str:
    e = html.escape
    out = [f'<table class="{e(cls)}"><thead><tr>']
    out += [f'<th class="{"l" if i < left else ""}">{e(str(h))}</th>' for i, h in enumerate(header)]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{e(str(c))}</td>'
                                    for i, c in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _f(v: Any, d: int = 4) -> str:
    return "n/a" if v is None else f"{v:.{d}f}"


def _body(report: Mapping[str, Any]) -> str:
    e = html.escape
    ds = report["dataset"]
    st = report["stats"]
    parts = [f"<h1>bakeoff report: {e(str(ds.get('name')))} ({e(str(ds.get('split')))})</h1>",
             (f'<p class="muted">{report["n_queries"]} evaluated queries, {e(str(ds.get("n_docs")))} documents, '
             f'k={report["k"]}; generated {e(report["created"])} by bakeoff {e(report["bakeoff_version"])}.</p>')]
    parts.append(_verdict_html(report))
    if report.get("note"):
        parts.append(f'<p class="note" id="small-sample-note">{e(report["note"])}</p>')
    if not report["arms"]:
        return "\n".join(parts)
    header, rows = report_rows(report)
    parts.append("<h2>Summary</h2>" + f'<p class="conventions">{e(conventions_line(report))}</p>'
                 + _table(header, rows, left=2, cls="summary"))
    parts.append(f'<p class="muted">Means with {int(st["confidence"] * 100)}% bootstrap (BCa) CIs, {st["n_resamples"]} '
                 f'resamples, seed {st["seed"]}. Letters after a cell: the arm is significantly better than the arms '
                 f'with those letters (two-sided paired randomization test, Holm-corrected across the pairs of arms per '
                 f'measure, alpha = {st["alpha"]}).</p>')
    parts.append(_truth_quality_html(report))
    parts.append(tuning_section(report))  # empty unless the results come from `bakeoff tune`
    parts.append('<h2>Plots</h2><div class="plots">')
    parts.append('<div class="plot" id="plot-pareto"></div><div class="plot" id="plot-bars"></div>'
                 '<div class="plot" id="plot-wtl"></div>')
    if report.get("leak"):
        leak = report["leak"]
        parts.append('<div class="plot" id="plot-leak"></div>')
    parts.append("</div>")
    if report.get("leak"):
        leak = report["leak"]
        bits = [f"mean leak {leak['mean']:.3f}" if isinstance(leak.get("mean"), (int, float)) else ""]
        if isinstance(leak.get("rejection_rate"), (int, float)):
            bits.append(f"rejection rate {leak['rejection_rate']:.3f}")
        parts.append(f'<p class="muted">Leak statistics from {e(str(leak.get("source")))}: '
                     f'{e("; ".join(b for b in bits if b))}.</p>')

    parts.append("<h2>Query explorer</h2>")
    parts.append('<div id="explorer"><div><input id="qsearch" type="search" placeholder="search queries (text or id)">'
                 '<div class="muted" id="qcount"></div><div id="qlist"></div></div>'
                 '<div id="qview"><p class="muted">Click a query to see each arm\'s top 10.</p></div></div>')
    parts.append("<h2>Pairwise tests</h2>")
    for m in report["measures"]:
        ph, pr = pair_rows(report, m)
        if pr:
            parts.append(f"<h3>{e(m)}</h3>" + _table(ph, pr, left=2, cls="pairs"))

    dg = report["diagnostics"]
    parts.append("<h2>Oracle head-room</h2>")
    parts.append(_table(["measure", "oracle (best arm per query)", "best single arm", "its mean", "head-room",
                         "queries no arm gets (0)"],
                        [[m, _f(o["mean"]), o["best_arm"], _f(o["best_mean"]), _f(o["headroom"]), o["all_zero"]]
                         for m, o in dg["oracle"].items()], cls="oracle"))
    if dg.get("coverage") is not None:
        cov = dg["coverage"]
        parts.append("<h2>Coverage and failures</h2>")
        parts.append(f"<p>{len(cov['uncoverable'])} of {cov['n_queries']} queries have none of their relevant documents "
                     f"in the corpus (no arm can find them), {len(cov['partial'])} only some "
                     f"({cov['missing_relevant_docs']} relevant documents missing). These are reported apart from "
                     "retrieval failures below.</p>")
        if cov["uncoverable"]:
            parts.append(f'<p class="muted">Uncoverable: {e(", ".join(cov["uncoverable"][:50]))}</p>')
        if dg.get("failures"):
            parts.append(_table(["arm", f"coverable queries with no relevant document in the top {report['k']}"],
                                [[a, f["count"]] for a, f in dg["failures"].items()]))
    if dg.get("churn"):
        parts.append("<h2>Churn: an arm and its fused/reranked version</h2>")
        parts.append(_table(["from", "to", "k", "queries gaining a relevant doc", "losing one", "both",
                             "rescued (0 to some)", "broken (some to 0)", "relevant docs in", "relevant docs out"],
                            [[c["base"], c["new"], c["k"], c["gained"], c["lost"], c["both"], c["rescued"], c["broken"],
                              c["docs_gained"], c["docs_lost"]] for c in dg["churn"]], left=2, cls="churn"))
    if dg.get("decomposition"):
        parts.append("<h2>Decomposition of deltas by query buckets</h2>"
                     '<p class="muted">contribution = sum over the bucket of (A - B) / all queries; '
                     "the contributions add up to the overall delta.</p>")
        for d in dg["decomposition"]:
            parts.append(f"<h3>{e(d['a'])} &minus; {e(d['b'])} on {e(d['measure'])} by {e(d['by'])} "
                         f"(delta {d['delta']:+.4f})</h3>")
            parts.append(_table(["bucket", "n", "mean A", "mean B", "delta", "contribution", "W/T/L"],
                                [[r["bucket"], r["n"], _f(r["mean_a"]), _f(r["mean_b"]), f"{r['delta']:+.4f}",
                                  f"{r['contribution']:+.4f}", f"{r['wins']}/{r['ties']}/{r['losses']}"]
                                 for r in d["rows"]], cls="decomp"))
    if dg.get("disagreements"):
        parts.append(f"<h2>Most disagreeing queries ({e(report['primary'])})</h2>")
        for d in dg["disagreements"]:
            if not d["queries"]:
                continue
            parts.append(f"<h3>{e(d['a'])} vs {e(d['b'])}</h3>")
            parts.append(_table(["query", "text", d["a"], d["b"], "delta"],
                                [[r["query_id"], r["text"] or "", _f(r["a"]), _f(r["b"]), f"{r['delta']:+.4f}"]
                                 for r in d["queries"]], left=2, cls="disagree"))
    letters = dict(zip([a["name"] for a in report["arms"]], arm_letters(len(report["arms"]))))
    parts.append('<p class="muted">Arm letters: ' + e(", ".join(f"{v} = {k}" for k, v in letters.items())) + "</p>")
    return "\n".join(parts)


def _verdict_html(report: Mapping[str, Any]) -> str:
    """The verdict section (:mod:`bakeoff.report.verdict`): decision, details, caveats, cost table."""
    from .verdict import cost_rows

    e = html.escape
    v = report.get("verdict")
    if not v:
        return ""
    out = ['<section id="verdict" class="verdict"><h2>Verdict</h2>',
           f'<p class="headline">{e(v["headline"])}</p>']
    details = [line for line in v["lines"][1:] if not line.startswith("Caveat: ")]
    if details:
        out.append("<ul>" + "".join(f"<li>{e(line)}</li>" for line in details) + "</ul>")
    if v.get("caveats"):
        out.append('<ul class="caveats">' + "".join(f'<li class="caveat">Caveat: {e(c)}</li>' for c in v["caveats"])
                   + "</ul>")
    out.append(_calibration_html(report))
    header, rows = cost_rows(v)
    if len(rows) > 1:
        out.append(_table(header, rows, left=2, cls="costs"))
        out.append(f'<p class="muted">On {e(v["measure"])}, alpha = {v["alpha"]} after Holm correction. The pick is '
                   "the cheapest arm statistically tied with the highest mean; a cost decides only when it differs by "
                   "more than 10%, in the column order. index time = what building the index takes (embeddings restored "
                   "from the cache count what computing them took when they were computed); model = model files on disk; memory = peak "
                   "resident memory the arm's index and search added (- when restored from an older cache entry)."
                   "</p>")
    out.append("</section>")
    return "".join(out)


def _calibration_html(report: Mapping[str, Any]) -> str:
    """The calibration of a synthetic run's generator (:mod:`bakeoff.report.calibration`): one line per
    record, with a synthetic-vs-human plot per arm, or the line saying none exists."""
    from .calibration import scatter_svg

    cal = report.get("calibration")
    if not cal:
        return ""
    e = html.escape
    out = ['<div id="calibration" class="calibration">']
    out.extend(f'<p class="calibration-line">Calibration: {e(line)}</p>' for line in cal.get("lines") or [])
    for rec in cal.get("records") or []:
        svg = scatter_svg(rec.get("plot") or {}, measure=str(rec.get("primary")))
        if svg:
            out.append(f'<figure>{svg}<figcaption class="muted">Synthetic vs human {e(str(rec.get("primary")))} per '
                       f'arm on {e(str(rec.get("corpus")))}, with 95% bootstrap CIs; dashed: the diagonal (an arm '
                       "above it scores higher on the synthetic queries than on the human ones).</figcaption></figure>")
    out.append("</div>")
    return "".join(out)


def _truth_quality_html(report: Mapping[str, Any]) -> str:
    """The truth-quality section (:mod:`bakeoff.report.quality`); empty when the report has none."""
    e = html.escape
    tq = report.get("truth_quality")
    if not tq:
        return ""
    parts = ['<section id="truth-quality"><h2>Truth quality</h2>']
    header, rows = truth_quality_rows(report)
    if rows:
        holes = tq.get("holes") or {}
        parts.append('<p class="muted">Judged@k: share of an arm\'s top k that has any judgment (mean over queries). '
                     'Unjudged documents count as non-relevant in every measure, so a low value means the scores '
                     'above are lower bounds that can reorder the arms.</p>')
        parts.append(_table(header, rows, cls="truth-quality"))
        parts.append(f'<p class="muted">Holes: {holes.get("total", 0)} unjudged (query, document) pairs in the arms\' '
                     f'pooled top {tq["k"]} over {holes.get("queries", 0)} queries; {holes.get("disputed", 0)} are in '
                     f'some arms\' top {tq["k"]} but not all. Listed in {e(str(holes.get("file")))}; '
                     '<code>bakeoff assess</code> grades them with an LLM into a separate judgment file.</p>')
        if tq.get("round_trip"):
            rt = tq["round_trip"]
            parts.append(f'<p class="muted">Source in top k (round trip): share of the {rt["n"]} queries whose source '
                         f'document (metadata {e(str(rt["field"]))}) the arm ranks in its top k. Reported only: '
                         'filtering on it would favour the arm used to filter.</p>')
    lm = tq.get("leak_matched")
    if lm:
        h, rows = leak_matched_rows(lm)
        parts.append(f'<h3>Leak-matched {e(lm["measure"])} (the verdict\'s table)</h3>'
                     f'<p class="muted">{e(leak_matched_line(lm))}</p>')
        parts.append(_table(h, rows, cls="leak-matched"))
    lb = tq.get("leak_buckets")
    if lb:
        counts = ", ".join(f"{b}: {n}" for b, n in lb["counts"].items())
        parts.append(f'<h3>Leak-robust verdict ({e(lb["measure"])})</h3><p class="muted">The best arm against each '
                     f'other arm inside each leak bucket (queries per bucket: {e(counts)}), with a paired randomization '
                     f'test inside the bucket, Holm-corrected across pairs within a bucket (alpha {lb["alpha"]}). '
                     'A win only in the high-leak bucket is a win on words copied from the answer.</p>')
        for pair in lb["pairs"]:
            h, rows = leak_bucket_rows(pair)
            parts.append(f'<h4>{e(pair["a"])} &minus; {e(pair["b"])} (delta {pair["delta"]:+.4f})</h4>')
            parts.append(_table(h, rows, cls="leak-buckets"))
    parts.append("</section>")
    return "\n".join(parts)


def _static_figures_html(figures: Mapping[str, str] | None) -> str:
    """The P-R curves and per-topic differences (:mod:`bakeoff.report.figures`), inline SVG as matplotlib
    wrote them (no script, no external reference), with the files' names."""
    if not figures:
        return ""
    captions = {"pr_curves": "Interpolated precision at the 11 standard recall levels (trec_eval iprec_at_recall), "
                             "mean over the compared queries; figures/pr_curves.svg, .png, .pdf.",
                "per_topic": "Per-query difference on the verdict's measure between its two arms, sorted; "
                             "figures/per_topic.svg, .png, .pdf."}
    parts = ['<section id="figures"><h2>Figures</h2><div class="plots">']
    for name, svg in figures.items():
        body = svg[svg.find("<svg"):] if "<svg" in svg else ""  # drop the XML prologue and doctype
        parts.append(f'<figure class="static-figure" id="figure-{html.escape(name)}">{body}'
                     f'<figcaption class="muted">{html.escape(captions.get(name, name))}</figcaption></figure>')
    parts.append("</div></section>")
    return "".join(parts)


def render_html(report: Mapping[str, Any], *, explorer: Mapping[str, Any],
                figures: Mapping[str, str] | None = None) -> str:
    """The whole page as a string; ``figures`` (name -> SVG text) are inlined after the plots."""
    template = resources.files("bakeoff.report").joinpath("template.html").read_text(encoding="utf-8")
    data = {"figures": _figures(report), "explorer": explorer}
    title = f"bakeoff report: {report['dataset'].get('name')}"
    body = _body(report) + _static_figures_html(figures)
    values = {"TITLE": html.escape(title), "BODY": body, "DATA": json_for_html(_clean_json(data)),
              "PLOTLY": plotly_js()}
    # Split once on the markers, so a marker-like string inside a value is never substituted.
    pieces = re.split(r"@@(TITLE|BODY|DATA|PLOTLY)@@", template)
    return "".join(values[p] if i % 2 else p for i, p in enumerate(pieces))


def _clean_json(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, Mapping):
        return {str(k): _clean_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean_json(v) for v in x]
    return x


def write_html(path: str | Path, report: Mapping[str, Any], *, explorer: Mapping[str, Any],
               figures: Mapping[str, str] | None = None) -> Path:
    """Render and write the page atomically."""
    from .._io import atomic_write_text

    p = Path(path)
    atomic_write_text(p, render_html(report, explorer=explorer, figures=figures))
    return p
