"""Shared pieces of the trainers: scoped global RNG, atomic model folders, writing
the ``bakeoff_training.json`` record (read by :mod:`bakeoff.models.training_record`). (The training
skeleton itself is :mod:`.trainer`; model names resolve in :mod:`bakeoff.models.resolve`.)

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
import os
import random
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write_json
from ..errors import ConfigError, MissingDependencyError
from ..models.training_record import TRAINING_FILE, read_training_record

__all__ = [
    "TRAINING_FILE",
    "prepare_out",
    "publish",
    "read_training_record",
    "require_training_deps",
    "scoped_global_rng",
    "write_training_record",
]

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
