"""The HTML report's tuning section: metric-vs-parameter plots of a ``bakeoff tune`` sweep.

Drawn only when the results carry a sweep (``results.json`` key ``tune``, copied into the
report). One inline SVG per swept option (no script, no network request): the dev score of
every trial as a dot; for a two-option grid, one line per value of the other option, otherwise
a line through the best trial at each value; the chosen setting ringed in red; the defaults'
dev score as a dashed line. Numeric options get a linear axis, others evenly spaced
categories. Every text (option names, values, arm names) goes through :func:`html.escape`.
Below: the test table (defaults vs tuned, CIs, paired test).
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["tuning_section"]

W, H = 480, 300
L, R, T, B = 62, 16, 28, 46
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _plot(tune: Mapping[str, Any], name: str) -> str:
    e = html.escape
    trials = [t for t in tune["trials"] if t.get("dev") is not None]
    if not trials:
        return ""
    values = list(dict.fromkeys(_key(t["params"][name]) for t in trials))
    numeric = all(_num(t["params"][name]) for t in trials)
    if numeric:
        lo, hi = min(float(t["params"][name]) for t in trials), max(float(t["params"][name]) for t in trials)
        span = (hi - lo) or 1.0
        def x_of(v: Any) -> float:
            return L + (W - L - R) * ((float(v) - lo) / span if hi > lo else 0.5)
    else:
        def x_of(v: Any) -> float:
            i = values.index(_key(v))
            return L + (W - L - R) * ((i + 0.5) / len(values))
    ys = [float(t["dev"]) for t in trials]
    default = tune["dev"].get("default_score")
    if default is not None:
        ys.append(float(default))
    y_lo, y_hi = min(ys), max(ys)
    pad = (y_hi - y_lo) * 0.08 or 0.01
    y_lo, y_hi = y_lo - pad, y_hi + pad

    def y_of(v: float) -> float:
        return T + (H - T - B) * (1 - (v - y_lo) / (y_hi - y_lo))

    out = [(f'<svg class="tune-plot" role="img" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
           f'xmlns="http://www.w3.org/2000/svg" aria-label="{e(tune["measure"])} vs {e(name)}">'),
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="#fafafa" stroke="#ccc"/>']
    for i in range(5):  # y grid and ticks
        v = y_lo + (y_hi - y_lo) * i / 4
        y = y_of(v)
        out.append(f'<line x1="{L}" x2="{W - R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>'
                   f'<text x="{L - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{v:.4f}</text>')
    ticks = sorted({float(t["params"][name]) for t in trials}) if numeric else values
    for v in ticks:
        x = x_of(v)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{H - B}" y2="{H - B + 4}" stroke="#555"/>'
                   f'<text x="{x:.1f}" y="{H - B + 16}" font-size="11" text-anchor="middle">{e(_fmt(v))}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" font-size="12" text-anchor="middle">{e(name)}</text>'
               f'<text x="14" y="{(T + H - B) / 2:.0f}" font-size="12" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">dev {e(tune["measure"])}</text>')
    others = [n for n in tune["space"]["params"] if n != name]
    legend = []
    if tune["space"]["search"] == "grid" and len(others) == 1:
        other = others[0]
        groups: dict[Any, list[Mapping[str, Any]]] = {}
        for t in trials:
            groups.setdefault(_key(t["params"][other]), []).append(t)
        for i, (g, ts) in enumerate(groups.items()):
            color = PALETTE[i % len(PALETTE)]
            pts = sorted((x_of(t["params"][name]), y_of(float(t["dev"]))) for t in ts)
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.6" '
                       f'points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in pts)}"/>')
            out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>' for x, y in pts]
            legend.append((color, f"{other}={_fmt(g)}"))
    else:
        best: dict[Any, Mapping[str, Any]] = {}
        for t in trials:
            k = _key(t["params"][name])
            if k not in best or float(t["dev"]) > float(best[k]["dev"]):
                best[k] = t
        out += [f'<circle cx="{x_of(t["params"][name]):.1f}" cy="{y_of(float(t["dev"])):.1f}" r="2.5" '
                f'fill="#9aa"/>' for t in trials]
        if len(best) < len(trials) or len(others) == 0:
            pts = sorted((x_of(t["params"][name]), y_of(float(t["dev"]))) for t in best.values())
            out.append(f'<polyline fill="none" stroke="{PALETTE[0]}" stroke-width="1.6" '
                       f'points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in pts)}"/>')
            legend.append((PALETTE[0], "best at each value" if others else tune["measure"]))
    if default is not None:
        y = y_of(float(default))
        out.append(f'<line x1="{L}" x2="{W - R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#333" stroke-dasharray="5,4"/>')
        legend.append(("#333", "defaults (dev)"))
    for ch in _chosen(tune):
        t = next(t for t in trials if t["index"] == ch["index"])
        out.append(f'<circle cx="{x_of(t["params"][name]):.1f}" cy="{y_of(float(t["dev"])):.1f}" r="7" '
                   f'fill="none" stroke="#d62728" stroke-width="2"><title>chosen: {e(_params(t["params"]))}</title>'
                   "</circle>")
    legend.append(("#d62728", "chosen"))
    placed: list[tuple[float, int, str, str]] = []
    x = L + 6
    row = 0
    for color, label in legend:
        width = 22 + 6.5 * len(label)
        if x + width > W - R and x > L + 6:  # wrap to a new legend row
            x, row = L + 6, row + 1
        placed.append((x, row, color, label))
        x += width
    shift = 15 * row  # extra legend rows are drawn above the first (the view box grows upwards)
    for x, r, color, label in placed:
        y = 8 - shift + 15 * r
        out.append(f'<rect x="{x:.0f}" y="{y}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{x + 14:.0f}" y="{y + 9}" font-size="11">{e(label)}</text>')
    out.append("</svg>")
    return "".join(out).replace(f'viewBox="0 0 {W} {H}" width="{W}" height="{H}"',
                                f'viewBox="0 {-shift} {W} {H + shift}" width="{W}" height="{H + shift}"', 1)


def _key(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _params(p: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_fmt(v)}" for k, v in p.items())


def _chosen(tune: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    ch = tune["chosen"]
    return ch.get("per_fold", [ch])


def _f(v: Any) -> str:
    return "n/a" if v is None else f"{v:.4f}"


def tuning_section(report: Mapping[str, Any]) -> str:
    """The section's HTML, or ``""`` when the report has no sweep."""
    tune = report.get("tune")
    if not tune:
        return ""
    e = html.escape
    m = tune["measure"]
    dev = tune["dev"]
    r = tune["result"]
    parts = [f'<h2 id="tuning">Tuning: {e(tune["arm"])} ({e(tune["type"])})</h2>',
             (f'<p>{len(tune["trials"])} settings ({e(tune["space"]["search"])} search) scored on '
             f'{e(dev["describe"])} ({dev["n_queries"]} dev queries, never the test queries); chosen by '
             f'{e(m)}: {e(tune["tie_rule"])}.</p>')]
    if dev.get("dropped_leaks"):
        parts.append(f'<p class="muted">{len(dev["dropped_leaks"])} dev queries equal to test queries were dropped: '
                     f'{e(", ".join(f"{a}~{b}" for a, b, _ in dev["dropped_leaks"]))}.</p>')
    parts.append('<div class="plots">' + "".join(f'<div class="tune-plot-box" style="border:1px solid #eee">'
                                                 f"{_plot(tune, n)}</div>" for n in tune["space"]["params"]) + "</div>")
    chosen = "; ".join(f"fold {c['fold']}: {_params(c['params'])}" if "fold" in c else _params(c["params"])
                       for c in _chosen(tune))
    conf = round(100 * r["confidence"])
    rows = [(f"{tune['arm']} (defaults: {_params(tune['defaults'])})", dev.get("default_score"), r["defaults"]),
            (f"{tune['tuned_arm']} ({chosen})", tune["chosen"].get("dev"), r["tuned"])]
    parts.append(f'<table class="tune"><thead><tr><th class="l">arm</th><th>dev {e(m)}</th><th>test {e(m)}</th>'
                 f"<th>{conf}% CI</th></tr></thead><tbody>"
                 + "".join(f'<tr><td class="l">{e(n)}</td><td>{_f(d)}</td><td>{_f(x["mean"])}</td>'
                           f'<td>[{_f(x["ci_low"])}, {_f(x["ci_high"])}]</td></tr>' for n, d, x in rows)
                 + "</tbody></table>")
    verdict = "significant" if r["significant"] else "not significant"
    parts.append(f'<p>Test split {e(str(tune["test"]["split"]))} ({tune["test"]["n_queries"]} queries): tuned &minus; '
                 f'defaults = {r["diff"]:+.4f} [{_f(r["diff_ci_low"])}, {_f(r["diff_ci_high"])}], paired randomization '
                 f'p = {_f(r["p_perm"])} ({verdict} at alpha {r["alpha"]}).</p>')
    return "\n".join(parts)
