"""Document vectors of the dense arm outside a bake-off (cluster-mode ground truth needs them).

The corpus is encoded by :class:`~bakeoff.arms.dense.DenseArm` under a runner
:class:`~bakeoff.runner.context.Context`, so the vectors are the ones ``--arm dense:model=...``
would index and share its cache entries (and its crash-safe checkpoints).
"""

from __future__ import annotations

import numpy as np

from ..cache import Cache
from ..data.model import Corpus
from .context import Context

__all__ = ["embed_corpus"]


def embed_corpus(corpus: Corpus, *, model: str | None = None, cache: Cache | None = None,
                 progress: bool = True) -> tuple[np.ndarray, str]:
    """``((len(corpus), dim) vectors, encoder identity)`` of the dense arm with ``model``
    (``None``: the offline MiniLM)."""
    from ..arms.dense import DenseArm

    arm = DenseArm(model=model)
    ctx = Context(corpus=corpus, cache=cache, progress=progress)
    return arm.embed_corpus(corpus, ctx=ctx), str(arm.encoder.identity())
