"""A score made relative to the corpus: the rank of a query's own document among random documents.

An absolute threshold on a relevance score (cosine >= 0.5) means different things on different
corpora: SciFact's abstracts and a library's docstrings give their own queries very different
cosines. A rank does not. For a query ``q`` written from document ``d`` and a scorer ``s``, draw
``R`` reference documents ``r_1 .. r_R`` from the same corpus (seeded, never ``d`` itself) and take

    rank(q, d) = 1 + #{ i : s(q, r_i) >= s(q, d) - 1e-6 }        in 1 .. R + 1

(ties, within ``1e-6``, count against the query). Under the null hypothesis that ``q`` fits ``d``
no better than a random document of the corpus, ``rank / (R + 1)`` is a valid p-value (a Monte
Carlo permutation test; Davison & Hinkley 1997, eq. 4.11). A query is **kept** when

    rank <= max(1, floor(alpha * (R + 1)))

i.e. its own document beats all but a share ``alpha`` of the corpus; with the defaults ``R = 99``
and ``alpha = 0.05`` that is rank <= 5. The rule needs no threshold chosen on one corpus: it asks
the same question of every corpus.

The reference documents are drawn once per call with ``np.random.default_rng(seed)`` (``R + 1``
rows, and each pair uses the first ``R`` that are not its own document), so every query of a run
is ranked against the same documents and a re-run draws the same ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import ConfigError
from .thresholds import REFERENCE_ALPHA, REFERENCE_DOCUMENTS

__all__ = ["TIE", "RankedScore", "ReferenceRankOptions", "rank_against", "rank_all", "rank_by_pairs", "reference_rows"]

#: Reference scores within this distance of the query's own score count as ties, i.e. against it.
TIE = 1e-6


@dataclass(frozen=True, kw_only=True)
class ReferenceRankOptions:
    """``references`` R random documents per query; keep when the own document's rank is at most
    ``max(1, floor(alpha * (R + 1)))``; ``seed`` draws the references."""

    references: int = REFERENCE_DOCUMENTS
    alpha: float = REFERENCE_ALPHA
    seed: int = 0

    def __post_init__(self) -> None:
        if self.references < 1:
            raise ConfigError(f"--answerability-references must be >= 1, got {self.references}")
        if not (math.isfinite(self.alpha) and 0.0 < self.alpha < 1.0):
            raise ConfigError(f"--answerability-alpha must be in (0, 1), got {self.alpha}")

    @property
    def max_rank(self) -> int:
        """The largest rank kept: ``max(1, floor(alpha * (R + 1)))``."""
        return max(1, math.floor(self.alpha * (self.references + 1) + 1e-9))


@dataclass(frozen=True)
class RankedScore:
    """``score`` s(q, d), ``rank`` of d among itself and ``references`` reference documents."""

    score: float
    rank: int
    references: int

    @property
    def p(self) -> float:
        """``rank / (references + 1)``: the Monte Carlo p-value of "d fits q no better than chance"."""
        return self.rank / (self.references + 1)

    def kept(self, options: ReferenceRankOptions) -> bool:
        return self.rank <= options.max_rank


def reference_rows(n_docs: int, options: ReferenceRankOptions) -> np.ndarray:
    """``min(R + 1, n_docs)`` distinct rows drawn with ``default_rng(options.seed)``, in draw order."""
    if n_docs < 2:
        raise ConfigError("a reference rank needs a corpus of at least 2 documents")
    size = min(options.references + 1, n_docs)
    return np.random.default_rng(options.seed).choice(n_docs, size=size, replace=False)


def rank_against(own: float, references: Sequence[float] | np.ndarray) -> int:
    """``1 + #{r : r >= own - TIE}``."""
    ref = np.asarray(references, dtype=np.float64)
    return 1 + int(np.count_nonzero(ref >= own - TIE))


def rank_all(own_rows: Sequence[int], own_scores: Sequence[float], ref_rows: np.ndarray,
             ref_scores: np.ndarray, options: ReferenceRankOptions) -> list[RankedScore]:
    """Ranks of each query's own score among its reference scores (row ``i`` of ``ref_scores`` holds
    query ``i``'s scores against ``ref_rows``; its own row, if drawn, is left out and only the first
    ``R`` others count)."""
    out = []
    for i, (row, own) in enumerate(zip(own_rows, own_scores, strict=True)):
        keep = np.flatnonzero(ref_rows != row)[: options.references]
        out.append(RankedScore(float(own), rank_against(float(own), ref_scores[i, keep]), len(keep)))
    return out


def rank_by_pairs(queries: Sequence[str], own_rows: Sequence[int], own_scores: Sequence[float],
                  doc_text: Callable[[int], str], options: ReferenceRankOptions, n_docs: int,
                  score_pairs: Callable[[list[tuple[str, str]]], Sequence[float]]) -> list[RankedScore]:
    """:func:`rank_all` for a scorer of (query, document) pairs (e.g. a cross-encoder):
    ``len(queries) * R`` pairs are scored."""
    refs = reference_rows(n_docs, options)
    texts = [doc_text(int(r)) for r in refs]
    pairs = [(q, t) for q in queries for t in texts]
    scores = np.asarray(score_pairs(pairs), dtype=np.float64).reshape(len(queries), len(refs)) if queries else \
        np.empty((0, len(refs)))
    return rank_all(own_rows, own_scores, refs, scores, options)
