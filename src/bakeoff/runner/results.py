"""Results of a bake-off and their stable, versioned JSON form (``results.json``).

Schema (``schema_version`` 1)::

    {
      "schema": "bakeoff.results", "schema_version": 1, "bakeoff_version": str, "created": ISO-8601,
      "dataset": {"name", "split", "source": {...}, "n_docs", "n_queries", "fingerprints": {...},
                  "warnings": [...], "load_report": {...}},
      "k": int, "depth": int, "measures": [str, ...],
      "averaging": "bakeoff" | "trec_eval" | "trec_eval-c",   # added (still schema 1): which queries a mean
      "relevance_level": int,                                  # is over, and the minimum relevant grade
      "queries": {"evaluated": int, "excluded": {"no_relevant": [...], "not_judged": [...]}},
      "arms": [{"name", "type", "config", "fingerprint", "cached": bool,
                "metrics": {"ndcg@10": float, ...},
                "per_query": {"ndcg@10": {qid: float}, ...},
                "timing": {"index_s", "search_s", "ms_per_query", "n_queries",
                           # added (still schema 1): own vs end-to-end, one-time vs per-query
                           "own_search_s", "index_total_s", "search_total_s", "ms_per_query_total",
                           "latency": {"method", "k", "sample", "seed", "n", "p50_ms", "p95_ms", "mean_ms",
                                       "own_p50_ms", "own_p95_ms", "own_mean_ms"}},
                "cost": {"hourly_rate_usd", "basis", "usd_per_1k_queries", "machine_usd_per_1k_queries",
                         "api_usd_per_1k_queries", "one_time_s", "one_time_usd",
                         "usage": {"index": {...}, "search": {...}}, "tokens_per_query"},
                "extra_metrics": {"ann_recall@10": float, ...},   # optional, arm-specific figures
                "run_file": "runs/<name>.trec",
                "fine_tuned": {"trained_on", "split", "kind", "base_model", "data_fingerprint", "model", "option"},
                              # only for arms whose model folder holds bakeoff_training.json
                # added (still schema 1), see bakeoff.runner.guards / bakeoff.runner.footprint:
                "empty": {"queries", "n", "share", "max_share", "broken"},   # empty rankings; broken arms
                "judged": {"k": int, "mean": float},   # judged@k: share of the top k with any judgment
                "footprint": {"model_bytes", "peak_rss_mb", "added_mb", "memory_method"},
                "identical_ids_removed": int          # only with dataset.ignore_identical_ids
               }],
      "tune": {...}     # optional: the sweep of `bakeoff tune` (schema bakeoff.tune, see bakeoff.tune.sweep)
    }

``dataset.ignore_identical_ids`` is ``true`` when each query's own id was removed from its
rankings (absent otherwise), and ``dataset.identical_ids`` says whether and how that was decided
(``{"removed", "how": "auto" | "option", "own_document_queries"}``); a file without ``averaging``
was written with bakeoff's rule at level 1; ``timing.memory`` holds the arm's own peak-memory measurement.

Timing keys are defined in :mod:`bakeoff.arms.base` (``index_s`` is the
arm's own one-time cost, ``*_total_s`` include its inputs; ``ms_per_query`` is
own batch throughput) and cost keys in :mod:`bakeoff.runner.costs`. ``latency`` and
``cost`` may be absent (older files, ``--latency-sample 0``).

Readers must ignore unknown keys; a breaking change bumps ``schema_version``.

Typed both ways: a bake-off produces :class:`Results` (with :class:`ArmResult` per arm,
holding the Run and the Evaluation) and writes it; :func:`read_results` gives back a
:class:`StoredResults` (with :class:`StoredArm` per arm): the JSON object itself (a
``dict``, so ``results["arms"]`` and ``json.dumps`` work unchanged) with typed accessors
of the same names (``k``, ``measures``, ``arms``, ``arm.metrics`` ...).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._io import atomic_write_json
from ..data.model import Run, label_kind_of
from ..errors import InputError
from ..metrics import Evaluation
from ..versions import bakeoff_version

__all__ = ["SCHEMA_VERSION", "ArmResult", "Results", "StoredArm", "StoredResults", "read_results", "safe_filename"]

SCHEMA_VERSION = 1


def safe_filename(name: str) -> str:
    """A file-system-safe version of an arm name (``bm25:stemmer=english`` -> ``bm25_stemmer-english``)."""
    s = re.sub(r"[^A-Za-z0-9._+-]+", "_", name.replace("=", "-")).strip("._")
    return s or "arm"


@dataclass
class ArmResult:
    """One arm's run, evaluation, timings and provenance."""

    name: str
    type: str
    config: Mapping[str, Any]
    fingerprint: str
    run: Run
    evaluation: Evaluation
    timing: Mapping[str, Any]
    cached: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, run_file: str | None = None) -> dict[str, Any]:
        d = {
            "name": self.name,
            "type": self.type,
            "config": _jsonable(self.config),
            "fingerprint": self.fingerprint,
            "cached": self.cached,
            "metrics": dict(self.evaluation.means),
            "per_query": {m: dict(v) for m, v in self.evaluation.per_query.items()},
            "missing_from_run": list(self.evaluation.missing_from_run),
            "timing": dict(self.timing),
        }
        if run_file:
            d["run_file"] = run_file
        d.update(self.extra)
        return d


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)


