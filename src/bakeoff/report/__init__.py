"""Renderers of results: terminal table (and, later, HTML/LaTeX)."""

from .terminal import print_table, table_rows

__all__ = ["print_table", "table_rows"]
