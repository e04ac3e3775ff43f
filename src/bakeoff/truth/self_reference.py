"""Queries that point at their document instead of standing alone ("this study", "the authors").

A searcher has not seen the document, so a query that says "the main finding of this study" or "the
treatment used in this patient" cannot be a real query, whatever the document answers. A query is
rejected (``refers_to_document``) when it contains one of :data:`PATTERNS` for its language, matched
case-insensitively on word boundaries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["PATTERNS", "refers_to_document"]

_NOUNS_EN = r"(?:study|paper|article|document|text|abstract|review|trial|report|patient|case|work|research|analysis)"
_NOUNS_ES = r"(?:estudio|art[ií]culo|documento|texto|resumen|revisi[oó]n|ensayo|informe|paciente|caso|trabajo|an[aá]lisis)"
#: Per language: a demonstrative before a document noun, or the document's authors.
PATTERNS: Mapping[str, re.Pattern[str]] = {
    "en": re.compile(rf"\b(?:this|these|the present|the above)\s+{_NOUNS_EN}s?\b|\bthe authors?\b", re.IGNORECASE),
    "es": re.compile(rf"\b(?:este|esta|estos|estas|el presente)\s+{_NOUNS_ES}s?\b|\blos autores\b", re.IGNORECASE),
}


def refers_to_document(query: str, *, lang: str = "en") -> bool:
    """True when ``query`` points at its document (see the module docstring); unknown languages: False."""
    pat = PATTERNS.get(lang)
    return bool(pat and pat.search(query))
