"""The :class:`Encoder` protocol and helpers shared by every text encoder.

An encoder maps texts to float32 vectors with L2-normalised rows, so the dot
product of a query and a document vector is their cosine similarity.
``kind`` says whether texts are queries or documents (asymmetric models such
as e5 prepend ``"query: "`` / ``"passage: "``).

:meth:`Encoder.identity` returns everything that changes the vectors (model
name, weights hash or revision, prefixes, precision, max length ...) as a
JSON-serialisable dict; it feeds cache keys, must be cheap (no model load when
avoidable) and must never contain a secret. :class:`PrefixedEncoder` holds the
prefix handling every encoder shares; :func:`encode_in_length_order` the
batching loop of the encoders that batch themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

__all__ = ["Encoder", "PrefixedEncoder", "TextKind", "apply_prefix", "check_kind", "encode_in_length_order",
           "l2_normalise", "length_order"]

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


def check_kind(kind: str) -> None:
    """``ValueError`` unless ``kind`` is ``"query"`` or ``"doc"``."""
    if kind not in ("query", "doc"):
        raise ValueError(f"kind must be 'query' or 'doc', got {kind!r}")


class PrefixedEncoder:
    """What every encoder shares: a query prefix and a document prefix (e5: ``"query: "`` /
    ``"passage: "``), prepended to the texts of that kind and recorded in the identity."""

    prefix_query: str = ""
    prefix_doc: str = ""

    def _set_prefixes(self, prefix_query: str | None, prefix_doc: str | None) -> None:
        self.prefix_query, self.prefix_doc = prefix_query or "", prefix_doc or ""

    def prefixed(self, texts: Iterable[str], kind: TextKind) -> list[str]:
        """``texts`` with the prefix of ``kind`` (``ValueError`` for another kind)."""
        check_kind(kind)
        return apply_prefix(texts, self.prefix_query if kind == "query" else self.prefix_doc)

    def with_prefixes(self, ident: dict[str, Any], kind: TextKind | None) -> dict[str, Any]:
        """``ident`` plus the prefix(es) that apply to ``kind`` (both when ``None``)."""
        if kind in (None, "query"):
            ident["prefix_query"] = self.prefix_query
        if kind in (None, "doc"):
            ident["prefix_doc"] = self.prefix_doc
        return ident


def encode_in_length_order(
    texts: Sequence[str],
    batch_size: int,
    encode_batch: Callable[[list[str]], np.ndarray],
    *,
    empty_dim: int,
) -> np.ndarray:
    """``encode_batch`` over batches of ``batch_size`` texts taken in :func:`length_order`;
    rows are returned in input order as float32 (``(0, empty_dim)`` for no texts)."""
    order = length_order(texts)
    out: np.ndarray | None = None
    for s in range(0, len(order), batch_size):
        rows = order[s : s + batch_size]
        vecs = np.asarray(encode_batch([texts[i] for i in rows]), dtype=np.float32)
        if out is None:
            out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
        out[rows] = vecs
    return out if out is not None else np.zeros((0, empty_dim), dtype=np.float32)
