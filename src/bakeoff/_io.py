"""Writing files: atomically (a temporary file in the same folder, fsync, rename), and naming the file
when a write fails.

Every ``OSError`` raised while writing names the file: a failed ``write()``, ``flush()`` or
``fsync()`` (a full disk, a quota) carries no file name of its own, so :func:`naming` gives it the
target's, and the command line's one-line error says where (``<path>: No space left on device``);
:func:`staged_as` names a file written into a staging folder by its final name, and
:func:`written_by_library` covers files a library writes in its own words.
SQLite databases opened with :func:`sqlite_connect` do the same: a storage failure of SQLite (disk
full, I/O error, read-only, cannot open) becomes an ``OSError`` naming the database file.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = ["NamedConnection", "atomic_open", "atomic_write_bytes", "atomic_write_json", "atomic_write_text", "naming",
           "replace_folder", "sqlite_connect", "sqlite_os_error", "staged_as", "written_by_library"]

#: A file system with less free space than this (bytes) is full for :func:`written_by_library`.
FULL_BELOW = 1 << 20


@contextmanager
def naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """Give an ``OSError`` raised inside that names no file the name ``path`` (then re-raise it)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(path)
        raise


#: How libraries written in C++ word a failed write (OpenVINO: ``basic_ios::clear: iostream error``).
IO_WORDS = ("iostream error",)


@contextmanager
def written_by_library(path: str | os.PathLike[str]) -> Iterator[None]:
    """Around a library writing ``path`` itself (OpenVINO's IR, an ONNX export): an ``OSError`` names
    ``path`` (:func:`naming`); any other error raised while the file system holding ``path`` has less
    than :data:`FULL_BELOW` bytes free becomes ``OSError(ENOSPC, ..., path)``, and one worded as a
    failed write (:data:`IO_WORDS`) ``OSError(EIO, ..., path)`` saying how much space is free (a
    library may delete its partial file before it raises). Other errors pass."""
    try:
        with naming(path):
            yield
    except Exception as exc:
        if isinstance(exc, OSError):
            raise
        free = _free_bytes(Path(path))
        if free < FULL_BELOW:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path)) from exc
        if any(w in str(exc) for w in IO_WORDS):
            raise OSError(errno.EIO, f"could not be written ({exc}; {free / 2**20:.1f} MiB free there)",
                          str(path)) from exc
        raise


def _free_bytes(path: Path) -> int:
    """Free bytes of the file system holding ``path`` (its nearest existing ancestor)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


@contextmanager
def staged_as(stage: str | os.PathLike[str], out: str | os.PathLike[str]) -> Iterator[None]:
    """For folders written into a hidden staging folder ``stage`` and then moved to ``out``: an ``OSError``
    naming a file under ``stage`` names it as it will be called under ``out`` (then is re-raised)."""
    try:
        yield
    except OSError as exc:
        for attr in ("filename", "filename2"):
            name = getattr(exc, attr)
            if isinstance(name, str) and Path(name).is_relative_to(stage):
                setattr(exc, attr, str(Path(out) / Path(name).relative_to(stage)))
        raise


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path``; on success it is renamed over ``path``.

    On any exception the temporary file is removed and ``path`` is left untouched,
    so a reader never sees a half-written file; an ``OSError`` names ``path`` (:func:`naming`).
    """
    target = Path(path)
    with naming(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file the mode open() would
        if "b" not in mode:
            kwargs.setdefault("encoding", "utf-8")
        with naming(target), os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _umask() -> int:
    """The process umask: from /proc on Linux, else by setting and restoring it."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_open(path, "wb") as fh:
        fh.write(data)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_open(path, "w") as fh:
        fh.write(text)


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as indented, key-sorted JSON to ``path`` atomically."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


#: SQLite's storage failures (``sqlite_errorname`` prefixes) and the errno each becomes.
_SQLITE_ERRNO = {"SQLITE_FULL": errno.ENOSPC, "SQLITE_IOERR": errno.EIO, "SQLITE_READONLY": errno.EACCES,
                 "SQLITE_CANTOPEN": errno.ENOENT}


def replace_folder(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Move the complete folder ``src`` to ``dst``, replacing a folder already there: the old one is
    renamed aside first (``dst`` never holds a half-replaced tree), then removed."""
    import shutil
    import tempfile

    src, dst = Path(src), Path(dst)
    if dst.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{dst.name}.old.", dir=dst.parent))
        os.replace(dst, old / "x")
        os.replace(src, dst)
        shutil.rmtree(old)
    else:
        os.replace(src, dst)


def sqlite_os_error(exc: BaseException, path: str | os.PathLike[str] | None = None) -> OSError | None:
    """The ``OSError`` a SQLite storage failure amounts to (naming ``path`` when given); ``None`` for
    any other exception (a constraint, a syntax error, a locked database)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return None
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    code = next((c for prefix, c in _SQLITE_ERRNO.items() if name.startswith(prefix)), None)
    if code is None:
        return None
    what = os.strerror(code) if code == errno.ENOSPC else str(exc)
    return OSError(code, what, None if path is None else str(path))


@contextmanager
def _sqlite_naming(path: str | os.PathLike[str]) -> Iterator[None]:
    try:
        yield
    except sqlite3.OperationalError as exc:
        err = sqlite_os_error(exc, path)
        if err is None:
            raise
        raise err from exc


class NamedConnection(sqlite3.Connection):
    """A SQLite connection whose storage failures are ``OSError`` naming its file (``execute``,
    ``executemany``, ``executescript`` and ``commit``; see :func:`sqlite_connect`)."""

    path: str = ""

    def execute(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        with _sqlite_naming(self.path):
            return super().execute(*args, **kwargs)

    def executemany(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        with _sqlite_naming(self.path):
            return super().executemany(*args, **kwargs)

    def executescript(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        with _sqlite_naming(self.path):
            return super().executescript(*args, **kwargs)

    def commit(self) -> None:
        with _sqlite_naming(self.path):
            super().commit()


def sqlite_connect(path: str | os.PathLike[str], **kwargs: Any) -> NamedConnection:
    """``sqlite3.connect(path, **kwargs)`` as a :class:`NamedConnection`: a full disk while writing the
    database is ``OSError(ENOSPC, ..., path)``, so its one-line error names the file."""
    with _sqlite_naming(path):
        conn = sqlite3.connect(path, factory=NamedConnection, **kwargs)
    conn.path = str(path)
    return conn
