"""Provenance of an ingested corpus, written beside it as ``<corpus file>.provenance.json``.

Schema ``bakeoff.ingest`` version 1::

    {"schema": "bakeoff.ingest", "schema_version": 1, "kind": "api" | "files",
     "bakeoff_version": str, "source": URL or folder,
     "started": ISO-8601, "finished": ISO-8601,      # this invocation
     "fetched": {"first": ISO-8601, "last": ISO-8601},  # api: span of the responses used
     "parameters": {...},                            # every option that shaped the corpus
     "counts": {...},                                # pages, items, duplicates dropped, failures ...
     "output": {"path", "format", "n_documents", "sha256"},
     "corpus_fingerprint": sha256 (bakeoff.data.Corpus.fingerprint of what was written),
     "warnings": [str, ...], ...kind-specific lists (failures, disallowed, no_text)}

Secrets never appear: API keys are referenced by the *name* of their
environment variable only. Written atomically, after the corpus.
"""

from __future__ import annotations

import datetime as _dt
import os
from importlib import metadata
from pathlib import Path
from typing import Any

from .._io import atomic_write_json

__all__ = ["SCHEMA", "iso", "provenance_path", "write_provenance"]

SCHEMA = "bakeoff.ingest"


def iso(ts: float | None) -> str | None:
    """UTC ISO-8601 (seconds) of a POSIX time, ``None`` for ``None``."""
    if ts is None:
        return None
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).isoformat(timespec="seconds")


def provenance_path(out: str | os.PathLike[str]) -> Path:
    """``corpus.jsonl`` -> ``corpus.jsonl.provenance.json`` (beside the corpus)."""
    p = Path(out)
    return p.with_name(p.name + ".provenance.json")


def write_provenance(out: str | os.PathLike[str], body: dict[str, Any]) -> Path:
    """Write the provenance of the corpus at ``out`` (schema header added); returns its path."""
    try:
        version = metadata.version("bakeoff")
    except metadata.PackageNotFoundError:  # pragma: no cover - source tree
        version = "0+unknown"
    doc = {"schema": SCHEMA, "schema_version": 1, "bakeoff_version": version, **body}
    path = provenance_path(out)
    atomic_write_json(path, doc)
    return path
