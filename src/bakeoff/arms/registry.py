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
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points

from ..errors import ConfigError
from .base import ARM_TYPES, Arm, ArmFactory, register_arm

__all__ = ["BUILTIN_MODULES", "ENTRY_POINT_GROUP", "ArmTypes", "arm_type", "arm_types"]

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
    except Exception as exc:  # a plugin may fail in any way; report it in one line
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
