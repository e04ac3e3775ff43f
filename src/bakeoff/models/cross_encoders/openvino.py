"""The OpenVINO cross-encoder backend: the transformer + head traced and compiled (bf16 on AMX CPUs).

The traced model is cached across processes (:mod:`bakeoff.models._openvino`), keyed by
:func:`state_digest` of the weights. Pairs are re-sorted by token count within each call, cut into batches of
``batch_size`` and run on all streams (:mod:`bakeoff.models._openvino`); the
logits come back in fp32 and are returned in input order. A batch's result
depends only on its own pairs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._openvino import compile_module, import_openvino, infer_batches, output_module, token_count_order

__all__ = ["OpenVinoCrossEncoder", "state_digest"]

Features = Callable[[Sequence[tuple[str, str]]], dict[str, np.ndarray]]


def state_digest(module: Any) -> str:
    """sha256 over a PyTorch module's parameters and buffers (names, dtypes, shapes, bytes), so the
    cached OpenVINO model is keyed by the exact weights, including a freshly seeded head."""
    import torch

    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}\n".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


class OpenVinoCrossEncoder:
    """``hf`` compiled by OpenVINO at ``precision``; ``features`` is the CrossEncoder's own tokenisation."""

    def __init__(self, ce: Any, hf: Any, *, precision: str, max_length: int, features: Features) -> None:
        import torch

        import_openvino("rerank backend=openvino")
        self._ce, self.max_length, self._features = ce, max_length, features
        enc = features([("a query", "a document to score"), ("q", "d")])
        self._inputs = tuple(n for n in ("input_ids", "attention_mask", "token_type_ids") if n in enc)
        self._compiled = compile_module(output_module(hf, self._inputs, "logits"),
                                        {n: torch.as_tensor(enc[n]) for n in self._inputs},
                                        precision=precision, purpose="rerank backend=openvino",
                                        cache_key={"kind": "cross-encoder-logits", "state": state_digest(hf)})

    def score(self, pairs: Sequence[tuple[str, str]], batch_size: int) -> np.ndarray:
        tok = self._ce.tokenizer
        counts = [len(ids) for ids in tok([q for q, _ in pairs], [d for _, d in pairs], truncation=True,
                                          max_length=self.max_length)["input_ids"]]
        order = token_count_order(counts)
        batches = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
        feeds = []
        for rows in batches:
            feats = self._features([pairs[i] for i in rows])
            feeds.append({n: feats[n] for n in self._inputs})
        out = np.empty(len(pairs), dtype=np.float32)
        for rows, logits in zip(batches, infer_batches(self._compiled, feeds), strict=True):
            out[rows] = np.asarray(logits, dtype=np.float32).reshape(len(rows))
        return out
