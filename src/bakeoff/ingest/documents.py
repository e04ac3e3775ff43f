"""A folder of document files becomes a corpus: ``bakeoff ingest files``.

One document per file below the folder (recursive, sorted by relative path; the
id is the relative path *with* its suffix, so ``a.pdf`` and ``a.docx`` stay
apart). Extraction, by suffix, with maintained libraries:

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
* ``.txt`` — as is (UTF-8).

Document metadata is ``path``, ``format`` and ``pages`` (PDF page count, else
``null``): the same fields for every file, so JSONL and Parquet read back alike.
Other files are *skipped* and listed. A file whose text is empty after cleaning
(a scanned PDF without a text layer, an empty page) is *empty*: counted, listed
and left out. Nothing is dropped silently: failed, empty and skipped files are
counted and listed in the provenance and printed as warnings; ``strict`` turns
any failed or empty file into an error (exit 2, nothing written).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.clean import CleanOptions, html_to_text
from ..data.model import Corpus
from ..errors import InputError, MissingDependencyError
from ..progress import progress_bar
from .output import corpus_format, write_corpus
from .provenance import iso, write_provenance

__all__ = ["SUFFIXES", "ExtractionError", "Extracted", "FilesResult", "extract", "ingest_files"]


SUFFIXES = {".pdf": "pdf", ".docx": "docx", ".html": "html", ".htm": "html", ".md": "markdown",
            ".markdown": "markdown", ".txt": "text"}


class ExtractionError(Exception):
    """A file whose text cannot be extracted; ``str()`` is the one-line reason."""


@dataclass(frozen=True)
class Extracted:
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class FilesResult:
    corpus: Corpus
    out: Path
    provenance: Path
    counts: dict[str, int]
    failed: list[dict[str, str]]
    empty: list[str]
    skipped: list[str]
    warnings: list[str]


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
    except Exception as exc:  # noqa: BLE001 - lxml raises several parser errors
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


def ingest_files(
    folder: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str],
    clean: CleanOptions = CleanOptions(normalize_space=True),
    strict: bool = False,
    progress: bool = True,
) -> FilesResult:
    """Extract every supported file below ``folder`` into a corpus file ``out`` (``.jsonl`` or
    ``.parquet``) with ``<out>.provenance.json`` beside it (see module docstring).

    ``clean`` applies ``normalize_space`` and ``min_chars`` (documents shorter are
    counted as empty); HTML is always reduced to text. Raises :class:`InputError` when
    no file yields text, or (``strict``) on the first failed or empty file; nothing is
    written then.
    """
    import time

    started = time.time()
    root = Path(folder)
    if not root.is_dir():
        raise InputError("not a folder", path=root)
    corpus_format(out)
    files = sorted((p for p in root.rglob("*") if p.is_file()), key=lambda p: p.relative_to(root).as_posix())
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    metas: list[dict[str, Any]] = []
    failed: list[dict[str, str]] = []
    empty: list[str] = []
    skipped: list[str] = []
    text_clean = CleanOptions(normalize_space=clean.normalize_space)
    for f in progress_bar(files, desc="extracting", enabled=progress, unit="file"):
        rel = f.relative_to(root).as_posix()
        if f.suffix.lower() not in SUFFIXES:
            skipped.append(rel)
            continue
        try:
            got = extract(f)
        except ExtractionError as exc:
            if strict:
                raise InputError(str(exc), path=f) from None
            failed.append({"path": rel, "error": str(exc)})
            continue
        text = text_clean.text(got.text)
        if not text.strip() or (clean.min_chars and len(text) < clean.min_chars):
            if strict:
                raise InputError("no text extracted" if not text.strip() else
                                 f"only {len(text)} characters (--min-chars {clean.min_chars})", path=f)
            empty.append(rel)
            continue
        ids.append(rel)
        titles.append(text_clean.text(got.title))
        texts.append(text)
        metas.append({"path": rel, **got.metadata})
    if not ids:
        raise InputError(f"no file yielded text ({len(failed)} failed, {len(empty)} empty, {len(skipped)} of "
                         f"unsupported types; supported: {', '.join(sorted(SUFFIXES))})", path=root)
    corpus = Corpus(tuple(ids), tuple(texts), tuple(titles), tuple(metas))
    warnings = [f"{root / x['path']}: {x['error']}; skipped" for x in failed]
    warnings += [f"{root / x}: no text extracted; left out" for x in empty]
    if skipped:
        warnings.append(f"{len(skipped)} files of unsupported types skipped (e.g. {skipped[0]})")
    counts = {"files": len(files), "documents": len(ids), "failed": len(failed), "empty": len(empty),
              "skipped": len(skipped)}
    output = write_corpus(corpus, out)
    prov = write_provenance(out, {
        "kind": "files", "source": str(root.resolve()), "started": iso(started), "finished": iso(time.time()),
        "parameters": {"normalize_space": clean.normalize_space, "min_chars": clean.min_chars, "strict": strict,
                       "suffixes": sorted(SUFFIXES)},
        "counts": counts, "failed": failed, "empty": empty, "skipped": skipped, "output": output,
        "corpus_fingerprint": corpus.fingerprint(), "warnings": warnings,
    })
    return FilesResult(corpus, Path(out), prov, counts, failed, empty, skipped, warnings)
