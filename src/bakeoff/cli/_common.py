"""Helpers shared by CLI commands."""

from __future__ import annotations

import logging
from pathlib import Path

from ..cache import Cache, default_cache_dir
from ..errors import ConfigError

log = logging.getLogger("bakeoff")


def make_cache(policy: str, cache_dir: Path | None) -> Cache | None:
    if policy not in ("use", "refresh", "off"):
        raise ConfigError(f"--cache must be use, refresh or off, got {policy!r}")
    if policy == "off":
        return None
    return Cache(cache_dir or default_cache_dir(), policy=policy)  # type: ignore[arg-type]


def warn_all(lines: list[str]) -> None:
    for line in lines:
        log.warning(line)
