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

_NOUNS_EN = (r"(?:study|paper|article|document|text|abstract|review|trial|report|patient|case|work|research|analysis"
             r"|experiment|investigation|survey|book|monograph|volume|chapter|essay|collection|gathering|workshop"
             r"|symposium|conference|lecture|assay|cohort)")
_NOUNS_ES = r"(?:estudio|art[ií]culo|documento|texto|resumen|revisi[oó]n|ensayo|informe|paciente|caso|trabajo|an[aá]lisis|experimento|investigaci[oó]n|encuesta)"
#: "abstract" is the document's abstract, not the adjective of "the abstract base class" / "abstract syntax tree".
_DOC_EN = (r"(?:document|passage|paper|article|abstract(?!\s+(?:base|class(?:es)?|method|methods|syntax|data|type|types"
           r"|interface|factory|model|algebra|art|concept|idea|noun|representation)\b))")
_DOC_ES = r"(?:documento|pasaje|resumen|art[ií]culo)"
_ONE_EN = r"(?:study|trial|review|experiment|survey|investigation|analysis|report|book|monograph|volume)"
_ONE_ES = r"(?:estudio|ensayo|revisi[oó]n|experimento|encuesta|investigaci[oó]n|an[aá]lisis|informe)"
_ABOUT_EN = r"(?:on|about|comparing|evaluating|examining|investigating|describing|that|which)"
_ABOUT_ES = r"(?:sobre|acerca|que|comparando)"
#: Per language: a demonstrative before a document noun, "the document" (a searcher has none), a description
#: of a document ("a document about", "the document is about") instead of a need, the document's authors, or
#: one particular study or book ("the study on X", "the trial comparing …", "the review's focus", "the book on X";
#: "the study of X" may name a field and passes).
PATTERNS: Mapping[str, re.Pattern[str]] = {
    "en": re.compile(rf"\b(?:this|these|the present|the above)\s+{_NOUNS_EN}s?\b|\bthe authors?\b"
                     rf"|\bthe\s+{_DOC_EN}\b|\b(?:a|an)\s+{_DOC_EN}\s+(?:about|on|that|which|describing)\b"
                     rf"|\bthe\s+{_ONE_EN}\s+{_ABOUT_EN}\b|\bthe\s+(?:{_ONE_EN}|{_DOC_EN})['’]s\b",
                     re.IGNORECASE),
    "es": re.compile(rf"\b(?:este|esta|estos|estas|el presente)\s+{_NOUNS_ES}s?\b|\blos autores\b"
                     rf"|\b(?:el|la)\s+{_DOC_ES}\b|\bun\s+{_DOC_ES}\s+(?:sobre|que|acerca)\b"
                     rf"|\b(?:el|la)\s+{_ONE_ES}\s+{_ABOUT_ES}\b", re.IGNORECASE),
}


def refers_to_document(query: str, *, lang: str = "en") -> bool:
    """True when ``query`` points at its document (see the module docstring); unknown languages: False."""
    pat = PATTERNS.get(lang)
    return bool(pat and pat.search(query))
