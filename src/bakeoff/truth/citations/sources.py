"""Sources: long dated documents (rulings, papers, tickets) whose citations become queries.

Two inputs are accepted:

* **JSONL**, one source per line: ``id`` (required), ``text`` (required),
  ``date`` (``YYYY-MM-DD``, optional), ``url`` (optional), ``title`` (optional).
* **A folder of text files** (``*.txt``, ``*.md``; recursive, sorted): the id is
  the relative path without suffix. The date and URL come from a sidecar
  ``<name>.json`` (``{"date": "YYYY-MM-DD", "url": "..."}``) next to the file;
  without a sidecar, a first line ``date: YYYY-MM-DD`` (or ``fecha: ...``, or
  the bare date alone) gives the date and is removed from the text (with the
  blank lines after it).

A missing or malformed date is *not* an error: the source is kept with
``date=None`` and a ``date_problem`` message; the miner counts and skips it
(as-of search needs a date). Missing ids or texts are errors naming file,
line and field.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ...data.loaders import json_lines, text_lines
from ...data.versions import parse_date
from ...errors import InputError

__all__ = ["Source", "read_sources"]

_HEADER = re.compile(r"^\s*(?:(?:date|fecha)\s*:\s*)?(\d{4}-\d{2}-\d{2})\s*$", re.IGNORECASE)
_HEADER_ANY = re.compile(r"^\s*(?:date|fecha)\s*:\s*(.*?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Source:
    """One source document; ``where`` is ``file:line`` (JSONL) or the file path."""

    id: str
    text: str
    date: _dt.date | None
    url: str = ""
    title: str = ""
    where: str = ""
    date_problem: str | None = None


def _date(raw: object, where: str) -> tuple[_dt.date | None, str | None]:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None, f"{where}: field 'date': missing; as-of search needs the source's date"
    try:
        return parse_date(raw), None
    except ValueError:
        return None, f"{where}: field 'date': expected YYYY-MM-DD, got {str(raw)!r}"


def read_sources(path: str | Path) -> list[Source]:
    """Read sources from a JSONL file or a folder of text files (see the module docstring)."""
    path = Path(path)
    if path.is_dir():
        return _read_folder(path)
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    out: list[Source] = []
    seen: dict[str, int] = {}
    for no, obj in json_lines(path):
        for key in ("id", "text"):
            if key not in obj or obj[key] is None or (isinstance(obj[key], str) and not obj[key].strip()):
                raise InputError("missing", path=path, line=no, field=key)
            if isinstance(obj[key], (dict, list)):
                raise InputError(f"expected a string, got {type(obj[key]).__name__}", path=path, line=no, field=key)
        sid = str(obj["id"])
        if sid in seen:
            raise InputError(f"duplicate source id {sid!r} (first on line {seen[sid]})", path=path, line=no, field="id")
        seen[sid] = no
        where = f"{path}:{no}"
        date, problem = _date(obj.get("date"), where)
        out.append(Source(sid, str(obj["text"]), date, str(obj.get("url") or ""), str(obj.get("title") or ""),
                          where, problem))
    if not out:
        raise InputError("no sources", path=path)
    return out


def _read_folder(root: Path) -> list[Source]:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in (".txt", ".md"))
    if not files:
        raise InputError("no .txt or .md files", path=root)
    out: list[Source] = []
    for f in files:
        text = "".join(t for _, t in text_lines(f))
        sid = f.relative_to(root).with_suffix("").as_posix()
        where = str(f)
        sidecar = f.with_suffix(".json")
        url = ""
        if sidecar.exists():
            try:
                meta = json.loads(sidecar.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise InputError(f"invalid JSON sidecar ({exc})", path=sidecar) from None
            if not isinstance(meta, dict):
                raise InputError("expected a JSON object", path=sidecar)
            date, problem = _date(meta.get("date"), str(sidecar))
            url = str(meta.get("url") or "")
        else:
            first, _, rest = text.partition("\n")
            m = _HEADER.match(first)
            if m:
                date, problem = _date(m.group(1), f"{f}:1")
                text = rest.lstrip("\n")
            elif (m2 := _HEADER_ANY.match(first)) is not None:
                date, problem = _date(m2.group(1), f"{f}:1")
                text = rest.lstrip("\n")
            else:
                date, problem = None, (f"{f}: no date (give a sidecar {sidecar.name} with \"date\", "
                                       "or a first line 'date: YYYY-MM-DD')")
        out.append(Source(sid, text, date, url, "", where, problem))
    return out
