"""Renderers of results: report model, terminal table, HTML and LaTeX.

Names are re-exported lazily (PEP 562, :mod:`bakeoff._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .terminal import print_table, table_rows

_EXPORTS = {"print_table": ".terminal", "table_rows": ".terminal"}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
