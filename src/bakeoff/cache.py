"""Content-addressed cache for expensive stages (runs, embeddings, rerank scores ...).

A key is the sha256 of the canonical JSON of everything that changes an
output: data fingerprints, the arm's config, model identity, and the versions
of libraries that change results. Entries live at
``<root>/<kind>/<key[:2]>/<key>.<ext>`` and are written atomically, so a
reader sees either the complete entry or none. Since the key covers every
input, a stale entry cannot be hit: changed inputs give a different key.

Policies: ``use`` (read and write), ``refresh`` (recompute, overwrite),
``off`` (neither read nor write).

Long array computations (corpus embeddings, rerank scores) checkpoint through
:class:`RowCheckpoint`, the one chunk-parts protocol, used both in process
(:func:`checkpointed_rows`) and by the Ray engine.

Every key includes the *code version* of the component that computes the entry
(``Arm.code_version``, an encoder's or cross-encoder's ``code_version``, the LLM
client's), bumped by a developer whenever that code's output changes, so an
entry written by older scoring code is never served (the stale-reuse bug of
PyTerrier#304). ``tests/arms/test_golden_runs.py`` fails when an arm's run
changes but its code version did not.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ._io import atomic_write_bytes
from .data.model import Run
from .environment import CACHE_DIR, XDG_CACHE_HOME

__all__ = ["Cache", "CachePolicy", "RowCheckpoint", "cache_key", "checkpointed_rows", "default_cache_dir"]

CachePolicy = Literal["use", "refresh", "off"]


def default_cache_dir() -> Path:
    """``$BAKEOFF_CACHE_DIR``, else ``$XDG_CACHE_HOME/bakeoff``, else ``~/.cache/bakeoff``."""
    folder = CACHE_DIR.get()
    if folder is not None:
        return folder
    return (XDG_CACHE_HOME.get() or Path(os.path.expanduser("~")) / ".cache") / "bakeoff"


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


@dataclass
class RowCheckpoint:
    """THE checkpoint protocol: an ``(n, ...)`` array computed in fixed chunks, each saved as it is done.

    Chunk ``[start, end)`` (``start`` a multiple of ``chunk_rows``, ``end = min(n, start +
    chunk_rows)``) is saved atomically as ``<kind>/<key>.parts/<start>-<end>.npy``; when all
    chunks exist they are assembled into the final entry ``<kind>/<key>.npy`` and the parts are
    removed. Boundaries depend only on ``n`` and ``chunk_rows``, so a run resumed after a crash
    (even ``kill -9``) computes only the missing chunks and its result equals an uninterrupted
    one, whoever computed the chunks: :func:`checkpointed_rows` in this process or
    :class:`bakeoff.engine.ray_engine.RayEngine` on a cluster both go through this class.

    With ``cache=None`` or policy ``off`` nothing is read or stored; with policy ``refresh`` the
    final entry is ignored and stale parts are removed by :meth:`begin`.
    """

    cache: Cache | None
    kind: str
    key: str
    n: int
    chunk_rows: int

    def __post_init__(self) -> None:
        if self.chunk_rows < 1:
            raise ValueError(f"chunk_rows must be >= 1, got {self.chunk_rows}")

    @property
    def parts_dir(self) -> Path | None:
        """``<kind>/<key[:2]>/<key>.parts`` or ``None`` when nothing is stored."""
        if self.cache is None or self.cache.policy == "off":
            return None
        return self.cache.path(self.kind, self.key, "parts")

    def chunks(self) -> list[tuple[int, int]]:
        """The ``(start, end)`` row ranges, in order."""
        return [(s, min(self.n, s + self.chunk_rows)) for s in range(0, self.n, self.chunk_rows)]

    def cached(self) -> np.ndarray | None:
        """The final entry when it exists (and the policy is ``use``)."""
        return None if self.cache is None else self.cache.get_array(self.kind, self.key)

    def begin(self) -> None:
        """Start computing: under policy ``refresh``, earlier parts are removed (they are not trusted)."""
        parts = self.parts_dir
        if parts is not None and self.cache is not None and self.cache.policy == "refresh" and parts.exists():
            shutil.rmtree(parts, ignore_errors=True)

    def _part(self, start: int, end: int) -> Path | None:
        parts = self.parts_dir
        return None if parts is None else parts / f"{start}-{end}.npy"

    def pending(self) -> list[tuple[int, int]]:
        """Chunks without a saved part (all of them when nothing is stored)."""
        return [(s, e) for s, e in self.chunks() if (p := self._part(s, e)) is None or not p.exists()]

    def load_part(self, start: int, end: int) -> np.ndarray | None:
        """The saved rows ``start:end``, or ``None``."""
        p = self._part(start, end)
        return np.load(p, allow_pickle=False) if p is not None and p.exists() else None

    def save_part(self, start: int, end: int, rows: np.ndarray) -> None:
        """Save rows ``start:end`` atomically (a no-op when nothing is stored)."""
        if len(rows) != end - start:
            raise ValueError(f"chunk {start}-{end} of {self.kind}/{self.key}: got {len(rows)} rows")
        p = self._part(start, end)
        if p is None:
            return
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(rows), allow_pickle=False)
        atomic_write_bytes(p, buf.getvalue())

    def finish(self, chunks: Sequence[np.ndarray]) -> np.ndarray:
        """Concatenate the chunks (in :meth:`chunks` order), store the final entry, remove the parts."""
        result = np.concatenate(chunks, axis=0) if len(chunks) else np.empty((0,))
        if self.cache is not None and self.cache.policy != "off":
            self.cache.put_array(self.kind, self.key, result)
            parts = self.parts_dir
            if parts is not None:
                shutil.rmtree(parts, ignore_errors=True)
        return result


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
    """Compute an ``(n, ...)`` array in fixed batches with crash-safe resume (:class:`RowCheckpoint`).

    ``compute(start, end)`` returns rows ``start:end`` for each chunk of ``batch_size`` rows that
    has no saved part; a re-run after a crash loads the finished chunks and computes only the
    rest, so at most one batch of work is lost, and the result is identical to an uninterrupted
    one. Returns ``(array, hit)`` where ``hit`` is True when the final entry was already cached.
    With ``cache=None`` (or policy ``off``) nothing is stored.
    """
    ckpt = RowCheckpoint(cache, kind, key, n, batch_size)
    done = ckpt.cached()
    if done is not None:
        return done, True
    from .progress import progress_bar

    ckpt.begin()
    chunks: list[np.ndarray] = []
    bar = progress_bar(total=n, desc=desc, enabled=progress, unit=unit)
    for start, end in ckpt.chunks():
        arr = ckpt.load_part(start, end)
        if arr is None:
            arr = np.asarray(compute(start, end))
            ckpt.save_part(start, end, arr)
        chunks.append(arr)
        bar.update(end - start)
    bar.close()
    return ckpt.finish(chunks), False
