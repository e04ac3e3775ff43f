"""Installed library versions: the one place that asks ``importlib.metadata``.

Cache keys, results and training records record the versions of the libraries
that can change an output (``{"torch": "2.13.0", ...}``); the HTTP client's
User-Agent and ``results.json`` name bakeoff's own version. Every such lookup
goes through this module.

Conventions: a distribution that is not installed is ``"absent"`` in
:func:`version_of` (so a key still records that it was missing) and is left out
by :func:`versions_of` with ``present_only=True``. (Dated *document* versions of
a corpus are :mod:`bakeoff.data.versions`, an unrelated concept.)
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib import metadata

__all__ = ["ABSENT", "bakeoff_version", "installed_version", "version_of", "versions_of"]

#: What :func:`version_of` says for a distribution that is not installed.
ABSENT = "absent"


@functools.cache
def installed_version(dist: str) -> str | None:
    """The installed version of distribution ``dist`` (its PyPI name), or ``None``; read once per process
    (``importlib.metadata`` scans every ``site-packages`` entry per call: a cached RRF re-run asked 1,114
    times, ~3.4 s)."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def version_of(dist: str) -> str:
    """The installed version of ``dist``, or ``"absent"``."""
    return installed_version(dist) or ABSENT


def versions_of(dists: Iterable[str], *, present_only: bool = False) -> dict[str, str]:
    """``{dist: version}`` in the given order; ``present_only`` drops distributions not installed."""
    out = {d: version_of(d) for d in dists}
    return {d: v for d, v in out.items() if v != ABSENT} if present_only else out


def bakeoff_version() -> str:
    """bakeoff's own version (``0+unknown`` when running from a source tree that is not installed)."""
    return installed_version("bakeoff") or "0+unknown"
