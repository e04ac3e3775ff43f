"""The training skeleton both trainers share: split, rows, seeded fit, best checkpoint, record, atomic publish.

:func:`fit` runs one fine-tune the same way for the embedder
(:mod:`.embedder`) and the reranker (:mod:`.reranker`); a trainer supplies
only what differs, as a :class:`Recipe`: how to turn training data into
columns (``rows``) and how to build the model, loss, evaluator and trainer
classes (``build``). The steps, in order:

1. the output folder is checked and a staging folder made (:func:`~.common.prepare_out`);
2. a seeded validation slice of the training queries is held out
   (:func:`~bakeoff.train.data.split_validation`, ``val_fraction``,
   ``val_max_queries``, ``seed``); the rest become the training rows;
3. the base model selector is resolved by :func:`bakeoff.models.resolve.model_path`
   (the bundled MiniLM offline, a folder, or a hub name);
4. inside :func:`~.common.scoped_global_rng` (so the caller's random state is
   untouched): ``build`` makes the model, loss and evaluator; the Hugging Face
   trainer runs with :func:`training_arguments` (seeded, CPU, validation
   ``evals`` times and the best checkpoint by ``metric`` kept); the model is
   saved to the staging folder;
5. the ``bakeoff_training.json`` record (:func:`training_record`) is written
   and the folder is renamed into place (:func:`~.common.publish`).

Total steps are ``max_steps`` when positive, else ``max(1, ceil(ceil(rows /
batch_size) * epochs))``; ``pairs_per_second`` is ``min(steps * batch_size,
rows * epochs) / train seconds``.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..library_versions import versions_of
from ..models.resolve import model_path
from .common import prepare_out, publish, scoped_global_rng, write_training_record
from .data import TrainingData, split_validation

__all__ = ["Recipe", "Setup", "TrainParams", "Trained", "fit", "loss_curve", "training_arguments", "training_record"]

#: Libraries whose versions a training record keeps.
TRAINING_LIBRARIES = ("sentence-transformers", "transformers", "torch", "datasets", "accelerate")


@dataclass(frozen=True)
class TrainParams:
    """Options both trainers share (defaults sized for a 2-core CPU); see :func:`training_arguments`."""

    batch_size: int = 32
    epochs: float = 1.0
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.1
    seed: int = 0
    val_fraction: float = 0.1
    evals: int = 3
    max_steps: int = -1
    bf16: bool = False  # bfloat16 autocast mixed precision (fp32 master weights); fast on CPUs with AMX
    val_max_queries: int = 100


def training_arguments(
    params: Any, *, scratch: Path, evaluator: Any, metric: str, total_steps: int, progress: bool
) -> dict[str, Any]:
    """Keyword arguments shared by the embedder's and the reranker's HF training arguments.

    CPU only, seeded (``seed`` and ``data_seed`` = ``params.seed``), logged every step; with an
    evaluator, validation every ``ceil(total_steps / params.evals)`` steps and the best checkpoint
    (by ``metric``, higher is better) loaded at the end. ``warmup_ratio`` is passed as a float
    ``warmup_steps``, the form Transformers v5 accepts for a ratio. ``params.bf16`` turns on
    bfloat16 mixed precision (``torch.autocast`` on CPU: bf16 matrix products, fp32 weights,
    optimizer state and loss), ~2x faster on CPUs with AMX; results then differ from fp32
    training within bf16 rounding, and the choice is recorded with the other parameters.
    """
    eval_steps = max(1, -(-total_steps // max(1, params.evals)))
    return {
        "output_dir": str(scratch),
        "num_train_epochs": params.epochs,
        "max_steps": params.max_steps,
        "per_device_train_batch_size": params.batch_size,
        "per_device_eval_batch_size": params.batch_size,
        "learning_rate": params.learning_rate,
        "warmup_steps": params.warmup_ratio,
        "seed": params.seed,
        "data_seed": params.seed,
        "use_cpu": True,
        "bf16": bool(params.bf16),
        "report_to": "none",
        "logging_steps": 1,
        "eval_strategy": "steps" if evaluator else "no",
        "eval_steps": eval_steps if evaluator else None,
        "save_strategy": "steps" if evaluator else "no",
        "save_steps": eval_steps,
        "save_total_limit": 2 if evaluator else None,
        "load_best_model_at_end": bool(evaluator),
        "metric_for_best_model": metric if evaluator else None,
        "greater_is_better": True,
        "disable_tqdm": not (progress and bool(getattr(sys.stderr, "isatty", lambda: False)())),
        "dataloader_num_workers": 0,
        "save_only_model": True,
    }


def loss_curve(history: list[Mapping[str, Any]]) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """``(loss per logged step, validation NDCG/recall per evaluation)`` from a trainer's log history."""
    loss, evals = [], []
    for h in history:
        if "loss" in h and "step" in h:
            loss.append({"step": int(h["step"]), "epoch": float(h.get("epoch", 0.0)), "loss": float(h["loss"])})
        ev = {k: float(v) for k, v in h.items() if k.startswith("eval_") and "ndcg" in k}
        if ev:
            evals.append({"step": int(h.get("step", 0)), **ev})
    return loss, evals


