"""Bringing a corpus from where it lives: paginated JSON web APIs and folders of document
files.

* :mod:`.web_api` — ``ingest_api`` (``bakeoff ingest api``), built from :mod:`.pagination`,
  :mod:`.mapping` (JMESPath field mapping), :mod:`.manners` (User-Agent, rate,
  robots.txt), :mod:`.fetch` (JSON GET with conditional revalidation over
  :class:`bakeoff.net.HttpClient`), :mod:`.state` (crash-safe resume state),
  :mod:`.output` and :mod:`.provenance`;
* :mod:`.documents` — ``ingest_files`` (``bakeoff ingest files``): PDF, DOCX, HTML,
  Markdown and text files to a corpus.

Chunking documents into passages is :mod:`bakeoff.data.chunking` (pure, for every layer).

Submodules are imported on first use (nothing heavy at ``import bakeoff.ingest``).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ApiSource", "Manners", "ingest_api", "ingest_files"]

_WHERE = {"ApiSource": "web_api", "Manners": "web_api", "ingest_api": "web_api", "ingest_files": "documents"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
