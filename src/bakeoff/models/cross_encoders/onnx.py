"""The int8 cross-encoder backend: the model exported to ONNX once, dynamically quantised, run by ONNX Runtime.

Export: PyTorch's TorchScript exporter (opset :data:`ONNX_OPSET`, dynamic
batch and sequence axes, output ``logits``); quantisation: ONNX Runtime's
``quantize_dynamic`` (int8 weights per channel, activations quantised per
batch at run time). The graph is written to ``<onnx_dir>/<key[:2]>/<key>/``
(``key`` = cache key of the scorer's identity and the opset) and published
atomically, so it is built once; without ``onnx_dir`` it lives in a temporary
folder for the scorer's lifetime. Batches of ``batch_size`` pairs are scored
in the order given, tokenised by the CrossEncoder's own ``preprocess``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..._io import written_by_library
from ...errors import MissingDependencyError

__all__ = ["ONNX_OPSET", "OnnxInt8CrossEncoder"]

ONNX_OPSET = 17

Features = Callable[[Sequence[tuple[str, str]]], dict[str, np.ndarray]]


class OnnxInt8CrossEncoder:
    """``hf`` as an int8 ONNX Runtime session (see module doc)."""

    def __init__(self, hf: Any, *, identity: Mapping[str, Any], onnx_dir: Path | None, features: Features) -> None:
        try:
            import onnxruntime as ort
            from onnxruntime.quantization import QuantType, quantize_dynamic
        except ImportError:
            raise MissingDependencyError("onnxruntime", "rerank", "the int8 cross-encoder") from None
        from ...cache import cache_key

        self._features = features
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        key = cache_key({"kind": "cross-encoder-onnx-int8", **identity, "opset": ONNX_OPSET})
        if onnx_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="bakeoff-onnx-")
            folder = Path(self._tmp.name)
        else:
            folder = Path(onnx_dir) / key[:2] / key
        target = folder / "model_int8.onnx"
        if not target.exists():
            folder.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix=".export-", dir=folder))
            try:
                with written_by_library(target):  # a full disk names the model file
                    fp32 = work / "model.onnx"
                    self._export(hf, fp32)
                    quantize_dynamic(str(fp32), str(work / "model_int8.onnx"), weight_type=QuantType.QInt8,
                                     per_channel=True)
                os.replace(work / "model_int8.onnx", target)  # atomic publish
            finally:
                shutil.rmtree(work, ignore_errors=True)
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        # no busy-waiting worker threads: on a shared CPU spinning steals cycles from other work
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(target), opts, providers=["CPUExecutionProvider"])

    def _export(self, hf: Any, path: Path) -> None:
        import torch

        enc = self._features([("a query", "a document to score"), ("q", "d")])
        names: list[str] = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in enc]
        args = tuple(torch.as_tensor(enc[n]) for n in names)
        axes: dict[str, dict[int, str]] = {n: {0: "batch", 1: "seq"} for n in names}
        axes["logits"] = {0: "batch"}

        class _Wrap(torch.nn.Module):
            def __init__(self, inner: Any) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, *tensors: Any) -> Any:
                return self.inner(**dict(zip(names, tensors, strict=True))).logits

        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(_Wrap(hf).eval(), args, str(path), input_names=names, output_names=["logits"],
                              dynamic_axes=axes, opset_version=ONNX_OPSET, dynamo=False)

    def score(self, pairs: Sequence[tuple[str, str]], batch_size: int) -> np.ndarray:
        inputs = {i.name for i in self._session.get_inputs()}
        chunks = []
        for start in range(0, len(pairs), batch_size):
            feats = self._features(pairs[start : start + batch_size])
            logits = self._session.run(["logits"], {k: v.astype(np.int64) for k, v in feats.items() if k in inputs})[0]
            chunks.append(np.asarray(logits, dtype=np.float32).reshape(-1))
        return np.concatenate(chunks)
