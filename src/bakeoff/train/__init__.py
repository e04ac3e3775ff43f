"""Fine-tuning: embedders (in-batch negatives) and cross-encoder rerankers, trained on one
split with test-query leak checks. Heavy dependencies load inside the functions.

Names are re-exported lazily (PEP 562, :mod:`bakeoff._lazy`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .common import TRAINING_FILE, read_training_record
    from .hygiene import check_hygiene, find_leaks, normalise

_EXPORTS = {"TRAINING_FILE": ".common", "read_training_record": ".common",
            "check_hygiene": ".hygiene", "find_leaks": ".hygiene", "normalise": ".hygiene"}

#: The same names as _EXPORTS, written out for type checkers (tests/test_api.py checks they agree).
__all__ = ["TRAINING_FILE", "check_hygiene", "find_leaks", "normalise", "read_training_record"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
