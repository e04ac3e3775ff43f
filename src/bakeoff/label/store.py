"""The judgments store: the write side of the SQLite database defined in
:mod:`bakeoff.data.judgments` (standard library ``sqlite3``).

Durability: the database runs in WAL mode with ``synchronous=FULL``; every action
(a grade, a skip, an undo, a review decision) is one ``BEGIN IMMEDIATE`` transaction that
also moves the annotator's cursor, and the web app answers only after it committed. So a
killed server loses nothing it acknowledged, and a restarted one shows each annotator the
item their cursor stood on. A new database is built in a temporary sibling file and
renamed into place once it holds the queries and their pools, so a crash while pooling
leaves no half-made database. Several processes may share one database (SQLite locking,
``busy_timeout`` 10 s).

**Who judges what.** Queries are offered in ``position`` order. An annotator *claims* a
query with their first grade on it (browsing claims nothing). A query is *visible* to
annotator ``a`` when ``a`` claimed it, or when fewer than ``required`` other annotators
*hold* it: claimed it, or have their cursor on it, moved within the last
:data:`CLAIM_MINUTES` minutes (so a query someone is reading is not offered to a second
person at the same moment, and is free again once they move on without grading).
``required`` is 1, or 2 for the share of queries routed to a second annotator
(:func:`~bakeoff.label.sources.routed_twice`). So two people labelling at once get
different queries, and a routed query is offered to a second person after the first. The
page numbers queries among those visible to its annotator.

**Stale writes.** A grade carries the grade it replaces (``None`` for a first grade), as
the page showed it; when the stored grade differs (another tab or window changed it
meanwhile) the write is refused (:class:`Refused`) and the page shows the current grade.

**Moving on** after a grade or a skip: the next item of the same query (in pool order,
wrapping) that ``a`` has neither judged nor skipped; else an item of this query ``a``
skipped once and not yet judged (skipped documents come back at the end of their query;
one skipped twice waits for the end); else the first unjudged, unskipped item of the next
visible query (by position, wrapping); else a skipped, still unjudged item; else done.
From the finished state, ``p`` / ``n`` go back to the last / first visible query.

**Progress** counts judgments *owed*: each pooled pair of a query needs ``required``
annotators, so a pair judged once on a query routed to two still owes one.

**Undo** reverts ``a``'s latest not-yet-undone grade or skip from the ``events`` history
(restoring an overwritten grade and note, or deleting a new one) and puts the cursor back
on that item; pressing it again goes further back.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .._io import sqlite_connect
from ..data.judgments import APPLICATION_ID, SCHEMA, SCHEMA_VERSION, USABLE_STATUSES
from .pool import PooledDoc
from .sources import SourceQuery

__all__ = ["ANY", "CLAIM_MINUTES", "ItemRow", "LabelView", "OverviewRow", "Refused", "ReviewView", "Stale", "Store", "now"]

#: Minutes after which a claim without any judgment no longer keeps others off a query.
CLAIM_MINUTES = 30

_USABLE = "q.status IN ('ready', 'accepted', 'edited') AND q.pool_size > 0"
_MINE = "EXISTS (SELECT 1 FROM judgments j WHERE j.qid = p.qid AND j.doc_id = p.doc_id AND j.annotator = :a)"
_SKIPPED = "EXISTS (SELECT 1 FROM skips s WHERE s.qid = p.qid AND s.doc_id = p.doc_id AND s.annotator = :a)"
_VISIBLE = f"""{_USABLE} AND (
    EXISTS (SELECT 1 FROM claims c WHERE c.qid = q.qid AND c.annotator = :a)
    OR (SELECT count(*) FROM (
        SELECT c.annotator FROM claims c WHERE c.qid = q.qid AND c.annotator <> :a AND (c.at > :cutoff
            OR EXISTS (SELECT 1 FROM judgments j WHERE j.qid = c.qid AND j.annotator = c.annotator))
        UNION
        SELECT k.annotator FROM cursors k WHERE k.mode = 'label' AND k.qid = q.qid AND k.annotator <> :a
            AND k.at > :cutoff)) < q.required)"""
#: ``a`` said "can't tell" for the pair: a skip whose event note is ``cant_tell`` (it does not come back).
_CANT = ("EXISTS (SELECT 1 FROM events e WHERE e.annotator = :a AND e.kind = 'skip' AND e.note = 'cant_tell' "
         "AND e.undone = 0 AND e.qid = p.qid AND e.doc_id = p.doc_id)")
_HAS_WORK = f"EXISTS (SELECT 1 FROM pool p WHERE p.qid = q.qid AND NOT {_MINE} AND NOT {_SKIPPED})"


def now() -> str:
    """UTC time as ISO 8601 with milliseconds (sorts as text)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Refused(Exception):
    """An action the store will not do (e.g. changing the text of a query already judged)."""


class Stale(Refused):
    """A write based on what another tab or window has changed since (nothing written)."""


class _Any:
    def __repr__(self) -> str:
        return "ANY"


#: ``Store.judge(replaces=ANY)``: write whatever grade is stored (no stale-write check).
ANY: object = _Any()


