"""Bi-encoder through sentence-transformers: fp32 (the exact reference path) or bf16 (fast).

``precision="bf16"`` encodes **documents** with the same fp32 weights under
``torch.autocast("cpu", dtype=torch.bfloat16)``: matrix products and attention
in bfloat16 (8-bit mantissa, fp32 accumulation), layer norms and the pooling in
fp32. On CPUs with native bf16 (Intel AMX / AVX512-BF16, reported by
:func:`bakeoff.models.cpu.bf16_native`) this is ~2.5x faster than fp32 for MiniLM; elsewhere
PyTorch emulates bf16 and it can be slower than fp32. **Queries stay fp32**:
they are a tiny share of the work (SciFact: 300 short queries vs 5,183
documents of ~240 tokens) and single-query latency gains little from bf16,
while the rounding error would land on both sides of every dot product. On
SciFact, bf16 documents with fp32 queries give NDCG@10 0.64620 vs fp32 0.64508
(bf16 on both sides: 0.64715). The identity records the precision and the
CPU's kernel capability, so bf16 vectors never mix with fp32 ones.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np

from ...errors import ConfigError, MissingDependencyError
from ..cpu import bf16_native, cpu_capability
from ..resolve import hub_snapshot, resolve_model, weights_hash
from .base import PrefixedEncoder, TextKind, check_kind, l2_normalise, length_order

__all__ = ["ST_PRECISIONS", "SentenceTransformerEncoder"]

log = logging.getLogger("bakeoff")

#: Precisions this encoder runs.
ST_PRECISIONS = ("fp32", "bf16")


class SentenceTransformerEncoder(PrefixedEncoder):
    """``encode(texts, kind=...)`` with a sentence-transformers model.

    ``prefix_query``/``prefix_doc`` are prepended to queries/documents (e5:
    ``"query: "``/``"passage: "``). ``max_seq_length`` overrides the model's.
    """
    code_version = "1"  # bump when this encoder's vectors change (part of identity(), so of cache keys)

    def __init__(
        self,
        *,
        model: str | None = None,
        prefix_query: str = "",
        prefix_doc: str = "",
        max_seq_length: int | None = None,
        device: str = "cpu",
        precision: str = "fp32",
    ) -> None:
        if precision not in ST_PRECISIONS:
            raise ConfigError(f"sentence-transformers precision must be one of {', '.join(ST_PRECISIONS)}, "
                              f"got {precision!r}")
        self.precision = precision
        self.name, self.local_dir = resolve_model(model)
        self._set_prefixes(prefix_query, prefix_doc)
        self.max_seq_length = None if max_seq_length is None else int(max_seq_length)
        self.device = device
        self._model: Any = None
        self._weights: str | None = None

    # identity ---------------------------------------------------------------
    def weights(self) -> str:
        """sha256 of the model files, or ``hub:<name>@<revision>`` before download."""
        if self._weights is None:
            if self.local_dir is not None:
                self._weights = weights_hash(self.local_dir)
            else:  # a hub model not downloaded yet: load it (downloads where a network exists), then hash
                self._load()
                folder = hub_snapshot(self.name)
                self._weights = f"hub:{self.name}" if folder is None else weights_hash(folder)
        return self._weights

    def identity(self, *, kind: TextKind | None = None) -> dict[str, Any]:
        precision = "fp32" if kind == "query" else self.precision  # queries are always fp32
        ident: dict[str, Any] = {"encoder": "sentence-transformers", "model": self.name, "weights": self.weights(),
                                 "max_seq_length": self.max_seq_length, "normalize": True, "precision": precision}
        ident["code_version"] = self.code_version
        if precision == "bf16":  # kernels (AMX vs emulation) round differently: part of the identity
            ident["cpu_capability"] = cpu_capability()
            if kind is None:
                ident["query_precision"] = "fp32"
        return self.with_prefixes(ident, kind)

    # encoding ---------------------------------------------------------------
    def _load(self) -> Any:
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise MissingDependencyError("sentence-transformers", "dense", "the dense arm") from None
            source = str(self.local_dir) if self.local_dir is not None else self.name
            try:
                self._model = SentenceTransformer(source, device=self.device)
            except OSError as exc:
                raise ConfigError(f"dense model {self.name!r} could not be loaded: {exc}".splitlines()[0]) from None
            if self.max_seq_length is not None:
                self._model.max_seq_length = self.max_seq_length
            if self.precision == "bf16" and not bf16_native():
                log.warning("precision=bf16: this CPU has no native bfloat16 units (AMX / AVX512-BF16); "
                            "PyTorch emulates them and the encode may be slower than fp32")
        return self._model

    def _precision(self, kind: TextKind) -> AbstractContextManager[Any]:
        """The autocast context for ``kind`` texts (bf16 documents; a no-op for fp32 and queries)."""
        if self.precision != "bf16" or kind == "query":
            return nullcontext()
        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16)

    @property
    def dim(self) -> int:
        model = self._load()
        get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get())

    def encode(self, texts: Sequence[str], *, kind: TextKind, batch_size: int = 32) -> np.ndarray:
        """Vectors of ``texts`` with the ``kind`` prompt prepended.

        The prompt is handed to sentence-transformers as ``prompt=`` (never ``None``), so the
        model's ``default_prompt_name`` cannot add a second one, and a pooling that excludes
        prompt tokens (``include_prompt=False``) knows the prompt's length. Queries go through
        ``encode_query`` and documents through ``encode_document`` where the library has them
        (a model with a ``Router`` routes each kind to its own modules).
        """
        check_kind(kind)
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        prompt = self.prefix_query if kind == "query" else self.prefix_doc
        order = length_order(texts)
        model = self._load()
        method = getattr(model, "encode_query" if kind == "query" else "encode_document", None) or model.encode
        with self._precision(kind):
            vecs = method([texts[i] for i in order], prompt=prompt, batch_size=batch_size, convert_to_numpy=True,
                          normalize_embeddings=True, show_progress_bar=False)
        vecs = np.asarray(vecs, dtype=np.float32)
        out = np.empty_like(vecs, dtype=np.float32)
        out[order] = vecs
        return l2_normalise(out)
