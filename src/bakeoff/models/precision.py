"""The numeric precisions and runtimes a model can run in, shared by bi-encoders and cross-encoders.

``backend`` is the runtime: ``torch`` (PyTorch, the reference) or
``openvino`` (the model traced and compiled by OpenVINO). ``precision`` is
``fp32`` (exact reference), ``bf16`` (bfloat16 products with fp32
accumulation; the default of the OpenVINO backend) or ``int8`` (an int8 ONNX
graph run by ONNX Runtime on the PyTorch backend; with ``openvino``, cross-encoders
only: static int8 calibrated on the corpus, :mod:`.cross_encoders.static_int8`).
"""

from __future__ import annotations

from ..errors import ConfigError

__all__ = ["BACKENDS", "PRECISIONS", "choose_precision"]

PRECISIONS = ("fp32", "bf16", "int8")
BACKENDS = ("torch", "openvino")


def choose_precision(what: str, *, precision: str | None, backend: str | None) -> tuple[str, str]:
    """``(precision, backend)`` lower-cased with their defaults, or a :class:`ConfigError` naming ``what``
    (``dense``, ``rerank``) for an unknown value or ``openvino`` + ``int8`` outside ``rerank``."""
    backend_name = str(backend or "torch").lower()
    if backend_name not in BACKENDS:
        raise ConfigError(f"{what} backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    chosen = str(precision or ("bf16" if backend_name == "openvino" else "fp32")).lower()
    if chosen not in PRECISIONS:
        raise ConfigError(f"{what} precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if backend_name == "openvino" and chosen == "int8" and what != "rerank":
        raise ConfigError(f"{what} backend=openvino runs precision fp32 or bf16 (int8 is the ONNX Runtime build)")
    return chosen, backend_name
