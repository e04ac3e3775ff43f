"""Configuration: ``--arm`` specifications, TOML bake-off files (the dataset source is a
:class:`bakeoff.data.datasets.DatasetSpec`).

Arm specification grammar (CLI ``--arm`` and TOML ``[[arms]]`` tables)::

    [NAME=]TYPE[:key=value[,key=value...]]

e.g. ``bm25``, ``bm25:stemmer=english``, ``hyb=rrf:arms=bm25+dense,rank_constant=60``.
Values parse as int, float, ``true``/``false``, ``none``, else string. The
default name is the specification text itself. Arms may name other arms
(``arms=a+b``, ``base=a``); the factory resolves those names to arm objects.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator

from ..arms.base import Arm
from ..arms.registry import arm_type, resolve_references, validate_options
from ..data.chunking import ChunkSpec
from ..data.clean import CleanOptions
from ..data.datasets import DatasetSpec
from ..data.loaders import FieldMap
from ..errors import BakeoffError, ConfigError
from ..validation import (
    Fraction,
    NonNegative,
    NonNegativeInt,
    OpenSchema,
    Positive,
    PositiveInt,
    Schema,
    toml_key_line,
    validate,
)

__all__ = ["DEFAULT_DEPTH", "ArmSpec", "BakeoffConfig", "build_arms", "command_config", "load_config", "parse_arm_spec",
           "parse_value"]

#: Documents each arm retrieves per query unless told (``--depth``, ``[run] depth``): 1,000, as BEIR, TREC and
#: MTEB retrieve, so that MAP, recall@1000 and bpref compare with theirs and the written runs can be pooled.
#: Cost measured by ``benchmarks/depth_cost.py`` (docs/benchmarks.md#retrieval-depth).
DEFAULT_DEPTH = 1000


def parse_value(text: str) -> Any:
    """``"10"`` -> 10, ``"0.5"`` -> 0.5, ``"true"`` -> True, ``"none"`` -> None, else the string."""
    low = text.strip().lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    if low in ("none", "null"):
        return None
    if re.fullmatch(r"[+-]?\d+", low):
        return int(low)
    try:
        return float(low)
    except ValueError:
        return text.strip()


@dataclass(frozen=True)
class ArmSpec:
    """A parsed arm specification: display name, arm type and keyword options."""

    name: str
    type: str
    options: Mapping[str, Any] = field(default_factory=dict)


def parse_arm_spec(spec: str) -> ArmSpec:
    """Parse ``[NAME=]TYPE[:key=value,...]`` (see module docstring)."""
    text = spec.strip()
    head, _, rest = text.partition(":")
    name: str | None = None
    if "=" in head:
        name, _, head = head.partition("=")
        name = name.strip()
    type_name = head.strip().lower()
    if not type_name or not re.fullmatch(r"[a-z][a-z0-9_\-]*", type_name):
        raise ConfigError(f"--arm {spec!r}: expected [NAME=]TYPE[:key=value,...]")
    options: dict[str, Any] = {}
    if rest.strip():
        for part in rest.split(","):
            key, eq, value = part.partition("=")
            if not eq or not key.strip():
                raise ConfigError(f"--arm {spec!r}: option {part!r} is not key=value")
            if key.strip() in options:
                raise ConfigError(f"--arm {spec!r}: option {key.strip()!r} given twice")
            options[key.strip()] = parse_value(value)
    if name is not None and not name:
        raise ConfigError(f"--arm {spec!r}: empty NAME before '='")
    options = validate_options(type_name, options, where=f"--arm {spec!r}")
    default_name = text.partition("=")[2].strip() if name else text
    return ArmSpec(name or default_name, type_name, options)


def build_arms(specs: Sequence[ArmSpec]) -> list[Arm]:
    """Instantiate arms in order; options naming earlier arms (``arms=a+b``, ``base=a``)
    are resolved to those arm objects. Unknown types and bad options are ConfigErrors
    (every spec is validated before the first arm is built, so a bad last arm costs nothing)."""
    checked: list[tuple[ArmSpec, dict[str, Any]]] = []
    names: set[str] = set()
    for spec in specs:
        if spec.name in names:
            raise ConfigError(f"two arms are named {spec.name!r}; give one a NAME= prefix")
        names.add(spec.name)
        checked.append((spec, validate_options(spec.type, spec.options, where=f"arm {spec.name!r} ({spec.type})")))
    built: dict[str, Arm] = {}
    for spec, opts in checked:
        factory = arm_type(spec.type)
        assert factory is not None  # validate_options refused unknown types
        opts = resolve_references(opts, built, where=f"arm {spec.name!r}")
        try:
            arm = factory(name=spec.name, **opts)
        except TypeError as exc:
            raise ConfigError(f"arm {spec.name!r} ({spec.type}): {exc}") from None
        built[spec.name] = arm
    return list(built.values())


@dataclass(frozen=True)
class BakeoffConfig:
    """A whole bake-off: dataset, arms, cutoff, measures, output folder, cache policy."""

    dataset: DatasetSpec
    arms: tuple[ArmSpec, ...]
    k: int = 10
    depth: int = DEFAULT_DEPTH
    measures: tuple[str, ...] | None = None
    out: str | None = None
    cache: str = "use"
    extra: Mapping[str, Any] = field(default_factory=dict)
    hourly_rate: float | None = None
    latency_sample: int = 50
    latency_seed: int = 0
    ignore_identical_ids: bool | None = None
    max_empty_share: float = 0.5
    fail_under: Mapping[str, float] = field(default_factory=dict)
    averaging: str = "bakeoff"
    relevance_level: int = 1


def _resolve(base: Path, value: Any) -> Any:
    if isinstance(value, str) and value and not value.startswith(("irds:", "http://", "https://")):
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else (base / p))
    return value


# The TOML schema: one model per table. Keys, types and ranges are declared here; validate() turns
# any violation into one line naming the file, the line of the key and the key path.


def _measure(text: str) -> str:
    """A measure name that :func:`bakeoff.metrics.parse_measure` accepts, printed back canonically."""
    from ..metrics import parse_measure

    try:
        return str(parse_measure(text))
    except (ValueError, BakeoffError) as exc:
        raise ValueError(str(exc).replace("\n", " ")) from None


Measure = Annotated[str, AfterValidator(_measure)]


class FieldsTable(Schema):
    """``[dataset.fields]``: the record fields of a JSONL/CSV/Parquet corpus (:class:`FieldMap`)."""

    id: str = "id"
    text: str | list[str] = "text"
    title: str | None = "title"
    metadata: list[str] | None = None


class CleanTable(Schema):
    """``[dataset.clean]`` (:class:`CleanOptions`)."""

    strip_html: bool = False
    normalize_space: bool = False
    dedupe: bool = False
    min_chars: NonNegativeInt = 0


class DatasetTable(Schema):
    """``[dataset]`` (:class:`bakeoff.data.datasets.DatasetSpec`)."""

    beir: str | None = None
    irds: str | None = None
    corpus: str | None = None
    queries: str | None = None
    qrels: str | None = None
    split: str = "test"
    name: str | None = None
    fields: FieldsTable = FieldsTable()
    clean: CleanTable = CleanTable()
    chunk: dict[str, Any] | None = None


class RunSettingsTable(Schema):
    """``[run]``: cutoff, depth, measures, output folder, cache policy, cost and latency settings."""

    k: PositiveInt = 10
    depth: PositiveInt | None = None
    measures: list[Measure] | None = None
    out: str | None = None
    cache: Literal["use", "refresh", "off"] = "use"
    hourly_rate: NonNegative | None = None
    latency_sample: NonNegativeInt = 50
    latency_seed: int = 0
    #: guards and the CI floor (:mod:`bakeoff.runner.guards`, :func:`bakeoff.report.gate.fail_under`)
    ignore_identical_ids: bool | None = None
    max_empty_share: Fraction = 0.5
    fail_under: dict[str, float] = {}  # noqa: RUF012 - pydantic copies a field's default per instance
    #: which queries are averaged and the relevance level (:mod:`bakeoff.metrics`)
    averaging: Literal["bakeoff", "trec_eval", "trec_eval-c", "intersection"] = "bakeoff"
    relevance_level: int = 1


class EngineTable(Schema):
    """``[engine]``: the Ray engine (:class:`bakeoff.engine.ray_engine.RayEngine`)."""

    ray: str
    actors: PositiveInt = 2
    num_cpus: PositiveInt | None = None
    cpus_per_actor: Positive = 1.0
    object_store_memory: PositiveInt | None = None


class ArmTable(OpenSchema):
    """``[[arms]]``: ``type``, optional ``name``; the other keys are the arm type's options
    (validated by the arm's own schema, :func:`bakeoff.arms.registry.validate_options`)."""

    type: str
    name: str | None = None


class ConfigFile(Schema):
    """A whole bake-off TOML file."""

    dataset: DatasetTable
    run: RunSettingsTable = RunSettingsTable()
    arms: list[ArmTable] | None = None
    arm: list[ArmTable] | None = None
    engine: Literal["local", "ray"] | EngineTable | None = None
    #: ``bakeoff tune``'s sweep (checked by :func:`bakeoff.tune.sweep.tune_spec_from_table`).
    tune: dict[str, Any] | None = None


def load_config(path: str | Path) -> BakeoffConfig:
    """Read a bake-off TOML file; relative paths resolve against the file's folder.

    Layout (every table and key is declared in the schema above; anything else is an error
    naming the closest valid key)::

        [dataset]               # beir = "PATH" | irds = "NAME" | corpus/queries/qrels = "PATH"
        split = "test"
        [dataset.fields]        # for JSONL/CSV/Parquet corpora: id, text (list), title, metadata
        [dataset.clean]         # strip_html, normalize_space, dedupe, min_chars
        [dataset.chunk]         # tokens|sentences|paragraphs = N, overlap, tokenizer, aggregate (maxp|firstp)
        [run]                   # k, depth, measures, out, cache, hourly_rate, latency_sample, latency_seed,
                                # ignore_identical_ids, max_empty_share, fail_under = {"ndcg@10" = 0.6},
                                # averaging, relevance_level
        [engine]                # ray = "auto"|ADDRESS|"local", actors, num_cpus, cpus_per_actor
        [tune]                  # bakeoff tune: arm, params, search ... (bakeoff.tune)
        [[arms]]                # name, type, then the arm's options
    """
    path = Path(path)
    text, raw = _read_toml(path)

    def line_of(key: tuple[str | int, ...]) -> int | None:
        return toml_key_line(text, key)

    doc: ConfigFile = validate(ConfigFile, raw, where=str(path), line_of=line_of)
    dspec = _dataset_spec(doc.dataset, path, line_of)
    arms = _arm_specs(doc, path, line_of)
    return _bakeoff_config(doc, dspec, arms, base=path.parent)


_LineOf = Callable[[tuple[str | int, ...]], int | None]


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    """The text of the TOML file ``path`` and its parsed tables (each failure a :class:`ConfigError`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("no such file", path=path) from None
    except IsADirectoryError:
        raise ConfigError("is a folder; expected a TOML file", path=path) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid UTF-8 (byte {exc.start})", path=path) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        raise ConfigError(f"invalid TOML: {exc!s}", path=path, line=int(m.group(1)) if m else None) from None
    return text, raw


def _dataset_spec(ds: DatasetTable, path: Path, line_of: _LineOf) -> DatasetSpec:
    """The ``[dataset]`` table as a :class:`DatasetSpec`, its paths resolved against ``path``'s folder and checked."""
    base = path.parent
    chunk = None
    if ds.chunk is not None:  # [dataset.chunk]: passages (bakeoff.data.chunking)
        line = line_of(("dataset", "chunk"))
        chunk = ChunkSpec.from_mapping(ds.chunk, where=f"{path}{f':{line}' if line else ''}: [dataset.chunk]")
    text_fields = [ds.fields.text] if isinstance(ds.fields.text, str) else list(ds.fields.text)
    if not text_fields:
        raise ConfigError("needs at least one text field", path=path, line=line_of(("dataset", "fields", "text")),
                          field="dataset.fields.text")
    fields = FieldMap(id=ds.fields.id, text=tuple(text_fields), title=ds.fields.title,
                      metadata=None if ds.fields.metadata is None else tuple(ds.fields.metadata))
    clean = CleanOptions(**ds.clean.model_dump())
    sources = {key: _resolve(base, getattr(ds, key)) for key in ("beir", "corpus", "queries", "qrels")
               if getattr(ds, key) is not None}
    for key, value in sources.items():
        if not Path(value).exists() and not Path(value).is_symlink():
            raise ConfigError(f"dataset.{key}: {value!r} does not exist", path=path,
                              line=line_of(("dataset", key)))
    if not (sources.get("beir") or ds.irds or sources.get("corpus")):
        raise ConfigError("[dataset] needs beir = \"PATH\", irds = \"NAME\" or corpus = \"PATH\"", path=path,
                          line=line_of(("dataset",)), field="dataset")
    return DatasetSpec(irds=ds.irds, split=ds.split, name=ds.name, fields=fields, clean=clean, chunk=chunk, **sources)


def _arm_specs(doc: ConfigFile, path: Path, line_of: _LineOf) -> list[ArmSpec]:
    """The ``[[arms]]`` (or ``[[arm]]``) tables as :class:`ArmSpec`, each checked by its arm type's schema."""
    base = path.parent
    tables = doc.arms if doc.arms is not None else doc.arm
    key = "arms" if doc.arms is not None else "arm"
    if not tables:
        raise ConfigError("no [[arms]] tables", path=path)
    arms: list[ArmSpec] = []
    for i, table in enumerate(tables):
        type_name = table.type.strip().lower()
        name = table.name if table.name is not None else type_name
        opts = dict(table.model_extra or {})
        if isinstance(opts.get("arms"), list):
            opts["arms"] = "+".join(str(a) for a in opts["arms"])
        for ref in ("model", "path"):
            if ref in opts and isinstance(opts[ref], str) and (opts[ref].startswith(".") or "/" in opts[ref]):
                candidate = base / opts[ref]
                if candidate.exists():
                    opts[ref] = str(candidate)
        opts = validate_options(type_name, opts, where=str(path), context=f"[[{key}]] #{i + 1} ({type_name} {name!r})",
                                line_of=line_of, line_prefix=(key, i))
        arms.append(ArmSpec(name, type_name, opts))
    return arms


def _bakeoff_config(doc: ConfigFile, dspec: DatasetSpec, arms: list[ArmSpec], *, base: Path) -> BakeoffConfig:
    """The :class:`BakeoffConfig` of a checked file: its dataset and arms with the ``[run]`` and ``[engine]`` settings."""
    run = doc.run
    extra: dict[str, Any] = {}
    if doc.engine is not None:
        extra["engine"] = doc.engine if isinstance(doc.engine, str) else doc.engine.model_dump(exclude_none=True)
    if doc.tune is not None:
        extra["tune"] = doc.tune
    return BakeoffConfig(
        dataset=dspec,
        arms=tuple(arms),
        k=run.k,
        depth=run.depth if run.depth is not None else max(DEFAULT_DEPTH, run.k),
        measures=None if run.measures is None else tuple(run.measures),
        out=_resolve(base, run.out) if run.out is not None else None,
        cache=run.cache,
        extra=extra,
        hourly_rate=run.hourly_rate,
        latency_sample=run.latency_sample,
        latency_seed=run.latency_seed,
        ignore_identical_ids=run.ignore_identical_ids,
        max_empty_share=run.max_empty_share,
        fail_under=dict(run.fail_under),
        averaging=run.averaging,
        relevance_level=run.relevance_level,
    )


def command_config(config: str | Path | None, arms: Sequence[str], dataset: DatasetSpec) -> BakeoffConfig:
    """The bake-off ``bakeoff run`` runs: the TOML file ``config`` with the ``--arm`` specs ``arms`` added after
    its own, or (no file) ``dataset`` searched by ``arms``, which must then name at least one arm."""
    if config is not None:
        cfg = load_config(config)
        if arms:
            cfg = BakeoffConfig(**{**cfg.__dict__, "arms": cfg.arms + tuple(parse_arm_spec(a) for a in arms)})
        return cfg
    if not arms:
        raise ConfigError("give a CONFIG.toml or at least one --arm")
    return BakeoffConfig(dataset=dataset, arms=tuple(parse_arm_spec(a) for a in arms))




def check_unique(names: Sequence[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise BakeoffError(f"duplicate arm name {n!r}")
        seen.add(n)
