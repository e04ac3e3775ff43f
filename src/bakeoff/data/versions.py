"""Dated versions of citable units, and "as of a date" snapshots as row masks.

A *target* is a citable unit (an article of a law, a section of an act) that
may have several dated versions. Each version is its own document, with id
``<unit>@<valid_from>`` (e.g. ``art-12@2014-07-01``) and metadata
``{"unit", "valid_from", "valid_to"}`` (ISO dates; ``valid_to`` ``None`` while
the version is in force).

Conventions (half-open intervals, as legal texts are dated):

* a version is **in force on** date ``D`` iff ``valid_from <= D < valid_to``
  (``valid_to`` absent = open-ended); a unit repealed on ``R`` has its last
  version end at ``R`` and no later version;
* :meth:`Versions.as_of` ``(D)`` is the boolean row mask of the versions in
  force on ``D``; :meth:`Versions.latest` marks the version with the greatest
  ``valid_from`` of every unit ("today's text" — a repealed unit keeps its
  final text, flagged by ``valid_to``);
* versions of one unit must not overlap; gaps are allowed (a unit may be
  repealed and re-enacted).

A snapshot is a mask over the rows of the one corpus: arms index every
version once and filter their results (never a re-encode).

Input (JSONL or CSV, one version per record): ``unit`` (required), ``text``
(required), ``valid_from`` (required, ``YYYY-MM-DD``), ``valid_to``
(optional), ``title`` (optional); other fields are kept as metadata. Errors
name the file, line and field in one line.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .loaders import iter_records
from .model import Corpus, Qrels, Queries

__all__ = ["TargetVersion", "Versions", "as_of_masks", "parse_date", "read_targets", "version_id"]

_FAR = _dt.date.max.toordinal() + 1


def parse_date(value: Any) -> _dt.date:
    """``YYYY-MM-DD`` (or a :class:`datetime.date`) -> date; ``ValueError`` otherwise."""
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    text = str(value).strip()
    if len(text) != 10:
        raise ValueError(f"expected a date YYYY-MM-DD, got {text!r}")
    return _dt.date.fromisoformat(text)


def version_id(unit: str, valid_from: _dt.date) -> str:
    """The document id of a version: ``<unit>@<valid_from>``."""
    return f"{unit}@{valid_from.isoformat()}"


@dataclass(frozen=True)
class TargetVersion:
    """One dated version of a citable unit."""

    unit: str
    text: str
    valid_from: _dt.date
    valid_to: _dt.date | None = None
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return version_id(self.unit, self.valid_from)

    def in_force(self, day: _dt.date) -> bool:
        return self.valid_from <= day and (self.valid_to is None or day < self.valid_to)


def read_targets(path: str | Path) -> list[TargetVersion]:
    """Read target versions from JSONL or CSV (see the module docstring)."""
    path = Path(path)
    fmt = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "csv"}.get(
        path.suffix.lower())
    if fmt is None:
        raise InputError("unknown targets format; use .jsonl or .csv", path=path)
    if not path.exists():
        raise InputError("no such file", path=path)
    out: list[TargetVersion] = []
    seen: dict[str, int] = {}
    for no, rec in iter_records(path, fmt):
        def get(key: str, *, required: bool, rec: dict[str, Any] = rec, no: int = no) -> str:
            return _field(rec, key, required=required, path=path, line=no)

        unit = get("unit", required=True).strip()
        text = get("text", required=True)
        title = get("title", required=False)
        dates: dict[str, _dt.date | None] = {}
        for key, required in (("valid_from", True), ("valid_to", False)):
            raw = get(key, required=required)
            try:
                dates[key] = parse_date(raw) if raw else None
            except ValueError:
                raise InputError(f"expected a date YYYY-MM-DD, got {raw!r}", path=path, line=no, field=key) from None
        vf, vt = dates["valid_from"], dates["valid_to"]
        assert vf is not None
        if vt is not None and vt <= vf:
            raise InputError(f"valid_to {vt} is not after valid_from {vf}", path=path, line=no, field="valid_to")
        v = TargetVersion(unit, text, vf, vt, title,
                          {k: x for k, x in rec.items() if k not in ("unit", "text", "title", "valid_from", "valid_to")})
        if v.id in seen:
            raise InputError(f"duplicate version {v.id!r} (first on line {seen[v.id]})", path=path, line=no,
                             field="valid_from")
        seen[v.id] = no
        for other in out:
            if other.unit == unit and _overlap(other, v):
                raise InputError(f"version of {unit!r} from {vf} overlaps the one from {other.valid_from} "
                                 f"(line {seen[other.id]}); end the earlier one with valid_to",
                                 path=path, line=no, field="valid_from")
        out.append(v)
    if not out:
        raise InputError("no target versions", path=path)
    return out


def _field(rec: Mapping[str, Any], key: str, *, required: bool, path: Path, line: int) -> str:
    value = rec.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise InputError("missing", path=path, line=line, field=key)
        return ""
    if isinstance(value, (dict, list)):
        raise InputError(f"expected a string, got {type(value).__name__}", path=path, line=line, field=key)
    return str(value)


def _overlap(a: TargetVersion, b: TargetVersion) -> bool:
    a_end = a.valid_to or _dt.date.max
    b_end = b.valid_to or _dt.date.max
    return a.valid_from < b_end and b.valid_from < a_end


class Versions:
    """Row-aligned validity intervals of a corpus of versions, and snapshot masks.

    Build from :class:`TargetVersion` records (:meth:`from_targets`) or from a
    corpus whose metadata carries ``unit``/``valid_from``/``valid_to``
    (:meth:`from_corpus`, e.g. a mined BEIR folder).
    """

    def __init__(self, ids: Sequence[str], units: Sequence[str], valid_from: Sequence[_dt.date],
                 valid_to: Sequence[_dt.date | None]) -> None:
        self.ids = tuple(ids)
        self.units = tuple(units)
        self._from = np.array([d.toordinal() for d in valid_from], dtype=np.int64)
        self._to = np.array([_FAR if d is None else d.toordinal() for d in valid_to], dtype=np.int64)
        self._rows: dict[str, list[int]] = {}
        for i, u in enumerate(self.units):
            self._rows.setdefault(u, []).append(i)
        self._pos = {d: i for i, d in enumerate(self.ids)}

    @classmethod
    def from_targets(cls, targets: Sequence[TargetVersion]) -> Versions:
        return cls([t.id for t in targets], [t.unit for t in targets], [t.valid_from for t in targets],
                   [t.valid_to for t in targets])

    @classmethod
    def from_corpus(cls, corpus: Corpus) -> Versions:
        """Read ``unit``, ``valid_from``, ``valid_to`` from every document's metadata."""
        units, vfs, vts = [], [], []
        for doc_id, meta in zip(corpus.ids, corpus.metadata, strict=True):
            if "valid_from" not in meta:
                raise InputError("not a versioned corpus: document metadata lacks valid_from",
                                 path=f"corpus:{doc_id}", field="valid_from")
            try:
                vfs.append(parse_date(meta["valid_from"]))
                vts.append(parse_date(meta["valid_to"]) if meta.get("valid_to") else None)
            except ValueError as exc:
                raise InputError(str(exc), path=f"corpus:{doc_id}", field="valid_from/valid_to") from None
            units.append(str(meta.get("unit") or doc_id.rsplit("@", 1)[0]))
        return cls(corpus.ids, units, vfs, vts)

    @staticmethod
    def is_versioned(corpus: Corpus) -> bool:
        """True when every document's metadata has a ``valid_from``."""
        return len(corpus) > 0 and all("valid_from" in m for m in corpus.metadata)

    def __len__(self) -> int:
        return len(self.ids)

    def as_of(self, day: _dt.date | str) -> np.ndarray:
        """Mask of the versions in force on ``day``: ``valid_from <= day < valid_to``."""
        d = parse_date(day).toordinal()
        return (self._from <= d) & (d < self._to)

    def as_of_any(self, days: Iterable[_dt.date | str]) -> np.ndarray:
        """Mask of the versions in force on at least one of ``days``."""
        m = np.zeros(len(self.ids), dtype=bool)
        for d in days:
            m |= self.as_of(d)
        return m

    @cached_property
    def _latest_row(self) -> dict[str, int]:
        return {u: max(rows, key=lambda i: self._from[i]) for u, rows in self._rows.items()}

    @cached_property
    def _latest(self) -> np.ndarray:
        m = np.zeros(len(self.ids), dtype=bool)
        m[list(self._latest_row.values())] = True
        return m

    def latest(self) -> np.ndarray:
        """Mask of each unit's latest version (greatest ``valid_from``)."""
        return self._latest.copy()

    def latest_of(self, doc_id: str) -> str:
        """The id of the latest version of ``doc_id``'s unit."""
        return self.ids[self._latest_row[self.units[self._pos[doc_id]]]]

    def in_force(self, unit: str, day: _dt.date | str) -> str | None:
        """The id of ``unit``'s version in force on ``day``, or ``None``."""
        d = parse_date(day).toordinal()
        for i in self._rows.get(unit, ()):
            if self._from[i] <= d < self._to[i]:
                return self.ids[i]
        return None

    def to_latest(self, qrels: Qrels) -> Qrels:
        """``qrels`` with every judged version replaced by its unit's latest version
        (the relevance target when searching today's text); grades keep their max."""
        out: dict[str, dict[str, int]] = {}
        for q in qrels:
            per: dict[str, int] = {}
            for d, g in qrels[q].items():
                nd = self.latest_of(d) if d in self._pos else d
                per[nd] = max(g, per.get(nd, g))
            out[q] = per
        return Qrels(out)


