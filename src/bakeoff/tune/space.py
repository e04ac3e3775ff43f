"""The search space of a sweep: which options of one arm vary, over which values.

A space maps option names of the tuned arm to either a **list of values** or a **range**
``{low, high[, log]}`` (random search only). Two searches:

* ``grid``: every combination, in *grid order*: the options in the order given, the last
  one varying fastest (``itertools.product``), each option's values in the order given.
  Ranges are refused (a grid needs lists).
* ``random``: ``trials`` settings drawn by ``numpy.random.default_rng(seed)``, each option
  independently and in the order given: a list -> one item, uniformly; a range with two
  integer bounds -> ``rng.integers(low, high + 1)``; a float range -> ``rng.uniform(low, high)``,
  or with ``log = true`` ``exp(rng.uniform(ln low, ln high))``. A setting drawn twice is kept
  once (its first draw); the trial order is the draw order.

Refused (:class:`~bakeoff.errors.ConfigError`, one line): no option, an option with an empty
list (an empty grid), an inverted range, ``trials < 1``, an option the arm does not have
(:func:`check_options`, against :func:`bakeoff.arms.registry.arm_type_info`, with the closest name
suggested).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arms.registry import WIRING, ArmTypeInfo
from ..errors import ConfigError
from ..validation import closest

__all__ = ["SEARCHES", "Range", "SearchSpace", "check_options", "parse_param"]

SEARCHES = ("grid", "random")


@dataclass(frozen=True)
class Range:
    """A continuous (or integer) interval for random search."""

    low: float
    high: float
    log: bool = False

    @property
    def integer(self) -> bool:
        return isinstance(self.low, int) and isinstance(self.high, int) and not self.log

    def draw(self, rng: np.random.Generator) -> Any:
        if self.integer:
            return int(rng.integers(int(self.low), int(self.high) + 1))
        if self.log:
            return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))
        return float(rng.uniform(self.low, self.high))

    def as_dict(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, **({"log": True} if self.log else {})}


def parse_param(text: str, *, where: str = "--param") -> tuple[str, list[Any] | Range]:
    """``NAME=v1,v2,...`` (a list) or ``NAME=LOW:HIGH`` / ``NAME=LOW:HIGH:log`` (a range)."""
    from ..runner.config import parse_value

    name, eq, rest = text.partition("=")
    name = name.strip()
    if not eq or not name:
        raise ConfigError(f"{where} {text!r}: expected NAME=v1,v2,... or NAME=LOW:HIGH")
    rest = rest.strip()
    if ":" in rest and "," not in rest:
        bits = rest.split(":")
        if len(bits) in (2, 3) and (len(bits) == 2 or bits[2].strip().lower() == "log"):
            lo, hi = parse_value(bits[0]), parse_value(bits[1])
            return name, _range(name, {"low": lo, "high": hi, "log": len(bits) == 3}, where=where)
    return name, [parse_value(v) for v in rest.split(",") if v.strip()] if rest else []


def _range(name: str, spec: Mapping[str, Any], *, where: str) -> Range:
    unknown = set(spec) - {"low", "high", "log"}
    if unknown or "low" not in spec or "high" not in spec:
        raise ConfigError(f"{where}: parameter {name!r}: a range is {{low = ..., high = ..., log = false}}")
    lo, hi, log = spec["low"], spec["high"], bool(spec.get("log", False))
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (lo, hi)):
        raise ConfigError(f"{where}: parameter {name!r}: range bounds must be numbers, got {lo!r}, {hi!r}")
    if not lo <= hi or (log and lo <= 0):
        raise ConfigError(f"{where}: parameter {name!r}: need low <= high{' and low > 0 (log)' if log else ''}, "
                          f"got {lo}..{hi}")
    return Range(lo, hi, log)


@dataclass(frozen=True)
class SearchSpace:
    """Options to vary (``name -> list of values | Range``, in order), the search and its budget."""

    params: tuple[tuple[str, tuple[Any, ...] | Range], ...]
    search: str = "grid"
    trials: int | None = None
    seed: int = 0

    @classmethod
    def build(cls, params: Mapping[str, Any] | Sequence[tuple[str, Any]], *, search: str = "grid",
              trials: int | None = None, seed: int = 0, where: str = "[tune]") -> SearchSpace:
        """Validate and freeze a space (lists from TOML arrays or :func:`parse_param`; ranges as
        :class:`Range` or ``{low, high, log}`` tables)."""
        items = list(params.items()) if isinstance(params, Mapping) else list(params)
        if search not in SEARCHES:
            raise ConfigError(f"{where}: search must be one of {', '.join(SEARCHES)}, got {search!r}")
        if not items:
            raise ConfigError(f"{where}: no parameter to tune (give at least one, e.g. k1 = [0.9, 1.2])")
        seen: set[str] = set()
        out: list[tuple[str, tuple[Any, ...] | Range]] = []
        for name, values in items:
            if name in seen:
                raise ConfigError(f"{where}: parameter {name!r} given twice")
            seen.add(name)
            if isinstance(values, Mapping):
                values = _range(name, values, where=where)
            if isinstance(values, Range):
                if search == "grid":
                    raise ConfigError(f"{where}: parameter {name!r} is a range; a grid needs a list of values "
                                      "(or use search = \"random\")")
                out.append((name, values))
                continue
            vals = tuple(values) if isinstance(values, (list, tuple)) else (values,)
            if not vals:
                raise ConfigError(f"{where}: parameter {name!r} has no values (an empty grid)")
            out.append((name, vals))
        if search == "random" and (trials is None or int(trials) < 1):
            raise ConfigError(f"{where}: random search needs trials >= 1, got {trials!r}")
        return cls(tuple(out), search, None if trials is None else int(trials), int(seed))

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.params]

    def settings(self) -> list[dict[str, Any]]:
        """The trials' option settings, in trial order (module docstring)."""
        if self.search == "grid":
            names = self.names
            grid = [v for _, v in self.params if not isinstance(v, Range)]  # build() refuses ranges in a grid
            return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*grid)]
        rng = np.random.default_rng(self.seed)
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for _ in range(self.trials or 0):
            s: dict[str, Any] = {}
            for name, v in self.params:
                s[name] = v.draw(rng) if isinstance(v, Range) else _item(v[int(rng.integers(len(v)))])
            key = repr(sorted(s.items()))
            if key not in seen:
                seen.add(key)
                out.append(s)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"search": self.search, "trials": self.trials, "seed": self.seed,
                "params": {n: (v.as_dict() if isinstance(v, Range) else list(v)) for n, v in self.params}}


def _item(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def check_options(space: SearchSpace, type_info: ArmTypeInfo, *, arm: str, where: str = "[tune]") -> None:
    """Every option of ``space`` must be one of the arm type's options (``type_info``); else a one-line
    error naming the closest option."""
    known = list(type_info.options)
    for name in space.names:
        if name in known:
            continue
        if name in WIRING:
            raise ConfigError(f"{where}: {name!r} wires arms together and cannot be tuned")
        close = closest(name, known)
        hint = f"did you mean {close!r}? " if close else ""
        raise ConfigError(f"{where}: arm {arm!r} ({type_info.name}) has no parameter {name!r}; {hint}"
                          f"its parameters: {', '.join(known)}")
