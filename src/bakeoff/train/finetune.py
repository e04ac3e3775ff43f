"""``bakeoff finetune``: one training run from a dataset specification, with split hygiene.

Both entry points read ``FOLDER[:split]`` (default split ``train``; :func:`bakeoff.train.data.
load_training_data`), check the training queries against the held-out splits
(:func:`bakeoff.train.hygiene.check_held_out`: a leak refuses, or with ``drop_leaks`` the
leaking queries are dropped), train, and return the record written as
``bakeoff_training.json`` into the model folder ``out``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..arms.base import Arm
from .data import TrainingData, load_training_data, parse_dataset_spec
from .embedder import EmbedderParams, finetune_embedder
from .hygiene import check_held_out
from .reranker import RerankerParams, finetune_reranker

__all__ = ["train_embedder", "train_reranker"]

log = logging.getLogger("bakeoff")


def _without_leaks(data: TrainingData, *, path: Path, corpus: Path | None, tests: list[str],
                   drop_leaks: bool) -> tuple[TrainingData, dict[str, Any]]:
    hygiene, drop = check_held_out(dict(data.queries), train_path=path, corpus=corpus, tests=tests, drop=drop_leaks)
    if drop:
        data = data.subset([q for q in data.positives if q not in drop])
    return data, hygiene


def train_embedder(
    train: str,
    *,
    out: Path,
    params: EmbedderParams | None = None,
    base: str = "minilm",
    tests: list[str] | None = None,
    corpus: Path | None = None,
    hard_negatives: str = "none",
    n_negatives: int = 1,
    drop_leaks: bool = False,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Fine-tune a sentence-transformers embedder on ``train`` (MNRL with in-batch negatives;
    ``params`` an :class:`~bakeoff.train.embedder.EmbedderParams`, default its defaults)."""
    path, split = parse_dataset_spec(train, default_split="train")
    data = load_training_data(path, split, corpus=corpus, hard_negatives=hard_negatives, n_negatives=n_negatives)
    data, hygiene = _without_leaks(data, path=path, corpus=corpus, tests=list(tests or []), drop_leaks=drop_leaks)
    log.info("training on %s: %d queries, %d pairs", data.label, len(data.positives), data.n_pairs)
    return finetune_embedder(data, base=base, out=out, params=params or EmbedderParams(), hygiene=hygiene,
                             overwrite=overwrite, progress=progress)


def train_reranker(
    train: str,
    *,
    out: Path,
    params: RerankerParams | None = None,
    base: str = "minilm",
    tests: list[str] | None = None,
    corpus: Path | None = None,
    negatives: str = "bm25",
    miner: Arm | None = None,
    miner_spec: str = "bm25",
    mine_depth: int = 30,
    n_negatives: int = 4,
    drop_leaks: bool = False,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Fine-tune a cross-encoder reranker on ``train`` (binary cross-entropy over positives and
    negatives; ``params`` a :class:`~bakeoff.train.reranker.RerankerParams`). Negatives missing
    from ``negatives`` are mined from the top ``mine_depth`` of the ``miner`` arm (default BM25;
    ``miner_spec`` is its ``--arm`` text, recorded)."""
    path, split = parse_dataset_spec(train, default_split="train")
    data = load_training_data(path, split, corpus=corpus, hard_negatives=negatives, n_negatives=n_negatives,
                              mine_depth=mine_depth, miner=miner)
    data, hygiene = _without_leaks(data, path=path, corpus=corpus, tests=list(tests or []), drop_leaks=drop_leaks)
    log.info("training on %s: %d queries, %d positives, %d with mined negatives", data.label, len(data.positives),
             data.n_pairs, len(data.negatives))
    return finetune_reranker(data, base=base, out=out, params=params or RerankerParams(), hygiene=hygiene,
                             overwrite=overwrite, progress=progress,
                             miner={"arm": miner_spec, "depth": mine_depth, "n_negatives": n_negatives,
                                    "source": negatives})
