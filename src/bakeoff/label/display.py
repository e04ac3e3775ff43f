"""How a document is shown to a judge: the words of the query marked, and a long text cut
to its first :data:`SHOWN_CHARS` characters with the rest behind "show all".

* **Query words** (:func:`query_words`): the query's word tokens (Unicode ``\\w+``), lowercased,
  at least :data:`MIN_WORD` characters long, minus a short list of English function words,
  longest first.
* **Marking** (:func:`marked`): every word of the text that *starts with* a query word,
  case-insensitively (``bone`` marks "bones"), becomes a marked segment. The text is split
  into ``(segment, is_mark)`` pairs and never re-assembled into HTML here: the template
  escapes each segment, so marking cannot inject markup.
* **Cutting** (:func:`document_view`): a text longer than ``SHOWN_CHARS + SLACK`` characters
  is cut at the last whitespace before ``SHOWN_CHARS`` (or exactly there when there is
  none); the rest is sent hidden, revealed by the "show all" button (or ``m``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MIN_WORD", "SHOWN_CHARS", "DocumentView", "document_view", "marked", "query_words"]

#: Characters of a document shown before "show all".
SHOWN_CHARS = 3000
#: A text at most this much longer than SHOWN_CHARS is shown whole (no button for a few words).
SLACK = 300
#: Shortest query word marked in documents.
MIN_WORD = 3
_STOP = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "did", "do", "does", "for", "from", "had", "has",
    "have", "how", "if", "in", "into", "is", "it", "its", "may", "not", "of", "on", "or", "that", "the", "their",
    "then", "there", "these", "this", "those", "to", "was", "were", "what", "when", "where", "which", "who", "why",
    "will", "with", "would", "you", "your",
])
_WORD = re.compile(r"\w+")


def query_words(query: str) -> list[str]:
    """The words of ``query`` to mark (module docstring), longest first."""
    words = {w.lower() for w in _WORD.findall(query) if len(w) >= MIN_WORD and w.lower() not in _STOP}
    return sorted(words, key=lambda w: (-len(w), w))


def marked(text: str, words: Sequence[str]) -> list[tuple[str, bool]]:
    """``text`` as ``(segment, is_mark)`` pairs whose segments join back to ``text``."""
    if not words or not text:
        return [(text, False)] if text else []
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\w*", re.IGNORECASE)
    out: list[tuple[str, bool]] = []
    pos = 0
    for m in pattern.finditer(text):
        if m.start() > pos:
            out.append((text[pos:m.start()], False))
        out.append((m.group(0), True))
        pos = m.end()
    if pos < len(text):
        out.append((text[pos:], False))
    return out


@dataclass(frozen=True)
class DocumentView:
    """A document as the page shows it."""

    id: str
    title: tuple[tuple[str, bool], ...]
    head: tuple[tuple[str, bool], ...]
    rest: tuple[tuple[str, bool], ...] = ()
    n_chars: int = 0
    n_rest: int = 0


def document_view(doc_id: str, title: str, text: str, query: str, *,
                  shown: int = SHOWN_CHARS) -> DocumentView:
    """The document ``doc_id`` marked for ``query`` and cut (module docstring)."""
    words = query_words(query)
    cut = len(text)
    if len(text) > shown + SLACK:
        space = text.rfind(" ", 0, shown)
        cut = space if space > shown // 2 else shown
    head, rest = text[:cut], text[cut:]
    return DocumentView(doc_id, tuple(marked(title, words)), tuple(marked(head, words)), tuple(marked(rest, words)),
                        len(text), len(rest))
