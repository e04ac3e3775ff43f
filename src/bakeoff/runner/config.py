"""Configuration: ``--arm`` specifications, TOML bake-off files (the dataset source is a
:class:`bakeoff.data.datasets.DatasetSpec`).

Arm specification grammar (CLI ``--arm`` and TOML ``[[arms]]`` tables)::

    [NAME=]TYPE[:key=value[,key=value...]]

e.g. ``bm25``, ``bm25:stemmer=english``, ``hyb=rrf:arms=bm25+dense,k=60``.
Values parse as int, float, ``true``/``false``, ``none``, else string. The
default name is the specification text itself. Arms may name other arms
(``arms=a+b``, ``base=a``); the factory resolves those names to arm objects.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..arms.base import Arm
from ..arms.registry import arm_types
from ..data.clean import CleanOptions
from ..data.datasets import DatasetSpec
from ..data.loaders import FieldMap
from ..errors import BakeoffError, ConfigError

__all__ = ["ArmSpec", "BakeoffConfig", "build_arms", "load_config", "parse_arm_spec", "parse_value"]


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
            options[key.strip()] = parse_value(value)
    default_name = text.partition("=")[2].strip() if name else text
    return ArmSpec(name or default_name, type_name, options)


def build_arms(specs: Sequence[ArmSpec]) -> list[Arm]:
    """Instantiate arms in order; options naming earlier arms (``arms=a+b``, ``base=a``)
    are resolved to those arm objects. Unknown types and bad options are ConfigErrors."""
    types = arm_types()
    built: dict[str, Arm] = {}
    for spec in specs:
        if spec.name in built:
            raise ConfigError(f"two arms are named {spec.name!r}; give one a NAME= prefix")
        factory = types.get(spec.type)
        if factory is None:
            raise ConfigError(f"unknown arm type {spec.type!r}; known: {', '.join(sorted(types))}")
        opts = dict(spec.options)
        for key in ("arms", "base"):
            if key in opts and isinstance(opts[key], str):
                names = [n.strip() for n in opts[key].split("+") if n.strip()]
                missing = [n for n in names if n not in built]
                if missing:
                    raise ConfigError(f"arm {spec.name!r}: {key}= names unknown arm(s) {missing}; define them first")
                resolved = [built[n] for n in names]
                opts[key] = resolved if key == "arms" else resolved[0]
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
    depth: int = 100
    measures: tuple[str, ...] | None = None
    out: str | None = None
    cache: str = "use"
    extra: Mapping[str, Any] = field(default_factory=dict)
    hourly_rate: float | None = None
    latency_sample: int = 50
    latency_seed: int = 0
    ignore_identical_ids: bool = False
    max_empty_share: float = 0.5
    fail_under: Mapping[str, float] = field(default_factory=dict)


def _resolve(base: Path, value: Any) -> Any:
    if isinstance(value, str) and value and not value.startswith(("irds:", "http://", "https://")):
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else (base / p))
    return value


def load_config(path: str | Path) -> BakeoffConfig:
    """Read a bake-off TOML file; relative paths resolve against the file's folder.

    Layout::

        [dataset]               # beir = "PATH" | irds = "NAME" | corpus/queries/qrels = "PATH"
        split = "test"
        [dataset.fields]        # for JSONL/CSV/Parquet corpora: id, text (list), title, metadata
        [dataset.clean]         # strip_html, normalize_space, dedupe, min_chars
        [dataset.chunk]         # tokens|sentences|paragraphs = N, overlap, tokenizer, aggregate (maxp|firstp)
        [run]                   # k, depth, measures, out, cache, hourly_rate, latency_sample, latency_seed,
                                # ignore_identical_ids, max_empty_share, fail_under = {"ndcg@10" = 0.6}
        [[arms]]                # name, type, then the arm's options
    """
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    base = path.parent
    ds = dict(raw.get("dataset") or {})
    if not ds:
        raise ConfigError(f"{path}: missing [dataset] table")
    try:
        fields_raw = ds.pop("fields", {}) or {}
        if "text" in fields_raw and isinstance(fields_raw["text"], str):
            fields_raw["text"] = [fields_raw["text"]]
        fields = FieldMap(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in fields_raw.items()})  # type: ignore[arg-type]
        clean = CleanOptions(**(ds.pop("clean", {}) or {}))
        if ds.get("chunk") is not None:  # [dataset.chunk]: passages (bakeoff.ingest.chunking)
            from ..ingest.chunking import ChunkSpec

            ds["chunk"] = ChunkSpec.from_mapping(ds["chunk"], where=f"{path}: [dataset.chunk]")
        for key in ("beir", "corpus", "queries", "qrels"):
            if key in ds:
                ds[key] = _resolve(base, ds[key])
        dspec = DatasetSpec(fields=fields, clean=clean, **ds)
    except TypeError as exc:
        raise ConfigError(f"{path}: [dataset]: {exc}") from None
    arms: list[ArmSpec] = []
    for i, table in enumerate(raw.get("arms") or raw.get("arm") or [], start=1):
        t = dict(table)
        if "type" not in t:
            raise ConfigError(f"{path}: [[arms]] #{i}: missing 'type'")
        type_name = str(t.pop("type")).lower()
        name = str(t.pop("name", type_name))
        if isinstance(t.get("arms"), list):
            t["arms"] = "+".join(t["arms"])
        for key in ("model", "path"):
            if key in t and isinstance(t[key], str) and (t[key].startswith(".") or "/" in t[key]):
                candidate = base / t[key]
                if candidate.exists():
                    t[key] = str(candidate)
        arms.append(ArmSpec(name, type_name, t))
    if not arms:
        raise ConfigError(f"{path}: no [[arms]] tables")
    run = dict(raw.get("run") or {})
    known = {"k", "depth", "measures", "out", "cache", "hourly_rate", "latency_sample", "latency_seed",
             "ignore_identical_ids", "max_empty_share", "fail_under"}
    extra = {k: v for k, v in raw.items() if k not in ("dataset", "arms", "arm", "run")}
    unknown = set(run) - known
    if unknown:
        raise ConfigError(f"{path}: [run]: unknown keys {sorted(unknown)}")
    return BakeoffConfig(
        dataset=dspec,
        arms=tuple(arms),
        k=int(run.get("k", 10)),
        depth=int(run.get("depth", max(100, int(run.get("k", 10))))),
        measures=tuple(run["measures"]) if "measures" in run else None,
        out=_resolve(base, run["out"]) if "out" in run else None,
        cache=str(run.get("cache", "use")),
        extra=extra,
        hourly_rate=float(run["hourly_rate"]) if "hourly_rate" in run else None,
        latency_sample=int(run.get("latency_sample", 50)),
        latency_seed=int(run.get("latency_seed", 0)),
        ignore_identical_ids=_flag(run.get("ignore_identical_ids", False), f"{path}: [run] ignore_identical_ids"),
        max_empty_share=float(run.get("max_empty_share", 0.5)) if isinstance(run.get("max_empty_share", 0.5),
                                                                              (int, float)) else _bad_share(path),
        fail_under=_floors(run.get("fail_under", {}), path),
    )


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    return value


def _bad_share(path: Path) -> float:
    raise ConfigError(f"{path}: [run] max_empty_share must be a number between 0 and 1")


def _floors(value: Any, path: Path) -> dict[str, float]:
    """``[run] fail_under = {"ndcg@10" = 0.6}`` (a table of measure -> minimum mean)."""
    if not isinstance(value, Mapping) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                 for v in value.values()):
        raise ConfigError(f"{path}: [run] fail_under must be a table of measure = minimum, e.g. "
                          '{ "ndcg@10" = 0.6 }')
    return {str(k): float(v) for k, v in value.items()}


def check_unique(names: Sequence[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise BakeoffError(f"duplicate arm name {n!r}")
        seen.add(n)
