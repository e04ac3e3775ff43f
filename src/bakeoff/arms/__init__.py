"""Retrieval arms: the strategies a bake-off compares (one module per strategy).

Names are re-exported lazily (PEP 562, :mod:`bakeoff._lazy`): ``from bakeoff.arms
import Arm`` imports :mod:`.base` only; an arm module (and its optional heavy
dependencies) loads when one of its names is used or when
:func:`~bakeoff.arms.registry.arm_types` lists the types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .base import Arm, ArmContext, DocMask, register_arm
    from .fusion import ConvexArm, RRFArm
    from .lexical import BM25Arm, TfidfArm
    from .registry import arm_type, arm_types
    from .rerank import RerankArm

_EXPORTS = {
    "Arm": ".base", "ArmContext": ".base", "DocMask": ".base", "register_arm": ".base",
    "ConvexArm": ".fusion", "RRFArm": ".fusion", "BM25Arm": ".lexical", "TfidfArm": ".lexical",
    "RerankArm": ".rerank", "arm_type": ".registry", "arm_types": ".registry",
}

#: The same names as _EXPORTS, written out for type checkers (tests/test_api.py checks they agree).
__all__ = [
    "Arm", "ArmContext", "BM25Arm", "ConvexArm", "DocMask", "RRFArm", "RerankArm", "TfidfArm", "arm_type", "arm_types",
    "register_arm",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
