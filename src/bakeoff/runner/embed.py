"""Document vectors of the dense arm outside a bake-off (cluster-mode ground truth needs them).

The corpus is encoded by :class:`~bakeoff.arms.dense.DenseArm` under a runner
:class:`~bakeoff.runner.context.Context`, so the vectors are the ones ``--arm dense:model=...``
would index and share its cache entries (and its crash-safe checkpoints).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cache import Cache
from ..data.model import Corpus
from ..environment import OPENAI_API_KEY, OPENAI_BASE_URL
from .context import Context

__all__ = ["embed_corpus"]


def embed_corpus(corpus: Corpus, *, model: str | None = None, cache: Cache | None = None,
                 progress: bool = True, api_key_env: str | None = None,
                 base_url: str | None = None) -> tuple[np.ndarray, str]:
    """``((len(corpus), dim) vectors, encoder identity)`` of the dense arm with ``model``
    (``None``: the offline MiniLM). An ``openai:<model>`` encoder reads its key from the
    variable named ``api_key_env`` (default ``OPENAI_API_KEY``) and talks to ``base_url``
    (default ``$OPENAI_BASE_URL``, else the public API), as ``--llm openai:...`` does."""
    from ..arms.dense import DenseArm

    opts: dict[str, Any] = {}
    if model is not None and model.lower().startswith("openai:"):
        opts["api_key_env"] = api_key_env or OPENAI_API_KEY.name
        url = base_url or OPENAI_BASE_URL.get()
        if url:
            opts["base_url"] = url
    arm = DenseArm(model=model, **opts)
    ctx = Context(corpus=corpus, cache=cache, progress=progress)
    return arm.embed_corpus(corpus, ctx=ctx), str(arm.encoder.identity())
