"""Error types. Every user-facing failure is one line naming file, line and field.

The CLI maps :class:`BakeoffError` (and subclasses) to exit code 2 and prints
``str(error)`` on one line; nothing else is printed and no output is written.
"""

from __future__ import annotations

import errno
import os
from os import PathLike

__all__ = ["BakeoffError", "ConfigError", "InputError", "MissingDependencyError", "describe_os_error"]


class BakeoffError(Exception):
    """Base class of the errors bakeoff reports to users (exit code 2).

    ``str(err)`` reads ``path:line: field 'x': message`` (each part only when given) and is
    always one line.
    """

    def __init__(
        self,
        message: str = "",
        *,
        path: str | PathLike[str] | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        self.message = message
        where = ""
        if self.path is not None:
            where = self.path + (f":{line}" if line is not None else "") + ": "
        what = f"field '{field}': " if field else ""
        super().__init__(" ".join((where + what + str(message)).split()))


class InputError(BakeoffError):
    """Bad input data: names the file, the 1-based line (when known) and the field."""


class ConfigError(BakeoffError):
    """Bad configuration (TOML file, ``--arm`` specification, command-line value)."""


class MissingDependencyError(BakeoffError):
    """An optional extra is not installed (or, ``extra=None``, a dependency of bakeoff itself is missing); the
    message says which ``pip install`` fixes it."""

    def __init__(self, package: str, extra: str | None, purpose: str) -> None:
        fix = f"pip install 'bakeoff[{extra}]'" if extra else f"pip install '{package}' (bakeoff itself needs it)"
        super().__init__(f"{purpose} needs the package '{package}': {fix}")


#: What to do about the operating-system errors a user can meet, by errno.
_OS_ADVICE = {
    errno.ENOSPC: "free some space, or write elsewhere, and run again",
    errno.EDQUOT: "free some space, or write elsewhere, and run again",
    errno.EACCES: "check the permissions",
    errno.EPERM: "check the permissions",
    errno.EROFS: "write somewhere else",
    errno.ELOOP: "a symbolic link points (through others) back to itself",
    errno.EISDIR: "a folder is where a file is expected",
    errno.ENOTDIR: "a file is where a folder is expected",
}


def describe_os_error(exc: OSError) -> str:
    """One line for an ``OSError``: ``path: what happened (advice)``, e.g.
    ``/mnt/out/runs/bm25.trec: No space left on device (free some space ...)``."""
    what = exc.strerror or (os.strerror(exc.errno) if exc.errno else type(exc).__name__)
    names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
    where = " -> ".join(names)
    advice = _OS_ADVICE.get(exc.errno or -1)
    text = (f"{where}: " if where else "") + what + (f" ({advice})" if advice else "")
    return " ".join(text.split())
