"""Validation of everything a user writes (TOML files, ``--arm`` options, read-back JSON), with pydantic.

One mechanism for every input: a value is validated against a *declared* schema — a pydantic
model (:class:`Schema`), a dataclass, or a function signature (:func:`signature_model`) whose
parameter annotations carry the constraints, e.g. ``k1: NonNegative = 1.5`` or
``b: Fraction = 0.75``. A new option is validated by declaring it; nothing is checked by hand.

Conventions of every schema (:data:`SCHEMA_CONFIG`):

* unknown keys are errors, reported with the closest valid name (:func:`closest`, difflib);
* floats must be finite (no ``nan``/``inf``); a boolean is never a number;
* an integer field refuses ``2.5`` (no silent truncation); a number is not text in a file (``out = 5``
  is an error), but ``--arm`` options (:func:`signature_model`), typed from command-line text, take a
  number given for a text option as that text (``revision=1234``).

:func:`validate` turns a :class:`pydantic.ValidationError` into ONE
:class:`~bakeoff.errors.ConfigError` (or the error class asked for) line naming the file, the line
(when the caller can locate the key, e.g. with :func:`toml_key_line`), the key path, the bad value
and what is allowed.
"""

from __future__ import annotations

import difflib
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
)

from .errors import BakeoffError, ConfigError

__all__ = [
    "SCHEMA_CONFIG",
    "Fraction",
    "NonNegative",
    "NonNegativeInt",
    "Positive",
    "PositiveInt",
    "Schema",
    "closest",
    "describe_value",
    "signature_model",
    "toml_key_line",
    "validate",
]

#: The configuration shared by every schema (see the module docstring).
SCHEMA_CONFIG = ConfigDict(extra="forbid", allow_inf_nan=False, arbitrary_types_allowed=True, populate_by_name=True)

#: Largest count, size or cutoff a file may give (``2**31 - 1``: what every index type and library
#: bakeoff hands it to accepts; ``2**70`` is an error naming the key, not an overflow later).
MAX_COUNT = 2**31 - 1
#: ``>= 1`` integer (sizes, cutoffs, counts that cannot be zero), at most :data:`MAX_COUNT`.
PositiveInt = Annotated[int, Field(ge=1, le=MAX_COUNT)]
#: ``>= 0`` integer, at most :data:`MAX_COUNT`.
NonNegativeInt = Annotated[int, Field(ge=0, le=MAX_COUNT)]
#: Finite ``>= 0`` number.
NonNegative = Annotated[float, Field(ge=0)]
#: Finite ``> 0`` number.
Positive = Annotated[float, Field(gt=0)]
#: Finite number in ``[0, 1]``.
Fraction = Annotated[float, Field(ge=0, le=1)]

M = TypeVar("M")


def _accepts_bool(annotation: Any) -> bool:
    """Whether a field annotation admits a boolean (``bool``, ``Any``, or a union holding one)."""
    if annotation is bool or annotation is Any or annotation is object:
        return True
    if annotation is type(None):
        return False
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _accepts_bool(typing.get_args(annotation)[0])
    if origin is None:
        return not (isinstance(annotation, type) and issubclass(annotation, (int, float, str)))
    if origin in (typing.Union, types.UnionType):
        return any(_accepts_bool(a) for a in typing.get_args(annotation))
    return True


class Schema(BaseModel):
    """Base of every declared schema: :data:`SCHEMA_CONFIG`, and no boolean where a number or text is due."""

    model_config = SCHEMA_CONFIG

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if isinstance(value, bool) and field is not None and not _accepts_bool(field.annotation):
            raise ValueError("expected a number or text, not a boolean")
        return value


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The valid name closest to a misspelt ``name`` (difflib ratio >= 0.5), or ``None``."""
    found = difflib.get_close_matches(str(name), sorted(set(choices)), n=1, cutoff=0.5)
    return found[0] if found else None


def describe_value(value: Any, limit: int = 60) -> str:
    """A bad value as quoted in messages: ``repr``, on one line, at most ``limit`` characters."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _allowed(error: Mapping[str, Any]) -> str:
    """The ``msg`` of a pydantic error, rephrased where it helps ('Value error, ' dropped)."""
    msg = str(error.get("msg", "invalid"))
    return re.sub(r"^(Value|Assertion) error, ", "", msg)


