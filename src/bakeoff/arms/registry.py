"""Arm types by name, for ``--arm TYPE:...`` and TOML configs: built-in and third-party.

Built-in arm modules register themselves with
:func:`~bakeoff.arms.base.register_arm` when imported; :func:`arm_types` imports
them on first use (never at package import), so optional heavy dependencies
load only when an arm of that type is actually built or used.

**Third-party arm types** come from installed distributions through the
entry-point group ``bakeoff.arms``: the entry point's *name* is the arm type
(lower case, ``[a-z][a-z0-9_-]*``, as ``--arm`` parses it) and its *value* a
:class:`~bakeoff.arms.base.Arm` subclass, e.g. in the plugin's ``pyproject.toml``::

    [project.entry-points."bakeoff.arms"]
    mytype = "mypackage.arms:MyArm"

A plugin is imported lazily: only when a type that no built-in module defines
is asked for (then only the entry point of that name), or when all types are
listed. Built-in types win over a plugin of the same name. A plugin that fails
to import gives one line naming it (a :class:`~bakeoff.errors.ConfigError` when
its type was asked for, a logged warning when types are only listed), never a
traceback.

**Options** are validated before an arm is built, against a schema derived from the arm class's
keyword parameters (:func:`options_schema`, :func:`bakeoff.validation.signature_model`): the
annotation is the type and carries the constraints (``k1: NonNegative = 1.5``, ``b: Fraction``,
``batch_size: PositiveInt``, ``method: Literal[...]``), so declaring a parameter declares its
validation — for plugins too. Unknown options are refused with the closest valid name.

**What a caller needs about a type** without building an arm (the tuner's sweep) is one call,
:func:`arm_type_info`: the factory and every option a user can set with its default.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from types import MappingProxyType
from typing import Any

from ..errors import ConfigError
from ..validation import Schema, closest, signature_model, validate
from .base import ARM_TYPES, Arm, ArmFactory, register_arm

__all__ = ["BUILTIN_MODULES", "ENTRY_POINT_GROUP", "REFERENCE_OPTIONS", "WIRING", "ArmTypeInfo", "ArmTypes", "arm_type", "arm_type_info",
           "arm_types", "options_schema", "resolve_references", "validate_options"]

log = logging.getLogger("bakeoff")

#: Modules that define built-in arms. Each must import without heavy dependencies.
BUILTIN_MODULES: tuple[str, ...] = (
    "bakeoff.arms.lexical",
    "bakeoff.arms.dense",
    "bakeoff.arms.fusion",
    "bakeoff.arms.rerank",
    "bakeoff.arms.ann",
    "bakeoff.arms.external.http",
    "bakeoff.arms.external.command",
    "bakeoff.arms.external.postgres",
)

#: The entry-point group third-party distributions register arm types in.
ENTRY_POINT_GROUP = "bakeoff.arms"

_BUILTIN: dict[str, ArmFactory] = {}


def _builtins() -> dict[str, ArmFactory]:
    if not _BUILTIN:
        for mod in BUILTIN_MODULES:
            importlib.import_module(mod)
        _BUILTIN.update(ARM_TYPES)
    return _BUILTIN


def _plugin_entry_points() -> dict[str, EntryPoint]:
    """Entry points of the ``bakeoff.arms`` group by name (the first distribution found wins)."""
    out: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        out.setdefault(ep.name, ep)
    return out


def _describe(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    origin = f" from {dist.name} {dist.version}" if dist is not None else ""
    return f"arm plugin {ep.name!r} ({ep.value}{origin})"


def _load_plugin(ep: EntryPoint) -> ArmFactory:
    """Import the entry point and register its Arm subclass under the entry point's name."""
    if ep.name in ARM_TYPES:
        return ARM_TYPES[ep.name]
    try:
        obj = ep.load()
    except Exception as exc:  # noqa: BLE001 - a plugin may fail in any way; report it in one line
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        raise ConfigError(f"{_describe(ep)} failed to load: {detail}") from None
    if not (isinstance(obj, type) and issubclass(obj, Arm)):
        raise ConfigError(f"{_describe(ep)} must name an Arm subclass (bakeoff.arms.base.Arm), got {obj!r}")
    if ARM_TYPES.get(ep.name) is not obj:
        register_arm(ep.name)(obj)
    return obj


def arm_type(name: str) -> ArmFactory | None:
    """The factory of arm type ``name``: built-in, else the ``bakeoff.arms`` plugin of that name
    (imported now), else ``None``. A plugin that fails to load raises a one-line ConfigError."""
    builtin = _builtins()
    if name in builtin:
        return builtin[name]
    if name in ARM_TYPES:  # registered at run time (register_arm in user code) or a loaded plugin
        return ARM_TYPES[name]
    ep = _plugin_entry_points().get(name)
    return None if ep is None else _load_plugin(ep)


