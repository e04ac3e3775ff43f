"""Renderers of results: report model, terminal table, HTML and LaTeX.

Names are re-exported lazily (PEP 562, :mod:`bakeoff._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .terminal import print_table, table_rows

_EXPORTS = {"print_table": ".terminal", "table_rows": ".terminal"}

#: The same names as _EXPORTS, written out for type checkers (tests/test_api.py checks they agree).
__all__ = ["print_table", "table_rows"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
