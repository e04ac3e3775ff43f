"""The line that says how a table's numbers were computed, printed in every table header.

A mean depends on conventions as much as on the arm: which queries it is over (the averaging
rule, :data:`bakeoff.metrics.AVERAGING`), the minimum grade binary measures count as relevant
(trec_eval ``-l``) and whether each query's own id was removed from its ranking (BEIR's
``ignore_identical_ids``). :func:`conventions` reads them from a ``results.json`` or
``report.json`` dict (files written before they were recorded: bakeoff's rule, level 1) and
:func:`conventions_line` writes the one line every renderer (terminal, HTML, LaTeX, Markdown)
puts above its table, e.g.::

    averaging: trec_eval (queries in both the run and the qrels, judged-0-only queries as 0); relevant: grade >= 2; own-id documents removed (auto: 1406 queries are documents)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..metrics import AVERAGING_TEXT

__all__ = ["conventions", "conventions_line"]


def conventions(results: Mapping[str, Any]) -> dict[str, Any]:
    """``{"averaging", "averaging_text", "relevance_level", "identical_ids_removed", "identical_ids_how"}``
    of a results or report dict."""
    rule = str(results.get("averaging") or "bakeoff")
    ds = results.get("dataset") or {}
    ident = ds.get("identical_ids") if isinstance(ds.get("identical_ids"), Mapping) else {}
    removed = bool(ident.get("removed", ds.get("ignore_identical_ids", False)))
    return {"averaging": rule, "averaging_text": AVERAGING_TEXT.get(rule, rule),
            "relevance_level": int(results.get("relevance_level", 1)),
            "identical_ids_removed": removed, "identical_ids_how": ident.get("how"),
            "own_document_queries": ident.get("own_document_queries")}


def conventions_line(results: Mapping[str, Any]) -> str:
    """One line: the averaging rule with its meaning, the relevance level, the identical-id rule."""
    c = conventions(results)
    text = c["averaging_text"].split(": ", 1)[-1]
    ident = "own-id documents removed" if c["identical_ids_removed"] else "own-id documents kept"
    if c["identical_ids_how"] == "auto" and c["identical_ids_removed"]:
        ident += f" (auto: {c['own_document_queries']} queries are documents)"
    return f"averaging: {c['averaging']} ({text}); relevant: grade >= {c['relevance_level']}; {ident}"