@dataclass
class Results:
    """Everything a bake-off produced, ready to print or serialise."""

    dataset: Mapping[str, Any]
    k: int
    depth: int
    measures: Sequence[str]
    arms: list[ArmResult]
    excluded: Mapping[str, Sequence[str]] = field(default_factory=dict)
    n_evaluated: int = 0
    #: Further top-level sections, e.g. ``tune`` (the sweep behind a ``bakeoff tune`` result).
    extra: dict[str, Any] = field(default_factory=dict)
    #: Which queries the means are over (:data:`bakeoff.metrics.AVERAGING`) and the minimum relevant grade.
    averaging: str = "bakeoff"
    relevance_level: int = 1

    def to_dict(self, *, run_files: Mapping[str, str] | None = None) -> dict[str, Any]:
        run_files = run_files or {}
        return {
            "schema": "bakeoff.results",
            "schema_version": SCHEMA_VERSION,
            "bakeoff_version": bakeoff_version(),
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "dataset": _jsonable(self.dataset),
            "k": self.k,
            "depth": self.depth,
            "measures": list(self.measures),
            "averaging": self.averaging,
            "relevance_level": self.relevance_level,
            "queries": {"evaluated": self.n_evaluated, "excluded": {k: list(v) for k, v in self.excluded.items()}},
            "arms": [a.to_dict(run_file=run_files.get(a.name)) for a in self.arms],
            **_jsonable(self.extra),
        }

    def to_df(self, *, per_query: bool = False) -> Any:
        """A pandas DataFrame: one row per arm and one column per measure (the means), or with
        ``per_query`` one row per (arm, query) (columns ``arm``, ``qid`` and the measures)."""
        return _frame(self.measures, [(a.name, a.evaluation.means, a.evaluation.per_query) for a in self.arms],
                      per_query=per_query)

    to_dataframe = to_df  # ranx's name

    def write(self, out: str | Path) -> Path:
        """Write ``results.json`` and ``runs/<arm>.trec`` into ``out`` (each file atomically).

        Run files are written first and ``results.json`` last, so a folder with a
        ``results.json`` is complete.
        """
        from ..data.writers import write_trec_run

        folder = Path(out)
        run_files: dict[str, str] = {}
        used: set[str] = set()
        for a in self.arms:
            base = safe_filename(a.name)
            fname, n = base, 1
            while fname in used:
                n += 1
                fname = f"{base}-{n}"
            used.add(fname)
            rel = f"runs/{fname}.trec"
            write_trec_run(a.run, folder / rel, tag=fname)
            run_files[a.name] = rel
        path = folder / "results.json"
        atomic_write_json(path, self.to_dict(run_files=run_files))
        return path


