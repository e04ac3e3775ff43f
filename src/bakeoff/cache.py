"""Content-addressed cache for expensive stages (runs, embeddings, rerank scores ...).

A key is the sha256 of the canonical JSON of everything that changes an
output: data fingerprints, the arm's config, model identity, and the versions
of libraries that change results. Entries live at
``<root>/<kind>/<key[:2]>/<key>.<ext>`` and are written atomically, so a
reader sees either the complete entry or none. Since the key covers every
input, a stale entry cannot be hit: changed inputs give a different key.

Policies: ``use`` (read and write), ``refresh`` (recompute, overwrite),
``off`` (neither read nor write).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ._io import atomic_write_bytes
from .data.model import Run

__all__ = ["Cache", "CachePolicy", "cache_key", "checkpointed_rows", "default_cache_dir"]

CachePolicy = Literal["use", "refresh", "off"]


def default_cache_dir() -> Path:
    """``$BAKEOFF_CACHE_DIR``, else ``$XDG_CACHE_HOME/bakeoff``, else ``~/.cache/bakeoff``."""
    env = os.environ.get("BAKEOFF_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bakeoff"


def cache_key(parts: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical (sorted-key, compact) JSON of ``parts``."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class Cache:
    """A folder of content-addressed entries. ``hits``/``misses`` count lookups by kind."""

    root: Path = field(default_factory=default_cache_dir)
    policy: CachePolicy = "use"
    hits: dict[str, int] = field(default_factory=dict)
    misses: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = Path(self.root)

    def path(self, kind: str, key: str, ext: str) -> Path:
        return self.root / kind / key[:2] / f"{key}.{ext}"

    def _lookup(self, kind: str, key: str, ext: str) -> Path | None:
        if self.policy != "use":
            return None
        p = self.path(kind, key, ext)
        if p.exists():
            self.hits[kind] = self.hits.get(kind, 0) + 1
            return p
        self.misses[kind] = self.misses.get(kind, 0) + 1
        return None

    # bytes -----------------------------------------------------------------
    def get_bytes(self, kind: str, key: str, ext: str = "bin") -> bytes | None:
        p = self._lookup(kind, key, ext)
        return None if p is None else p.read_bytes()

    def put_bytes(self, kind: str, key: str, data: bytes, ext: str = "bin") -> None:
        if self.policy != "off":
            atomic_write_bytes(self.path(kind, key, ext), data)

    # JSON ------------------------------------------------------------------
    def get_json(self, kind: str, key: str) -> Any | None:
        data = self.get_bytes(kind, key, "json")
        return None if data is None else json.loads(data)

    def put_json(self, kind: str, key: str, obj: Any) -> None:
        self.put_bytes(kind, key, json.dumps(obj, ensure_ascii=False).encode("utf-8"), "json")

    # arrays ----------------------------------------------------------------
    def get_array(self, kind: str, key: str, *, mmap: bool = False) -> np.ndarray | None:
        p = self._lookup(kind, key, "npy")
        if p is None:
            return None
        return np.load(p, mmap_mode="r" if mmap else None, allow_pickle=False)

    def put_array(self, kind: str, key: str, array: np.ndarray) -> None:
        if self.policy == "off":
            return
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
        atomic_write_bytes(self.path(kind, key, "npy"), buf.getvalue())

    # runs ------------------------------------------------------------------
    def get_run(self, key: str, *, name: str) -> tuple[Run, dict[str, Any]] | None:
        """A cached run and the metadata stored with it (e.g. timings of the original)."""
        obj = self.get_json("run", key)
        if obj is None:
            return None
        ranked = {q: tuple((d, float(s)) for d, s in pairs) for q, pairs in obj["ranked"].items()}
        return Run.from_ranked(name, ranked), obj.get("meta", {})

    def put_run(self, key: str, run: Run, meta: Mapping[str, Any] | None = None) -> None:
        obj = {"ranked": {q: [[d, s] for d, s in run[q]] for q in run}, "meta": dict(meta or {})}
        self.put_json("run", key, obj)


def checkpointed_rows(
    cache: Cache | None,
    kind: str,
    key: str,
    n: int,
    compute: Callable[[int, int], np.ndarray],
    *,
    batch_size: int,
    progress: bool = True,
    desc: str = "",
    unit: str = "row",
) -> tuple[np.ndarray, bool]:
    """Compute an ``(n, ...)`` array in fixed batches with crash-safe resume.

    ``compute(start, end)`` returns rows ``start:end``. Each finished batch is
    saved atomically as ``<kind>/<key>.parts/<start>-<end>.npy``; a re-run after
    a crash (even ``kill -9``) loads the finished batches and computes only the
    rest, so at most one batch of work is lost. Batch boundaries depend only on
    ``n`` and ``batch_size``, so a resumed result is identical to an
    uninterrupted one. When all rows exist they are assembled into the final
    entry ``<kind>/<key>.npy`` and the parts are removed.

    Returns ``(array, hit)`` where ``hit`` is True when the final entry was
    already cached. With ``cache=None`` (or policy ``off``) nothing is stored.
    """
    if cache is not None:
        done = cache.get_array(kind, key)
        if done is not None:
            return done, True
    from .progress import progress_bar

    parts_dir = None if cache is None or cache.policy == "off" else cache.path(kind, key, "parts")
    if parts_dir is not None and cache is not None and cache.policy == "refresh" and parts_dir.exists():
        shutil.rmtree(parts_dir, ignore_errors=True)
    chunks: list[np.ndarray] = []
    bar = progress_bar(total=n, desc=desc, enabled=progress, unit=unit)
    for start in range(0, n, batch_size):
        end = min(n, start + batch_size)
        part = None if parts_dir is None else parts_dir / f"{start}-{end}.npy"
        if part is not None and part.exists():
            arr = np.load(part, allow_pickle=False)
        else:
            arr = np.asarray(compute(start, end))
            if part is not None:
                buf = io.BytesIO()
                np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
                atomic_write_bytes(part, buf.getvalue())
        chunks.append(arr)
        bar.update(end - start)
    bar.close()
    result = np.concatenate(chunks, axis=0) if chunks else np.empty((0,))
    if cache is not None and cache.policy != "off":
        cache.put_array(kind, key, result)
        if parts_dir is not None:
            shutil.rmtree(parts_dir, ignore_errors=True)
    return result, False
