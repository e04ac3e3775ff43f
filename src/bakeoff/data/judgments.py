"""Human judgments database (written by ``bakeoff label``): its format and its read side.

The database is one SQLite file (standard library ``sqlite3``, WAL journal). It is
recognised by content, not by name: the first 16 bytes are ``SQLite format 3\\0``
(:func:`is_sqlite`) and ``PRAGMA application_id`` is :data:`APPLICATION_ID`.
:data:`SCHEMA` is the one definition of its tables; :mod:`bakeoff.label.store` writes
them, this module reads them (read-only URI mode, so reading never changes the file).

Tables:

* ``meta(key, value)``: JSON values; ``dataset`` (name, split, path, corpus
  fingerprint), ``pool`` (arm specs, depth, seed), ``source`` (where the queries came
  from, with counts), ``routing`` (share of queries judged twice), ``created_at``.
* ``queries``: one row per query to judge: ``text`` (possibly edited), ``original_text``,
  ``status`` (``ready`` for given queries; ``pending``/``accepted``/``edited``/``rejected``
  for reviewed synthetic ones), ``required`` annotators (1, or 2 when routed to a second
  annotator), reviewer and time, ``pooled_at`` and ``pool_size`` (documents in its pool).
* ``pool(qid, doc_id, position, arms)``: the pooled documents, in their shuffled order;
  ``arms`` records which arm retrieved each at which rank (hidden from annotators).
* ``judgments(qid, doc_id, annotator, grade 0-3, note, judged_at)``: the current grade of
  each annotator for each pair (primary key: one row per annotator and pair).
* ``events``: the append-only history (judge, skip, undo, review) behind undo and audit;
  ``skips``, ``claims`` (which annotator works on which query) and ``cursors`` (where
  each annotator's page stands) make the app resume exactly where it stopped.

**Conflicting grades** (:func:`resolve_grades`): when annotators disagree on a pair the
exported / evaluated grade is the majority grade; a tie between the most frequent
grades goes to the *lower* grade (a conservative judgment). Pairs judged by one person
keep that grade.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from .model import Qrels, Queries, Query

#: Largest absolute grade read from any file: the exponential gain ``2**grade - 1`` and sums of
#: millions of such gains stay finite float64 values.
GRADE_LIMIT = 1000

__all__ = [
    "APPLICATION_ID",
    "GRADES",
    "SCHEMA",
    "SCHEMA_VERSION",
    "SQLITE_HEADER",
    "HumanJudgments",
    "connect_readonly",
    "is_sqlite",
    "read_judgments",
    "read_meta",
    "resolve_grades",
]

SQLITE_HEADER = b"SQLite format 3\x00"
#: ``PRAGMA application_id`` of a bakeoff judgments database (ASCII "bklb").
APPLICATION_ID = 0x626B6C62
SCHEMA_VERSION = 1
#: The grade scale: 0 not relevant, 1 related, 2 relevant, 3 highly relevant.
GRADES: tuple[tuple[int, str], ...] = ((0, "not relevant"), (1, "related"), (2, "relevant"), (3, "highly relevant"))
#: Query statuses whose judgments count (``pending`` and ``rejected`` queries are left out).
USABLE_STATUSES = ("ready", "accepted", "edited")

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE queries (
    qid TEXT PRIMARY KEY,
    position INTEGER NOT NULL UNIQUE,
    text TEXT NOT NULL,
    original_text TEXT NOT NULL,
    source TEXT NOT NULL,
    count INTEGER NOT NULL DEFAULT 1,
    status TEXT NOT NULL CHECK (status IN ('ready', 'pending', 'accepted', 'edited', 'rejected')),
    required INTEGER NOT NULL DEFAULT 1 CHECK (required >= 1),
    reviewed_by TEXT,
    reviewed_at TEXT,
    pooled_at TEXT,
    pool_size INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE pool (
    qid TEXT NOT NULL REFERENCES queries(qid),
    doc_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    arms TEXT NOT NULL,
    PRIMARY KEY (qid, doc_id)
);
CREATE UNIQUE INDEX pool_order ON pool (qid, position);
CREATE TABLE judgments (
    qid TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    grade INTEGER NOT NULL CHECK (grade BETWEEN 0 AND 3),
    note TEXT NOT NULL DEFAULT '',
    judged_at TEXT NOT NULL,
    PRIMARY KEY (qid, doc_id, annotator),
    FOREIGN KEY (qid, doc_id) REFERENCES pool (qid, doc_id)
);
CREATE INDEX judgments_by_annotator ON judgments (annotator, qid);
CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    annotator TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('judge', 'skip', 'undo', 'review')),
    qid TEXT,
    doc_id TEXT,
    grade INTEGER,
    note TEXT,
    prev_grade INTEGER,
    prev_note TEXT,
    prev_at TEXT,
    undone INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX events_by_annotator ON events (annotator, id);
CREATE TABLE skips (
    qid TEXT NOT NULL, doc_id TEXT NOT NULL, annotator TEXT NOT NULL, at TEXT NOT NULL,
    PRIMARY KEY (qid, doc_id, annotator)
);
CREATE TABLE claims (
    qid TEXT NOT NULL, annotator TEXT NOT NULL, at TEXT NOT NULL,
    PRIMARY KEY (qid, annotator)
);
CREATE TABLE cursors (
    annotator TEXT NOT NULL, mode TEXT NOT NULL, qid TEXT, doc_id TEXT, at TEXT NOT NULL,
    PRIMARY KEY (annotator, mode)
);
"""