class StoredArm(dict[str, Any]):
    """One arm of a ``results.json`` as read: the JSON object with typed accessors.

    Optional keys (absent in older files or for some arms) read as ``None`` / empty.
    """

    @property
    def name(self) -> str:
        return str(self["name"])

    @property
    def type(self) -> str:
        return str(self.get("type", ""))

    @property
    def config(self) -> Mapping[str, Any]:
        return self.get("config") or {}

    @property
    def fingerprint(self) -> str:
        return str(self.get("fingerprint", ""))

    @property
    def cached(self) -> bool:
        return bool(self.get("cached", False))

    @property
    def metrics(self) -> Mapping[str, float]:
        """Measure -> mean over the evaluated queries."""
        return self.get("metrics") or {}

    @property
    def per_query(self) -> Mapping[str, Mapping[str, float]]:
        """Measure -> query id -> value."""
        return self.get("per_query") or {}

    @property
    def missing_from_run(self) -> tuple[str, ...]:
        return tuple(self.get("missing_from_run") or ())

    @property
    def timing(self) -> Mapping[str, Any]:
        return self.get("timing") or {}

    @property
    def cost(self) -> Mapping[str, Any] | None:
        return self.get("cost")

    @property
    def run_file(self) -> str | None:
        """The TREC run, relative to the results folder (or absolute)."""
        return self.get("run_file") or None

    @property
    def children(self) -> tuple[str, ...]:
        """Names of the arms this one is built from (fusion inputs, reranked base)."""
        return tuple(self.get("children") or ())

    @property
    def fine_tuned(self) -> Mapping[str, Any] | None:
        """The arm's declared provenance (model fine-tuned by bakeoff), if any."""
        return self.get("fine_tuned")

    @property
    def extra_metrics(self) -> Mapping[str, float]:
        return self.get("extra_metrics") or {}

    @property
    def empty(self) -> Mapping[str, Any] | None:
        """Empty-ranking record (:func:`bakeoff.runner.guards.empty_guard`); ``None`` in older files."""
        return self.get("empty")

    @property
    def broken(self) -> bool:
        """True when the run was empty for more than the allowed share of queries."""
        return bool((self.empty or {}).get("broken", False))

    @property
    def footprint(self) -> Mapping[str, Any]:
        """``model_bytes``, ``peak_rss_mb``, ``added_mb`` (empty in older files)."""
        return self.get("footprint") or {}


class StoredResults(dict[str, Any]):
    """A ``results.json`` as read: the JSON object (plain ``dict`` semantics, written back
    unchanged by ``json.dumps``) with typed accessors named as on :class:`Results`."""

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> StoredResults:
        """Wrap a results mapping (arms become :class:`StoredArm`); the content is not changed."""
        out = cls(obj)
        out["arms"] = [a if isinstance(a, StoredArm) else StoredArm(a) for a in obj.get("arms") or []]
        return out

    @property
    def schema_version(self) -> int:
        version = self.get("schema_version", 0)
        return version if isinstance(version, int) else 0

    @property
    def bakeoff_version(self) -> str | None:
        return self.get("bakeoff_version")

    @property
    def created(self) -> str | None:
        return self.get("created")

    @property
    def dataset(self) -> Mapping[str, Any]:
        """``name``, ``split``, ``source``, ``n_docs``, ``n_queries``, ``fingerprints``, loader notes ..."""
        return self.get("dataset") or {}

    @property
    def source(self) -> Mapping[str, Any]:
        """The dataset specification the run used (``dataset.source``), empty if not recorded."""
        return self.dataset.get("source") or {}

    @property
    def fingerprints(self) -> Mapping[str, str]:
        """sha256 of the corpus, queries and qrels the run was computed on."""
        return self.dataset.get("fingerprints") or {}

    @property
    def ignore_identical_ids(self) -> bool:
        """Whether each query's own id was removed from its rankings (``--ignore-identical-ids``)."""
        return bool(self.dataset.get("ignore_identical_ids", False))

    @property
    def label_kind(self) -> str:
        """``"citation"`` for citation-mined labels (lower bounds), else ``"judged"`` (:func:`label_kind_of`)."""
        return label_kind_of(self.dataset)

    @property
    def k(self) -> int:
        return int(self["k"])

    @property
    def depth(self) -> int:
        return int(self.get("depth", self["k"]))

    @property
    def measures(self) -> tuple[str, ...]:
        return tuple(self.get("measures") or ())

    @property
    def averaging(self) -> str:
        """Which queries the means are over (:data:`bakeoff.metrics.AVERAGING`); ``bakeoff`` in older files."""
        return str(self.get("averaging") or "bakeoff")

    @property
    def relevance_level(self) -> int:
        """The minimum grade binary measures count as relevant (1 in older files)."""
        return int(self.get("relevance_level", 1))

    @property
    def n_evaluated(self) -> int:
        return int((self.get("queries") or {}).get("evaluated", 0))

    @property
    def excluded(self) -> Mapping[str, Sequence[str]]:
        return (self.get("queries") or {}).get("excluded") or {}

    @property
    def arms(self) -> list[StoredArm]:
        return self["arms"]

    @property
    def arm_names(self) -> list[str]:
        return [a.name for a in self.arms]

    def arm(self, name: str) -> StoredArm:
        """The arm called ``name`` (KeyError if none)."""
        for a in self.arms:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def query_ids(self) -> list[str]:
        """The evaluated query ids, in evaluation order (from the first arm's per-query values)."""
        if not self.arms or not self.measures:
            return []
        return list(self.arms[0].per_query.get(self.measures[0], {}))

    def to_dict(self) -> dict[str, Any]:
        """A plain, deep copy (``dict`` and ``list`` only), as in the file."""
        return json.loads(json.dumps(self))

    def to_df(self, *, per_query: bool = False) -> Any:
        """As :meth:`Results.to_df`: the means per arm, or the per-query values with ``per_query``."""
        return _frame(self.measures, [(a.name, a.metrics, a.per_query) for a in self.arms], per_query=per_query)

    to_dataframe = to_df  # ranx's name


