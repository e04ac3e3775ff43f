"""The :class:`Encoder` protocol and helpers shared by every text encoder.

An encoder maps texts to float32 vectors with L2-normalised rows, so the dot
product of a query and a document vector is their cosine similarity.
``kind`` says whether texts are queries or documents (asymmetric models such
as e5 prepend ``"query: "`` / ``"passage: "``).

:meth:`Encoder.identity` returns everything that changes the vectors (model
name, weights hash or revision, prefixes, precision, max length ...) as a
JSON-serialisable dict; it feeds cache keys, must be cheap (no model load when
avoidable) and must never contain a secret.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

__all__ = ["Encoder", "TextKind", "apply_prefix", "files_sha256", "l2_normalise", "length_order"]

TextKind = Literal["query", "doc"]


@runtime_checkable
class Encoder(Protocol):
    """What the dense arm needs from a text encoder."""

    def encode(self, texts: Sequence[str], *, kind: TextKind, batch_size: int = 32) -> np.ndarray:
        """``(len(texts), dim)`` float32 array with unit-norm rows, in input order."""
        ...

    def identity(self, *, kind: TextKind | None = None) -> dict[str, Any]:
        """Everything that changes the vectors of ``kind`` texts (both kinds when ``None``)."""
        ...


def l2_normalise(x: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm (zero rows stay zero), as float32."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


def length_order(texts: Sequence[str]) -> np.ndarray:
    """Permutation putting texts in descending character length (stable on ties).

    Encoding in this order makes batches of similar length, which minimises
    padding; callers restore input order with the inverse permutation.
    """
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    return np.argsort(-lengths, kind="stable")


def apply_prefix(texts: Iterable[str], prefix: str) -> list[str]:
    """``prefix + text`` for each text (no-op for an empty prefix)."""
    return [prefix + t for t in texts] if prefix else list(texts)


_HASH_MEMO: dict[tuple[str, ...], str] = {}


def files_sha256(paths: Sequence[Path], *, root: Path | None = None) -> str:
    """sha256 over (relative name, content) of ``paths`` in sorted order.

    Memoised in-process on ``(path, size, mtime_ns)`` of every file, so an
    unchanged model directory is hashed once per process.
    """
    paths = sorted(Path(p) for p in paths)
    stamp: list[str] = []
    for p in paths:
        st = os.stat(p)
        stamp.append(f"{p}|{st.st_size}|{st.st_mtime_ns}")
    memo_key = tuple(stamp)
    if memo_key in _HASH_MEMO:
        return _HASH_MEMO[memo_key]
    h = hashlib.sha256()
    for p in paths:
        name = str(p.relative_to(root)) if root is not None else p.name
        h.update(name.encode() + b"\0")
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    digest = h.hexdigest()
    _HASH_MEMO[memo_key] = digest
    return digest