def query_days(meta: Mapping[str, Any]) -> list[str]:
    """The as-of dates of a query: metadata ``as_of`` (a date or a list) else ``date``."""
    raw = meta.get("as_of", meta.get("date"))
    if raw is None or raw == "" or raw == []:
        return []
    return [str(x) for x in raw] if isinstance(raw, (list, tuple)) else [str(raw)]


def as_of_masks(versions: Versions, queries: Queries) -> dict[str, np.ndarray]:
    """qid -> mask of the versions in force on the query's date(s).

    A query without a date raises :class:`InputError` (as-of search needs one;
    use ``--latest`` instead). Queries with the same dates share one (read-only)
    array, so memory grows with the number of distinct dates, not of queries.
    """
    out: dict[str, np.ndarray] = {}
    shared: dict[tuple[str, ...], np.ndarray] = {}
    for qid, meta in zip(queries.ids, queries.metadata, strict=True):
        days = query_days(meta)
        if not days:
            raise InputError("query has no date for as-of search; give metadata.date or search with --latest",
                             path=f"query:{qid}", field="date")
        key = tuple(sorted(days))
        try:
            if key not in shared:
                shared[key] = versions.as_of_any(days)
                shared[key].setflags(write=False)
            out[qid] = shared[key]
        except ValueError as exc:
            raise InputError(str(exc), path=f"query:{qid}", field="date") from None
    return out
