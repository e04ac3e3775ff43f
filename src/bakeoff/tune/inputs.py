"""From ``bakeoff tune``'s inputs (a TOML file with ``[tune]`` and/or flags) to a sweep.

Flags override the file's ``[tune]`` keys; ``--param`` options replace ``[tune.params]`` as a
whole. Without a CONFIG, ``--beir`` and ``--arm`` define the bake-off as ``bakeoff run`` does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..runner.config import BakeoffConfig, load_config, parse_arm_spec
from .space import SearchSpace, parse_param
from .sweep import TuneOutput, TuneSpec, run_tune, tune_spec_from_table

__all__ = ["tune_from_inputs"]


def tune_from_inputs(*, config: Path | None, beir: Path | None, split: str = "test", arms: Sequence[str] = (),
                     tune_arm: str | None = None, params: Sequence[str] = (), dev: str | None = None,
                     search: str | None = None, trials: int | None = None, seed: int | None = None,
                     measure: str | None = None, drop_leaks: bool = False, k: int | None = None,
                     depth: int | None = None, out: Path | None = None, cache: Any = None, progress: bool = True,
                     n_resamples: int = 10_000, alpha: float = 0.05,
                     latency_sample: int | None = None, averaging: str | None = None,
                     relevance_level: int | None = None) -> TuneOutput:
    """Build the bake-off and the sweep from the inputs (module docstring), then :func:`run_tune`."""
    from ..data.datasets import DatasetSpec

    if config is not None:
        cfg = load_config(config)
        if arms:
            cfg = dataclasses.replace(cfg, arms=cfg.arms + tuple(parse_arm_spec(a) for a in arms))
        where = f"{config}: [tune]"
    else:
        if beir is None or not arms:
            raise ConfigError("give a CONFIG.toml, or --beir FOLDER and at least one --arm")
        cfg = BakeoffConfig(dataset=DatasetSpec(beir=str(beir), split=split),
                            arms=tuple(parse_arm_spec(a) for a in arms))
        where = "bakeoff tune"
    table = dict(cfg.extra.get("tune") or {})
    if not isinstance(cfg.extra.get("tune", {}), dict):
        raise ConfigError(f"{where}: [tune] must be a table")
    for key, value in (("arm", tune_arm), ("dev", dev), ("search", search), ("trials", trials), ("seed", seed),
                       ("measure", measure)):
        if value is not None:
            table[key] = value
    if drop_leaks:
        table["drop_leaks"] = True
    if params:
        parsed = [parse_param(p) for p in params]
        names = [n for n, _ in parsed]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup:
            raise ConfigError(f"--param {dup!r} given twice")
        table["params"] = dict(parsed)
    if "arm" not in table:
        if len(cfg.arms) != 1:
            raise ConfigError(f"{where}: say which arm to tune (--tune NAME); arms: "
                              + ", ".join(a.name for a in cfg.arms))
        table["arm"] = cfg.arms[0].name
    if "params" not in table:
        raise ConfigError(f"{where}: nothing to tune: give --param NAME=v1,v2,... or a [tune.params] table")
    spec: TuneSpec = tune_spec_from_table(table, where=where)
    if k is not None or depth is not None:
        k_ = k if k is not None else cfg.k
        cfg = dataclasses.replace(cfg, k=k_, depth=max(k_, depth if depth is not None else cfg.depth))
    if averaging is not None:
        cfg = dataclasses.replace(cfg, averaging=averaging)
    if relevance_level is not None:
        cfg = dataclasses.replace(cfg, relevance_level=relevance_level)
    assert isinstance(spec.space, SearchSpace)
    return run_tune(cfg, spec, cache=cache, out=out or (Path(cfg.out) if cfg.out else None), progress=progress,
                    n_resamples=n_resamples, alpha=alpha, latency_sample=latency_sample)
