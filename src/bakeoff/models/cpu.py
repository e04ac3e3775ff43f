"""What the CPU offers low-precision model code: native bfloat16 units and torch's kernel capability.

bf16 results depend on the kernels that computed them (AMX tiles, AVX512-BF16
or an emulation round differently), so every bf16 or OpenVINO identity, of a
bi-encoder or a cross-encoder, records :func:`cpu_capability`.

Reading the capability needs ``import torch`` (~0.8 s), which a warm re-run (every
embedding already cached) would otherwise pay only to build its cache keys. So the
answer is remembered on disk, in ``<default cache dir>/cpu-capability/<key>.txt``, where
the key hashes everything that decides it: torch's version, ``ATEN_CPU_CAPABILITY``
(torch's override), the machine type and the CPU's feature flags (``/proc/cpuinfo``).
A different CPU or torch gets a different file; an unreadable or unwritable folder only
means torch is imported.
"""

from __future__ import annotations

import hashlib
import platform
from functools import lru_cache
from pathlib import Path

from ..environment import ATEN_CPU_CAPABILITY

__all__ = ["bf16_native", "cpu_capability"]


def bf16_native() -> bool:
    """True when this CPU has native bfloat16 matrix units (AMX or AVX512-BF16)."""
    try:
        import torch

        return bool(torch.cpu._is_amx_tile_supported() or torch.cpu._is_avx512_bf16_supported())
    except (ImportError, AttributeError, RuntimeError):
        return False


def _cpu_flags() -> str:
    """The CPU feature flags of the first processor in ``/proc/cpuinfo`` ("" where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(("flags", "Features")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _memo_path() -> Path | None:
    """Where the capability of this (torch, CPU) pair is remembered; ``None`` without torch."""
    from importlib.metadata import PackageNotFoundError, version

    from ..cache import default_cache_dir

    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        return None
    key = f"{torch_version}\n{ATEN_CPU_CAPABILITY.get()}\n{platform.machine()}\n{_cpu_flags()}"
    return default_cache_dir() / "cpu-capability" / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.txt"


def _capability_from_torch() -> str:
    try:
        import torch

        capability = str(torch.backends.cpu.get_cpu_capability())
    except (ImportError, AttributeError):
        return "unknown"
    try:
        amx = bool(torch.cpu._is_amx_tile_supported())
    except (AttributeError, RuntimeError):
        amx = False
    return f"{capability}+AMX" if amx else capability


@lru_cache(maxsize=1)
def cpu_capability() -> str:
    """torch's CPU kernel capability plus AMX (``AVX512+AMX``, ``AVX2`` ...): bf16 results depend on it.

    Read from the on-disk memo when present (see the module docstring), else from torch, then remembered."""
    path = _memo_path()
    if path is None:
        return _capability_from_torch()
    try:
        text = path.read_text(encoding="utf-8").strip()
        if text:
            return text
    except OSError:
        pass
    value = _capability_from_torch()
    if value != "unknown":
        from .._io import atomic_write_text

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, value + "\n")
        except OSError:
            pass
    return value