def is_sqlite(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a regular file starting with the 16-byte SQLite header."""
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_HEADER
    except OSError:
        return False


def connect_readonly(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """Open a bakeoff judgments database read-only (URI ``mode=ro``), checking that it is
    readable SQLite, carries :data:`APPLICATION_ID` and a known schema version.

    Raises :class:`~bakeoff.errors.InputError` naming the file otherwise; the file itself
    is never modified (SQLite may create the ``-wal``/``-shm`` side files of a WAL
    database)."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", path=p)
    if not is_sqlite(p):
        raise InputError("not an SQLite database (no 'SQLite format 3' header)", path=p)
    conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True)
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id != APPLICATION_ID:
            raise InputError("an SQLite database, but not one written by 'bakeoff label' "
                             f"(application_id {app_id:#x})", path=p)
        if version != SCHEMA_VERSION:
            raise InputError(f"judgments database schema version {version}; this bakeoff reads "
                             f"version {SCHEMA_VERSION}", path=p)
        conn.execute("SELECT count(*) FROM judgments").fetchone()
        problem = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
        if problem != "ok":
            raise InputError(f"corrupt SQLite database: {problem}", path=p)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise InputError(f"corrupt or unreadable SQLite database ({exc})", path=p) from None
    except BaseException:
        conn.close()
        raise
    return conn


def read_meta(conn: sqlite3.Connection) -> dict[str, Any]:
    """The ``meta`` table as a dict of decoded JSON values."""
    return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}


def resolve_grades(grades: Sequence[int]) -> tuple[int, str]:
    """The grade of a pair from its annotators' grades, and how it was decided.

    Rule: the most frequent grade (majority / plurality); a tie between the most
    frequent grades goes to the lowest of them. Returns ``(grade, how)`` with ``how``
    one of ``"single"`` (one annotator), ``"agree"`` (all equal), ``"majority"``,
    ``"lower"`` (tie broken towards the lower grade).

    >>> resolve_grades([2, 2, 0])
    (2, 'majority')
    >>> resolve_grades([3, 1])
    (1, 'lower')
    """
    if not grades:
        raise ValueError("no grades")
    if len(grades) == 1:
        return int(grades[0]), "single"
    counts = Counter(int(g) for g in grades)
    if len(counts) == 1:
        return int(grades[0]), "agree"
    top = max(counts.values())
    best = sorted(g for g, c in counts.items() if c == top)
    return best[0], ("majority" if len(best) == 1 else "lower")


@dataclass(frozen=True)
class HumanJudgments:
    """What a judgments database says: resolved qrels, the judged queries (edited text
    where a reviewer fixed it, the original in ``metadata["original_text"]``), and
    provenance (``label_kind = "human"``, annotators, dates, pool arms, depth, conflicts)."""

    qrels: Qrels
    queries: Queries
    provenance: Mapping[str, Any] = field(default_factory=dict)
    raw: tuple[tuple[str, str, str, int, str, str], ...] = ()  # (qid, doc, annotator, grade, note, judged_at)