@dataclass
class Setup:
    """What a recipe builds inside the seeded scope: the model, its loss and evaluator, and the
    sentence-transformers trainer / training-arguments classes to run them with.

    ``args_extra`` are further training arguments; ``after_train(model)`` runs on the best model
    before it is saved; ``record`` holds recipe fields known before training (e.g. the base
    model's validation score)."""

    model: Any
    loss: Any
    evaluator: Any
    trainer_cls: Any
    args_cls: Any
    metric: str
    args_extra: dict[str, Any] = field(default_factory=dict)
    after_train: Callable[[Any], None] | None = None
    record: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Recipe:
    """What differs between trainers: ``kind`` (``embedder``/``reranker``), ``rows(train data) ->
    columns`` and ``build(base model path, validation query ids) -> Setup``."""

    kind: str
    rows: Callable[[TrainingData], dict[str, list[Any]]]
    build: Callable[[str, list[str]], Setup]


@dataclass
class Trained:
    """What one fit produced (for the record)."""

    train: TrainingData
    cols: dict[str, list[Any]]
    n_rows: int
    val_ids: list[str]
    base_path: str
    setup: Setup
    steps: int
    best_checkpoint: str | None
    best_metric: float | None
    history: list[Mapping[str, Any]]
    train_s: float
    wall_s: float = 0.0


def fit(
    data: TrainingData,
    recipe: Recipe,
    *,
    base: str,
    out: Path,
    params: TrainParams,
    record: Callable[[Trained], Mapping[str, Any]] = lambda t: {},
    hygiene: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Fine-tune ``base`` on ``data`` as ``recipe`` says (see module doc); write the model (best
    checkpoint) and ``bakeoff_training.json`` to ``out`` and return the record. ``record(trained)``
    adds the recipe's own fields to it."""
    from datasets import Dataset as HFDataset

    out = Path(out)
    staging, scratch = prepare_out(out, overwrite=overwrite)
    train_ids, val_ids = split_validation(list(data.positives), fraction=params.val_fraction,
                                          max_queries=params.val_max_queries, seed=params.seed)
    train = data.subset(train_ids)
    cols = recipe.rows(train)
    n_rows = len(next(iter(cols.values())))
    base_path = model_path(base)
    steps_per_epoch = math.ceil(n_rows / params.batch_size)
    total = params.max_steps if params.max_steps > 0 else max(1, math.ceil(steps_per_epoch * params.epochs))
    t0 = time.perf_counter()
    with scoped_global_rng():
        setup = recipe.build(base_path, val_ids)
        args = setup.args_cls(
            **training_arguments(params, scratch=scratch, evaluator=setup.evaluator, metric=setup.metric,
                                 total_steps=total, progress=progress),
            **setup.args_extra,
        )
        trainer = setup.trainer_cls(model=setup.model, args=args, train_dataset=HFDataset.from_dict(cols),
                                    loss=setup.loss, evaluator=setup.evaluator)
        from transformers import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # without bars it prints each log to stdout; the record keeps them
        t_train = time.perf_counter()
        trainer.train()
        train_s = time.perf_counter() - t_train
        model = trainer.model
        if setup.after_train is not None:
            setup.after_train(model)
        model.save(str(staging))
        trained = Trained(train=train, cols=cols, n_rows=n_rows, val_ids=val_ids, base_path=base_path, setup=setup,
                           steps=int(trainer.state.global_step), best_checkpoint=trainer.state.best_model_checkpoint,
                           best_metric=trainer.state.best_metric, history=list(trainer.state.log_history),
                           train_s=train_s)
    trained.wall_s = time.perf_counter() - t0
    rec = training_record(data, recipe.kind, base=base, params=params, trained=trained, extra=record(trained),
                          hygiene=hygiene)
    write_training_record(staging, rec)
    publish(staging, out, scratch)
    return rec


def training_record(
    data: TrainingData,
    kind: str,
    *,
    base: str,
    params: TrainParams,
    trained: Trained,
    extra: Mapping[str, Any],
    hygiene: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The ``bakeoff_training.json`` record: provenance, sizes, curves, the best checkpoint, timings,
    library versions; ``extra`` (the recipe's fields) goes after the sizes."""
    losses, evals = loss_curve(trained.history)
    best = trained.best_checkpoint
    train_s = trained.train_s
    return {
        "schema": "bakeoff.training", "schema_version": 1, "kind": kind,
        "base_model": base, "base_model_path": trained.base_path,
        "trained_on": data.label, "split": data.source.get("split"),
        "data_fingerprint": data.fingerprint(), "data_source": dict(data.source),
        "n_queries": len(trained.train.positives), "n_pairs": trained.n_rows,
        "n_validation_queries": len(trained.val_ids),
        **extra,
        "loss": type(trained.setup.loss).__name__, "params": asdict(params), "steps": trained.steps,
        "loss_curve": losses, "validation_curve": evals,
        **trained.setup.record,
        "best_checkpoint_step": int(best.rsplit("-", 1)[-1]) if best else None,
        "best_validation_ndcg@10": trained.best_metric,
        "wall_time_s": round(trained.wall_s, 3), "train_time_s": round(train_s, 3),
        "pairs_per_second": (round(min(trained.steps * params.batch_size, trained.n_rows * params.epochs) / train_s, 3)
                             if train_s else None),
        "hygiene": dict(hygiene or {}), "versions": versions_of(TRAINING_LIBRARIES, present_only=True),
    }
