"""Keeping generated queries by a score, and describing a score distribution.

Shared by the per-query filters of :mod:`bakeoff.truth.filters.specificity` and
:mod:`bakeoff.truth.filters.answerability` (higher score = better query):

* :func:`keep_mask` — a score passes when ``score >= threshold`` (no threshold: all pass); with
  ``keep_fraction`` f, only the ``ceil(f * passing)`` best of the passing ones are kept (ties:
  earlier position first).
* :func:`score_stats` — ``n``, ``mean``, quantiles ``p10 p25 p50 p75 p90`` (numpy's linear
  interpolation), a histogram over the caller's bin ``edges`` (values outside fall in the end
  bins; labels are the lower edges, ``"+0.5"``), and with a threshold the ``share_below`` it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ...data.model import Corpus

__all__ = ["keep_mask", "score_stats", "score_text"]


def keep_mask(scores: Sequence[float], *, threshold: float | None, keep_fraction: float | None) -> list[bool]:
    """Which scores pass (see the module docstring)."""
    keep = [threshold is None or s >= threshold for s in scores]
    if keep_fraction is not None:
        idx = [i for i, k in enumerate(keep) if k]
        n = math.ceil(keep_fraction * len(idx))
        top = set(sorted(idx, key=lambda i: (-scores[i], i))[:n])
        keep = [i in top for i in range(len(scores))]
    return keep


def score_stats(values: Sequence[float], *, edges: np.ndarray, threshold: float | None = None) -> dict[str, Any]:
    """The distribution of ``values`` (see the module docstring)."""
    arr = np.asarray(list(values), dtype=float)
    out: dict[str, Any] = {"n": int(arr.size)}
    if arr.size:
        out["mean"] = float(arr.mean())
        for p in (10, 25, 50, 75, 90):
            out[f"p{p}"] = float(np.percentile(arr, p))
        counts, _ = np.histogram(np.clip(arr, edges[0], edges[-1] - 1e-9), bins=edges)
        out["histogram"] = {f"{lo:+.1f}": int(c) for lo, c in zip(edges[:-1], counts, strict=True)}
    if threshold is not None:
        out["threshold"] = threshold
        out["share_below"] = float((arr < threshold).mean()) if arr.size else 0.0
    return out


def score_text(corpus: Corpus, row: int) -> str:
    """The document as the specificity scorer reads it: title and text."""
    title, text = corpus.titles[row], corpus.texts[row]
    return f"{title}\n{text}" if title else text