def _annotator_summary(rows: Iterable[tuple[str, str, str, int, str, str]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for _q, _d, who, _g, _n, at in rows:
        a = out.setdefault(who, {"judgments": 0, "first": at, "last": at})
        a["judgments"] += 1
        a["first"], a["last"] = min(a["first"], at), max(a["last"], at)
    return dict(sorted(out.items()))


def read_judgments(path: str | os.PathLike[str], *, corpus_fingerprint: str | None = None) -> HumanJudgments:
    """Read a judgments database into resolved :class:`Qrels` (see :func:`resolve_grades`); a
    disagreement a reviewer settled (``meta.settled``) takes the reviewer's grade instead.

    Only queries whose status is ``ready``, ``accepted`` or ``edited`` and that have at
    least one judgment are included. With ``corpus_fingerprint``, a database made for
    another corpus is an :class:`~bakeoff.errors.InputError` (field ``dataset``).
    """
    p = Path(path)
    conn = connect_readonly(p)
    try:
        meta = read_meta(conn)
        ds = meta.get("dataset") or {}
        if corpus_fingerprint is not None and ds.get("corpus_fingerprint") != corpus_fingerprint:
            raise InputError(
                f"these judgments were made on dataset {ds.get('name')!r} (corpus fingerprint "
                f"{str(ds.get('corpus_fingerprint'))[:12]}), not on this corpus ({corpus_fingerprint[:12]})",
                path=p, field="dataset")
        placeholders = ",".join("?" * len(USABLE_STATUSES))
        rows = conn.execute(
            "SELECT j.qid, j.doc_id, j.annotator, j.grade, j.note, j.judged_at FROM judgments j "
            f"JOIN queries q ON q.qid = j.qid WHERE q.status IN ({placeholders}) "
            "ORDER BY q.position, j.doc_id, j.annotator", USABLE_STATUSES).fetchall()
        qrows = conn.execute(
            "SELECT qid, text, original_text, source, count, status, reviewed_by, reviewed_at, metadata "
            f"FROM queries WHERE status IN ({placeholders}) ORDER BY position", USABLE_STATUSES).fetchall()
        n_pool = conn.execute("SELECT count(*) FROM pool").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise InputError(f"corrupt or unreadable SQLite database ({exc})", path=p) from None
    finally:
        conn.close()
    grades: dict[tuple[str, str], list[int]] = {}
    for qid, doc, _who, grade, _note, _at in rows:
        if isinstance(grade, bool) or not isinstance(grade, int | float) or not math.isfinite(grade) \
                or abs(grade) > GRADE_LIMIT or int(grade) != grade:
            raise InputError(f"grade {grade!r} of query {qid!r}, document {doc!r} is not an integer from "
                             f"-{GRADE_LIMIT} to {GRADE_LIMIT}", path=p, field="judgments.grade")
        grades.setdefault((qid, doc), []).append(int(grade))
    judg: dict[str, dict[str, int]] = {}
    how_counts: Counter[str] = Counter()
    settled = meta.get("settled") or {}  # a reviewer's grade for a disagreement: "qid\tdoc" -> {"grade", ...}
    for (qid, doc), gs in grades.items():
        g, how = resolve_grades(gs)
        review = settled.get(f"{qid}\t{doc}")
        if how in ("majority", "lower") and isinstance(review, dict) and review.get("grade") in (0, 1, 2, 3):
            g, how = int(review["grade"]), "review"
        judg.setdefault(qid, {})[doc] = g
        how_counts[how] += 1
    queries = []
    for qid, text, original, source, count, status, by, at, meta_json in qrows:
        if qid not in judg:
            continue
        qmeta = {**json.loads(meta_json or "{}"), "source": source, "status": status}
        if count and count != 1:
            qmeta["count"] = count
        if text != original:
            qmeta["original_text"] = original
        if by:
            qmeta["reviewed_by"], qmeta["reviewed_at"] = by, at
        queries.append(Query(qid, text, qmeta))
    dates = [r[5] for r in rows]
    provenance = {
        "label_kind": "human",
        "database": str(p.resolve()),
        "annotators": _annotator_summary(rows),
        "dates": {"first": min(dates), "last": max(dates)} if dates else {},
        "dataset": ds,
        "pool": meta.get("pool", {}),
        "source": meta.get("source", {}),
        "routing": meta.get("routing", {}),
        "conflict_rule": "a reviewer's grade (bakeoff label's disagreements page); else the majority grade; a tie "
                         "between the most frequent grades goes to the lower grade",
        "counts": {
            "queries": len(judg),
            "pairs": len(grades),
            "pool_pairs": n_pool,
            "judgments": len(rows),
            "pairs_judged_twice_or_more": sum(1 for gs in grades.values() if len(gs) > 1),
            "conflicts": how_counts["majority"] + how_counts["lower"] + how_counts["review"],
            "resolved_by_review": how_counts["review"],
            "resolved_by_majority": how_counts["majority"],
            "resolved_by_lower_grade": how_counts["lower"],
        },
    }
    return HumanJudgments(Qrels(judg), Queries.from_queries(queries), provenance, tuple(tuple(r) for r in rows))
