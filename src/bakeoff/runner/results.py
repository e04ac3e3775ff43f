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
                           "index_cached_total_s",   # added: index work restored from the cache, as first timed
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
holding the Run and the Evaluation) and writes it; a stored results set is one frozen, validated
model, :class:`StoredResults` (:class:`StoredDataset`, :class:`StoredQueries`, a :class:`StoredArm`
per arm), which every reader uses: :func:`read_results` builds it from a file (the one reader:
JSON, numbers and schema checked, each problem one :class:`~bakeoff.errors.InputError` line
naming the file and the field) and :meth:`Results.stored` from a bake-off in memory, with the
content the file gets. Unknown keys are kept, and :meth:`StoredResults.to_dict` gives back the
JSON object as read.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import ConfigDict, Field, ModelWrapValidatorHandler, PrivateAttr, model_validator

from .._io import atomic_write_json
from ..data.model import Run, label_kind_of
from ..errors import InputError
from ..library_versions import bakeoff_version
from ..metrics import Evaluation
from ..validation import OpenSchema, PositiveInt, validate

__all__ = ["SCHEMA_VERSION", "ArmResult", "Results", "StoredArm", "StoredDataset", "StoredQueries", "StoredResults",
           "read_results", "safe_filename"]

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

    def stored(self, *, run_files: Mapping[str, str] | None = None) -> StoredResults:
        """The typed results set with the content :meth:`write` gives ``results.json`` (``run_files``:
        arm name -> its TREC run, relative to the results folder; none before writing)."""
        return StoredResults.from_dict(self.to_dict(run_files=run_files))


#: A per-query value or mean as stored: NaN stands for a figure that could not be computed.
Score = Annotated[float, Field(allow_inf_nan=True)]
#: The averaging rules (:data:`bakeoff.metrics.AVERAGING`).
Averaging = Literal["bakeoff", "trec_eval", "trec_eval-c"]


