"""The terminal table: one row per arm, side by side."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import IO, Any

__all__ = ["print_table", "table_rows"]


def table_rows(results: Mapping[str, Any], *, measures: Sequence[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows (strings) of the results table from a ``results.json`` dict."""
    k = results["k"]
    lower = _lower_bound(results)
    measures = list(measures or ([f"recall@{k}", f"mrr@{k}"] if lower else [f"ndcg@{k}", f"recall@{k}", f"mrr@{k}"]))
    header = ["arm", *[m.replace("ndcg", "NDCG").replace("recall", "Recall").replace("mrr", "MRR")
                       + (" (lower bound)" if lower else "") for m in measures],
              "ms/query", "cached"]
    rows = []
    for a in results["arms"]:
        vals = [a["metrics"].get(m, math.nan) for m in measures]
        ms = a.get("timing", {}).get("ms_per_query", math.nan)
        rows.append([a["name"], *[f"{v:.4f}" for v in vals], f"{ms:.2f}", "yes" if a.get("cached") else ""])
    return header, rows


def _lower_bound(results: Mapping[str, Any]) -> bool:
    """Citation-mined labels: only cited targets are known relevant, so metrics are lower bounds."""
    return (results.get("dataset", {}).get("provenance") or {}).get("label_kind") == "citation"


def print_table(results: Mapping[str, Any], *, measures: Sequence[str] | None = None, file: IO[str] | None = None) -> None:
    """Print the table with rich (plain text when the output is not a terminal)."""
    from rich.console import Console
    from rich.table import Table

    header, rows = table_rows(results, measures=measures)
    ds = results["dataset"]
    title = f"{ds.get('name')} ({ds.get('split')}): {results['queries']['evaluated']} queries, {ds.get('n_docs')} docs"
    if ds.get("search_mode"):
        title += " — " + ("as of each query's date" if ds["search_mode"] == "as_of" else "latest versions")
    if _lower_bound(results):
        title += " — citation-mined: Recall/MRR are LOWER BOUNDS (uncited targets are unknown, not wrong)"
    table = Table(title=title)
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i == 0 else "right")
    for r in rows:
        table.add_row(*r)
    Console(file=file, width=max(100, sum(len(h) for h in header) + 40)).print(table)
