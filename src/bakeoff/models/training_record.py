"""The training record of a fine-tuned model folder: ``bakeoff_training.json``.

``bakeoff finetune`` writes it into every model folder it produces (what the model was
trained on: dataset, split, kind, base model, data fingerprint ...). Arms whose model is
such a folder declare it as their provenance (``Arm.provenance()``), which the runner
records as ``fine_tuned`` in ``results.json``, so a fine-tuned arm is marked with the
split it was trained on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["TRAINING_FILE", "read_training_record", "training_mark"]

#: Written into every fine-tuned model folder.
TRAINING_FILE = "bakeoff_training.json"


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


def training_mark(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """For an arm config naming a model folder that holds ``bakeoff_training.json`` (any string
    option, nested dicts included, visited in sorted key order; the first such folder wins):
    ``{"model", "option", "trained_on", "split", "kind", "base_model", "data_fingerprint"}``
    (``option`` is the dotted config key, e.g. ``encoder.model``); else ``None``."""
    for key, value in _strings(config):
        if "/" not in value and "\\" not in value and not Path(value).is_dir():
            continue
        rec = read_training_record(value)
        if rec is not None:
            return {"model": value, "option": key, "trained_on": rec.get("trained_on"), "split": rec.get("split"),
                    "kind": rec.get("kind"), "base_model": rec.get("base_model"),
                    "data_fingerprint": rec.get("data_fingerprint")}
    return None
