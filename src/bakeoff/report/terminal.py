"""The terminal table: one row per arm, side by side."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import IO, Any

__all__ = ["print_table", "table_rows"]


def table_rows(results: Mapping[str, Any], *, measures: Sequence[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows (strings) of the results table from a ``results.json`` dict."""
    k = results["k"]
    measures = list(measures or [f"ndcg@{k}", f"recall@{k}", f"mrr@{k}"])
    header = ["arm", *[m.replace("ndcg", "NDCG").replace("recall", "Recall").replace("mrr", "MRR") for m in measures],
              "ms/query", "cached"]
    extras = sorted({m for a in results["arms"] for m in a.get("extra_metrics", {})})
    header[len(measures) + 1 : len(measures) + 1] = extras
    rows = []
    for a in results["arms"]:
        vals = [a["metrics"].get(m, math.nan) for m in measures]
        ex = [a.get("extra_metrics", {}).get(m) for m in extras]
        ms = a.get("timing", {}).get("ms_per_query", math.nan)
        rows.append([a["name"], *[f"{v:.4f}" for v in vals], *["" if v is None else f"{v:.4f}" for v in ex],
                     f"{ms:.2f}", "yes" if a.get("cached") else ""])
    return header, rows


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
