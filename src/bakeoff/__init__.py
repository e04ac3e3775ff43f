"""bakeoff: which retriever should my corpus use? Answered with numbers.

The public surface is re-exported here **lazily** (PEP 562): ``import bakeoff``
imports nothing else, and each name loads its own module on first use, so
``import bakeoff.metrics`` (or ``bakeoff eval``) loads no arm, model or
training code. Importing the package has no side effects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .arms.base import Arm, register_arm
    from .arms.fusion import ConvexArm, RRFArm
    from .arms.lexical import BM25Arm, TfidfArm
    from .arms.registry import arm_types
    from .arms.rerank import RerankArm
    from .cache import Cache
    from .data.clean import CleanOptions
    from .data.datasets import DatasetSpec, open_corpus, open_dataset
    from .data.loaders import FieldMap, load_beir, read_qrels, read_trec_run
    from .data.model import Corpus, Dataset, Document, Qrels, Queries, Query, Run
    from .data.ranking import rank
    from .errors import BakeoffError, ConfigError, InputError
    from .metrics import Evaluation, Measure, evaluate, parse_measure
    from .report.model import build_report
    from .runner.context import Context
    from .runner.results import Results, StoredResults, read_results
    from .runner.run import run_bakeoff
    from .stats import compare as compare_arms

_EXPORTS = {
    "Arm": ".arms.base", "register_arm": ".arms.base", "arm_types": ".arms.registry",
    "BM25Arm": ".arms.lexical", "TfidfArm": ".arms.lexical",
    "ConvexArm": ".arms.fusion", "RRFArm": ".arms.fusion", "RerankArm": ".arms.rerank",
    "Cache": ".cache",
    "CleanOptions": ".data.clean",
    "DatasetSpec": ".data.datasets", "open_corpus": ".data.datasets", "open_dataset": ".data.datasets",
    "FieldMap": ".data.loaders", "load_beir": ".data.loaders", "read_qrels": ".data.loaders",
    "read_trec_run": ".data.loaders",
    "Corpus": ".data.model", "Dataset": ".data.model", "Document": ".data.model", "Qrels": ".data.model",
    "Queries": ".data.model", "Query": ".data.model", "Run": ".data.model",
    "rank": ".data.ranking",
    "BakeoffError": ".errors", "ConfigError": ".errors", "InputError": ".errors",
    "Evaluation": ".metrics", "Measure": ".metrics", "evaluate": ".metrics", "parse_measure": ".metrics",
    "build_report": ".report.model",
    "Context": ".runner.context",
    "Results": ".runner.results", "StoredResults": ".runner.results", "read_results": ".runner.results",
    "run_bakeoff": ".runner.run",
    "compare_arms": ".stats:compare",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