class _Stored(OpenSchema):
    """Base of the stored-results models: frozen, unknown keys kept (readers ignore them, :meth:`to_dict`
    gives them back), and the keys of the JSON object it was read from remembered in their order."""

    model_config = ConfigDict(**{**OpenSchema.model_config, "frozen": True})
    _keys: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_keys(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        if not isinstance(data, Mapping):
            return handler(data)
        out = handler(cls._filled(data))
        out._keys = tuple(str(key) for key in data)
        return out

    @classmethod
    def _filled(cls, data: Mapping[str, Any]) -> Mapping[str, Any]:
        """``data`` with the defaults that depend on other keys filled in (before validation)."""
        return data

    def to_dict(self) -> dict[str, Any]:
        """The JSON object as read: its keys in their order (no default added), ``dict`` and ``list`` only."""
        values = {**self.__dict__, **(self.model_extra or {})}
        return {key: _plain(values[key]) for key in self._keys if key in values}


def _plain(value: Any) -> Any:
    if isinstance(value, _Stored):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {key: _plain(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class StoredArm(_Stored):
    """One arm of a stored results set. Optional keys (absent in older files or for some arms) read as
    ``None`` / empty."""

    name: str
    type: str | None = None
    config: Mapping[str, Any] = Field(default_factory=dict)
    fingerprint: str = ""
    cached: bool = False
    #: Measure -> mean over the evaluated queries.
    metrics: Mapping[str, Score | None]
    #: Measure -> query id -> value.
    per_query: Mapping[str, Mapping[str, Score]]
    missing_from_run: tuple[str, ...] = ()
    timing: Mapping[str, Any] = Field(default_factory=dict)
    cost: Mapping[str, Any] | None = None
    #: The TREC run, relative to the results folder (or absolute).
    run_file: str | None = None
    #: Names of the arms this one is built from (fusion inputs, reranked base).
    children: tuple[str, ...] = ()
    #: The arm's declared provenance (model fine-tuned by bakeoff), if any.
    fine_tuned: Mapping[str, Any] | None = None
    extra_metrics: Mapping[str, Score | None] = Field(default_factory=dict)
    #: Empty-ranking record (:func:`bakeoff.runner.guards.empty_guard`); ``None`` in older files.
    empty: Mapping[str, Any] | None = None
    #: judged@k: ``{"k", "mean"}``, the share of the top k with any judgment; ``None`` in older files.
    judged: Mapping[str, Any] | None = None
    #: ``model_bytes``, ``peak_rss_mb``, ``added_mb``; ``None`` in older files.
    footprint: Mapping[str, Any] | None = None
    identical_ids_removed: int | None = None

    @property
    def broken(self) -> bool:
        """True when the run was empty for more than the allowed share of queries."""
        return bool((self.empty or {}).get("broken", False))


class StoredDataset(_Stored):
    """The ``dataset`` section: what the run was computed on. Loaders add keys of their own
    (``warnings``, ``load_report``, ``provenance``, ``identical_ids`` ...): :meth:`to_dict` holds them."""

    name: str | None = None
    split: str | None = None
    #: The dataset specification the run used (``bakeoff demo``: a label, the data in ``truth``).
    source: Mapping[str, Any] | str = Field(default_factory=dict)
    #: sha256 of the corpus, queries and qrels the run was computed on.
    fingerprints: Mapping[str, str] = Field(default_factory=dict)
    n_docs: int | None = None
    n_queries: int | None = None
    #: ``bakeoff demo``: the BEIR folder of its generated truth.
    truth: str | None = None
    search_mode: str | None = None
    only_single: bool = False
    queries_variant: str | None = None
    #: Whether each query's own id was removed from its rankings (``--ignore-identical-ids``).
    ignore_identical_ids: bool = False
    #: Whether and how that was decided: ``{"removed", "how": "auto" | "option", "own_document_queries"}``.
    identical_ids: Mapping[str, Any] | None = None


class StoredQueries(_Stored):
    """The ``queries`` section: how many queries the means are over, and the ones left out, by reason."""

    evaluated: int = Field(default=0, ge=0)
    excluded: Mapping[str, tuple[str, ...]] = Field(default_factory=dict)


class StoredResults(_Stored):
    """A results set as stored in ``results.json`` (schema in the module docstring), typed.

    Built by :func:`read_results` from a file, by :meth:`Results.stored` from a bake-off in memory,
    or by :meth:`from_dict` from a results mapping; validated either way. Frozen; unknown keys are
    kept and :meth:`to_dict` gives the JSON object back as it was read.
    """

    schema_version: int = 0
    bakeoff_version: str | None = None
    created: str | None = None
    dataset: StoredDataset
    k: PositiveInt
    #: Ranking depth of the runs (``k`` in files without one: filled in before validation).
    depth: PositiveInt
    measures: tuple[str, ...] = Field(min_length=1)
    #: Which queries the means are over (:data:`bakeoff.metrics.AVERAGING`); ``bakeoff`` in older files.
    averaging: Averaging = "bakeoff"
    #: The minimum grade binary measures count as relevant (1 in older files).
    relevance_level: int = 1
    queries: StoredQueries = Field(default_factory=StoredQueries)
    arms: tuple[StoredArm, ...] = Field(min_length=1)
    #: The sweep of ``bakeoff tune`` (schema ``bakeoff.tune``, see :mod:`bakeoff.tune.sweep`), if any.
    tune: Mapping[str, Any] | None = None

    @classmethod
    def _filled(cls, data: Mapping[str, Any]) -> Mapping[str, Any]:
        return data if "depth" in data or "k" not in data else {**data, "depth": data["k"]}

    @model_validator(mode="after")
    def _per_query_covers_measures(self) -> StoredResults:
        for i, arm in enumerate(self.arms):
            for m in self.measures:
                if m not in arm.per_query:
                    raise ValueError(f"arms[{i}] ({arm.name!r}) has no per_query values for measure {m!r}")
        names = [a.name for a in self.arms]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"arm names repeated: {dup}")
        return self

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> StoredResults:
        """A results mapping (the JSON object of a ``results.json``) validated into the typed model
        (:class:`pydantic.ValidationError` when it does not fit; files go through :func:`read_results`)."""
        return cls.model_validate(obj)

    @property
    def source(self) -> Mapping[str, Any]:
        """The dataset specification the run used (``dataset.source``), empty if not recorded."""
        return self.dataset.source if isinstance(self.dataset.source, Mapping) else {}

    @property
    def fingerprints(self) -> Mapping[str, str]:
        """sha256 of the corpus, queries and qrels the run was computed on."""
        return self.dataset.fingerprints

    @property
    def ignore_identical_ids(self) -> bool:
        """Whether each query's own id was removed from its rankings (``--ignore-identical-ids``)."""
        return self.dataset.ignore_identical_ids

    @property
    def label_kind(self) -> str:
        """``"citation"`` for citation-mined labels (lower bounds), else ``"judged"`` (:func:`label_kind_of`)."""
        return label_kind_of(self.dataset.to_dict())

    @property
    def n_evaluated(self) -> int:
        return self.queries.evaluated

    @property
    def excluded(self) -> Mapping[str, Sequence[str]]:
        return self.queries.excluded

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
        if not self.arms:
            return []
        return list(self.arms[0].per_query.get(self.measures[0], {}))

    def with_arms(self, arms: Sequence[StoredArm]) -> StoredResults:
        """A copy holding ``arms`` instead (a subset of them, or arms renamed by
        :meth:`pydantic.BaseModel.model_copy`), not validated again."""
        return self.model_copy(update={"arms": tuple(arms)})

    def to_df(self, *, per_query: bool = False) -> Any:
        """As :meth:`Results.to_df`: the means per arm, or the per-query values with ``per_query``."""
        return _frame(self.measures, [(a.name, a.metrics, a.per_query) for a in self.arms], per_query=per_query)

    to_dataframe = to_df  # ranx's name


def _frame(measures: Sequence[str],
           arms: Sequence[tuple[str, Mapping[str, float | None], Mapping[str, Mapping[str, float]]]],
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
    """Read a ``results.json`` (the file, or its folder) into a :class:`StoredResults`.

    The one reader of results files. It checks that the file is JSON, of the bakeoff results schema
    at a version this bakeoff reads, that every number is finite and within a signed 64-bit range,
    and that it holds what readers rely on (:class:`StoredResults`: a cutoff, measures, arms with
    per-query values for every measure, unique arm names); any problem is one
    :class:`~bakeoff.errors.InputError` line naming the file and the field.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    try:
        obj = _read_json(p)
        _check_schema(obj, p)
        _check_numbers(obj, p, "")
    except RecursionError:
        raise InputError("JSON nested too deeply to read", path=p) from None
    return validate(StoredResults, obj, where=str(p), error=InputError)


def _read_json(p: Path) -> Any:
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such file", path=p) from None
    except IsADirectoryError:
        raise InputError("is a folder, expected results.json", path=p) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", path=p, line=exc.lineno) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=p) from None
    except ValueError as exc:  # an integer literal longer than Python's int-from-string limit
        raise InputError(f"invalid JSON: {str(exc).split(';')[0]}", path=p) from None


def _check_schema(obj: Any, p: Path) -> None:
    """The schema name and version, the arms a list of objects, and the counts whole numbers."""
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
