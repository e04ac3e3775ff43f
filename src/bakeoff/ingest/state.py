"""Resume state of a web-API ingest: a SQLite file written as the ingest goes.

The state is what makes a killed ingest continue where it stopped without
fetching an item twice, and a re-run revalidate instead of download:

* ``responses(url, body, etag, last_modified, content_type, fetched_at, gen)``:
  every successful response body (listing pages and item details), raw bytes,
  with its validators; ``gen`` is the last pass that fetched or revalidated it.
* ``pages(gen, seq, url, n_rows)``: the listing pages read in a pass, in order.
* ``items(gen, ord, key, detail_url, listing, status, error)``: the unique items
  of a pass in order of first appearance; ``status`` is ``pending``, ``done``,
  ``failed`` or ``disallowed`` (robots.txt).
* ``meta(key, value)``: the crawl parameters, the pass number ``gen``, the
  pass's next listing URL and position, ``listing_done``, counters.

Every step (a page with its new items, one detail) is one transaction, so the
file is consistent after a ``kill -9`` at any instant; it uses SQLite's WAL
journal with ``synchronous=NORMAL``: durable across process crashes, while a
power cut may lose the last few commits (those items are fetched again).
Only the thread that opened the state writes to it.

A **pass** (``gen``) walks the listing and fetches the details of its items. A
finished pass is reused as is by a re-run (no request); ``refresh`` starts the
next pass, which revalidates every stored response with ``If-None-Match`` /
``If-Modified-Since`` (a ``304`` keeps the stored body).

The crawl parameters (URL, pagination, item and id expressions, detail source)
are stored; a state made with other parameters is refused (``restart``
discards it). The field mapping and cleaning are *not* crawl parameters: a
re-run with other ``--text``/``--field`` options re-assembles the corpus from
the stored responses without a request.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from .._io import sqlite_connect
from ..errors import ConfigError

__all__ = ["IngestState", "Stored"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS responses (
    url TEXT PRIMARY KEY, body BLOB NOT NULL, etag TEXT, last_modified TEXT, content_type TEXT,
    fetched_at REAL NOT NULL, gen INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS pages (
    gen INTEGER NOT NULL, seq INTEGER NOT NULL, url TEXT NOT NULL, n_rows INTEGER NOT NULL,
    PRIMARY KEY (gen, seq));
CREATE TABLE IF NOT EXISTS items (
    gen INTEGER NOT NULL, ord INTEGER NOT NULL, key TEXT NOT NULL, detail_url TEXT, listing TEXT NOT NULL,
    status TEXT NOT NULL, error TEXT, PRIMARY KEY (gen, key));
CREATE INDEX IF NOT EXISTS items_order ON items (gen, ord);
"""
_VERSION = "1"

#: ``(url, raw body, etag, last_modified, content_type)`` of a response to store.
Response = tuple[str, bytes, "str | None", "str | None", "str | None"]


@dataclass(frozen=True)
class Stored:
    """A stored response: raw ``body`` with its validators and the pass that last confirmed it."""

    url: str
    body: bytes
    etag: str | None
    last_modified: str | None
    content_type: str | None
    fetched_at: float
    gen: int