@dataclass(frozen=True)
class ItemRow:
    """One pooled document of the current query, as one annotator sees it."""

    doc_id: str
    position: int
    grade: int | None
    skipped: bool
    cant_tell: bool = False


@dataclass(frozen=True)
class LabelView:
    """Everything the labelling page shows for one annotator."""

    annotator: str
    done: bool
    qid: str | None = None
    query_text: str = ""
    query_index: int = 0
    n_queries: int = 0
    required: int = 1
    others: tuple[str, ...] = ()
    items: tuple[ItemRow, ...] = ()
    current: int = 0
    grade: int | None = None
    note: str = ""
    query_judged: int = 0
    my_judged: int = 0
    pairs_judged: int = 0
    pairs_total: int = 0
    skipped_left: int = 0
    owed_left: int = 0
    second_owed: int = 0
    query_meta: Mapping[str, Any] = field(default_factory=dict)
    message: str = ""

    @property
    def doc_id(self) -> str | None:
        return self.items[self.current].doc_id if self.items else None

    @property
    def remaining(self) -> int:
        """Judgments still owed by anyone (first and second ones; module docstring)."""
        return self.owed_left


@dataclass(frozen=True)
class OverviewRow:
    """One query on the overview page."""

    qid: str
    text: str
    pool_size: int
    required: int
    mine: int
    judged_by_anyone: int
    others: tuple[str, ...]
    open: bool
    skipped: int
    current: bool


@dataclass(frozen=True)
class ReviewView:
    """Everything the review page shows: one synthetic query and the counts."""

    annotator: str
    qid: str | None
    text: str = ""
    original_text: str = ""
    status: str = ""
    reviewed_by: str | None = None
    index: int = 0
    total: int = 0
    written_from: tuple[str, ...] = ()
    judged: int = 0
    counts: Mapping[str, int] = field(default_factory=dict)
    message: str = ""

    @property
    def pending(self) -> int:
        return self.counts.get("pending", 0)


