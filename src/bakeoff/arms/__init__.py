"""Retrieval arms: the strategies a bake-off compares."""

from .base import Arm, ArmContext, DocMask, register_arm
from .fusion import ConvexArm, RRFArm
from .lexical import BM25Arm, TfidfArm
from .rerank import RerankArm
from .registry import arm_types

__all__ = ["Arm", "BM25Arm", "ArmContext", "DocMask", "TfidfArm", "arm_types", "register_arm"]
__all__ += ["ConvexArm", "RRFArm", "RerankArm"]
