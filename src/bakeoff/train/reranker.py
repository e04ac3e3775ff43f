"""Fine-tune a cross-encoder reranker on positives and mined negatives.

Rows: per training query (sorted ids), every positive document with label 1
and its mined negatives with label 0 — the first ``n_negatives`` documents of a
first-stage arm's top-``mine_depth`` (BM25 by default) that are not judged for
the query (see :func:`bakeoff.train.data.mine_negatives`). Loss: binary
cross-entropy on the single logit, ``BCE(s, y) = -[y log σ(s) + (1-y) log(1-σ(s))]``,
averaged over the batch.

The offline default initialisation is the bundled all-MiniLM-L6-v2 encoder
with a fresh one-logit classification head (its initial weights come from
torch's generator, seeded with ``seed`` inside :func:`~bakeoff.train.common.scoped_global_rng`).

Validation: a seeded slice of training queries; every ``eval_steps`` the model
reranks each validation query's positives plus its ``n_val_candidates`` mined
candidates, and the checkpoint with the best NDCG@10 is kept.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import require_training_deps
from .data import TrainingData
from .trainer import Recipe, Setup, Trained, TrainParams, fit

__all__ = ["RerankerParams", "finetune_reranker", "reranker_rows"]

log = logging.getLogger("bakeoff")


@dataclass(frozen=True)
class RerankerParams(TrainParams):
    """Reranker training options: the shared :class:`~.trainer.TrainParams` plus these."""

    max_length: int = 256
    val_max_queries: int = 50


def reranker_rows(data: TrainingData) -> dict[str, list[Any]]:
    """Columns ``query``, ``document``, ``label`` (1.0 positive, 0.0 mined negative)."""
    texts = data.corpus.full_texts()
    pos_of = data.corpus.position
    cols: dict[str, list[Any]] = {"query": [], "document": [], "label": []}
    for qid in sorted(data.positives):
        q = data.queries[qid]
        for doc, lab in [(d, 1.0) for d in data.positives[qid]] + [(d, 0.0) for d in data.negatives.get(qid, ())]:
            cols["query"].append(q)
            cols["document"].append(texts[pos_of[doc]])
            cols["label"].append(lab)
    return cols


def random_order_ndcg(n_positive: Sequence[int], n_candidates: Sequence[int], *, k: int = 10) -> float:
    """Expected NDCG@k of a uniformly random ordering, averaged over validation samples.

    A sample has ``p`` relevant (gain 1) among ``n`` candidates; under a random permutation
    each relevant document is at rank ``r`` with probability ``1/n``, so
    ``E[DCG@k] = p/n * sum_{r=1}^{min(n,k)} 1/log2(r+1)`` and ``IDCG@k = sum_{r=1}^{min(p,k)} 1/log2(r+1)``.
    A reranker whose validation NDCG@10 is not clearly above this has learned (almost) nothing.
    """
    vals = []
    for p, n in zip(n_positive, n_candidates, strict=True):
        if p <= 0 or n <= 0:
            continue
        disc = [1.0 / math.log2(r + 1) for r in range(1, min(n, k) + 1)]
        vals.append((p / n) * sum(disc) / sum(disc[: min(p, k)]))
    return float(sum(vals) / len(vals)) if vals else float("nan")


def finetune_reranker(
    data: TrainingData,
    *,
    base: str,
    out: Path,
    params: RerankerParams = RerankerParams(),
    miner: Mapping[str, Any] | None = None,
    hygiene: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Train a one-logit CrossEncoder with BCE; write it (best checkpoint) to ``out`` with
    ``bakeoff_training.json`` and return that record (steps: :func:`bakeoff.train.trainer.fit`).
    ``data.negatives`` must be mined."""
    require_training_deps()
    import transformers
    from sentence_transformers import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.evaluation import CrossEncoderRerankingEvaluator
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    texts = data.corpus.full_texts()
    pos_of = data.corpus.position

    def build(base_path: str, val_ids: list[str]) -> Setup:
        transformers.set_seed(params.seed)  # the fresh classification head draws from torch's global generator
        model = CrossEncoder(base_path, num_labels=1, max_length=params.max_length, device="cpu")
        loss = BinaryCrossEntropyLoss(model)
        evaluator = None
        random_ndcg = None
        if val_ids:
            samples: list[dict[str, str | list[str]]] = [
                {"query": data.queries[q], "positive": [texts[pos_of[d]] for d in data.positives[q]],
                 "documents": [texts[pos_of[d]] for d in data.negatives.get(q, ())]}
                for q in val_ids
            ]
            random_ndcg = random_order_ndcg([len(x["positive"]) for x in samples],
                                            [len(x["positive"]) + len(x["documents"]) for x in samples])
            evaluator = CrossEncoderRerankingEvaluator(samples=samples, at_k=10, always_rerank_positives=True,
                                                       name="val", write_csv=False, batch_size=params.batch_size)
        return Setup(model=model, loss=loss, evaluator=evaluator, trainer_cls=CrossEncoderTrainer,
                     args_cls=CrossEncoderTrainingArguments, metric="eval_val_ndcg@10",
                     record={"validation_random_order_ndcg@10": random_ndcg})

    def record(trained: Trained) -> dict[str, Any]:
        return {"n_positive_pairs": int(sum(trained.cols["label"])),
                "negatives": {"miner": dict(miner or {"arm": "bm25"}), "sources": dict(data.negatives_source)}}

    rec = fit(data, Recipe("reranker", reranker_rows, build), base=base, out=out, params=params, record=record,
              hygiene=hygiene, overwrite=overwrite, progress=progress)
    best, random_ndcg = rec["best_validation_ndcg@10"], rec["validation_random_order_ndcg@10"]
    if best is not None and random_ndcg is not None and best < random_ndcg + 0.05:
        log.warning("reranker validation NDCG@10 %.3f is within 0.05 of a random order (%.3f): it learned little; "
                    "try more data or epochs, a higher --lr, or a base that already is a cross-encoder",
                    best, random_ndcg)
    return rec
