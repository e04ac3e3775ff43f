"""Shared pieces of the trainers: scoped global RNG, atomic model folders, the
``bakeoff_training.json`` record and the fine-tuned mark read from it. (The training
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
import json
import os
import random
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write_json
from ..errors import ConfigError, MissingDependencyError

__all__ = [
    "TRAINING_FILE",
    "fine_tuned_mark",
    "require_training_deps",
    "scoped_global_rng",
    "prepare_out",
    "publish",
    "write_training_record",
    "read_training_record",
]

#: Written into every fine-tuned model folder.
TRAINING_FILE = "bakeoff_training.json"


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
