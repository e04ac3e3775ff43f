"""Cleaning options applied while loading: HTML to text, whitespace, duplicates, short docs."""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass
from html.parser import HTMLParser

__all__ = ["CleanOptions", "html_to_text", "normalize_space"]

_SPACES = re.compile(r"[ \t\u00a0\u2007\u202f\u2000-\u200a\u3000]+")
_NEWLINES = re.compile(r"\s*\n\s*(?:\n\s*)+")


@dataclass(frozen=True, kw_only=True)
class CleanOptions:
    """What to clean. Counts of what each option removed are reported by the loader.

    * ``strip_html``: turn HTML markup into its visible text (script/style dropped).
    * ``normalize_space``: non-breaking and other Unicode spaces become a space,
      runs of spaces collapse, ``\\r\\n``/``\\r`` become ``\\n``, blank-line runs
      collapse to one blank line, ends are stripped.
    * ``dedupe``: keep the first document of a repeated id (default: error).
    * ``min_chars``: drop documents whose cleaned text is shorter than this.
    """

    strip_html: bool = False
    normalize_space: bool = False
    dedupe: bool = False
    min_chars: int = 0

    def text(self, value: str) -> str:
        if self.strip_html:
            value = html_to_text(value)
        if self.normalize_space:
            value = normalize_space(value)
        return value


class _TextExtractor(HTMLParser):
    _SKIP = frozenset({"script", "style", "noscript", "template", "head"})
    _BLOCK = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section",
              "article", "blockquote", "pre", "table", "ul", "ol", "dd", "dt", "hr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skip += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    """Visible text of an HTML fragment or page; block elements become line breaks."""
    parser = _TextExtractor()
    parser.feed(markup)
    parser.close()
    return normalize_space(html.unescape("".join(parser.parts)))


def normalize_space(text: str) -> str:
    """Normalise Unicode spaces and newlines (see :class:`CleanOptions`)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _SPACES.sub(" ", text)
    text = "\n".join(line.strip() for line in text.split("\n"))
    text = _NEWLINES.sub("\n\n", text)
    return text.strip()


def normalise_query(text: str) -> str:
    """The comparison key of a query text: NFKC, casefold, punctuation/symbols/controls replaced by
    spaces, whitespace collapsed (two queries are "the same" when their keys are equal)."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = "".join(" " if unicodedata.category(c)[0] in "PSZC" and not c.isspace() else c for c in t)
    return " ".join(t.split())