class ArmTypes(Mapping[str, ArmFactory]):
    """Read-only view of every arm type. Lookups load at most the plugin asked for; iterating
    (listing the types) loads every plugin, skipping broken ones with a one-line warning."""

    def __getitem__(self, name: str) -> ArmFactory:
        factory = arm_type(name)
        if factory is None:
            raise KeyError(name)
        return factory

    def __init__(self) -> None:
        self._listed: dict[str, ArmFactory] | None = None

    def _all(self) -> dict[str, ArmFactory]:
        if self._listed is not None:
            return self._listed
        builtin = _builtins()
        for name, ep in _plugin_entry_points().items():
            if name in builtin:
                log.warning("%s ignored: a built-in arm type has that name", _describe(ep))
                continue
            try:
                _load_plugin(ep)
            except ConfigError as exc:
                log.warning("%s", exc)
        self._listed = dict(ARM_TYPES)
        return self._listed

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def arm_types() -> ArmTypes:
    """All arm types by name (built-in modules imported on first call; plugins as described above)."""
    return ArmTypes()


#: Constructor parameters that name other arms (``arms=a+b``, ``base=a``): resolved by the builder.
REFERENCE_OPTIONS: tuple[str, ...] = ("arms", "base")
#: Constructor parameters that are objects for programmatic use, not options a user can write.
_NOT_OPTIONS: tuple[str, ...] = ("encoder",)

_SCHEMAS: dict[Any, type[Schema]] = {}


def resolve_references(options: Mapping[str, Any], built: Mapping[str, Arm], *, where: str) -> dict[str, Any]:
    """``options`` with the references to other arms (:data:`REFERENCE_OPTIONS`) replaced by the built arms:
    ``arms="a+b"`` becomes ``[built["a"], built["b"]]`` and ``base="a"`` becomes ``built["a"]`` (names split on
    ``+``, blanks dropped); a value that is not a string (arms already built) is kept. A name not in ``built``
    is one :class:`~bakeoff.errors.ConfigError` line starting with ``where``."""
    opts = dict(options)
    for key in REFERENCE_OPTIONS:
        if key in opts and isinstance(opts[key], str):
            refs = [n.strip() for n in opts[key].split("+") if n.strip()]
            missing = [n for n in refs if n not in built]
            if missing:
                raise ConfigError(f"{where}: {key}= names unknown arm(s) {missing}; define them first")
            resolved = [built[n] for n in refs]
            opts[key] = resolved if key == "arms" else resolved[0]
    return opts


def _constructor(cls: type[Any]) -> Any:
    return cls.__init__


def options_schema(factory: ArmFactory) -> type[Schema]:
    """The option schema of an arm type: its constructor's keyword parameters (see the module docstring)."""
    if factory not in _SCHEMAS:
        init = _constructor(factory) if isinstance(factory, type) else factory
        label = getattr(factory, "type", getattr(factory, "__name__", "arm"))
        _SCHEMAS[factory] = signature_model(init, name=f"{label}_options", skip=_NOT_OPTIONS,
                                            any_type=REFERENCE_OPTIONS)
    return _SCHEMAS[factory]


def validate_options(type_name: str, options: Mapping[str, Any], *, where: str,
                     line_of: Any = None, line_prefix: tuple[str | int, ...] = (), context: str = "") -> dict[str, Any]:
    """``options`` of an arm of type ``type_name`` checked against its schema: the options given, with
    their validated values (defaults stay the constructor's). An unknown type or option, a wrong type
    or a value out of range is one :class:`~bakeoff.errors.ConfigError` line starting with ``where``."""
    factory = arm_type(type_name)
    if factory is None:
        line = line_of((*line_prefix, "type")) if line_of is not None else None
        head = where + (f":{line}" if line else "") + ": " + (f"{context}: " if context else "")
        raise _unknown_type(type_name, head=head)
    model: Schema = validate(options_schema(factory), dict(options), where=where, line_of=line_of, line_prefix=line_prefix,
                     noun="option", context=context)
    out = {key: getattr(model, key) for key in options if key in type(model).model_fields}
    out.update(model.model_extra or {})
    return out


def _unknown_type(type_name: str, *, head: str = "") -> ConfigError:
    known = sorted(arm_types())
    hint = closest(type_name, known)
    tip = f" (did you mean {hint!r}?)" if hint else ""
    return ConfigError(f"{head}unknown arm type {type_name!r}{tip}; known: {', '.join(known)}")


#: Constructor parameters that wire an arm (its own name, the arms it takes) rather than set an option:
#: never among an :class:`ArmTypeInfo`'s options.
WIRING: tuple[str, ...] = ("self", "name", *REFERENCE_OPTIONS)


@dataclass(frozen=True)
class ArmTypeInfo:
    """An arm type as a caller that builds variants of it sees it (:func:`arm_type_info`).

    ``options`` maps every keyword parameter of the constructor a user can set to its default
    (``None`` when it has none), in the constructor's order, without ``name`` and the references to
    other arms (``arms=``, ``base=``).
    """

    name: str
    factory: ArmFactory
    options: Mapping[str, Any]


def arm_type_info(name: str) -> ArmTypeInfo:
    """The factory and the options of arm type ``name`` (built-in or plugin, as :func:`arm_type`);
    an unknown type is one :class:`~bakeoff.errors.ConfigError` line naming the closest known type."""
    factory = arm_type(name)
    if factory is None:
        raise _unknown_type(name)
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        params = MappingProxyType({})
    options = {p: (None if par.default is inspect.Parameter.empty else par.default)
               for p, par in params.items()
               if p not in WIRING and par.kind in (par.KEYWORD_ONLY, par.POSITIONAL_OR_KEYWORD)}
    return ArmTypeInfo(name, factory, MappingProxyType(options))
