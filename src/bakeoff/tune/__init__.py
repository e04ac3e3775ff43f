"""Tuning an arm's parameters on a development split (``bakeoff tune``), never on the test
queries: the search space (:mod:`.space`), the dev split and its leak policy
(:mod:`.devsplit`), the sweep, the choice and the single test evaluation (:mod:`.sweep`).

Names are re-exported lazily (PEP 562, :mod:`bakeoff._lazy`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .devsplit import DevSplit
    from .space import SearchSpace
    from .sweep import TuneOutput, TuneSpec, run_tune, tune_spec_from_table

_EXPORTS = {"DevSplit": ".devsplit", "SearchSpace": ".space", "TuneOutput": ".sweep", "TuneSpec": ".sweep",
            "run_tune": ".sweep", "tune_spec_from_table": ".sweep"}

#: The same names as _EXPORTS, written out for type checkers (tests/test_api.py checks they agree).
__all__ = ["DevSplit", "SearchSpace", "TuneOutput", "TuneSpec", "run_tune", "tune_spec_from_table"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
