"""Execution engines for expensive stages (corpus encoding) beyond one process.

An engine is optional per-run state, passed to arms as ``ctx.extras["engine"]``.
The local path (no engine) is the reference: an engine must produce exactly the
same rows. :func:`make_engine` builds one from the CLI's ``--engine`` or a TOML
``[engine]`` table; only :mod:`.ray_engine` exists today.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..environment import RAY_ADDRESS
from ..errors import ConfigError

__all__ = ["make_engine"]


def make_engine(spec: str | Mapping[str, Any] | None, *, address: str | None = None) -> Any:
    """``None``/``"local"`` -> None (in-process); ``"ray"`` (address: ``address``, ``$RAY_ADDRESS``, else a
    local cluster) or ``{"ray": "auto"|ADDRESS|"local", ...}`` -> a RayEngine.

    TOML: ``[engine]`` with ``ray = "auto"`` (join the running cluster), ``ray = "ray://host:10001"``
    or ``ray = "local"`` (start a local one); optional ``actors`` and ``num_cpus``.
    """
    if spec is None or spec == "local":
        return None
    if isinstance(spec, str):
        if spec != "ray":
            raise ConfigError(f"--engine must be local or ray, got {spec!r}")
        spec = {"ray": address or RAY_ADDRESS.get() or "local"}
    opts = dict(spec)
    if "ray" not in opts:
        raise ConfigError(f"[engine]: expected ray = \"auto\"|ADDRESS|\"local\", got keys {sorted(opts)}")
    from .ray_engine import RayEngine

    addr = address or opts.pop("ray")
    opts.pop("ray", None)
    try:
        return RayEngine(address=str(addr), **opts)
    except TypeError as exc:
        raise ConfigError(f"[engine]: {exc}") from None
