"""Retrieval arms: the strategies a bake-off compares."""

from .base import Arm, Context, DocMask, register_arm
from .lexical import BM25Arm, TfidfArm
from .registry import arm_types

__all__ = ["Arm", "BM25Arm", "Context", "DocMask", "TfidfArm", "arm_types", "register_arm"]
