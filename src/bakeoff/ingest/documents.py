"""A folder of document files becomes a corpus: ``bakeoff ingest files``.

One document per file below the folder (recursive, sorted by relative path). Its id is the file id of
:mod:`bakeoff.data.ids` (the relative path with its suffix, made into an id TREC files can carry, clashes told
apart deterministically), the one ``--corpus FOLDER`` gives too; the original relative path is kept in the
metadata. Text and title come from :func:`bakeoff.data.extract.extract` (PDF, DOCX, HTML, Markdown, text).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data.clean import CleanOptions
from ..data.extract import SUFFIXES, Extracted, ExtractionError, extract
from ..data.ids import folder_files
from ..data.model import Corpus
from ..errors import InputError
from ..progress import progress_bar
from .output import corpus_format, write_corpus
from .provenance import iso, write_provenance

__all__ = ["SUFFIXES", "Extracted", "ExtractionError", "FilesResult", "extract", "ingest_files"]


@dataclass
class FilesResult:
    """What :func:`ingest_files` wrote and what it left out (relative paths)."""

    corpus: Corpus
    out: Path
    provenance: Path
    counts: dict[str, int]
    failed: list[dict[str, str]]
    empty: list[str]
    skipped: list[str]
    warnings: list[str]


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
    file_id = {p: i for p, i in folder_files(root).items() if p.is_file()}
    files = list(file_id)
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
        ids.append(file_id[f])
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