def _key_path(prefix: Sequence[str | int], loc: Sequence[str | int]) -> str:
    out = ""
    for part in (*prefix, *loc):
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validate(
    schema: type[M] | Any,
    data: Any,
    *,
    where: str,
    prefix: Sequence[str | int] = (),
    line_of: Callable[[tuple[str | int, ...]], int | None] | None = None,
    error: type[BakeoffError] = ConfigError,
    noun: str = "key",
    line_prefix: Sequence[str | int] = (),
    context: str = "",
) -> M:
    """``data`` validated by ``schema`` (a :class:`Schema` subclass or any type pydantic adapts).

    A failure raises ONE ``error`` whose text is
    ``WHERE[:LINE]: KEY.PATH: WHAT (got VALUE)`` — only one problem, the most specific (the
    user fixes one line at a time). ``prefix`` is the key path of ``data`` inside its file (e.g. ``("run",)``),
    ``line_of(full key path)`` locates the key in the file when it can, ``noun`` names what the
    keys are (``"key"``, ``"option"``); ``line_prefix`` is prepended to the key path given to
    ``line_of`` only (where ``data`` sits in the file when that is not shown in the message).
    ``context`` labels the part of the file after the line (``[[arms]] #2 (bm25)``).
    Unknown keys name the closest valid one.
    """
    try:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return schema.model_validate(data)  # type: ignore[return-value]
        return TypeAdapter(schema).validate_python(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # the most specific problem: the deepest location (for a union, the member that got furthest)
        first = max(errors, key=lambda e: len(_key_loc(schema, e.get("loc", ()),
                                                       unknown=e.get("type") == "extra_forbidden")))
        loc = tuple(first.get("loc", ()))
        locate = None if line_of is None else (lambda key: line_of((*line_prefix, *key)))
        raise error(_one_line(schema, first, loc, where=where, prefix=prefix, line_of=locate, noun=noun,
                              context=context)) from None


def _fields_at(schema: Any, loc: Sequence[str | int]) -> list[str]:
    """Valid key names of the (sub)model at ``loc`` (for 'did you mean')."""
    model = schema
    for part in loc:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return []
        model = _model_in(field.annotation)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return [f.alias or n for n, f in model.model_fields.items()]
    return []


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _one_line(schema: Any, err: Mapping[str, Any], loc: tuple[str | int, ...], *, where: str,
              prefix: Sequence[str | int], line_of: Callable[[tuple[str | int, ...]], int | None] | None,
              noun: str, context: str = "") -> str:
    clean_loc = _key_loc(schema, loc, unknown=err.get("type") == "extra_forbidden")
    full = (*prefix, *clean_loc)
    line = line_of(full) if line_of is not None else None
    head = where + (f":{line}" if line else "") + ": " + (f"{context}: " if context else "")
    key = _key_path(prefix, clean_loc)
    if err.get("type") == "extra_forbidden":
        bad = str(clean_loc[-1]) if clean_loc else "?"
        valid = _fields_at(schema, clean_loc[:-1])
        hint = closest(bad, valid)
        tip = f" (did you mean {hint!r}?)" if hint else ""
        known = f"; known {noun}s: {', '.join(sorted(valid))}" if valid else ""
        return f"{head}unknown {noun} {key!r}{tip}{known}"
    if err.get("type") == "missing":
        return f"{head}{key}: required {noun} is missing"
    what = _allowed(err)
    got = err.get("input")
    return f"{head}{key}: {what} (got {describe_value(got)})" if key else f"{head}{what} (got {describe_value(got)})"


def _key_loc(schema: Any, loc: Sequence[str | int], *, unknown: bool = False) -> tuple[str | int, ...]:
    """The key path in a pydantic error location: list indexes and field names, without the tags
    pydantic adds for union members and validators (``int``, ``EngineTable``, ``function-after[...]``).
    Inside a model a part is a key when the model has that field (or, with ``unknown``, when it is
    the last part: the unknown key); below a mapping, parts that do not look like tags are keys."""
    out: list[str | int] = []
    model = schema if isinstance(schema, type) and issubclass(schema, BaseModel) else None
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out.append(part)
            continue
        if model is not None:
            field = model.model_fields.get(str(part))
            if field is None:
                field = next((f for f in model.model_fields.values() if f.alias == part), None)
            if field is not None:
                out.append(part)
                model = _model_in(field.annotation)
            elif unknown and i == len(loc) - 1:
                out.append(part)
            continue
        if not _is_type_tag(str(part)):
            out.append(part)
    return tuple(out)


def _is_type_tag(part: str) -> bool:
    """pydantic's location parts for union members (``int``, ``list[str]``, ``function-after[...]``)."""
    return bool(re.fullmatch(r"[a-z_]+(\[.*\])?|function-[a-z]+\[.*\]|[A-Z][A-Za-z]*(\[.*\])?", part)) and (
        "[" in part or part in {"str", "int", "float", "bool", "list", "dict", "tuple", "none", "literal"}
        or part[:1].isupper()
    )


# signatures ------------------------------------------------------------------------------------------


def _resolve_hints(func: Callable[..., Any]) -> dict[str, Any]:
    """Type hints of ``func`` with ``Annotated`` kept; a hint that cannot be resolved is ``Any``."""
    try:
        return typing.get_type_hints(func, include_extras=True)
    except Exception:  # an annotation naming a TYPE_CHECKING-only import: resolve one by one  # noqa: BLE001
        out: dict[str, Any] = {}
        globalns = getattr(func, "__globals__", {})
        for name, ann in getattr(func, "__annotations__", {}).items():
            try:
                out[name] = eval(ann, globalns) if isinstance(ann, str) else ann
            except Exception:  # noqa: BLE001
                out[name] = Any
        return out


def _plain(hint: Any) -> Any:
    """``hint``, or ``Any`` when it involves a protocol class (pydantic cannot check those by isinstance)."""
    if getattr(hint, "_is_protocol", False):
        return Any
    return Any if any(_plain(a) is Any and a is not Any for a in typing.get_args(hint) if not isinstance(a, (str, int)))\
        else hint


def signature_model(func: Callable[..., Any], *, name: str, skip: Iterable[str] = (),
                    any_type: Iterable[str] = ()) -> type[Schema]:
    """An :class:`OptionsSchema` built from the keyword parameters of ``func`` (e.g. an arm's ``__init__``).

    Each parameter becomes a field with its annotation (constraints in ``Annotated[...]``) and its
    default (required when it has none). ``skip`` names parameters that are not options (``self``
    and ``name`` always are); ``any_type`` names parameters accepted as given (e.g. names of other
    arms resolved later). A ``**kwargs`` parameter lets unknown keys through (the callee checks
    them).
    """
    hints = _resolve_hints(func)
    skip = {"self", "name", *skip}
    loose = set(any_type)
    fields: dict[str, Any] = {}
    extra = "forbid"
    for pname, p in inspect.signature(func).parameters.items():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            extra = "allow"
            continue
        if p.kind is inspect.Parameter.VAR_POSITIONAL or pname in skip:
            continue
        hint = Any if pname in loose else _plain(hints.get(pname, Any))
        try:
            TypeAdapter(hint, config=OptionsSchema.model_config)
        except Exception:  # a type pydantic cannot build a schema for: accept as given  # noqa: BLE001
            hint = Any
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[pname] = (hint, default)
    return create_model(name, __base__=OptionsSchema if extra == "forbid" else OpenOptionsSchema, **fields)


class OpenSchema(Schema):
    """A :class:`Schema` that lets unknown keys through (for a callee that checks them itself)."""

    model_config = ConfigDict(**{**SCHEMA_CONFIG, "extra": "allow"})


class OptionsSchema(Schema):
    """Options written on a command line (``--arm``): a number given for a text option is that text."""

    model_config = ConfigDict(**{**SCHEMA_CONFIG, "coerce_numbers_to_str": True})


class OpenOptionsSchema(OptionsSchema):
    """:class:`OptionsSchema` letting unknown keys through (for a callee that checks them itself)."""

    model_config = ConfigDict(**{**SCHEMA_CONFIG, "coerce_numbers_to_str": True,
                                 "extra": "allow"})


# TOML locations --------------------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=""")


def _split_key(text: str) -> list[str]:
    parts = re.findall(r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'""", text)
    return [p[1:-1] if p[:1] in "\"'" else p for p in parts]


def toml_key_line(text: str, path: Sequence[str | int]) -> int | None:
    """The 1-based line of the key (or table) at ``path`` in TOML ``text``, e.g. ``("run", "k")`` or
    ``("arms", 1, "k1")`` (the second ``[[arms]]`` table); the line of the longest located prefix
    when the key itself is not written on a line of its own; ``None`` when nothing matches.
    A best effort for messages (tomllib gives no positions): multi-line strings may mislead it."""
    want = tuple(path)
    table: tuple[str | int, ...] = ()
    counts: dict[tuple[str | int, ...], int] = {}
    best: tuple[int, int] | None = None  # (matched length, line)
    for no, line in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(line)
        if m and "=" not in m.group(2):
            parts: tuple[str | int, ...] = tuple(_split_key(m.group(2)))
            if m.group(1) == "[[":
                idx = counts.get(parts, -1) + 1
                counts[parts] = idx
                parts = (*parts, idx)
            table = parts
            here = table
        else:
            km = _KEY.match(line)
            if not km:
                continue
            here = (*table, *_split_key(km.group(1)))
        n = 0
        while n < min(len(here), len(want)) and here[n] == want[n]:
            n += 1
        if n == len(here) and n > 0 and (best is None or n > best[0]):
            best = (n, no)
            if n == len(want):
                return no
    return best[1] if best else None
