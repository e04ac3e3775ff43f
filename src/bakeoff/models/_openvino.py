"""OpenVINO plumbing shared by the fast dense encoder and the fast cross-encoder.

:func:`compile_module` traces a PyTorch module (``openvino.convert_model``,
dynamic batch and sequence axes) and compiles it for the CPU with

- ``INFERENCE_PRECISION_HINT`` ``bf16`` (products in bfloat16 with fp32
  accumulation, on AMX tiles where present; fp32 elsewhere) or ``f32``;
- ``PERFORMANCE_HINT=THROUGHPUT``: one single-threaded stream per core, so
  the cores work on different batches instead of splitting small products
  (stream threads pinned to cores, the plugin's default: 15-30 % faster than
  unpinned here even on a loaded machine).

:func:`compile_module` with a ``cache_key`` keeps the converted model across
processes: the OpenVINO IR (``model.xml`` + ``model.bin``, fp32 weights as
traced) lives in ``<cache>/openvino/<sha256 of key + openvino version + input
names>/``, written into a temporary sibling folder and moved in with one
``os.replace`` (a crashed or concurrent writer never leaves a half model; the
loser of a race discards its copy). The next process reads the IR instead of
tracing (~3 s for MiniLM, counted by :func:`conversions`). Compiled blobs are
*not* cached (OpenVINO's ``CACHE_DIR``): a model imported from that cache hung
at destruction in 2 of 4 test runs here (a stream thread waiting for the GIL
that the destructor's thread join holds), so each process compiles the IR.

:func:`infer_unordered` runs a list of input batches through a pool of
asynchronous infer requests (more in flight than streams; no Python callbacks
on OpenVINO's threads) and yields the first output of each as it completes, so
the caller can post-process one batch while the streams compute the next;
:func:`infer_batches` collects them in input order. A batch's result depends
only on its own inputs, whichever stream ran it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._io import written_by_library
from ..errors import MissingDependencyError

__all__ = ["OV_PRECISIONS", "cached_model", "compile_config", "compile_module", "conversions", "import_openvino",
           "infer_batches", "infer_unordered", "model_folder", "output_module", "save_model", "token_count_order",
           "traced_model"]

_CONVERSIONS = [0]


def conversions() -> int:
    """How many PyTorch -> OpenVINO conversions (traces) this process has run."""
    return _CONVERSIONS[0]


def _cache_root(cache_dir: Path | None) -> Path:
    from ..cache import default_cache_dir

    return Path(cache_dir) if cache_dir is not None else default_cache_dir() / "openvino"


def model_folder(cache_key: Mapping[str, Any], names: Sequence[str], *, cache_dir: Path | None = None) -> Path:
    """The folder of the converted model for ``cache_key`` (the model's identity) and input ``names``."""
    from ..library_versions import version_of

    blob = json.dumps({"key": cache_key, "inputs": list(names), "openvino": version_of("openvino"), "format": 1},
                      sort_keys=True, default=str)
    return _cache_root(cache_dir) / hashlib.sha256(blob.encode()).hexdigest()[:32]

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
    cache_key: Mapping[str, Any] | None = None,
    cache_dir: Path | None = None,
) -> Any:
    """Trace ``module(**example)`` (int64 inputs of shape ``[batch, seq]``) and compile it for the CPU;
    with ``cache_key``, the traced model is read from / written to the cross-process cache."""
    ov = import_openvino(purpose)
    model = traced_model(module, example, purpose=purpose, cache_key=cache_key, cache_dir=cache_dir)
    return ov.Core().compile_model(model, "CPU", compile_config(precision, streams=streams))


def traced_model(module: Any, example: Mapping[str, Any], *, purpose: str,
                 cache_key: Mapping[str, Any] | None = None, cache_dir: Path | None = None) -> Any:
    """The ``openvino.Model`` of ``module`` (see :func:`compile_module`), not compiled."""
    ov = import_openvino(purpose)
    names = list(example)
    model = cached_model(cache_key, names, cache_dir=cache_dir) if cache_key is not None else None
    if model is None:
        model = _convert(ov, module, example, names)
        if cache_key is not None:
            save_model(model, cache_key, names, cache_dir=cache_dir)
    return model


def cached_model(cache_key: Mapping[str, Any], names: Sequence[str], *, cache_dir: Path | None = None) -> Any | None:
    """The IR stored under ``cache_key`` and input ``names`` (:func:`model_folder`), or None."""
    ov = import_openvino("the OpenVINO model cache")
    folder = model_folder(cache_key, names, cache_dir=cache_dir)
    xml = folder / "model.xml"
    if xml.is_file() and (folder / "model.bin").is_file():
        return ov.Core().read_model(str(xml))
    return None


