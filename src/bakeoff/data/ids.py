"""Ids: what a document or query id may be, and the id each file of a folder gets.

**The id rule** (every reader and writer checks ids with :func:`id_problem`): an id is a non-empty string
that a TREC run or qrels line can carry, since those files separate their columns by whitespace. It holds
no Unicode whitespace (line and paragraph separators included), no control character (C0, DEL, C1) and no
lone surrogate; anything else is allowed (``/``, ``#``, accents, any script), so whatever bakeoff reads it
can also write and read back.

**File ids** (:func:`folder_files`, used by ``bakeoff ingest files`` and by ``--corpus FOLDER``, so both give
the same ids): a file's id is its path relative to the folder, ``/``-separated, *with* its suffix (``a.pdf``
and ``a.docx`` stay apart), in Unicode NFC (a name stored decomposed, as macOS does, gives the id typed on any
keyboard), each run of characters the id rule refuses replaced by one ``_`` (``My Docs/Annual Report.pdf``
becomes ``My_Docs/Annual_Report.pdf``). Two files that would get the same id are told apart
deterministically: a path that already is a valid id in NFC keeps it; the others, in code-point order of their
paths, take the first free id among ``stem``, ``stem~2``, ``stem~3`` ... (suffix kept). Every non-folder
entry below the folder takes part, whatever its type and whether it can be read, so a file's id does not
depend on which reader lists it. The original relative path is kept in the document's metadata (``path``)
and shown by the report beside the id.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import InputError

__all__ = ["bad_id_char", "check_id", "file_ids", "folder_files", "id_problem", "source_path"]

#: Characters an id may not contain: control characters (C0, DEL, C1), Unicode whitespace (line and
#: paragraph separators included) and lone surrogates.
_BAD_ID = re.compile("[\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
                     "\\ud800-\\udfff]")
_BAD_RUN = re.compile(_BAD_ID.pattern + "+")


def bad_id_char(text: str) -> int | None:
    """Position of the first character of ``text`` that a TREC file cannot carry in an id (whitespace,
    control characters, lone surrogates), or ``None``."""
    if text.isascii() and text.isprintable() and " " not in text:
        return None
    m = _BAD_ID.search(text)
    return None if m is None else m.start()


def id_problem(text: str) -> str | None:
    """Why ``text`` cannot be a document or query id (``None`` when it can): ``"is empty"``, or
    ``"contains whitespace (U+0020), which the TREC format cannot carry"`` (the code point named)."""
    if not text:
        return "is empty"
    i = bad_id_char(text)
    if i is None:
        return None
    c = text[i]
    kind = "whitespace" if c.isspace() else "a control character"
    return f"contains {kind} (U+{ord(c):04X}), which the TREC format cannot carry"


def check_id(value: str, *, path: str | os.PathLike[str], line: int | None, field: str) -> str:
    """``value`` if it can be a document or query id (:func:`id_problem`), else the one
    :class:`~bakeoff.errors.InputError` every reader gives: the file, line and field, why, and the id."""
    problem = id_problem(value)
    if problem is not None:
        raise InputError(f"{problem}: {value[:40]!r}; rename the id", path=path, line=line, field=field)
    return value


def _base_id(rel: str) -> str:
    # a name that is not valid UTF-8 reaches Python as lone surrogates (surrogateescape); they become "_"
    return _BAD_RUN.sub("_", unicodedata.normalize("NFC", _BAD_RUN.sub("_", rel)))


def _numbered(base: str, n: int) -> str:
    p = PurePosixPath(base)
    return str(p.with_name(f"{p.stem}~{n}{p.suffix}")) if p.stem else f"{base}~{n}"


def file_ids(paths: Iterable[str]) -> dict[str, str]:
    """The id of each ``/``-separated relative path in ``paths`` (see the module docstring), as a dict
    path -> id; the ids are distinct and each passes :func:`id_problem`."""
    rels = sorted(set(paths))
    base = {r: _base_id(r) for r in rels}
    out = {r: r for r in rels if base[r] == r}
    taken = set(out.values())
    reserved = taken | set(base.values())  # a later file's plain id is never given away as a number
    for r in rels:
        if r in out:
            continue
        b = base[r]
        if b not in taken:
            out[r] = b
        else:
            n = 2
            while _numbered(b, n) in taken or _numbered(b, n) in reserved:
                n += 1
            out[r] = _numbered(b, n)
        taken.add(out[r])
    return out


def folder_files(root: str | os.PathLike[str]) -> dict[Path, str]:
    """Every non-folder entry below ``root`` (recursive; files, symbolic links, whatever their type) with its
    id, in code-point order of the relative paths. Raises :class:`InputError` when ``root`` is not a folder
    or cannot be listed."""
    root = Path(root)
    if not root.is_dir():
        raise InputError("not a folder", path=root)
    try:
        entries = [p for p in root.rglob("*") if not p.is_dir()]
    except OSError as exc:
        raise InputError(f"cannot list the folder ({exc.strerror or type(exc).__name__}: {exc.filename})",
                         path=root) from None
    rel = {p.relative_to(root).as_posix(): p for p in entries}
    ids = file_ids(rel)
    return {rel[r]: ids[r] for r in sorted(rel)}


def source_path(metadata: Mapping[str, Any], doc_id: str) -> str | None:
    """The original relative path of a document read from a folder (its metadata ``path``) when it differs
    from the id, else ``None``: what a report shows beside an id the file name was changed into."""
    path = metadata.get("path")
    return path if isinstance(path, str) and path and path != doc_id else None
