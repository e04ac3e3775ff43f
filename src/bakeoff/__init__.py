"""bakeoff: which retriever should my corpus use? Answered with numbers.

The public surface is a few verbs over values, in the argument order of ranx and ir_measures::

    evaluate(qrels, run, measures)    compare(qrels, runs, measures)    fuse(runs, method=...)
    run_bakeoff(dataset, arms)        load_beir / open_dataset / read_qrels / read_trec_run / read_results

It is re-exported here **lazily** (PEP 562): ``import bakeoff`` imports nothing else, and each
name loads its own module on first use, so ``import bakeoff.metrics`` (or ``bakeoff eval``) loads
no arm, model or training code. Importing the package has no side effects. Everything else lives
in its subpackage (arms in :mod:`bakeoff.arms`, data types in :mod:`bakeoff.data`, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .data.datasets import open_dataset
    from .data.loaders import load_beir, read_qrels, read_trec_run
    from .data.model import Dataset, Qrels, Run
    from .errors import BakeoffError
    from .metrics import Evaluation
    from .runner.results import Results, read_results
    from .runner.run import run_bakeoff
    from .verbs import Report, compare, evaluate, fuse

_EXPORTS = {
    "evaluate": ".verbs", "compare": ".verbs", "fuse": ".verbs", "Report": ".verbs",
    "run_bakeoff": ".runner.run", "Results": ".runner.results", "read_results": ".runner.results",
    "load_beir": ".data.loaders", "read_qrels": ".data.loaders", "read_trec_run": ".data.loaders",
    "open_dataset": ".data.datasets",
    "Dataset": ".data.model", "Qrels": ".data.model", "Run": ".data.model",
    "Evaluation": ".metrics",
    "BakeoffError": ".errors",
}


#: The same names as _EXPORTS, written out for type checkers (tests/test_api.py checks they agree).
__all__ = [
    "BakeoffError", "Dataset", "Evaluation", "Qrels", "Report", "Results", "Run", "compare", "evaluate", "fuse",
    "load_beir", "open_dataset", "read_qrels", "read_results", "read_trec_run", "run_bakeoff",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
