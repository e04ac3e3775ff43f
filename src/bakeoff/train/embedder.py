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
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .common import (
    TrainParams,
    library_versions,
    prepare_out,
    publish,
    require_training_deps,
    resolve_model,
    scoped_global_rng,
    training_arguments,
    write_training_record,
)
from .data import TrainingData, split_validation

__all__ = ["EmbedderParams", "finetune_embedder", "embedder_rows", "validation_corpus"]

log = logging.getLogger("bakeoff")


@dataclass(frozen=True)
class EmbedderParams(TrainParams):
    """Embedder training options: the shared :class:`~.common.TrainParams` plus these."""

    cached: bool = False
    mini_batch_size: int = 8
    max_seq_length: int | None = None  # training-time truncation (tokens); the saved model keeps the base's
    val_max_queries: int = 100
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


def _loss_curve(history: list[Mapping[str, Any]]) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    loss, evals = [], []
    for h in history:
        if "loss" in h and "step" in h:
            loss.append({"step": int(h["step"]), "epoch": float(h.get("epoch", 0.0)), "loss": float(h["loss"])})
        ev = {k: float(v) for k, v in h.items() if k.startswith("eval_") and "ndcg" in k}
        if ev:
            evals.append({"step": int(h.get("step", 0)), **ev})
    return loss, evals


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
    ``bakeoff_training.json``; return that record."""
    require_training_deps()
    from datasets import Dataset as HFDataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MultipleNegativesRankingLoss,
    )

    out = Path(out)
    staging, scratch = prepare_out(out, overwrite=overwrite)
    train_ids, val_ids = split_validation(list(data.positives), fraction=params.val_fraction,
                                          max_queries=params.val_max_queries, seed=params.seed)
    train = data.subset(train_ids)
    cols = embedder_rows(train)
    n_rows = len(cols["anchor"])
    base_path = resolve_model(base)
    t0 = time.perf_counter()
    with scoped_global_rng():
        model = SentenceTransformer(base_path, device="cpu")
        base_max_len = model.max_seq_length
        if params.max_seq_length:  # a training-time truncation only; the saved model keeps the base's limit
            model.max_seq_length = params.max_seq_length
        loss = (CachedMultipleNegativesRankingLoss(model, mini_batch_size=params.mini_batch_size)
                if params.cached else MultipleNegativesRankingLoss(model))
        steps_per_epoch = math.ceil(n_rows / params.batch_size)
        total = params.max_steps if params.max_steps > 0 else max(1, math.ceil(steps_per_epoch * params.epochs))
        evaluator = None
        base_val: dict[str, float] = {}
        if val_ids:
            evaluator = InformationRetrievalEvaluator(
                queries={q: data.queries[q] for q in val_ids},
                corpus=validation_corpus(data, val_ids, size=params.val_corpus_size, seed=params.seed),
                relevant_docs={q: set(data.positives[q]) for q in val_ids},
                name="val", ndcg_at_k=[10], mrr_at_k=[10], precision_recall_at_k=[10], accuracy_at_k=[10],
                map_at_k=[10], write_csv=False, batch_size=params.batch_size,
            )
            base_val = {k: float(v) for k, v in evaluator(model).items() if "ndcg" in k or "recall" in k}
        args = SentenceTransformerTrainingArguments(
            **training_arguments(params, scratch=scratch, evaluator=evaluator, metric="eval_val_cosine_ndcg@10",
                                 total_steps=total, progress=progress),
            batch_sampler=BatchSamplers.NO_DUPLICATES,
        )
        trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=HFDataset.from_dict(cols),
                                             loss=loss, evaluator=evaluator)
        t_train = time.perf_counter()
        trainer.train()
        train_s = time.perf_counter() - t_train
        model = trainer.model
        model.max_seq_length = base_max_len
        model.save(str(staging))
        best = trainer.state.best_model_checkpoint
        best_metric = trainer.state.best_metric
        history = list(trainer.state.log_history)
    wall = time.perf_counter() - t0
    loss_curve, eval_curve = _loss_curve(history)
    record: dict[str, Any] = {
        "schema": "bakeoff.training", "schema_version": 1, "kind": "embedder",
        "base_model": base, "base_model_path": base_path,
        "trained_on": data.label, "split": data.source.get("split"),
        "data_fingerprint": data.fingerprint(), "data_source": dict(data.source),
        "n_queries": len(train.positives), "n_pairs": n_rows, "n_validation_queries": len(val_ids),
        "hard_negatives": {"used": "negative" in cols, "sources": dict(data.negatives_source)},
        "loss": "CachedMultipleNegativesRankingLoss" if params.cached else "MultipleNegativesRankingLoss",
        "params": asdict(params), "steps": int(trainer.state.global_step),
        "loss_curve": loss_curve, "validation_curve": eval_curve,
        "validation_base": base_val,
        "best_checkpoint_step": int(best.rsplit("-", 1)[-1]) if best else None,
        "best_validation_ndcg@10": best_metric,
        "wall_time_s": round(wall, 3), "train_time_s": round(train_s, 3),
        "pairs_per_second": round(min(int(trainer.state.global_step) * params.batch_size, n_rows * params.epochs) / train_s, 3) if train_s else None,
        "hygiene": dict(hygiene or {}), "versions": library_versions(),
    }
    write_training_record(staging, record)
    publish(staging, out, scratch)
    return record
