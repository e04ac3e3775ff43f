"""Field mapping: which parts of a JSON record make a document, by JMESPath expressions.

Expressions are `JMESPath <https://jmespath.org>`_ (the ``jmespath`` package: a
specified language with a compliance test suite, used by the AWS tools, so
users may already know it). The issue's examples are valid expressions as
written: ``ID``, ``name``, ``decisions[0].winning_party``,
``decision_type.label``; names with dashes or spaces are quoted
(``"docket-number"``). An expression that does not apply to a record (a missing
key, ``decisions`` null) evaluates to ``null``; it is never an exception.

Values become document parts as follows:

* **id**: a string, or an integer (``12`` -> ``"12"``; an integral float
  ``12.0`` -> ``"12"``). ``null``, ``""``, booleans, lists and objects make the
  record's id *missing* (counted; the record is skipped).
* **title** and **text**: a string as is; a number as ``str``; a list is
  flattened and its non-empty strings joined (title by ``" "``, text by a blank
  line); an object is written as compact JSON. Several ``text`` expressions
  are joined by a blank line in the order given (one document per record).
* **fields** (``name=expression``): the JSON value as is, into the document's
  metadata (``null`` when the expression matches nothing).

Each expression is evaluated on the *primary* record (the item's detail
document when one is fetched) and, when that gives ``null``, on the
*fallback* (the listing item), so an id present only in the listing still
works.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError, MissingDependencyError

__all__ = ["FieldSpec", "Mapped", "Mapper", "compile_expression", "parse_field_assignment"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
#: Names a ``--field`` may not take: they are the document's own columns in the output.
RESERVED = frozenset({"id", "title", "text"})


def _jmespath() -> Any:
    try:
        import jmespath
    except ImportError:
        raise MissingDependencyError("jmespath", "ingest", "Field expressions") from None
    return jmespath


def compile_expression(expr: str, *, option: str) -> Any:
    """A compiled JMESPath expression; a syntax error is a one-line :class:`ConfigError`
    naming the option (``--text``, ``--id`` ...)."""
    jmespath = _jmespath()
    text = str(expr).strip()
    if not text:
        raise ConfigError(f"{option}: empty expression")
    try:
        return jmespath.compile(text)
    except jmespath.exceptions.JMESPathError as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"{option} {text!r}: not a JMESPath expression ({detail})") from None


def parse_field_assignment(text: str) -> tuple[str, str]:
    """``"winner=decisions[0].winning_party"`` -> ``("winner", "decisions[0].winning_party")``;
    a bare expression that is a plain name (``"term"``) names itself."""
    name, eq, expr = text.partition("=")
    if not eq:
        name, expr = text.strip(), text.strip()
    name, expr = name.strip(), expr.strip()
    if not _NAME.fullmatch(name):
        raise ConfigError(f"--field {text!r}: expected NAME=EXPRESSION (NAME: letters, digits, _ . -)")
    if name in RESERVED:
        raise ConfigError(f"--field {text!r}: {name!r} is reserved for the document's own column; pick another name")
    return name, expr


@dataclass(frozen=True, kw_only=True)
class FieldSpec:
    """What to read from each record: ``id``, ``title`` (optional), ``text`` (one or more
    expressions, joined), and extra ``fields`` as ``(name, expression)`` pairs."""

    id: str = "id"
    title: str | None = None
    text: tuple[str, ...] = ("text",)
    fields: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "text": list(self.text),
                "fields": {n: e for n, e in self.fields}}


@dataclass(frozen=True)
class Mapped:
    """One mapped record: ``id`` is ``None`` when missing; ``empty`` names the
    expressions (as labelled in :attr:`Mapper.labels`) that matched nothing."""

    id: str | None
    title: str
    text: str
    metadata: dict[str, Any]
    empty: tuple[str, ...] = ()


def _flatten(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, bool):
        return [json.dumps(value)]
    if isinstance(value, (int, float)):
        return [str(value)]
    if isinstance(value, list):
        return [s for v in value for s in _flatten(v)]
    return [json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))]


def _id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return value if value.strip() else None
    return None


@dataclass
class Mapper:
    """Compiled :class:`FieldSpec`; :meth:`apply` maps one record (see module docstring)."""

    spec: FieldSpec
    _compiled: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._compiled["id"] = compile_expression(self.spec.id, option="--id")
        if self.spec.title:
            self._compiled["title"] = compile_expression(self.spec.title, option="--title")
        if not self.spec.text:
            raise ConfigError("give at least one --text expression")
        for expr in self.spec.text:
            self._compiled[f"text:{expr}"] = compile_expression(expr, option="--text")
        names = [n for n, _ in self.spec.fields]
        if len(set(names)) != len(names):
            raise ConfigError(f"--field names repeat: {names}")
        for name, expr in self.spec.fields:
            self._compiled[f"field:{name}"] = compile_expression(expr, option=f"--field {name}=")

    @property
    def labels(self) -> list[str]:
        """Every expression's label: ``id``, ``title``, ``text:<expr>``, ``field:<name>``."""
        return list(self._compiled)

    def option_of(self, label: str) -> str:
        """The command-line form of a label, for messages (``--text 'conclusion'``)."""
        kind, _, rest = label.partition(":")
        if kind == "id":
            return f"--id {self.spec.id!r}"
        if kind == "title":
            return f"--title {self.spec.title!r}"
        if kind == "text":
            return f"--text {rest!r}"
        return f"--field '{rest}={dict(self.spec.fields)[rest]}'"

    def _eval(self, label: str, primary: Any, fallback: Any) -> Any:
        expr = self._compiled[label]
        value = expr.search(primary) if primary is not None else None
        if value is None and fallback is not None:
            value = expr.search(fallback)
        return value

    def key(self, record: Any) -> str | None:
        """The id of a record by itself (used to drop duplicates before a detail fetch)."""
        return _id(self._compiled["id"].search(record))

    def apply(self, primary: Any, fallback: Any = None) -> Mapped:
        empty: list[str] = []
        doc_id = _id(self._eval("id", primary, fallback))
        if doc_id is None:
            empty.append("id")
        title = ""
        if "title" in self._compiled:
            parts = _flatten(self._eval("title", primary, fallback))
            title = " ".join(parts)
            if not parts:
                empty.append("title")
        texts: list[str] = []
        for expr in self.spec.text:
            parts = _flatten(self._eval(f"text:{expr}", primary, fallback))
            if not parts:
                empty.append(f"text:{expr}")
            texts.extend(parts)
        meta: dict[str, Any] = {}
        for name, _ in self.spec.fields:
            value = self._eval(f"field:{name}", primary, fallback)
            if value is None:
                empty.append(f"field:{name}")
            meta[name] = value
        return Mapped(doc_id, title, "\n\n".join(texts), meta, tuple(empty))


def keys_hint(record: Any, *, limit: int = 12) -> str:
    """``"keys: ID, name, href, ..."`` of a record (for "matched nothing" messages)."""
    if isinstance(record, Mapping):
        keys = list(record)
        more = ", ..." if len(keys) > limit else ""
        return "keys: " + ", ".join(map(str, keys[:limit])) + more
    if isinstance(record, Sequence) and not isinstance(record, str):
        return f"a list of {len(record)}"
    return f"a {type(record).__name__}"