class IngestState:
    """The SQLite resume state at ``path`` for the crawl described by ``crawl`` (see module docstring)."""

    def __init__(self, path: str | Path, *, crawl: Mapping[str, Any], restart: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if restart:
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
        self.db = sqlite_connect(self.path, isolation_level=None)  # a full disk names the state file
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        crawl_json = json.dumps(dict(crawl), sort_keys=True, ensure_ascii=False)
        have = self.get("crawl")
        if have is None:
            with self.tx():
                self.put("version", _VERSION)
                self.put("crawl", crawl_json)
                self.put("gen", "1")
                self.put("created", str(time.time()))
        elif have != crawl_json:
            old, new = json.loads(have), json.loads(crawl_json)
            diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            self.db.close()
            raise ConfigError(
                f"{self.path}: this resume state belongs to an ingest with other parameters "
                f"(differs in: {', '.join(diff)}); pass --restart to discard it, or --state for another file")

    # -- plumbing -------------------------------------------------------------------
    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    class _Tx:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def __enter__(self) -> sqlite3.Connection:
            self.db.execute("BEGIN IMMEDIATE")
            return self.db

        def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
            self.db.execute("ROLLBACK" if exc_type else "COMMIT")

    def tx(self) -> IngestState._Tx:
        """A transaction: everything inside commits together or not at all."""
        return IngestState._Tx(self.db)

    def get(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def put(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, str(value)))

    def add(self, key: str, n: int = 1) -> None:
        """Increase counter ``key`` (of the current pass) by ``n``."""
        name = f"count:{self.gen}:{key}"
        self.put(name, int(self.get(name, "0") or 0) + n)

    def counters(self) -> dict[str, int]:
        prefix = f"count:{self.gen}:"
        rows = self.db.execute("SELECT key, value FROM meta WHERE key LIKE ?", (prefix + "%",)).fetchall()
        return {k[len(prefix):]: int(v) for k, v in rows}

    # -- passes -------------------------------------------------------------------
    @property
    def gen(self) -> int:
        return int(self.get("gen", "1") or 1)

    def pass_finished(self) -> bool:
        return self.get(f"finished:{self.gen}") is not None

    def finish_pass(self) -> None:
        with self.tx():
            self.put(f"finished:{self.gen}", time.time())

    def start_next_pass(self) -> int:
        """Begin pass ``gen + 1`` (a refresh); stored responses stay for revalidation."""
        with self.tx():
            self.put("gen", self.gen + 1)
        return self.gen

    # -- listing ------------------------------------------------------------------
    def listing_cursor(self) -> tuple[str | None, int | None, bool]:
        """``(next page URL, its position, listing done)`` of the current pass; the URL is
        ``None`` before the first page."""
        g = self.gen
        url = self.get(f"next_url:{g}")
        pos = self.get(f"next_pos:{g}")
        return url, (int(pos) if pos is not None else None), self.get(f"listing_done:{g}") is not None

    def page_urls(self) -> set[str]:
        """URLs of the listing pages read in the current pass."""
        rows = self.db.execute("SELECT url FROM pages WHERE gen = ?", (self.gen,)).fetchall()
        return {u for (u,) in rows}

    def reopen_pass(self) -> None:
        """Mark the current pass unfinished (to fetch items set back to pending)."""
        with self.tx():
            self.db.execute("DELETE FROM meta WHERE key = ?", (f"finished:{self.gen}",))

    def n_pages(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM pages WHERE gen = ?", (self.gen,)).fetchone()[0])

    def page_keys(self, seq: int) -> list[str] | None:
        raw = self.get(f"page_keys:{self.gen}:{seq}")
        return None if raw is None else list(json.loads(raw))

    def record_page(self, *, url: str, items: list[tuple[str, str | None, Any]], n_rows: int,
                    next_url: str | None, next_pos: int | None, response: Response,
                    item_status: str = "pending", note: str | None = None, not_modified: bool = False) -> int:
        """Store one listing page of the current pass in one transaction: its ``response``,
        its new unique items ``(key, detail_url, listing record)`` with ``item_status``
        (already-known keys are duplicates), and the cursor to the next page (``None``:
        the listing is done). Returns the number of new items."""
        g = self.gen
        with self.tx() as db:
            self._store(*response)
            seq = int(db.execute("SELECT COUNT(*) FROM pages WHERE gen = ?", (g,)).fetchone()[0])
            db.execute("INSERT INTO pages (gen, seq, url, n_rows) VALUES (?, ?, ?, ?)", (g, seq, url, n_rows))
            nxt = int(db.execute("SELECT COALESCE(MAX(ord) + 1, 0) FROM items WHERE gen = ?", (g,)).fetchone()[0])
            new = 0
            for key, detail_url, record in items:
                cur = db.execute(
                    "INSERT OR IGNORE INTO items (gen, ord, key, detail_url, listing, status) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (g, nxt, key, detail_url, json.dumps(record, ensure_ascii=False, sort_keys=True), item_status))
                if cur.rowcount:
                    nxt += 1
                    new += 1
            self.put(f"page_keys:{g}:{seq}", json.dumps([k for k, _, _ in items]))
            self.add("listing_rows", n_rows)
            self.add("pages", 1)
            if not_modified:
                self.add("pages_not_modified", 1)
            if note:
                self.put(f"note:{g}:{seq}", note)
            if next_url is None:
                self.put(f"listing_done:{g}", time.time())
            else:
                self.put(f"next_url:{g}", next_url)
                if next_pos is not None:
                    self.put(f"next_pos:{g}", next_pos)
        return new

    def end_listing(self, note: str) -> None:
        """Mark the current pass's listing done early (e.g. ``--max-pages``), with a note."""
        with self.tx():
            self.put(f"listing_done:{self.gen}", time.time())
            self.put(f"note:{self.gen}:end", note)

    def notes(self) -> list[str]:
        rows = self.db.execute("SELECT value FROM meta WHERE key LIKE ? ORDER BY key", (f"note:{self.gen}:%",))
        return [r[0] for r in rows.fetchall()]

    # -- items ----------------------------------------------------------------------
    def pending(self) -> list[tuple[str, str | None, Any]]:
        """``(key, detail_url, listing record)`` of the current pass's items still to fetch, in order."""
        rows = self.db.execute("SELECT key, detail_url, listing FROM items WHERE gen = ? AND status = 'pending' "
                               "ORDER BY ord", (self.gen,)).fetchall()
        return [(k, u, json.loads(rec)) for k, u, rec in rows]

    def set_status(self, key: str, status: str, *, error: str | None = None) -> None:
        with self.tx():
            self._set_status(key, status, error=error)

    def _set_status(self, key: str, status: str, *, error: str | None = None) -> None:
        self.db.execute("UPDATE items SET status = ?, error = ? WHERE gen = ? AND key = ?",
                        (status, error, self.gen, key))

    def retry_failed(self) -> int:
        """Set the current pass's failed items back to pending; returns how many."""
        with self.tx() as db:
            cur = db.execute("UPDATE items SET status = 'pending', error = NULL WHERE gen = ? AND status = 'failed'",
                             (self.gen,))
            return int(cur.rowcount)

    def items(self) -> Iterator[tuple[str, str | None, Any, str, str | None]]:
        """``(key, detail_url, listing record, status, error)`` of the current pass, in order."""
        rows = self.db.execute("SELECT key, detail_url, listing, status, error FROM items WHERE gen = ? ORDER BY ord",
                               (self.gen,))
        for key, url, rec, status, error in rows:
            yield key, url, json.loads(rec), status, error

    def status_counts(self) -> dict[str, int]:
        rows = self.db.execute("SELECT status, COUNT(*) FROM items WHERE gen = ? GROUP BY status", (self.gen,))
        return {s: int(n) for s, n in rows.fetchall()}

    # -- responses --------------------------------------------------------------------
    def response(self, url: str) -> Stored | None:
        row = self.db.execute("SELECT url, body, etag, last_modified, content_type, fetched_at, gen FROM responses "
                              "WHERE url = ?", (url,)).fetchone()
        if row is None:
            return None
        return Stored(row[0], bytes(row[1]), row[2], row[3], row[4], float(row[5]), int(row[6]))

    def store_response(self, url: str, body: bytes, *, etag: str | None, last_modified: str | None,
                       content_type: str | None, item_key: str | None = None, counter: str | None = None) -> None:
        """Store a fetched (or revalidated: same body) response for the current pass; with
        ``item_key``, mark that item done in the same transaction."""
        with self.tx():
            self._store(url, body, etag, last_modified, content_type)
            if item_key is not None:
                self._set_status(item_key, "done")
            if counter:
                self.add(counter)

    def _store(self, url: str, body: bytes, etag: str | None, last_modified: str | None,
               content_type: str | None) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO responses (url, body, etag, last_modified, content_type, fetched_at, gen) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (url, sqlite3.Binary(body), etag, last_modified, content_type, time.time(), self.gen))

    def fetch_span(self) -> tuple[float | None, float | None]:
        """Earliest and latest ``fetched_at`` of the responses confirmed in the current pass."""
        row = self.db.execute("SELECT MIN(fetched_at), MAX(fetched_at) FROM responses WHERE gen = ?",
                              (self.gen,)).fetchone()
        return row[0], row[1]
