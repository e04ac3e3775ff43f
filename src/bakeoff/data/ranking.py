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


def top_k_indices(scores: np.ndarray, doc_ids: Sequence[str], k: int) -> np.ndarray:
    """Indices of the ``k`` best entries of a score vector under the tie rule.

    Fast path for arms that hold a dense score vector over the whole corpus.
    ``np.argpartition`` picks candidates; every document tied with the k-th
    score is kept as a candidate, and the final order is decided by
    :func:`rank`'s key (score desc, doc id desc), so the result is identical to
    ``rank(zip(doc_ids, scores))[:k]``. ``-inf`` scores (masked documents) and NaN are
    never returned.
    """
    n = scores.shape[0]
    k = min(k, n)
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        kth = scores[part].min()
        cand = np.flatnonzero(scores >= kth)
    else:
        cand = np.arange(n)
    cand = cand[scores[cand] > -np.inf]  # drops -inf (masked) and NaN
    order = sorted(cand.tolist(), key=lambda i: (float(scores[i]), doc_ids[i]), reverse=True)
    return np.asarray(order[:k], dtype=np.int64)
