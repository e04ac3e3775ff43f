"""Arm types by name, for ``--arm TYPE:...`` and TOML configs.

Arm modules register themselves with :func:`~bakeoff.arms.base.register_arm`
when imported; :func:`arm_types` imports the built-in modules on first use
(never at package import), so optional heavy dependencies load only when an
arm of that type is actually built or used.
"""

from __future__ import annotations

import importlib

from .base import ARM_TYPES, ArmFactory

__all__ = ["BUILTIN_MODULES", "arm_types"]

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


def arm_types() -> dict[str, ArmFactory]:
    """All registered arm types (built-in modules imported on first call)."""
    for mod in BUILTIN_MODULES:
        importlib.import_module(mod)
    return dict(ARM_TYPES)
