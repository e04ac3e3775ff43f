"""Bi-encoder through sentence-transformers (fp32, the exact reference path).

The model is loaded lazily on the first :meth:`encode`, from a local folder
(the bundled offline MiniLM by default, see :mod:`.models`) with
``HF_HUB_OFFLINE`` honoured; :meth:`identity` needs no model load. Inputs are
encoded in descending length order (minimal padding) and returned in input
order; rows are L2-normalised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import ConfigError, MissingDependencyError
from .base import TextKind, apply_prefix, l2_normalise, length_order
from .models import resolve_model, weights_hash

__all__ = ["SentenceTransformerEncoder"]


class SentenceTransformerEncoder:
    """``encode(texts, kind=...)`` with a sentence-transformers model.

    ``prefix_query``/``prefix_doc`` are prepended to queries/documents (e5:
    ``"query: "``/``"passage: "``). ``max_seq_length`` overrides the model's.
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        prefix_query: str = "",
        prefix_doc: str = "",
        max_seq_length: int | None = None,
        device: str = "cpu",
    ) -> None:
        self.name, self.local_dir = resolve_model(model)
        self.prefix_query = prefix_query or ""
        self.prefix_doc = prefix_doc or ""
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
            else:
                self._load()
                folder = getattr(self._model, "_model_card_vars", {}).get("model_path") or None
                self._weights = f"hub:{self.name}" if folder is None else weights_hash(folder)
        return self._weights

    def identity(self, *, kind: TextKind | None = None) -> dict[str, Any]:
        ident: dict[str, Any] = {"encoder": "sentence-transformers", "model": self.name, "weights": self.weights(),
                                 "max_seq_length": self.max_seq_length, "normalize": True, "precision": "fp32"}
        if kind in (None, "query"):
            ident["prefix_query"] = self.prefix_query
        if kind in (None, "doc"):
            ident["prefix_doc"] = self.prefix_doc
        return ident

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
        return self._model

    @property
    def dim(self) -> int:
        model = self._load()
        get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get())

    def encode(self, texts: Sequence[str], *, kind: TextKind, batch_size: int = 32) -> np.ndarray:
        if kind not in ("query", "doc"):
            raise ValueError(f"kind must be 'query' or 'doc', got {kind!r}")
        prefixed = apply_prefix(texts, self.prefix_query if kind == "query" else self.prefix_doc)
        if not prefixed:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = length_order(prefixed)
        model = self._load()
        vecs = model.encode([prefixed[i] for i in order], batch_size=batch_size, convert_to_numpy=True,
                            normalize_embeddings=True, show_progress_bar=False)
        out = np.empty_like(vecs, dtype=np.float32)
        out[order] = vecs
        return l2_normalise(out)
