"""THE tie-break rule of bakeoff, in one place.

A ranking orders documents by **score descending, then doc id descending**
(byte-wise string comparison, as trec_eval and pytrec_eval do: among equal
scores, ``"b"`` comes before ``"a"``). Every arm and every metric orders
documents through :func:`rank`, :func:`top_k`, :func:`top_k_indices` or (for
columns of many queries at once) :func:`rank_rows`; nothing else sorts.
Ranks already present in an input file are ignored, as trec_eval ignores them.

Scores are numbers: ``+inf`` ranks above every finite score and ``-inf`` below
(``-inf`` and ``-0.0``/``0.0`` compare as IEEE numbers do: ``-0.0 == 0.0`` is a
tie). **NaN is an error** (:class:`NaNScoreError`): it has no place in an order,
and sorting with it silently scrambles a ranking. Python's and numpy's string
orders compare code points, which for UTF-8 text is the same as trec_eval's
``strcmp`` on bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from ..errors import BakeoffError

__all__ = ["NaNScoreError", "rank", "rank_rows", "top_k", "top_k_indices"]


class NaNScoreError(BakeoffError):
    """A score is NaN. ``where`` says whose (file and line, or arm and query) when known."""

    def __init__(self, doc_id: str | None = None, *, where: str = "") -> None:
        self.doc_id, self.where = doc_id, where
        what = f"document {doc_id!r} has a NaN score" if doc_id is not None else "a NaN score"
        super().__init__(f"{where}: {what}" if where else what + " (NaN cannot be ranked)")

    def within(self, where: str) -> NaNScoreError:
        """The same error, saying where it happened (e.g. ``"arm 'bm25', query 'q3'"``)."""
        return NaNScoreError(self.doc_id, where=where)


def _key(item: tuple[str, float]) -> tuple[float, str]:
    return (item[1], item[0])


def rank(scored: Mapping[str, float] | Iterable[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
    """Return ``(doc_id, score)`` pairs ordered by score desc, then doc id desc.

    Input order never matters: the same pairs in any order give the same ranking.
    A doc id appearing twice in an iterable keeps its last score (as a dict would).
    ``±inf`` are ordered as numbers; a NaN score raises :class:`NaNScoreError`.
    """
    items = scored.items() if isinstance(scored, Mapping) else dict(scored).items()
    pairs = [(str(d), float(s)) for d, s in items]
    for d, s in pairs:
        if math.isnan(s):
            raise NaNScoreError(d)
    return tuple(sorted(pairs, key=_key, reverse=True))


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
    ``rank(zip(doc_ids, scores))[:k]`` over the documents scoring above ``-inf``.
    ``-inf`` marks a masked document and is never returned; ``+inf`` ranks first;
    a NaN among the candidates raises :class:`NaNScoreError`.
    """
    cand = np.arange(scores.shape[0]) if candidates is None else np.asarray(candidates, dtype=np.int64)
    if k <= 0 or cand.size == 0:
        return np.empty(0, dtype=np.int64)
    vals = scores[cand]
    keep = vals > -np.inf  # drops -inf (masked) and NaN
    if not keep.all():
        nan = np.isnan(vals)
        if nan.any():
            raise NaNScoreError(str(doc_ids[int(cand[int(np.flatnonzero(nan)[0])])]))
        cand, vals = cand[keep], vals[keep]
    if k < cand.size:
        part = np.argpartition(-vals, k - 1)[:k]
        sel = vals >= vals[part].min()
        cand, vals = cand[sel], vals[sel]
    idx = cand.tolist()
    order = sorted(zip(vals.tolist(), [doc_ids[i] for i in idx], idx), reverse=True)
    return np.fromiter((o[2] for o in order[:k]), dtype=np.int64, count=min(k, len(order)))


def rank_rows(
    group: np.ndarray,
    scores: np.ndarray,
    doc_ids: Sequence[str] | Callable[[np.ndarray], Sequence[str]],
) -> np.ndarray:
    """The tie rule over columns: the row order that ranks every group (query) at once.

    Rows are sorted by ``group`` ascending, then score descending, then doc id
    descending, so that within each group the order equals :func:`rank` of that
    group's ``(doc id, score)`` pairs. ``doc_ids`` gives the id of each row, or is
    a function from row indices to their ids (only the rows tied on score are
    asked for, so ids of a large run need not be materialised). Vectorised:
    ``np.lexsort`` on (group, -score) (skipped when the rows are in that order already,
    as written runs usually are), then the rows tied on (group, score) are re-ordered by
    id. A NaN score raises :class:`NaNScoreError`.
    """
    scores = np.asarray(scores, dtype=np.float64)
    group = np.asarray(group)
    if scores.shape != group.shape:
        raise ValueError("group and scores differ in length")
    nan = np.isnan(scores)
    if nan.any():
        i = int(np.flatnonzero(nan)[0])
        ids = doc_ids(np.array([i])) if callable(doc_ids) else [doc_ids[i]]
        raise NaNScoreError(str(ids[0]))
    n = scores.size
    if n < 2:
        return np.arange(n)
    # most runs are written in ranking order already: check in one pass before sorting
    same = group[1:] == group[:-1]
    presorted = bool((group[1:] >= group[:-1]).all() and (~same | (scores[1:] <= scores[:-1])).all())
    order = np.arange(n) if presorted else np.lexsort((-scores, group))
    g, s = group[order], scores[order]
    tied = (g[1:] == g[:-1]) & (s[1:] == s[:-1])
    if not tied.any():
        return order
    # rows in runs of ties: position p is tied with p+1 when tied[p]
    in_tie = np.zeros(order.size, dtype=bool)
    in_tie[:-1] |= tied
    in_tie[1:] |= tied
    pos = np.flatnonzero(in_tie)
    rows = order[pos]
    ids = doc_ids(rows) if callable(doc_ids) else [doc_ids[int(r)] for r in rows.tolist()]
    # run number of each tied position: a new run starts where the previous position is not tied with it
    starts = np.ones(pos.size, dtype=bool)
    starts[1:] = ~tied[pos[1:] - 1]
    run_no = np.cumsum(starts)
    id_rank = np.unique(np.asarray(list(ids), dtype=object).astype(str), return_inverse=True)[1].ravel()
    within = np.lexsort((-id_rank, run_no))  # per run: id descending
    order[pos] = rows[within]
    return order
