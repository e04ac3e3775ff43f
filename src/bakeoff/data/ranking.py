"""THE tie-break rule of bakeoff, in one place.

A ranking orders documents by **score descending, then doc id descending**
(byte-wise string comparison, as trec_eval and pytrec_eval do: among equal
scores, ``"b"`` comes before ``"a"``). Every arm and every metric orders
documents through :func:`rank` or :func:`top_k`; nothing else sorts.
Ranks already present in an input file are ignored, as trec_eval ignores them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["rank", "top_k", "top_k_indices"]


def _key(item: tuple[str, float]) -> tuple[float, str]:
    return (item[1], item[0])


def rank(scored: Mapping[str, float] | Iterable[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
    """Return ``(doc_id, score)`` pairs ordered by score desc, then doc id desc.

    Input order never matters: the same pairs in any order give the same ranking.
    A doc id appearing twice in an iterable keeps its last score (as a dict would).
    """
    items = scored.items() if isinstance(scored, Mapping) else dict(scored).items()
    return tuple(sorted(((str(d), float(s)) for d, s in items), key=_key, reverse=True))


def top_k(
    scored: Mapping[str, float] | Iterable[tuple[str, float]], k: int
) -> tuple[tuple[str, float], ...]:
    """The first ``k`` entries of :func:`rank` (all of them when fewer exist)."""
    if k < 0:
        raise ValueError("k must be >= 0")
    return rank(scored)[:k]


def top_k_indices(
    scores: np.ndarray, doc_ids: Sequence[str], k: int, *, candidates: np.ndarray | None = None
) -> np.ndarray:
    """Indices of the ``k`` best entries of a score vector under the tie rule.

    Fast path for arms that hold a dense score vector over the whole corpus.
    ``candidates`` optionally restricts the choice to those row indices (e.g.
    documents with a non-zero score, or the rows a mask allows).
    ``np.argpartition`` picks candidates; every document tied with the k-th
    score is kept, and the final order is decided by :func:`rank`'s key (score
    desc, doc id desc), so the result is identical to
    ``rank(zip(doc_ids, scores))[:k]``. ``-inf`` scores (masked documents) and
    NaN are never returned.
    """
    cand = np.arange(scores.shape[0]) if candidates is None else np.asarray(candidates, dtype=np.int64)
    if k <= 0 or cand.size == 0:
        return np.empty(0, dtype=np.int64)
    vals = scores[cand]
    keep = vals > -np.inf  # drops -inf (masked) and NaN
    if not keep.all():
        cand, vals = cand[keep], vals[keep]
    if k < cand.size:
        part = np.argpartition(-vals, k - 1)[:k]
        sel = vals >= vals[part].min()
        cand, vals = cand[sel], vals[sel]
    idx = cand.tolist()
    order = sorted(zip(vals.tolist(), [doc_ids[i] for i in idx], idx), reverse=True)
    return np.fromiter((o[2] for o in order[:k]), dtype=np.int64, count=min(k, len(order)))