class Store:
    """Read-write access to a judgments database (see module docstring). Thread-safe: one
    connection guarded by a lock; each public method is one transaction."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._conn = sqlite_connect(self.path, isolation_level=None, check_same_thread=False, timeout=10.0)
        self._conn.execute("PRAGMA busy_timeout = 10000")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = FULL")
        self._conn.execute("PRAGMA foreign_keys = ON")

    # -- creation -------------------------------------------------------------------
    @staticmethod
    def create(path: str | os.PathLike[str], *, meta: Mapping[str, Any], queries: Sequence[SourceQuery],
               required: Mapping[str, int], pools: Mapping[str, Sequence[PooledDoc]]) -> None:
        """Write a new database at ``path`` (which must not exist) holding ``meta``, the
        queries (in order) and the pools given; built in a temporary sibling and renamed."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        try:
            conn = sqlite_connect(tmp, isolation_level=None)
            conn.path = str(target)  # a failure names the database being created, not its temporary sibling
            try:
                conn.executescript(SCHEMA)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute("BEGIN")
                conn.executemany("INSERT INTO meta VALUES (?, ?)",
                                 [(k, json.dumps(v, sort_keys=True, ensure_ascii=False)) for k, v in meta.items()])
                stamp = now()
                for pos, q in enumerate(queries):
                    conn.execute(
                        "INSERT INTO queries (qid, position, text, original_text, source, count, status, required,"
                        " metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (q.qid, pos, q.text, q.text, q.source, q.count, q.status, required.get(q.qid, 1),
                         json.dumps(dict(q.metadata), sort_keys=True, ensure_ascii=False)))
                    if q.qid in pools:
                        _insert_pool(conn, q.qid, pools[q.qid], stamp)
                conn.execute("COMMIT")
            finally:
                conn.close()
            if target.exists():
                raise FileExistsError(target)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)

    def mark_served(self) -> None:
        """Record when a server started on this database (``meta.last_served_at``). Being the
        first write of the session, it also pays SQLite's one-off costs (WAL recovery after a
        crash, WAL header sync) before the first annotator's key does."""
        with self._tx() as c:
            c.execute("INSERT INTO meta VALUES ('last_served_at', ?) ON CONFLICT (key) DO UPDATE SET value = "
                      "excluded.value", (json.dumps(now()),))

    def set_meta(self, key: str, value: Any) -> None:
        """Write one ``meta`` entry (JSON)."""
        with self._tx() as c:
            c.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                      (key, json.dumps(value, sort_keys=True, ensure_ascii=False)))

    def close(self) -> None:
        """Checkpoint the WAL into the database file (so the ``.sqlite`` file alone holds
        every judgment) and close. A checkpoint blocked by another process's reader leaves
        the rest in the WAL, which SQLite still reads."""
        with self._lock:
            try:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass
            self._conn.close()

    @contextmanager
    def _tx(self, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction: ``BEGIN IMMEDIATE`` (takes the write lock at once, so concurrent
        writers queue instead of failing mid-way), or a read snapshot with ``write=False``."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _params(self, a: str, **kw: Any) -> dict[str, Any]:
        cutoff = (datetime.now(UTC) - timedelta(minutes=CLAIM_MINUTES)).isoformat(timespec="milliseconds")
        return {"a": a, "cutoff": cutoff, **kw}

    # -- pooling ----------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        with self._lock:
            return {k: json.loads(v) for k, v in self._conn.execute("SELECT key, value FROM meta")}

    def unpooled(self) -> list[tuple[str, str]]:
        """(qid, text) of the queries to judge that have no pool yet, in order."""
        with self._lock:
            return self._conn.execute(
                "SELECT qid, text FROM queries WHERE status IN ('ready', 'accepted', 'edited') "
                "AND pooled_at IS NULL ORDER BY position").fetchall()

    def add_pool(self, qid: str, text: str, docs: Sequence[PooledDoc]) -> bool:
        """Store the pool of ``qid`` computed for ``text``; False (nothing stored) when the
        query was pooled meanwhile or its text changed."""
        with self._tx() as c:
            row = c.execute("SELECT text, pooled_at FROM queries WHERE qid = ?", (qid,)).fetchone()
            if row is None or row[0] != text or row[1] is not None:
                return False
            _insert_pool(c, qid, docs, now())
            return True

    # -- labelling --------------------------------------------------------------------
    def _cursor(self, c: sqlite3.Connection, a: str, mode: str) -> tuple[str | None, str | None] | None:
        row = c.execute("SELECT qid, doc_id FROM cursors WHERE annotator = ? AND mode = ?", (a, mode)).fetchone()
        return None if row is None else (row[0], row[1])

    def _set_cursor(self, c: sqlite3.Connection, a: str, mode: str, qid: str | None, doc: str | None) -> None:
        stamp = now()
        c.execute("INSERT INTO cursors VALUES (?, ?, ?, ?, ?) ON CONFLICT (annotator, mode) DO UPDATE SET "
                  "qid = excluded.qid, doc_id = excluded.doc_id, at = excluded.at", (a, mode, qid, doc, stamp))

    def _visible(self, c: sqlite3.Connection, a: str, qid: str) -> bool:
        return c.execute(f"SELECT 1 FROM queries q WHERE q.qid = :q AND {_VISIBLE}",
                         self._params(a, q=qid)).fetchone() is not None

    def _qpos(self, c: sqlite3.Connection, qid: str | None) -> int:
        row = None if qid is None else c.execute("SELECT position FROM queries WHERE qid = ?", (qid,)).fetchone()
        return -1 if row is None else int(row[0])

    def _ppos(self, c: sqlite3.Connection, qid: str | None, doc: str | None) -> int:
        row = c.execute("SELECT position FROM pool WHERE qid = ? AND doc_id = ?", (qid, doc)).fetchone()
        return -1 if row is None else int(row[0])

    def _first_work(self, c: sqlite3.Connection, a: str, qid: str, *, after: int = -1) -> str | None:
        row = c.execute(f"SELECT p.doc_id FROM pool p WHERE p.qid = :q AND NOT {_MINE} AND NOT {_SKIPPED} "
                        "ORDER BY (p.position <= :pos), p.position LIMIT 1",
                        {"a": a, "q": qid, "pos": after}).fetchone()
        return None if row is None else row[0]

    def _next_work(self, c: sqlite3.Connection, a: str, qid: str | None,
                   doc: str | None) -> tuple[str | None, str | None]:
        if qid is not None:
            d = self._first_work(c, a, qid, after=self._ppos(c, qid, doc))
            if d is not None:
                return qid, d
            row = c.execute(f"SELECT p.doc_id FROM pool p WHERE p.qid = :q AND NOT {_MINE} AND {_SKIPPED} "
                            f"AND NOT {_CANT} AND p.doc_id <> :d AND (SELECT count(*) FROM events e WHERE e.annotator = :a AND "
                            "e.kind = 'skip' AND e.undone = 0 AND e.qid = p.qid AND e.doc_id = p.doc_id) < 2 "
                            "ORDER BY (p.position <= :pos), p.position LIMIT 1",
                            {"a": a, "q": qid, "d": doc or "", "pos": self._ppos(c, qid, doc)}).fetchone()
            if row is not None and self._visible(c, a, qid):
                return qid, row[0]
        row = c.execute(f"SELECT q.qid FROM queries q WHERE {_VISIBLE} AND {_HAS_WORK} AND q.qid <> :q "
                        "ORDER BY (q.position <= :pos), q.position LIMIT 1",
                        self._params(a, q=qid or "", pos=self._qpos(c, qid))).fetchone()
        if row is not None:
            return row[0], self._first_work(c, a, row[0])
        row = c.execute(f"SELECT p.qid, p.doc_id FROM pool p JOIN queries q ON q.qid = p.qid WHERE {_VISIBLE} "
                        f"AND NOT {_MINE} AND NOT {_CANT} ORDER BY (p.qid <> :q), q.position, p.position LIMIT 1",
                        self._params(a, q=qid or "")).fetchone()
        return (row[0], row[1]) if row is not None else (None, None)

    def view(self, a: str, *, message: str = "") -> LabelView:
        """The annotator's current item (their cursor, repaired if it no longer points at
        a visible pooled item) with the query's items and progress counts."""
        with self._lock:
            with self._tx(write=False) as c:  # the usual case only reads: no commit to wait for
                cur = self._cursor(c, a, "label")
                if (cur is not None and (cur[0] is None or (self._visible(c, a, cur[0])
                                                            and self._ppos(c, cur[0], cur[1]) >= 0))
                        and (cur[0] is not None or self._next_work(c, a, None, None) == (None, None))):
                    return self._build_view(c, a, cur[0], cur[1], message)
            with self._tx() as c:
                qid, doc = self._next_work(c, a, None, None)
                self._set_cursor(c, a, "label", qid, doc)
                return self._build_view(c, a, qid, doc, message)

    def _build_view(self, c: sqlite3.Connection, a: str, qid: str | None, doc: str | None, message: str) -> LabelView:
        p = self._params(a)
        pairs_total = c.execute(f"SELECT coalesce(sum(q.pool_size), 0) FROM queries q WHERE {_USABLE}").fetchone()[0]
        pairs_judged = c.execute(f"SELECT count(*) FROM (SELECT DISTINCT qid, doc_id FROM judgments) j "
                                 f"JOIN queries q ON q.qid = j.qid WHERE {_USABLE}").fetchone()[0]
        owed_total = c.execute(f"SELECT coalesce(sum(q.pool_size * q.required), 0) FROM queries q "
                               f"WHERE {_USABLE}").fetchone()[0]
        owed_done = c.execute(f"SELECT coalesce(sum(min(j.n, q.required)), 0) FROM (SELECT qid, doc_id, "
                              f"count(*) AS n FROM judgments GROUP BY qid, doc_id) j JOIN queries q ON q.qid = j.qid "
                              f"WHERE {_USABLE}").fetchone()[0]
        my = c.execute(f"SELECT count(*) FROM judgments j JOIN queries q ON q.qid = j.qid WHERE j.annotator = :a "
                       f"AND {_USABLE}", p).fetchone()[0]
        skipped_left = c.execute(f"SELECT count(*) FROM skips p WHERE p.annotator = :a AND NOT {_MINE}",
                                 p).fetchone()[0]
        n_queries = c.execute(f"SELECT count(*) FROM queries q WHERE {_VISIBLE}", p).fetchone()[0]
        common = {"annotator": a, "pairs_total": pairs_total, "pairs_judged": pairs_judged, "my_judged": my,
                  "owed_left": owed_total - owed_done, "second_owed": owed_total - owed_done
                  - (pairs_total - pairs_judged),
                  "skipped_left": skipped_left, "n_queries": n_queries, "message": message}
        if qid is None:
            return LabelView(done=True, **common)
        qtext, qpos, required, qmeta = c.execute("SELECT text, position, required, metadata FROM queries "
                                                 "WHERE qid = ?", (qid,)).fetchone()
        index = c.execute(f"SELECT count(*) FROM queries q WHERE {_VISIBLE} AND q.position <= :pos",
                          self._params(a, pos=qpos)).fetchone()[0]
        rows = c.execute(
            f"SELECT p.doc_id, p.position, j.grade, j.note, s.at IS NOT NULL, {_CANT} FROM pool p "
            "LEFT JOIN judgments j ON j.qid = p.qid AND j.doc_id = p.doc_id AND j.annotator = :a "
            "LEFT JOIN skips s ON s.qid = p.qid AND s.doc_id = p.doc_id AND s.annotator = :a "
            "WHERE p.qid = :q ORDER BY p.position", {"a": a, "q": qid}).fetchall()
        items = tuple(ItemRow(r[0], r[1], r[2], bool(r[4]), bool(r[5]) and r[2] is None) for r in rows)
        current = next((i for i, r in enumerate(rows) if r[0] == doc), 0)
        others = tuple(r[0] for r in c.execute(
            "SELECT DISTINCT annotator FROM judgments WHERE qid = ? AND annotator <> ? ORDER BY annotator", (qid, a)))
        return LabelView(done=False, qid=qid, query_text=qtext, query_index=index, required=required, others=others,
                         query_meta=json.loads(qmeta or "{}"),
                         items=items, current=current, grade=rows[current][2], note=rows[current][3] or "",
                         query_judged=sum(1 for r in rows if r[2] is not None), **common)

    def _check_item(self, c: sqlite3.Connection, a: str, qid: str, doc: str) -> None:
        if self._ppos(c, qid, doc) < 0:
            raise Refused(f"document {doc!r} is not in the pool of query {qid!r}")
        if not self._visible(c, a, qid):
            raise Refused(f"query {qid!r} is not open to annotator {a!r} (judged by others, or not to be judged)")

    def judge(self, a: str, qid: str, doc: str, grade: int, note: str = "", *,
              replaces: int | None | object = ANY) -> None:
        """Record ``a``'s grade (0-3) and note for (qid, doc), claim the query and move ``a``
        on (module docstring). ``replaces`` is the grade the caller saw (None: none yet);
        when the stored one differs the write is refused. :data:`ANY` skips the check."""
        if grade not in (0, 1, 2, 3):
            raise Refused(f"grade must be 0, 1, 2 or 3, got {grade!r}")
        stale = ""
        with self._tx() as c:
            self._check_item(c, a, qid, doc)
            prev = c.execute("SELECT grade, note, judged_at FROM judgments "
                             "WHERE qid = ? AND doc_id = ? AND annotator = ?", (qid, doc, a)).fetchone()
            if replaces is not ANY and (prev[0] if prev is not None else None) != replaces:
                stored = "no grade" if prev is None else f"grade {prev[0]}"
                shown = "no grade" if replaces is None else f"grade {replaces}"
                stale = (f"this document now has {stored} from you (changed in another tab or window; this page "
                         f"showed {shown}), so grade {grade} was not saved. The current grade is shown: press the "
                         "key again to change it.")
                self._set_cursor(c, a, "label", qid, doc)  # the only write: back on the document in question
        if stale:
            raise Stale(stale)
        with self._tx() as c:
            self._check_item(c, a, qid, doc)
            stamp = now()
            c.execute("INSERT INTO claims VALUES (?, ?, ?) ON CONFLICT (qid, annotator) DO NOTHING", (qid, a, stamp))
            c.execute("INSERT INTO judgments VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (qid, doc_id, annotator) DO UPDATE "
                      "SET grade = excluded.grade, note = excluded.note, judged_at = excluded.judged_at",
                      (qid, doc, a, grade, note, stamp))
            c.execute("INSERT INTO events (at, annotator, kind, qid, doc_id, grade, note, prev_grade, prev_note, "
                      "prev_at) VALUES (?, ?, 'judge', ?, ?, ?, ?, ?, ?, ?)",
                      (stamp, a, qid, doc, grade, note, *(prev if prev is not None else (None, None, None))))
            c.execute("DELETE FROM skips WHERE qid = ? AND doc_id = ? AND annotator = ?", (qid, doc, a))
            self._set_cursor(c, a, "label", *self._next_work(c, a, qid, doc))

    def skip(self, a: str, qid: str, doc: str, *, cant_tell: bool = False) -> None:
        """Leave (qid, doc) unjudged for now (it comes back at the end of its query, then at
        the very end); with ``cant_tell``, for good: ``a`` cannot tell, and is not asked again
        (undo takes it back)."""
        with self._tx() as c:
            self._check_item(c, a, qid, doc)
            if c.execute("SELECT 1 FROM judgments WHERE qid = ? AND doc_id = ? AND annotator = ?",
                         (qid, doc, a)).fetchone() is None:
                stamp = now()
                c.execute("INSERT INTO skips VALUES (?, ?, ?, ?) ON CONFLICT (qid, doc_id, annotator) DO UPDATE "
                          "SET at = excluded.at",
                          (qid, doc, a, stamp))
                c.execute("INSERT INTO events (at, annotator, kind, qid, doc_id, note) VALUES (?, ?, 'skip', ?, ?, ?)",
                          (stamp, a, qid, doc, "cant_tell" if cant_tell else None))
            self._set_cursor(c, a, "label", *self._next_work(c, a, qid, doc))

    def undo(self, a: str) -> str:
        """Revert ``a``'s latest grade or skip; returns a one-line description."""
        with self._tx() as c:
            ev = c.execute("SELECT id, kind, qid, doc_id, grade, prev_grade, prev_note, prev_at FROM events "
                           "WHERE annotator = ? AND kind IN ('judge', 'skip') AND undone = 0 ORDER BY id DESC LIMIT 1",
                           (a,)).fetchone()
            if ev is None:
                return "nothing to undo"
            eid, kind, qid, doc, grade, prev_grade, prev_note, prev_at = ev
            if kind == "judge" and prev_grade is None:
                c.execute("DELETE FROM judgments WHERE qid = ? AND doc_id = ? AND annotator = ?", (qid, doc, a))
                what = f"removed grade {grade}"
            elif kind == "judge":
                c.execute("UPDATE judgments SET grade = ?, note = ?, judged_at = ? WHERE qid = ? AND doc_id = ? "
                          "AND annotator = ?", (prev_grade, prev_note, prev_at, qid, doc, a))
                what = f"restored grade {prev_grade} (was {grade})"
            else:
                c.execute("UPDATE events SET undone = 1 WHERE id = ?", (eid,))
                if c.execute("SELECT 1 FROM events WHERE annotator = ? AND kind = 'skip' AND undone = 0 AND qid = ? "
                             "AND doc_id = ?", (a, qid, doc)).fetchone() is None:
                    c.execute("DELETE FROM skips WHERE qid = ? AND doc_id = ? AND annotator = ?", (qid, doc, a))
                what = "un-skipped"
            c.execute("UPDATE events SET undone = 1 WHERE id = ?", (eid,))
            c.execute("INSERT INTO events (at, annotator, kind, qid, doc_id, note) VALUES (?, ?, 'undo', ?, ?, ?)",
                      (now(), a, qid, doc, str(eid)))
            self._set_cursor(c, a, "label", qid, doc)
            return f"undo: {what} on document {doc}"

    def move(self, a: str, to: str, *, qid: str | None = None, doc: str | None = None) -> str:
        """Move ``a``'s cursor: ``next_doc``/``prev_doc`` within the query, ``next_query``/
        ``prev_query`` among the visible queries, ``goto`` a given (qid, doc). Returns a
        message when there is nowhere to go ("" otherwise)."""
        with self._tx() as c:
            cur = self._cursor(c, a, "label") or (None, None)
            cq, cd = cur
            if to == "goto_query":
                if qid is None or not self._visible(c, a, qid):
                    raise Refused(f"query {qid!r} is not open to annotator {a!r}")
                first = self._first_work(c, a, qid) or c.execute(
                    "SELECT doc_id FROM pool WHERE qid = ? ORDER BY position LIMIT 1", (qid,)).fetchone()[0]
                self._set_cursor(c, a, "label", qid, first)
                return ""
            if to == "goto":
                if qid is None or doc is None:
                    raise Refused("goto needs qid and doc")
                self._check_item(c, a, qid, doc)
                self._set_cursor(c, a, "label", qid, doc)
                return ""
            if cq is None:
                if to in ("next_query", "prev_query"):  # back from the finished state
                    order = "ASC" if to == "next_query" else "DESC"
                    row = c.execute(f"SELECT q.qid FROM queries q WHERE {_VISIBLE} ORDER BY q.position {order} "
                                    "LIMIT 1", self._params(a)).fetchone()
                    if row is None:
                        return "no query is open to you"
                    first = c.execute("SELECT doc_id FROM pool WHERE qid = ? ORDER BY position LIMIT 1",
                                      (row[0],)).fetchone()[0]
                    self._set_cursor(c, a, "label", row[0], first)
                return ""
            if to in ("next_doc", "prev_doc"):
                pos = self._ppos(c, cq, cd)
                op, order = (">", "ASC") if to == "next_doc" else ("<", "DESC")
                row = c.execute(f"SELECT doc_id FROM pool WHERE qid = ? AND position {op} ? ORDER BY position {order} "
                                "LIMIT 1", (cq, pos)).fetchone()
                if row is not None:
                    self._set_cursor(c, a, "label", cq, row[0])
                    return ""
                return "this is the last document of this query" if to == "next_doc" else "this is the first document"
            if to in ("next_query", "prev_query"):
                op, order = (">", "ASC") if to == "next_query" else ("<", "DESC")
                p = self._params(a, pos=self._qpos(c, cq))
                row = c.execute(f"SELECT q.qid FROM queries q WHERE {_VISIBLE} AND q.position {op} :pos "
                                f"ORDER BY q.position {order} LIMIT 1", p).fetchone()
                if row is not None:
                    first = self._first_work(c, a, row[0]) or c.execute(
                        "SELECT doc_id FROM pool WHERE qid = ? ORDER BY position LIMIT 1", (row[0],)).fetchone()[0]
                    self._set_cursor(c, a, "label", row[0], first)
                    return ""
                held = c.execute(f"SELECT count(*) FROM queries q WHERE {_USABLE} AND q.position {op} :pos",
                                 p).fetchone()[0]
                where = "later" if to == "next_query" else "earlier"
                if held:
                    return (f"no {where} query is open to you: the {held} {where} one(s) are being judged by "
                            "other annotators")
                return f"there is no {where} query"
            raise Refused(f"unknown move {to!r}")

    def overview(self, a: str) -> list[OverviewRow]:
        """Every query to judge, in order, as ``a`` sees it: open to ``a`` or held by others,
        ``a``'s judgments, the pairs judged by anyone, who else judged it."""
        with self._lock, self._tx(write=False) as c:
            rows = c.execute(
                f"SELECT q.qid, q.text, q.pool_size, q.required, "
                f"(SELECT count(*) FROM judgments j WHERE j.qid = q.qid AND j.annotator = :a), "
                f"(SELECT count(DISTINCT j.doc_id) FROM judgments j WHERE j.qid = q.qid), "
                f"(SELECT group_concat(annotator, ', ') FROM (SELECT DISTINCT j.annotator FROM judgments j "
                f"WHERE j.qid = q.qid AND j.annotator <> :a ORDER BY j.annotator)), "
                f"CASE WHEN {_VISIBLE} THEN 1 ELSE 0 END, "
                f"(SELECT count(*) FROM skips s WHERE s.qid = q.qid AND s.annotator = :a AND NOT EXISTS (SELECT 1 "
                f"FROM judgments j WHERE j.qid = s.qid AND j.doc_id = s.doc_id AND j.annotator = :a)) "
                f"FROM queries q WHERE {_USABLE} ORDER BY q.position", self._params(a)).fetchall()
            cur = self._cursor(c, a, "label")
        return [OverviewRow(r[0], r[1], r[2], r[3], r[4], r[5], tuple((r[6] or "").split(", ")) if r[6] else (),
                            bool(r[7]), r[8], cur is not None and cur[0] == r[0]) for r in rows]

    # -- settling disagreements ---------------------------------------------------------
    def disagreements(self) -> list[dict[str, Any]]:
        """Pairs whose annotators gave different grades, in query and pool order: ``qid``,
        ``doc``, ``query``, ``grades`` ``[(annotator, grade, note)]`` and ``settled`` (the
        reviewer's ``{"grade", "by", "at"}``, or None)."""
        with self._lock, self._tx(write=False) as c:
            settled = json.loads((c.execute("SELECT value FROM meta WHERE key = 'settled'").fetchone()
                                  or ["{}"])[0])
            rows = c.execute(
                f"SELECT j.qid, j.doc_id, q.text, j.annotator, j.grade, j.note FROM judgments j "
                f"JOIN queries q ON q.qid = j.qid JOIN pool p ON p.qid = j.qid AND p.doc_id = j.doc_id "
                f"WHERE {_USABLE} AND (SELECT count(DISTINCT k.grade) FROM judgments k WHERE k.qid = j.qid "
                f"AND k.doc_id = j.doc_id) > 1 ORDER BY q.position, p.position, j.annotator").fetchall()
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for qid, doc, text, who, grade, note in rows:
            item = out.setdefault((qid, doc), {"qid": qid, "doc": doc, "query": text, "grades": [],
                                               "settled": settled.get(f"{qid}\t{doc}")})
            item["grades"].append((who, grade, note))
        return list(out.values())

    def settle(self, a: str, qid: str, doc: str, grade: int | None) -> None:
        """Record ``a``'s grade for a disagreement (None withdraws the settlement); refused
        when the annotators of (qid, doc) agree."""
        if grade is not None and grade not in (0, 1, 2, 3):
            raise Refused(f"grade must be 0, 1, 2 or 3, got {grade!r}")
        with self._tx() as c:
            n = c.execute("SELECT count(DISTINCT grade) FROM judgments WHERE qid = ? AND doc_id = ?",
                          (qid, doc)).fetchone()[0]
            if n < 2:
                raise Refused(f"the annotators of query {qid!r}, document {doc!r} do not disagree")
            row = c.execute("SELECT value FROM meta WHERE key = 'settled'").fetchone()
            settled = json.loads(row[0]) if row else {}
            if grade is None:
                settled.pop(f"{qid}\t{doc}", None)
            else:
                settled[f"{qid}\t{doc}"] = {"grade": grade, "by": a, "at": now()}
            c.execute("INSERT INTO meta VALUES ('settled', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                      (json.dumps(settled, sort_keys=True, ensure_ascii=False),))

    # -- review -------------------------------------------------------------------------
    def has_review(self) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM queries WHERE source = 'synthetic' LIMIT 1").fetchone() is not None

    def review_view(self, a: str, *, message: str = "") -> ReviewView:
        """The synthetic query under ``a``'s review cursor (the first pending one when unset)."""
        with self._tx() as c:
            cur = self._cursor(c, a, "review")
            qid = cur[0] if cur else None
            if qid is None or c.execute("SELECT 1 FROM queries WHERE qid = ? AND source = 'synthetic'",
                                        (qid,)).fetchone() is None:
                row = c.execute("SELECT qid FROM queries WHERE source = 'synthetic' ORDER BY status <> 'pending', "
                                "position LIMIT 1").fetchone()
                qid = row[0] if row else None
                self._set_cursor(c, a, "review", qid, None)
            counts = dict(c.execute("SELECT status, count(*) FROM queries WHERE source = 'synthetic' GROUP BY status"))
            total = sum(counts.values())
            if qid is None:
                return ReviewView(a, None, total=total, counts=counts, message=message)
            text, original, status, by, pos, meta = c.execute(
                "SELECT text, original_text, status, reviewed_by, position, metadata FROM queries WHERE qid = ?",
                (qid,)).fetchone()
            index = c.execute("SELECT count(*) FROM queries WHERE source = 'synthetic' AND position <= ?",
                              (pos,)).fetchone()[0]
            judged = c.execute("SELECT count(*) FROM judgments WHERE qid = ?", (qid,)).fetchone()[0]
            written_from = tuple(json.loads(meta or "{}").get("written_from") or ())
            return ReviewView(a, qid, text=text, original_text=original, status=status, reviewed_by=by, index=index,
                              total=total, written_from=written_from, judged=judged, counts=counts, message=message)

    def review(self, a: str, qid: str, decision: str, text: str | None = None) -> str | None:
        """Record a review decision (``accept``, ``reject`` or ``edit`` with ``text``) and
        move ``a`` to the next pending query. Returns the query text to pool when the query
        is now to be judged and has no pool, else None."""
        with self._tx() as c:
            row = c.execute("SELECT text, original_text, status, reviewed_by, reviewed_at, pooled_at, position FROM "
                            "queries WHERE qid = ? AND source = 'synthetic'", (qid,)).fetchone()
            if row is None:
                raise Refused(f"query {qid!r} is not a synthetic query under review")
            cur_text, original, status, by, at, _pooled_at, pos = row
            if decision == "reject":
                new_text, new_status = cur_text, "rejected"
            elif decision in ("accept", "edit"):
                new_text = cur_text if decision == "accept" else " ".join((text or "").split())
                if not new_text:
                    raise Refused("the edited query is empty")
                new_status = "accepted" if new_text == original else "edited"
            else:
                raise Refused(f"unknown review decision {decision!r}")
            self._apply_review(c, qid, new_text, new_status, cur_text, a, now())
            c.execute("INSERT INTO events (at, annotator, kind, qid, note, prev_note) VALUES (?, ?, 'review', ?, ?, ?)",
                      (now(), a, qid, json.dumps({"status": new_status, "text": new_text}, ensure_ascii=False),
                       json.dumps({"status": status, "text": cur_text, "reviewed_by": by, "reviewed_at": at},
                                  ensure_ascii=False)))
            nxt = c.execute("SELECT qid FROM queries WHERE source = 'synthetic' AND status = 'pending' "
                            "ORDER BY (position <= ?), position LIMIT 1", (pos,)).fetchone()
            self._set_cursor(c, a, "review", nxt[0] if nxt else qid, None)
            unpooled = c.execute("SELECT pooled_at IS NULL FROM queries WHERE qid = ?", (qid,)).fetchone()[0] == 1
            return new_text if new_status in USABLE_STATUSES and unpooled else None

    def _apply_review(self, c: sqlite3.Connection, qid: str, new_text: str, new_status: str, cur_text: str,
                      who: str | None, at: str | None) -> None:
        n = c.execute("SELECT count(*) FROM judgments WHERE qid = ?", (qid,)).fetchone()[0]
        if n and (new_text != cur_text or new_status not in USABLE_STATUSES):
            raise Refused(f"query {qid} already has {n} judgment(s); its text and acceptance can no longer change")
        if new_text != cur_text:
            c.execute("DELETE FROM pool WHERE qid = ?", (qid,))
            c.execute("UPDATE queries SET pooled_at = NULL, pool_size = 0 WHERE qid = ?", (qid,))
        c.execute("UPDATE queries SET text = ?, status = ?, reviewed_by = ?, reviewed_at = ? WHERE qid = ?",
                  (new_text, new_status, who, at, qid))

    def review_undo(self, a: str) -> str:
        """Revert ``a``'s latest review decision (refused once the query has judgments)."""
        with self._tx() as c:
            ev = c.execute("SELECT id, qid, prev_note FROM events "
                           "WHERE annotator = ? AND kind = 'review' AND undone = 0 "
                           "ORDER BY id DESC LIMIT 1", (a,)).fetchone()
            if ev is None:
                return "nothing to undo"
            eid, qid, prev_json = ev
            prev = json.loads(prev_json)
            cur_text = c.execute("SELECT text FROM queries WHERE qid = ?", (qid,)).fetchone()[0]
            self._apply_review(c, qid, prev["text"], prev["status"], cur_text, prev.get("reviewed_by"),
                               prev.get("reviewed_at"))
            if prev["status"] not in USABLE_STATUSES:
                c.execute("DELETE FROM pool WHERE qid = ?", (qid,))
                c.execute("UPDATE queries SET pooled_at = NULL, pool_size = 0 WHERE qid = ?", (qid,))
            c.execute("UPDATE events SET undone = 1 WHERE id = ?", (eid,))
            c.execute("INSERT INTO events (at, annotator, kind, qid, note) VALUES (?, ?, 'undo', ?, ?)",
                      (now(), a, qid, str(eid)))
            self._set_cursor(c, a, "review", qid, None)
            return f"undo: query {qid} is {prev['status']} again"

    def review_move(self, a: str, to: str, *, qid: str | None = None) -> None:
        """``next``/``prev`` synthetic query, or ``goto`` one."""
        with self._tx() as c:
            if to == "goto":
                if c.execute("SELECT 1 FROM queries WHERE qid = ? AND source = 'synthetic'", (qid,)).fetchone() is None:
                    raise Refused(f"unknown query {qid!r}")
                self._set_cursor(c, a, "review", qid, None)
                return
            cur = self._cursor(c, a, "review")
            pos = self._qpos(c, cur[0] if cur else None)
            if to not in ("next", "prev"):
                raise Refused(f"unknown move {to!r}")
            op, order = (">", "ASC") if to == "next" else ("<", "DESC")
            row = c.execute(f"SELECT qid FROM queries WHERE source = 'synthetic' AND position {op} ? "
                            f"ORDER BY position {order} LIMIT 1", (pos,)).fetchone()
            if row is not None:
                self._set_cursor(c, a, "review", row[0], None)


def _insert_pool(c: sqlite3.Connection, qid: str, docs: Sequence[PooledDoc], stamp: str) -> None:
    c.executemany("INSERT INTO pool VALUES (?, ?, ?, ?)",
                  [(qid, d.doc_id, i, json.dumps(dict(d.ranks), sort_keys=True)) for i, d in enumerate(docs)])
    c.execute("UPDATE queries SET pooled_at = ?, pool_size = ? WHERE qid = ?", (stamp, len(docs), qid))
