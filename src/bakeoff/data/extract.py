"""Text and title of one document file, by its suffix: the one extraction of ``bakeoff ingest files`` and of
``--corpus FOLDER`` (:func:`bakeoff.data.loaders.read_folder`), so both read a folder alike.

Formats, with maintained libraries:

* ``.pdf`` — ``pypdf``: the text of every page, pages separated by a blank line;
  title from the document information ``/Title``. A PDF encrypted with an empty
  user password (permissions only) is opened; one that needs a password, or that
  ``pypdf`` cannot parse, is a *failed* file with a one-line reason.
* ``.docx`` — ``python-docx``: paragraphs, then table cells (one row per line);
  title from the core property ``title``, else the first paragraph styled
  ``Title`` or ``Heading 1``.
* ``.html``/``.htm`` — text by :func:`bakeoff.data.clean.html_to_text` (the
  package's one HTML-to-text conversion); title from ``<title>``, else the first
  ``<h1>`` (parsed by ``lxml``, which also decodes non-UTF-8 pages by their
  ``<meta charset>``).
* ``.md``/``.markdown`` — rendered by ``markdown-it-py`` (CommonMark) and reduced
  to text the same way, so markup (``**``, link targets) does not reach the index;
  title from the first heading.
* ``.txt``/``.rst`` — as is (UTF-8).

The metadata :func:`extract` returns is ``format`` and ``pages`` (PDF page count, else ``null``): the same
fields for every file, so JSONL and Parquet read back alike. The libraries come with ``bakeoff[ingest]``; a
missing one is a :class:`~bakeoff.errors.MissingDependencyError` naming it (text files need none).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MissingDependencyError
from .clean import html_to_text

__all__ = ["SUFFIXES", "Extracted", "ExtractionError", "extract"]


SUFFIXES = {".pdf": "pdf", ".docx": "docx", ".html": "html", ".htm": "html", ".md": "markdown",
            ".markdown": "markdown", ".txt": "text", ".rst": "text"}


class ExtractionError(Exception):
    """A file whose text cannot be extracted; ``str()`` is the one-line reason."""


@dataclass(frozen=True)
class Extracted:
    """What :func:`extract` read from one file: title (may be empty), text and metadata."""

    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _first_line(text: str) -> str:
    return " ".join(text.split())


def _pdf(path: Path) -> Extracted:
    try:
        from pypdf import PdfReader
        from pypdf.errors import DependencyError, PdfReadError
    except ImportError:
        raise MissingDependencyError("pypdf", "ingest", "Reading PDF files") from None
    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except DependencyError as exc:
                raise ExtractionError(f"encrypted PDF; decrypting it needs the cryptography package ({exc})") from None
            if not ok:
                raise ExtractionError("encrypted PDF: a password is needed to open it")
        pages = [(p.extract_text() or "") for p in reader.pages]
        info = reader.metadata
        title = _first_line(str(info.title)) if info is not None and info.title else ""
    except ExtractionError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        raise ExtractionError(f"not a readable PDF ({type(exc).__name__}: {_first_line(str(exc))[:120]})") from None
    return Extracted(title, "\n\n".join(pages), {"pages": len(pages)})


def _docx(path: Path) -> Extracted:
    try:
        import docx
        from docx.opc.exceptions import PackageNotFoundError
    except ImportError:
        raise MissingDependencyError("python-docx", "ingest", "Reading DOCX files") from None
    import zipfile

    try:
        d = docx.Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ExtractionError(f"not a readable DOCX ({type(exc).__name__}: {_first_line(str(exc))[:120]})") from None
    paras = [p.text for p in d.paragraphs]
    title = _first_line(d.core_properties.title or "")
    if not title:
        for p in d.paragraphs:
            if p.style is not None and p.style.name in ("Title", "Heading 1") and p.text.strip():
                title = _first_line(p.text)
                break
    rows = ["\t".join(c.text for c in row.cells) for t in d.tables for row in t.rows]
    text = "\n\n".join(x for x in paras if x.strip())
    if rows:
        text = (text + "\n\n" if text else "") + "\n".join(rows)
    return Extracted(title, text)


def _html(path: Path) -> Extracted:
    raw = path.read_bytes()
    try:
        markup = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        markup = None
    try:
        import lxml.html
    except ImportError:
        raise MissingDependencyError("lxml", "ingest", "Reading HTML files") from None
    try:
        doc = lxml.html.fromstring(raw if markup is None else markup.encode("utf-8"))
    except Exception as exc:  # noqa: BLE001 - lxml raises several types for unreadable HTML
        if not raw.strip():
            return Extracted("", "")
        raise ExtractionError(f"not readable HTML ({type(exc).__name__})") from None
    if markup is None:
        markup = lxml.html.tostring(doc, encoding="unicode")
    title = _first_line(doc.findtext(".//title") or "")
    if not title:
        h1 = doc.xpath("//h1")
        title = _first_line(h1[0].text_content()) if h1 else ""
    return Extracted(title, html_to_text(markup))


def _utf8(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExtractionError(f"not valid UTF-8 (byte {exc.start}); re-encode the file as UTF-8") from None


def _markdown(path: Path) -> Extracted:
    try:
        from markdown_it import MarkdownIt
    except ImportError:
        raise MissingDependencyError("markdown-it-py", "ingest", "Reading Markdown files") from None
    source = _utf8(path)
    md = MarkdownIt("commonmark")
    tokens = md.parse(source)
    title = ""
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and i + 1 < len(tokens):
            title = _first_line(html_to_text(md.renderInline(tokens[i + 1].content)))
            break
    return Extracted(title, html_to_text(md.render(source)))


_EXTRACTORS = {"pdf": _pdf, "docx": _docx, "html": _html, "markdown": _markdown,
               "text": lambda p: Extracted("", _utf8(p))}


def extract(path: str | os.PathLike[str]) -> Extracted:
    """Title and text of one file (by suffix, see module docstring); raises
    :class:`ExtractionError` with a one-line reason, ``KeyError`` for an unknown suffix."""
    p = Path(path)
    fmt = SUFFIXES[p.suffix.lower()]
    got = _EXTRACTORS[fmt](p)
    return Extracted(got.title, got.text, {"format": fmt, "pages": None, **got.metadata})
