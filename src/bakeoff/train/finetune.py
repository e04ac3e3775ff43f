"""``bakeoff finetune``: one training run from a dataset specification, with split hygiene.

:func:`finetune` reads ``FOLDER[:split]`` (default split ``train``;
:func:`bakeoff.train.data.load_training_data`), checks the training queries against the
held-out splits (:func:`bakeoff.train.hygiene.check_held_out`: a leak refuses, or with
``drop_leaks`` the leaking queries are dropped), trains an embedder
(:func:`bakeoff.train.embedder.finetune_embedder`) or a reranker
(:func:`bakeoff.train.reranker.finetune_reranker`), and returns the record written as
``bakeoff_training.json`` into the model folder ``out``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal, cast

from ..arms.base import Arm
from ..errors import ConfigError
from .data import load_training_data, parse_dataset_spec
from .embedder import EmbedderParams, finetune_embedder
from .hygiene import check_held_out
from .reranker import RerankerParams, finetune_reranker

__all__ = ["finetune"]

log = logging.getLogger("bakeoff")

#: Per kind: default negatives source and count.
_DEFAULTS = {"embedder": ("none", 1), "reranker": ("bm25", 4)}


def finetune(
    kind: Literal["embedder", "reranker"],
    train: str,
    *,
    out: Path,
    params: EmbedderParams | RerankerParams | None = None,
    base: str = "minilm",
    tests: list[str] | None = None,
    corpus: Path | None = None,
    negatives: str | None = None,
    n_negatives: int | None = None,
    miner: Arm | None = None,
    miner_spec: str = "bm25",
    mine_depth: int = 30,
    drop_leaks: bool = False,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Fine-tune on ``train`` (``FOLDER[:split]``): an ``embedder`` (sentence-transformers, MNRL with
    in-batch negatives) or a ``reranker`` (cross-encoder, binary cross-entropy over positives and
    negatives).

    ``negatives`` (``none``, ``qrels``, ``provenance``, ``bm25``; default ``none`` for the embedder,
    ``bm25`` for the reranker) and ``n_negatives`` (default 1 / 4) say where hard negatives come
    from; those missing are mined from the top ``mine_depth`` of the ``miner`` arm (default BM25,
    ``miner_spec`` its ``--arm`` text, recorded for the reranker). ``tests`` are the held-out
    ``FOLDER[:split]`` whose queries must not be trained on. ``params`` default to the kind's
    :class:`~bakeoff.train.embedder.EmbedderParams` / :class:`~bakeoff.train.reranker.RerankerParams`.
    """
    if kind not in _DEFAULTS:
        raise ConfigError(f"finetune: kind must be embedder or reranker, got {kind!r}")
    expected = EmbedderParams if kind == "embedder" else RerankerParams
    if params is not None and not isinstance(params, expected):
        raise ConfigError(f"finetune {kind}: params must be {expected.__name__}, got {type(params).__name__}")
    negatives = negatives if negatives is not None else _DEFAULTS[kind][0]
    n_negatives = n_negatives if n_negatives is not None else _DEFAULTS[kind][1]
    path, split = parse_dataset_spec(train, default_split="train")
    data = load_training_data(path, split, corpus=corpus, hard_negatives=negatives, n_negatives=n_negatives,
                              mine_depth=mine_depth, miner=miner)
    hygiene, drop = check_held_out(dict(data.queries), train_path=path, corpus=corpus, tests=list(tests or []),
                                   drop=drop_leaks)
    if drop:
        data = data.subset([q for q in data.positives if q not in drop])
    if kind == "embedder":
        log.info("training on %s: %d queries, %d pairs", data.label, len(data.positives), data.n_pairs)
        return finetune_embedder(data, base=base, out=out, params=cast(EmbedderParams | None, params) or EmbedderParams(),
                                 hygiene=hygiene,
                                 overwrite=overwrite, progress=progress)
    log.info("training on %s: %d queries, %d positives, %d with mined negatives", data.label, len(data.positives),
             data.n_pairs, len(data.negatives))
    return finetune_reranker(data, base=base, out=out, params=cast(RerankerParams | None, params) or RerankerParams(),
                             hygiene=hygiene,
                             overwrite=overwrite, progress=progress,
                             miner={"arm": miner_spec, "depth": mine_depth, "n_negatives": n_negatives,
                                    "source": negatives})
