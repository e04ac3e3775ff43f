"""OpenVINO plumbing shared by the fast dense encoder and the fast cross-encoder.

:func:`compile_module` traces a PyTorch module (``openvino.convert_model``,
dynamic batch and sequence axes) and compiles it for the CPU with

- ``INFERENCE_PRECISION_HINT`` ``bf16`` (products in bfloat16 with fp32
  accumulation, on AMX tiles where present; fp32 elsewhere) or ``f32``;
- ``PERFORMANCE_HINT=THROUGHPUT``: one single-threaded stream per core, so
  the cores work on different batches instead of splitting small products.

:func:`infer_batches` runs a list of input batches through an asynchronous
request queue and returns the first output of each, in input order. A
batch's result depends only on its own inputs, whichever stream ran it.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import MissingDependencyError

__all__ = ["OV_PRECISIONS", "compile_module", "import_openvino", "infer_batches", "output_module",
           "token_count_order"]

#: bakeoff precision name -> OpenVINO ``INFERENCE_PRECISION_HINT``.
OV_PRECISIONS = {"fp32": "f32", "bf16": "bf16"}


def import_openvino(purpose: str) -> Any:
    """``import openvino`` or a :class:`MissingDependencyError` naming the ``fast`` extra."""
    try:
        import openvino
    except ImportError:
        raise MissingDependencyError("openvino", "fast", purpose) from None
    return openvino


def output_module(hf_model: Any, input_names: Sequence[str], output: str) -> Any:
    """A ``torch.nn.Module`` mapping the tokenizer's tensors to one field of ``hf_model``'s output
    (``last_hidden_state`` for an encoder, ``logits`` for a cross-encoder); traceable."""
    import torch

    class Output(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = hf_model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> Any:
            kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
            if "token_type_ids" in input_names:
                kwargs["token_type_ids"] = token_type_ids
            return getattr(self.inner(**kwargs, return_dict=True), output)

    return Output().eval()


def compile_module(
    module: Any,
    example: Mapping[str, Any],
    *,
    precision: str,
    streams: int | None = None,
    purpose: str,
) -> Any:
    """Trace ``module(**example)`` (int64 inputs of shape ``[batch, seq]``) and compile it for the CPU."""
    ov = import_openvino(purpose)
    import torch

    names = list(example)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about Python booleans in attention code
        model = ov.convert_model(module, example_input=dict(example),
                                 input=[(n, [-1, -1], ov.Type.i64) for n in names])
    config = {"INFERENCE_PRECISION_HINT": OV_PRECISIONS[precision], "PERFORMANCE_HINT": "THROUGHPUT"}
    if streams is not None:
        config["NUM_STREAMS"] = str(int(streams))
    return ov.Core().compile_model(model, "CPU", config)


def infer_batches(compiled: Any, feeds: Sequence[Mapping[str, np.ndarray]]) -> list[np.ndarray]:
    """The first output of ``compiled`` for each feed dict, in order (async, all streams busy)."""
    import openvino as ov

    results: list[np.ndarray | None] = [None] * len(feeds)

    def done(request: Any, index: int) -> None:
        results[index] = request.get_output_tensor(0).data.copy()

    queue = ov.AsyncInferQueue(compiled, max(1, int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))))
    queue.set_callback(done)
    for i, feed in enumerate(feeds):
        queue.start_async({k: np.ascontiguousarray(v, dtype=np.int64) for k, v in feed.items()}, i)
    queue.wait_all()
    missing = [i for i, r in enumerate(results) if r is None]
    if missing:
        raise RuntimeError(f"OpenVINO returned no output for batch(es) {missing[:5]}")
    return [r for r in results if r is not None]


def token_count_order(counts: Sequence[int]) -> np.ndarray:
    """Permutation putting items in descending token count (stable): batches with least padding."""
    return np.argsort(-np.asarray(counts, dtype=np.int64), kind="stable")
