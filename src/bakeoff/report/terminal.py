"""The terminal table: one row per arm, side by side.

Columns: the measures, then ``p50 ms``/``p95 ms`` (end-to-end single-query
latency, :meth:`bakeoff.arms.base.Context.measure_latency`; falls back to the
batch ``ms/query`` when no latency was measured, marked ``~``), ``$/1k q``
(:mod:`bakeoff.costs`) and ``cached``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import IO, Any

__all__ = ["table_rows", "print_table"]


def table_rows(results: Mapping[str, Any], *, measures: Sequence[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows (strings) of the results table from a ``results.json`` dict."""
    k = results["k"]
    measures = list(measures or [f"ndcg@{k}", f"recall@{k}", f"mrr@{k}"])
    header = ["arm", *[m.replace("ndcg", "NDCG").replace("recall", "Recall").replace("mrr", "MRR") for m in measures],
              "p50 ms", "p95 ms", "$/1k q", "cached"]
    rows = []
    for a in results["arms"]:
        vals = [a["metrics"].get(m, math.nan) for m in measures]
        timing = a.get("timing", {})
        lat = timing.get("latency") or {}
        if "p50_ms" in lat:
            p50, p95 = _ms(lat["p50_ms"]), _ms(lat["p95_ms"])
        else:
            batch = timing.get("ms_per_query_total", timing.get("ms_per_query"))
            p50 = p95 = "-" if batch is None else "~" + _ms(batch)
        usd = (a.get("cost") or {}).get("usd_per_1k_queries")
        name = a["name"]
        if a.get("fine_tuned"):
            name += f" (trained on {a['fine_tuned'].get('trained_on')})"  # no [..]: rich markup
        rows.append([name, *[f"{v:.4f}" for v in vals], p50, p95, "-" if usd is None else _usd(usd),
                     "yes" if a.get("cached") else ""])
    return header, rows


def _ms(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _usd(value: float) -> str:
    if value == 0:
        return "0"
    return f"{value:.4f}" if value >= 0.0001 else f"{value:.2e}"


def print_table(results: Mapping[str, Any], *, measures: Sequence[str] | None = None, file: IO[str] | None = None) -> None:
    """Print the table with rich (plain text when the output is not a terminal)."""
    from rich.console import Console
    from rich.table import Table

    header, rows = table_rows(results, measures=measures)
    ds = results["dataset"]
    title = f"{ds.get('name')} ({ds.get('split')}): {results['queries']['evaluated']} queries, {ds.get('n_docs')} docs"
    table = Table(title=title)
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i == 0 else "right")
    for r in rows:
        table.add_row(*r)
    Console(file=file, width=max(100, sum(len(h) for h in header) + 40)).print(table)
