"""bakeoff: which retriever should my corpus use? Answered with numbers.

The public surface is re-exported here; nothing is imported eagerly that is
heavy, and importing the package has no side effects.
"""

from .arms import Arm, BM25Arm, TfidfArm, arm_types, register_arm
from .runner.context import Context
from .arms import ConvexArm, RerankArm, RRFArm
from .runner.run import run_bakeoff
from .cache import Cache
from .data import (
    CleanOptions,
    Corpus,
    Dataset,
    Document,
    FieldMap,
    Qrels,
    Queries,
    Query,
    Run,
    load_beir,
    rank,
    read_qrels,
    read_trec_run,
)
from .errors import BakeoffError, ConfigError, InputError
from .metrics import Evaluation, Measure, evaluate, parse_measure
from .runner.results import Results, read_results
from .report.model import build_report
from .stats import compare as compare_arms

__all__ = [
    "Arm", "BM25Arm", "BakeoffError", "Cache", "CleanOptions", "ConfigError", "Context", "Corpus", "Dataset",
    "Document", "Evaluation", "FieldMap", "InputError", "Measure", "Qrels", "Queries", "Query", "Results", "Run",
    "TfidfArm", "arm_types", "evaluate", "load_beir", "parse_measure", "rank", "read_qrels", "read_results",
    "read_trec_run", "register_arm", "run_bakeoff",
    "build_report", "compare_arms",
]
__all__ += ["ConvexArm", "RRFArm", "RerankArm"]
