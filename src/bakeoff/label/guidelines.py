"""Judging guidelines: what each grade means, general instructions, and per query what the
person asking needed — shown in the app and exported with the judgments.

A guidelines file is TOML::

    title = "SciFact: does the abstract support or refute the claim?"
    text = '''
    Judge whether the abstract bears on the claim: ...
    '''

    [grades]            # all four, each a sentence or two
    0 = "The abstract does not address the claim."
    1 = "Same topic, but says nothing for or against the claim."
    2 = "Gives evidence for or against the claim, indirectly or in part."
    3 = "States a result that directly supports or refutes the claim."

    [queries]           # optional: the need behind a query, by query id
    "13" = "Whether 0-dimensional biomaterials show inductive properties."

Every key is checked: an unknown key, a grade other than 0-3, a missing grade or a
non-text value stops with one line naming the file and the field. The guidelines are kept
in the database (``meta.guidelines``: the parsed content and the sha256 of the file's
bytes); starting again with a changed file replaces them and records the previous sha256 in
``replaced``. A query's description comes from ``[queries]``, else from the query's own
metadata (``description``, ``narrative`` or ``need``, as BEIR/TREC topics carry them).
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["DESCRIPTION_FIELDS", "description_of", "read_guidelines"]

#: Query metadata fields read as the description of the need (first present wins).
DESCRIPTION_FIELDS = ("description", "narrative", "need")
_KEYS = {"title", "text", "grades", "queries"}


def read_guidelines(path: Path) -> dict[str, Any]:
    """The checked content of a guidelines file (module docstring) with its ``sha256`` and
    ``path``."""
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read the guidelines ({exc.strerror})", path=path) from None
    except UnicodeDecodeError:
        raise InputError("the guidelines are not UTF-8 text", path=path) from None
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"at line (\d+)", str(exc))
        raise InputError(f"not valid TOML ({str(exc).split(' (at')[0]})", path=path,
                         line=int(at.group(1)) if at else None) from None
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise InputError(f"unknown key; a guidelines file has {', '.join(sorted(_KEYS))}", path=path,
                         field=unknown[0])
    for key in ("title", "text"):
        if key in data and not isinstance(data[key], str):
            raise InputError("must be text", path=path, field=key)
    grades = data.get("grades")
    if not isinstance(grades, dict):
        raise InputError("a [grades] table defining 0, 1, 2 and 3 is required", path=path, field="grades")
    bad = sorted(k for k in grades if k not in ("0", "1", "2", "3"))
    if bad:
        raise InputError("grades are 0, 1, 2 and 3", path=path, field=f"grades.{bad[0]}")
    missing = [g for g in ("0", "1", "2", "3") if g not in grades]
    if missing:
        raise InputError(f"grade {missing[0]} is not defined", path=path, field=f"grades.{missing[0]}")
    for g, v in grades.items():
        if not isinstance(v, str) or not v.strip():
            raise InputError("must be a non-empty text", path=path, field=f"grades.{g}")
    queries = data.get("queries", {})
    if not isinstance(queries, dict):
        raise InputError("must be a table of query id = description", path=path, field="queries")
    for q, v in queries.items():
        if not isinstance(v, str):
            raise InputError("must be text", path=path, field=f"queries.{q}")
    return {"title": data.get("title", ""), "text": data.get("text", "").strip(),
            "grades": {g: grades[g].strip() for g in ("0", "1", "2", "3")},
            "queries": {str(q): v.strip() for q, v in queries.items()},
            "sha256": hashlib.sha256(raw).hexdigest(), "path": str(path.resolve())}


def description_of(qid: str, metadata: Mapping[str, Any], guidelines: Mapping[str, Any] | None) -> str:
    """The need behind query ``qid`` (module docstring); "" when nothing describes it."""
    if guidelines and qid in guidelines.get("queries", {}):
        return str(guidelines["queries"][qid])
    for f in DESCRIPTION_FIELDS:
        v = metadata.get(f)
        if isinstance(v, str) and v.strip():
            return v.strip()
    return ""
