"""Queries that point at their document instead of standing alone ("this study", "the authors").

A searcher has not seen the document, so a query that says "the main finding of this study" or "the
treatment used in this patient" cannot be a real query, whatever the document answers. A query is
rejected (``refers_to_document``) when it contains one of :data:`PATTERNS` for its language, matched
case-insensitively on word boundaries, or one of :data:`UNINTRODUCED`: a definite document or event
noun that ends its clause with nothing to say which one ("What was the goal of the pretest?", "the
trends discussed in the volume", "the Comparative Social Inquiry book?") and that the query did not
introduce before ("... terms in the documents of a collection ... across the collection." passes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["PATTERNS", "UNINTRODUCED", "refers_to_document"]

_NOUNS_EN = (r"(?:study|paper|article|document|text|abstract|review|trial|report|patient|case|work|research|analysis"
             r"|experiment|investigation|survey|book|monograph|volume|chapter|essay|collection|gathering|workshop"
             r"|symposium|conference|lecture|assay|cohort|package|library|module)")
_NOUNS_ES = r"(?:estudio|art[ií]culo|documento|texto|resumen|revisi[oó]n|ensayo|informe|paciente|caso|trabajo|an[aá]lisis|experimento|investigaci[oó]n|encuesta)"
#: "abstract" is the document's abstract, not the adjective of "the abstract base class" / "abstract syntax tree".
_DOC_EN = (r"(?:document|passage|paper|article|abstract(?!\s+(?:base|class(?:es)?|method|methods|syntax|data|type|types"
           r"|interface|factory|model|algebra|art|concept|idea|noun|representation)\b))")
_DOC_ES = r"(?:documento|pasaje|resumen|art[ií]culo)"
#: "the given document", "the provided text", "the above passage": the prompt's document, named as such.
_GIVEN_EN = r"(?:given|provided|above|following|attached|preceding|accompanying)"
_ONE_EN = r"(?:study|trial|review|experiment|survey|investigation|analysis|report|book|monograph|volume|publication)"
_ONE_ES = r"(?:estudio|ensayo|revisi[oó]n|experimento|encuesta|investigaci[oó]n|an[aá]lisis|informe)"
_ABOUT_EN = r"(?:on|about|comparing|evaluating|examining|investigating|describing|that|which)"
_ABOUT_ES = r"(?:sobre|acerca|que|comparando)"
#: "the study conducted in 1969", "the survey carried out": a participle that says which study, from the document.
_DONE_EN = r"(?:conducted|described|presented|discussed|reported|mentioned|proposed|carried|performed|undertaken|cited)"
#: Per language: a demonstrative before a document noun, "the document" (a searcher has none), a description
#: of a document ("a document about", "the document is about") instead of a need, the document's authors, or
#: one particular study or book ("the study on X", "the trial comparing …", "the review's focus", "the book on X";
#: "the study of X" may name a field and passes), or one of its tables or figures ("the references tabulated in
#: Table I", "Fig. 2"; a figure-8 knot passes).
PATTERNS: Mapping[str, re.Pattern[str]] = {
    "en": re.compile(rf"\b(?:this|these|the present|the above)\s+{_NOUNS_EN}s?\b|\bthe authors?\b"
                     rf"|\bthe\s+(?:{_GIVEN_EN}\s+)?{_DOC_EN}\b|\bthe\s+{_GIVEN_EN}\s+(?:text|description|excerpt|content)\b"
                     rf"|\b(?:a|an)\s+{_DOC_EN}\s+(?:about|on|that|which|describing)\b"
                     rf"|\bthe\s+{_ONE_EN}\s+(?:{_ABOUT_EN}|{_DONE_EN})\b|\bthe\s+(?:{_ONE_EN}|{_DOC_EN})['’]s\b"
                     r"|\b(?:table|fig(?:ure)?\.?)\s+(?:(?-i:[IVX]+)|\d+[a-z]?)\b(?!\s+knots?\b)",
                     re.IGNORECASE),
    "es": re.compile(rf"\b(?:este|esta|estos|estas|el presente)\s+{_NOUNS_ES}s?\b|\blos autores\b"
                     rf"|\b(?:el|la)\s+{_DOC_ES}\b|\bun\s+{_DOC_ES}\s+(?:sobre|que|acerca)\b"
                     rf"|\b(?:el|la)\s+{_ONE_ES}\s+{_ABOUT_ES}\b", re.IGNORECASE),
}

_END = r"(?=\s*(?:[?.!,;:]|$))"
#: Definite nouns that name one document, or one event or piece of work a document reports.
_HEADS_EN = (r"(?:study|paper|article|book|monograph|volume|chapter|essay|collection|gathering|workshop|symposium"
             r"|conference|seminar|meeting|lecture|survey|experiment|pretest|trial|investigation|proposal|publication)")
#: What a document does, said of it as the subject: "the collection focus(es) on", "the study finds".
_SAYS_EN = (r"(?:focus(?:es)?|discuss(?:es)?|describes?|covers?|presents?|examines?|aims?|includes?|contains?"
            r"|reports?|shows?|suggests?|finds?|found|concludes?|argues?|proposes?|address(?:es)?|explores?"
            r"|investigates?|deals?|provides?)")
#: Per language, matched case-sensitively; group ``head`` is the noun. "the X" ending its clause with at most
#: two lowercase words between ("the pretest?", "the decision meeting."; "report", "findings", "research",
#: "analysis", "review" and "evaluation" only bare: "what did the commission report?" is a verb, "the principal
#: component analysis" a method), or a book-like noun after up to four words of any case but "to" ("the
#: Comparative Social Inquiry book?"; "the best day to book?" passes; a proper name before "conference" may say
#: which one: "the Wannsee conference" passes), or the subject of what a document does ("What materials does the
#: collection focus on?", "What does the study find out about X?").
UNINTRODUCED: Mapping[str, re.Pattern[str]] = {
    "en": re.compile(rf"\b[Tt]he\s+(?P<head>{_HEADS_EN}|report|findings|research|analysis|review|evaluation){_END}"
                     rf"|\b[Tt]he\s+(?:[a-z][\w-]*\s+){{1,2}}(?P<head1>{_HEADS_EN}){_END}"
                     rf"|\b[Tt]he\s+(?:(?!to\b)[\w'’-]+\s+){{1,4}}(?P<head2>book|monograph|volume|essay|chapter){_END}"
                     rf"|\b[Tt]he\s+(?P<head3>{_HEADS_EN})\s+{_SAYS_EN}\b"),
}


def _unintroduced(query: str, pat: re.Pattern[str]) -> bool:
    """True when a match of ``pat`` names a noun the query has not used before the match."""
    for m in pat.finditer(query):
        head = m.group("head") or m.group("head1") or m.group("head2") or m.group("head3")
        if not re.search(rf"\b{head}s?\b", query[: m.start()], re.IGNORECASE):
            return True
    return False


def refers_to_document(query: str, *, lang: str = "en") -> bool:
    """True when ``query`` points at its document (see the module docstring); unknown languages: False."""
    pat = PATTERNS.get(lang)
    if pat and pat.search(query):
        return True
    end = UNINTRODUCED.get(lang)
    return bool(end and _unintroduced(query, end))
