"""Fine-tune a sentence-transformers embedder with in-batch negatives.

Loss: ``MultipleNegativesRankingLoss`` (MNRL, InfoNCE over cosine similarity
scaled by 20): for a batch of ``B`` (query, positive[, hard negative]) rows, the
loss of query ``i`` is ``-log softmax_j(20 * cos(q_i, d_j))[i]`` over every
positive and hard negative ``d_j`` of the batch. ``cached=True`` swaps in
``CachedMultipleNegativesRankingLoss`` (GradCache), which gives the same loss
with large batches in small memory by embedding ``mini_batch_size`` rows at a time.
Batches never hold the same text twice (``NO_DUPLICATES`` sampler), so a query
with several positives is not its own negative.

Validation: a seeded slice of the training queries (``val_fraction``, at most
``val_max_queries``) is held out; every ``eval_steps`` the model ranks a
validation corpus (the slice's positives plus seeded random distractors,
``val_corpus_size`` documents in total) and the checkpoint with the best
validation NDCG@10 is the one kept. The base model's validation score is
recorded too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .common import require_training_deps
from .data import TrainingData
from .trainer import Recipe, Setup, Trained, TrainParams, fit

__all__ = ["EmbedderParams", "embedder_rows", "finetune_embedder", "validation_corpus"]

log = logging.getLogger("bakeoff")


@dataclass(frozen=True)
class EmbedderParams(TrainParams):
    """Embedder training options: the shared :class:`~.trainer.TrainParams` plus these."""

    cached: bool = False
    mini_batch_size: int = 8
    max_seq_length: int | None = None  # training-time truncation (tokens); the saved model keeps the base's
    val_corpus_size: int = 500


def embedder_rows(data: TrainingData) -> dict[str, list[str]]:
    """Columns ``anchor``, ``positive`` (and ``negative`` when every query has hard negatives):
    one row per (query, positive document), queries in sorted id order; the ``j``-th positive
    of a query is paired with its ``j mod n``-th hard negative."""
    texts = data.corpus.full_texts()
    pos_of = data.corpus.position
    use_neg = bool(data.negatives) and all(q in data.negatives for q in data.positives)
    if data.negatives and not use_neg:
        log.warning("hard negatives missing for some queries; training with in-batch negatives only")
    cols: dict[str, list[str]] = {"anchor": [], "positive": []}
    if use_neg:
        cols["negative"] = []
    for qid in sorted(data.positives):
        for j, doc in enumerate(data.positives[qid]):
            cols["anchor"].append(data.queries[qid])
            cols["positive"].append(texts[pos_of[doc]])
            if use_neg:
                negs = data.negatives[qid]
                cols["negative"].append(texts[pos_of[negs[j % len(negs)]]])
    return cols


def validation_corpus(data: TrainingData, val_ids: list[str], *, size: int, seed: int) -> dict[str, str]:
    """The validation slice's positives plus seeded random other documents, ``size`` in total."""
    texts = data.corpus.full_texts()
    pos_of = data.corpus.position
    keep = sorted({d for q in val_ids for d in data.positives[q]})
    chosen = set(keep)
    others = [i for i, d in enumerate(data.corpus.ids) if d not in chosen]
    n_more = max(0, min(len(others), size - len(keep)))
    if n_more:
        pick = np.random.default_rng(seed).choice(len(others), size=n_more, replace=False)
        keep += [data.corpus.ids[others[i]] for i in sorted(pick)]
    return {d: texts[pos_of[d]] for d in keep}


def finetune_embedder(
    data: TrainingData,
    *,
    base: str,
    out: Path,
    params: EmbedderParams = EmbedderParams(),
    hygiene: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Train, keep the best checkpoint, write a sentence-transformers folder at ``out`` with
    ``bakeoff_training.json``; return that record (steps: :func:`bakeoff.train.trainer.fit`)."""
    require_training_deps()
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MultipleNegativesRankingLoss,
    )

    def build(base_path: str, val_ids: list[str]) -> Setup:
        model = SentenceTransformer(base_path, device="cpu")
        base_max_len = model.max_seq_length
        if params.max_seq_length:  # a training-time truncation only; the saved model keeps the base's limit
            model.max_seq_length = params.max_seq_length
        loss = (CachedMultipleNegativesRankingLoss(model, mini_batch_size=params.mini_batch_size)
                if params.cached else MultipleNegativesRankingLoss(model))
        evaluator = None
        base_val: dict[str, float] = {}
        if val_ids:
            corpus: dict[str, Any] = validation_corpus(data, val_ids, size=params.val_corpus_size, seed=params.seed)
            evaluator = InformationRetrievalEvaluator(
                queries={q: data.queries[q] for q in val_ids},
                corpus=corpus,
                relevant_docs={q: set(data.positives[q]) for q in val_ids},
                name="val", ndcg_at_k=[10], mrr_at_k=[10], precision_recall_at_k=[10], accuracy_at_k=[10],
                map_at_k=[10], write_csv=False, batch_size=params.batch_size,
            )
            base_val = {k: float(v) for k, v in evaluator(model).items() if "ndcg" in k or "recall" in k}

        def restore_max_len(trained_model: Any) -> None:
            trained_model.max_seq_length = base_max_len

        return Setup(model=model, loss=loss, evaluator=evaluator, trainer_cls=SentenceTransformerTrainer,
                     args_cls=SentenceTransformerTrainingArguments, metric="eval_val_cosine_ndcg@10",
                     args_extra={"batch_sampler": BatchSamplers.NO_DUPLICATES}, after_train=restore_max_len,
                     record={"validation_base": base_val})

    def record(trained: Trained) -> dict[str, Any]:
        return {"hard_negatives": {"used": "negative" in trained.cols, "sources": dict(data.negatives_source)}}

    return fit(data, Recipe("embedder", embedder_rows, build), base=base, out=out, params=params, record=record,
               hygiene=hygiene, overwrite=overwrite, progress=progress)
