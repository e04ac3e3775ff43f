"""Helpers shared by the external arms: the error type, hit lists, masks (secret redaction is :mod:`bakeoff.redact`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...data.model import Corpus
from ...data.ranking import rank
from ...errors import BakeoffError
from ...redact import SECRET_WORDS, is_secret_name, redact_url

__all__ = ["SECRET_WORDS", "ExternalError", "apply_mask", "is_secret_name", "ranked_from_hits", "redact_url"]


class ExternalError(BakeoffError):
    """An external retriever failed (unreachable, bad response, non-zero exit ...). One line."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


def ranked_from_hits(ids: Sequence[object], scores: Sequence[object] | None, k: int) -> tuple[tuple[str, float], ...]:
    """Top-``k`` of an external hit list under the package tie rule.

    Without ``scores`` the i-th of n hits (0-based) gets score ``n - i``, so the
    system's own order is kept. A doc id returned twice keeps its best score.
    """
    n = len(ids)
    vals = [float(n - i) for i in range(n)] if scores is None else [float(s) for s in scores]  # type: ignore[arg-type]
    best: dict[str, float] = {}
    for d, s in zip(ids, vals):
        key = str(d)
        if key not in best or s > best[key]:
            best[key] = s
    return rank(best)[:k]


def apply_mask(pairs: tuple[tuple[str, float], ...], corpus: Corpus, mask: np.ndarray | None) -> tuple[tuple[str, float], ...]:
    """Drop documents whose mask row is False (and, under a mask, ids unknown to the corpus)."""
    if mask is None:
        return pairs
    pos = corpus.position
    return tuple((d, s) for d, s in pairs if d in pos and bool(mask[pos[d]]))
