"""A fine-tune cached by content: the same training data, base model, options and code train once.

:func:`finetune_cached` trains an embedder (:func:`~bakeoff.train.embedder.finetune_embedder`) or a
reranker (:func:`~bakeoff.train.reranker.finetune_reranker`) from in-memory
:class:`~bakeoff.train.data.TrainingData`, keyed by

``sha256(kind, data fingerprint, base model selector and weights hash, params, extra, TRAINING_CODE_VERSION,
library versions)``

(:func:`training_key`). The model is trained in ``stage`` (a scratch folder the caller removes) and then
moved to the cache folder ``<cache root>/finetuned/<key[:2]>/<key>``: first under a temporary sibling
name, then renamed into place, so an interrupted run leaves no half-written model where a later run
looks. With the cache policy ``use`` a folder already there (holding ``bakeoff_training.json``) is
reused and nothing trains; ``refresh`` trains again and replaces it; ``off`` (or no cache) keeps the
model in ``stage``, where the caller decides what to do with it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from ..cache import Cache, cache_key
from ..library_versions import versions_of
from .common import read_training_record

__all__ = ["FINETUNED_DIR", "TRAINING_CODE_VERSION", "finetune_cached", "training_key"]

#: Cache sub-folder of the fine-tuned models.
FINETUNED_DIR = "finetuned"

#: Bumped whenever a change to the trainers changes what the same inputs train.
TRAINING_CODE_VERSION = "1"


def training_key(kind: str, data: Any, *, base: str, params: Any, extra: Mapping[str, Any] | None = None) -> str:
    """The content key of one fine-tune (module docstring): a change to any input trains afresh."""
    from ..models.resolve import model_identity
    from .trainer import TRAINING_LIBRARIES

    return cache_key({"kind": "finetuned", "recipe": kind, "data": data.fingerprint(),
                      "base": model_identity(base), "base_selector": base,
                      "params": asdict(params), "extra": dict(extra or {}), "code": TRAINING_CODE_VERSION,
                      "versions": versions_of(TRAINING_LIBRARIES, present_only=True)})


def finetune_cached(
    kind: Literal["embedder", "reranker"],
    data: Any,
    *,
    stage: Path,
    cache: Cache | None,
    params: Any,
    base: str = "minilm",
    extra: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> tuple[Path, dict[str, Any], bool]:
    """``(model folder, its training record, cache hit)`` for ``data`` (module docstring). ``extra`` is
    recorded in the key (e.g. how the negatives were mined) and, for a reranker, as its miner."""
    key = training_key(kind, data, base=base, params=params, extra=extra)
    final = None if cache is None or cache.policy == "off" else Path(cache.root) / FINETUNED_DIR / key[:2] / key
    if final is not None and cache is not None and cache.policy == "use":
        rec = read_training_record(final)
        if rec is not None:
            return final, rec, True
    out = Path(stage) / f"{kind}-{key[:16]}"
    if kind == "embedder":
        from .embedder import finetune_embedder

        rec = finetune_embedder(data, base=base, out=out, params=params, overwrite=True, progress=progress)
    else:
        from .reranker import finetune_reranker

        rec = finetune_reranker(data, base=base, out=out, params=params, miner=dict(extra or {}), overwrite=True,
                                progress=progress)
    if final is None:
        return out, rec, False
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{key}.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.move(str(out), str(tmp))  # the stage may sit on another file system than the cache
    old = final.parent / f".{key}.old-{os.getpid()}"
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)
    shutil.rmtree(old, ignore_errors=True)
    return final, rec, False
