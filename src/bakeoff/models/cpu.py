"""What the CPU offers low-precision model code: native bfloat16 units and torch's kernel capability.

bf16 results depend on the kernels that computed them (AMX tiles, AVX512-BF16
or an emulation round differently), so every bf16 or OpenVINO identity, of a
bi-encoder or a cross-encoder, records :func:`cpu_capability`.
"""

from __future__ import annotations

__all__ = ["bf16_native", "cpu_capability"]


def bf16_native() -> bool:
    """True when this CPU has native bfloat16 matrix units (AMX or AVX512-BF16)."""
    try:
        import torch

        return bool(torch.cpu._is_amx_tile_supported() or torch.cpu._is_avx512_bf16_supported())
    except (ImportError, AttributeError, RuntimeError):
        return False


def cpu_capability() -> str:
    """torch's CPU kernel capability plus AMX (``AVX512+AMX``, ``AVX2`` ...): bf16 results depend on it."""
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