def save_model(model: Any, cache_key: Mapping[str, Any], names: Sequence[str], *, cache_dir: Path | None = None) -> None:
    """Store ``model``'s IR under ``cache_key`` and input ``names`` (atomically; first writer wins)."""
    _save(import_openvino("the OpenVINO model cache"), model, model_folder(cache_key, names, cache_dir=cache_dir))


def compile_config(precision: str, *, streams: int | None = None) -> dict[str, str]:
    """The CPU plugin options: precision hint, throughput streams (``streams`` or the plugin's choice)."""
    config = {"INFERENCE_PRECISION_HINT": OV_PRECISIONS[precision], "PERFORMANCE_HINT": "THROUGHPUT"}
    if streams is not None:
        config["NUM_STREAMS"] = str(int(streams))
    return config


def _convert(ov: Any, module: Any, example: Mapping[str, Any], names: list[str]) -> Any:
    import torch

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about Python booleans in attention code
        model = ov.convert_model(module, example_input=dict(example),
                                 input=[(n, [-1, -1], ov.Type.i64) for n in names])
    _CONVERSIONS[0] += 1
    return model


def _save(ov: Any, model: Any, folder: Path) -> None:
    """Write the IR into a temporary sibling and move it in at once (first writer wins)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        with written_by_library(folder):  # a full disk names the model folder
            ov.save_model(model, str(stage / "model.xml"), compress_to_fp16=False)
        try:
            os.replace(stage, folder)
        except OSError:  # another process moved its copy in first
            pass
    finally:
        shutil.rmtree(stage, ignore_errors=True)


#: Infer requests kept in flight per ``OPTIMAL_NUMBER_OF_INFER_REQUESTS``: a queued request starts
#: on whichever stream frees up first, so no stream idles while Python collects a result.
REQUESTS_PER_STREAM = 2
#: How long one blocking wait lasts before the other in-flight requests are polled again (ms).
POLL_MS = 2


def infer_unordered(compiled: Any, feeds: Sequence[Mapping[str, np.ndarray]], *,
                    in_flight: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(i, first output of compiled for feeds[i])`` for every feed, in completion order.

    ``in_flight`` requests (default ``REQUESTS_PER_STREAM x OPTIMAL_NUMBER_OF_INFER_REQUESTS``) are
    started with ``start_async``; the caller's thread then waits for *any* of them: every in-flight
    request is polled with ``wait_for(0)`` and, when none is done, the oldest is waited on for
    ``POLL_MS`` (the wait releases the GIL). A finished request's output is copied out, yielded, and
    the request takes the next feed. No Python callback runs on OpenVINO's stream threads, so they
    never need the GIL: with ``AsyncInferQueue`` callbacks, destroying the compiled model (which
    joins those threads while the caller holds the GIL) deadlocked in CI. Unlike a fixed ring
    (feed ``i`` on request ``i mod n``), a stream slowed by a busy core never holds back the others.
    Leaving the loop early (an exception in the consumer) still waits for every started request.
    """
    if not feeds:
        return
    if in_flight is None:
        in_flight = REQUESTS_PER_STREAM * int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
    n = max(1, min(len(feeds), int(in_flight)))
    requests = [compiled.create_infer_request() for _ in range(n)]
    owner: dict[int, int] = {}  # request slot -> feed index, in start order (oldest first)
    free = list(range(n))
    following = 0
    try:
        while following < len(feeds) or owner:
            while free and following < len(feeds):
                slot = free.pop()
                feed = feeds[following]
                requests[slot].start_async({k: np.ascontiguousarray(v, dtype=np.int64) for k, v in feed.items()})
                owner[slot] = following
                following += 1
            done = [slot for slot in owner if requests[slot].wait_for(0)]
            if not done:
                requests[next(iter(owner))].wait_for(POLL_MS)
                continue
            for slot in done:
                index = owner.pop(slot)
                out = requests[slot].get_output_tensor(0).data.copy()
                free.append(slot)
                yield index, out
    finally:
        for slot in owner:  # never leave a request running into its destructor
            requests[slot].wait()


def infer_batches(compiled: Any, feeds: Sequence[Mapping[str, np.ndarray]], *,
                  in_flight: int | None = None) -> list[np.ndarray]:
    """The first output of ``compiled`` for each feed dict, in input order (:func:`infer_unordered`)."""
    results: list[np.ndarray | None] = [None] * len(feeds)
    for index, out in infer_unordered(compiled, feeds, in_flight=in_flight):
        results[index] = out
    missing = [i for i, r in enumerate(results) if r is None]
    if missing:
        raise RuntimeError(f"OpenVINO returned no output for batch(es) {missing[:5]}")
    return [r for r in results if r is not None]


def token_count_order(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    """Permutation putting items in descending token count (stable): batches with least padding."""
    return np.argsort(-np.asarray(counts, dtype=np.int64), kind="stable")