def _frame(measures: Sequence[str], arms: Sequence[tuple[str, Mapping[str, float], Mapping[str, Mapping[str, float]]]],
           *, per_query: bool) -> Any:
    import pandas as pd

    if not per_query:
        return pd.DataFrame([[means.get(m, math.nan) for m in measures] for _, means, _ in arms],
                            index=pd.Index([n for n, _, _ in arms], name="arm"), columns=list(measures))
    rows = []
    for name, _, pq in arms:
        qids = list(pq.get(measures[0], {})) if measures else []
        rows += [[name, q, *[pq.get(m, {}).get(q, math.nan) for m in measures]] for q in qids]
    return pd.DataFrame(rows, columns=["arm", "qid", *measures])


def read_results(path: str | Path) -> StoredResults:
    """Load a ``results.json`` (file or folder), checking the schema name and version."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such file", path=p) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", path=p, line=exc.lineno) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=p) from None
    except ValueError as exc:  # an integer literal longer than Python's int-from-string limit
        raise InputError(f"invalid JSON: {str(exc).split(';')[0]}", path=p) from None
    if not isinstance(obj, dict) or obj.get("schema") != "bakeoff.results":
        raise InputError("not a bakeoff results file", path=p, field="schema")
    version = _whole(obj.get("schema_version", 0), p, "schema_version", low=0)
    if version > SCHEMA_VERSION:
        raise InputError(f"written by a newer bakeoff (schema {version})", path=p, field="schema_version")
    if not isinstance(obj.get("arms", []), list) or not all(isinstance(a, dict) for a in obj.get("arms", [])):
        raise InputError("expected a list of arm objects", path=p, field="arms")
    if "k" in obj:
        _whole(obj["k"], p, "k", low=1)
    if "depth" in obj:
        _whole(obj["depth"], p, "depth", low=1)
    queries = obj.get("queries")
    if isinstance(queries, dict) and "evaluated" in queries:
        _whole(queries["evaluated"], p, "queries.evaluated", low=0)
    _check_numbers(obj, p, "")
    return StoredResults.from_dict(obj)


#: Largest integer accepted anywhere in a results file (a signed 64-bit count).
_INT_LIMIT = 2**63 - 1


def _whole(value: Any, path: Path, field: str, *, low: int) -> int:
    """``value`` as an int from ``low`` to 2**63 - 1, else an :class:`InputError` naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= _INT_LIMIT:
        raise InputError(f"expected an integer from {low} to 2**63-1, got {_describe(value)}", path=path, field=field)
    return value


def _describe(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_numbers(node: Any, path: Path, where: str) -> None:
    """Every number in the file is a finite float (NaN stands for a missing figure) or an integer
    within a signed 64-bit range; ``1e400`` (read as infinity) and ``Infinity`` are errors."""
    if isinstance(node, dict):
        for key, value in node.items():
            _check_numbers(value, path, f"{where}.{key}" if where else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _check_numbers(value, path, f"{where}[{i}]")
    elif isinstance(node, bool):
        return
    elif isinstance(node, int) and not -_INT_LIMIT - 1 <= node <= _INT_LIMIT:
        raise InputError(f"integer {_describe(node)} is beyond a signed 64-bit range", path=path, field=where)
    elif isinstance(node, float) and math.isinf(node):
        raise InputError("number is infinite (or beyond float64's range)", path=path, field=where)
