"""Writing an ingested corpus: flat JSONL or Parquet records, atomically.

One record per document: ``id``, ``title``, ``text``, then the document's
metadata fields in order (the ``--field`` names of an API ingest; ``path``,
``format``... of a file ingest). This is the shape ``bakeoff run --corpus
FILE`` and ``bakeoff generate --corpus FILE`` read with their default
``--id-field id --text-field text --title-field title`` (remaining fields
become metadata). JSONL lines are ``json.dumps(..., ensure_ascii=False)``
with keys in that order, so equal corpora give byte-identical files. The file
is written through :func:`bakeoff._io.atomic_open`: a reader never sees half
of it, and a failure leaves any previous file untouched.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

from .._io import atomic_open
from ..data.model import Corpus
from ..errors import ConfigError, InputError, MissingDependencyError

__all__ = ["FORMATS", "corpus_format", "records", "write_corpus"]

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}


def corpus_format(path: str | os.PathLike[str]) -> str:
    """``jsonl`` or ``parquet`` from the output file's suffix (else a :class:`ConfigError`)."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise ConfigError(f"--out {str(path)!r}: use a .jsonl or .parquet file name")
    return fmt


def records(corpus: Corpus) -> list[dict[str, Any]]:
    """The flat records of ``corpus`` (see module docstring)."""
    out = []
    for doc_id, title, text, meta in zip(corpus.ids, corpus.titles, corpus.texts, corpus.metadata, strict=True):
        clash = {"id", "title", "text"} & set(meta)
        if clash:
            raise InputError(f"document metadata may not be named {sorted(clash)}", path=doc_id)
        out.append({"id": doc_id, "title": title, "text": text, **dict(meta)})
    return out


def write_corpus(corpus: Corpus, path: str | os.PathLike[str]) -> dict[str, Any]:
    """Write ``corpus`` to ``path`` (format from the suffix); returns ``{"path", "format",
    "n_documents", "sha256"}`` (sha256 of the bytes written)."""
    fmt = corpus_format(path)
    recs = records(corpus)
    h = hashlib.sha256()
    if fmt == "jsonl":
        with atomic_open(path, "wb") as fh:
            for rec in recs:
                line = (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8")
                h.update(line)
                fh.write(line)
    else:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise MissingDependencyError("pyarrow", None, "Writing Parquet") from None
        try:
            table = pa.Table.from_pylist(recs)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise ConfigError(f"--out {str(path)!r}: the metadata fields cannot form Parquet columns "
                              f"({' '.join(str(exc).split())[:160]}); write .jsonl instead") from None
        buf = io.BytesIO()
        pq.write_table(table, buf)
        data = buf.getvalue()
        h.update(data)
        with atomic_open(path, "wb") as fh:
            fh.write(data)
    return {"path": str(path), "format": fmt, "n_documents": len(corpus), "sha256": h.hexdigest()}
