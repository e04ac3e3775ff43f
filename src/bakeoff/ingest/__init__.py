"""Bringing a corpus from where it lives: paginated JSON web APIs, folders of document
files, and chunking of long documents into passages.

* :mod:`.api` — ``ingest_api`` (``bakeoff ingest api``), built from :mod:`.pagination`,
  :mod:`.mapping` (JMESPath field mapping), :mod:`.manners` (User-Agent, rate,
  robots.txt), :mod:`.fetch` (JSON GET with conditional revalidation over
  :class:`bakeoff.net.HttpClient`), :mod:`.state` (crash-safe resume state),
  :mod:`.output` and :mod:`.provenance`;
* :mod:`.documents` — ``ingest_files`` (``bakeoff ingest files``): PDF, DOCX, HTML,
  Markdown and text files to a corpus;
* :mod:`.chunking` — passages ``<doc>#<n>`` and MaxP / FirstP aggregation back to
  documents (``bakeoff run --chunk``).

Submodules are imported on first use (nothing heavy at ``import bakeoff.ingest``).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ApiSource", "ChunkSpec", "Manners", "aggregate_run", "chunk_corpus", "ingest_api", "ingest_files"]

_WHERE = {"ApiSource": "api", "Manners": "api", "ingest_api": "api", "ingest_files": "documents",
          "ChunkSpec": "chunking", "chunk_corpus": "chunking", "aggregate_run": "chunking"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
