"""Distributed corpus encoding and pair reranking on Ray Data, bit-identical to the local path.

The local path encodes rows ``[start, end)`` in fixed chunks (the boundaries of
:class:`bakeoff.cache.RowCheckpoint`: multiples of ``checkpoint_rows``), one
``encoder.encode(texts[start:end], batch_size=...)`` call per chunk. :class:`RayEngine` keeps exactly
that composition: it makes a Ray dataset with **one row per chunk** (start,
end, texts) and runs ``map_batches(batch_size=1)`` over an actor pool
(``ActorPoolStrategy(size=actors)``) whose actors hold the model, built once per
actor by the picklable ``encoder_factory``. Each chunk's rows come back as raw
float bytes; the driver saves them as they arrive and assembles the final entry
through :class:`bakeoff.cache.RowCheckpoint`, the one checkpoint protocol the
local path uses too (parts ``<kind>/<key>.parts/<start>-<end>.npy``). Because
every chunk is encoded by the same function on the same texts, the result is
bit-identical to the local path (same model, library versions and thread
count — see the test and the report); a crashed run resumes with only its
missing chunks.

Reranking (:meth:`RayEngine.score_pairs`) is the same machinery over
(query, document) pairs: the rerank arm's length-sorted pairs in its chunks of
``chunk`` pairs, each chunk scored by ``CrossEncoderScorer.score(pairs,
batch_size=...)`` in an actor that built the scorer once (same model, precision,
head seed, thread count), shards written as they arrive under the arm's cache
key — so reranked runs are identical to the local path, and a crash resumes.

Addresses: ``"local"`` starts an in-process local cluster (``num_cpus``),
``"auto"`` joins the running cluster, anything else is passed to
``ray.init(address=...)`` (e.g. ``ray://head:10001``).
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..cache import Cache, RowCheckpoint
from ..errors import BakeoffError, MissingDependencyError
from ..progress import progress_bar

__all__ = ["EncoderFactory", "RayEngine", "ScorerFactory", "detached"]

#: Builds, inside a Ray actor, a function mapping a list of texts to an ``(n, d)`` float array.
EncoderFactory = Callable[[], Callable[[list[str]], np.ndarray]]


def detached(encoder: Any) -> Any:
    """A shallow copy of ``encoder`` without its loaded model (``_model``), cheap to pickle;
    each actor loads the model once on first use."""
    clone = copy.copy(encoder)
    if hasattr(clone, "_model"):
        clone._model = None
    return clone


class _EncodeWith:
    """Picklable factory: ``encoder.encode(texts, kind=kind, batch_size=batch_size)`` in the actor."""

    def __init__(self, encoder: Any, kind: str, batch_size: int, threads: int | None) -> None:
        self.encoder, self.kind, self.batch_size = detached(encoder), kind, int(batch_size)
        self.threads = threads

    def __call__(self) -> Callable[[list[str]], np.ndarray]:
        if self.threads is not None:
            # CPU matmul results depend on the intra-op thread count (blocking of the reductions);
            # Ray gives an actor OMP_NUM_THREADS=num_cpus, so pin torch to the driver's count.
            import torch

            torch.set_num_threads(self.threads)
        enc, kind, bs = self.encoder, self.kind, self.batch_size
        return lambda texts: np.asarray(enc.encode(texts, kind=kind, batch_size=bs), dtype=np.float32)


#: Builds, inside a Ray actor, a function mapping a list of (query, document) pairs to ``(n,)`` scores.
ScorerFactory = Callable[[], Callable[[list[tuple[str, str]]], np.ndarray]]


class _ScoreWith:
    """Picklable factory: a ``CrossEncoderScorer`` built in the actor from its options, ``score(pairs)``."""

    def __init__(self, options: dict[str, Any], batch_size: int, threads: int | None) -> None:
        self.options, self.batch_size, self.threads = dict(options), int(batch_size), threads

    def __call__(self) -> Callable[[list[tuple[str, str]]], np.ndarray]:
        if self.threads is not None:  # same reason as _EncodeWith
            import torch

            torch.set_num_threads(self.threads)
        from ..models.cross_encoders import CrossEncoderScorer

        scorer, bs = CrossEncoderScorer(**self.options), self.batch_size
        return lambda pairs: np.asarray(scorer.score(pairs, batch_size=bs), dtype=np.float32)


def _driver_torch_threads() -> int | None:
    """torch's intra-op thread count in this (driver) process, when torch is already imported."""
    import sys

    torch = sys.modules.get("torch")
    return None if torch is None else int(torch.get_num_threads())


class _EncodeChunk:
    """Ray Data callable class: holds one encoder (model) per actor, encodes one chunk per call."""

    def __init__(self, factory: EncoderFactory) -> None:
        self.encode = factory()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out: dict[str, list[Any]] = {"start": [], "end": [], "data": [], "shape": [], "dtype": []}
        seconds = batch["seconds"] if "seconds" in batch else [None] * len(batch["start"])
        for start, end, texts, second in zip(batch["start"], batch["end"], batch["texts"], seconds):
            items: list[Any] = [str(t) for t in texts]
            if second is not None:  # pairs: (texts[i], seconds[i])
                items = list(zip(items, (str(t) for t in second), strict=True))
            arr = np.ascontiguousarray(self.encode(items))
            if arr.shape[0] != int(end) - int(start):
                raise ValueError(f"encoder returned {arr.shape[0]} rows for chunk {start}-{end}")
            out["start"].append(int(start))
            out["end"].append(int(end))
            out["data"].append(arr.tobytes())
            out["shape"].append(",".join(map(str, arr.shape)))
            out["dtype"].append(arr.dtype.str)
        return {k: np.array(v, dtype=object) for k, v in out.items()}


class RayEngine:
    """Encode corpus chunks on a Ray cluster (see module docstring)."""

    name = "ray"

    def __init__(self, *, address: str = "local", actors: int = 2, num_cpus: int | None = None,
                 cpus_per_actor: float = 1.0, object_store_memory: int | None = None) -> None:
        self.address, self.actors, self.num_cpus = address, int(actors), num_cpus
        self.cpus_per_actor, self.object_store_memory = float(cpus_per_actor), object_store_memory

    def describe(self) -> dict[str, Any]:
        return {"engine": "ray", "address": self.address, "actors": self.actors}

    def _init(self) -> Any:
        try:
            import ray
        except ImportError:
            raise MissingDependencyError("ray", "ray", "--engine ray") from None
        if not ray.is_initialized():
            try:
                if self.address == "local":
                    ray.init(num_cpus=self.num_cpus, object_store_memory=self.object_store_memory,
                             include_dashboard=False, log_to_driver=False, configure_logging=False)
                else:
                    ray.init(address=self.address, log_to_driver=False)
            except Exception as exc:  # noqa: BLE001 - ConnectionError and friends, with multi-line texts
                raise BakeoffError(f"cannot start or join Ray at {self.address!r}: {' '.join(str(exc).split())[:300]}") from None
        return ray

    def __call__(self, encoder: Any, texts: list[str], kind: str, batch_size: int) -> np.ndarray:
        """The per-chunk engine protocol of the dense arm (used for small jobs such as queries): local."""
        return np.asarray(encoder.encode(texts, kind=kind, batch_size=batch_size), dtype=np.float32)

    def encode_rows(
        self,
        *,
        cache: Cache | None,
        kind: str,
        key: str,
        texts: Sequence[str] | Sequence[tuple[str, str]],
        encoder: Any = None,
        text_kind: str = "doc",
        batch_size: int = 32,
        chunk_rows: int,
        encoder_factory: EncoderFactory | ScorerFactory | None = None,
        progress: bool = True,
        desc: str = "",
        unit: str = "row",
    ) -> tuple[np.ndarray, bool]:
        """``encode`` over ``texts`` in chunks of ``chunk_rows`` rows, chunks spread over the actors.

        Each chunk is ``encoder.encode(texts[s:e], kind=text_kind, batch_size=batch_size)`` (or
        ``encoder_factory()(texts[s:e])``; ``texts`` may hold ``(a, b)`` pairs, which reach the
        factory's function as tuples). Same contract and cache entries as
        ``checkpointed_rows(cache, kind, key, len(texts), ..., batch_size=chunk_rows)``; returns
        ``(array, cache_hit)``.
        """
        if encoder_factory is None:
            if encoder is None:
                raise ValueError("give encoder= or encoder_factory=")
            encoder_factory = _EncodeWith(encoder, text_kind, batch_size, _driver_torch_threads())
        ckpt = RowCheckpoint(cache, kind, key, len(texts), int(chunk_rows))
        done = ckpt.cached()
        if done is not None:
            return done, True
        ckpt.begin()
        todo = ckpt.pending()
        got: dict[int, np.ndarray] = {}
        if todo:
            self._init()
            ray_data = importlib.import_module("ray.data")  # the Data library, loaded only here

            # bakeoff draws its own progress bar; Ray Data's bars and per-stage logs would flood stderr
            dctx = ray_data.DataContext.get_current()
            dctx.enable_progress_bars = False
            dctx.enable_operator_progress_bars = False

            pairs = len(texts) > 0 and isinstance(texts[0], tuple)
            rows = [{"start": s, "end": e, "texts": [t[0] for t in texts[s:e]], "seconds": [t[1] for t in texts[s:e]]}
                    if pairs else {"start": s, "end": e, "texts": list(texts[s:e])} for s, e in todo]
            ds = ray_data.from_items(rows, override_num_blocks=min(len(todo), max(1, self.actors * 4)))
            out = ds.map_batches(_EncodeChunk, fn_constructor_kwargs={"factory": encoder_factory}, batch_size=1,
                                 batch_format="numpy", compute=ray_data.ActorPoolStrategy(size=self.actors),
                                 num_cpus=self.cpus_per_actor)
            bar = progress_bar(total=sum(e - s for s, e in todo), desc=desc or "encode (ray)", enabled=progress,
                               unit=unit)
            for row in out.iter_rows():
                s, e = int(row["start"]), int(row["end"])
                shape = tuple(int(x) for x in str(row["shape"]).split(","))
                arr = np.frombuffer(row["data"], dtype=np.dtype(str(row["dtype"]))).reshape(shape)
                ckpt.save_part(s, e, arr)  # crash-safe shard, as it arrives
                got[s] = arr
                bar.update(e - s)
            bar.close()
        chunks: list[np.ndarray] = []
        for s, e in ckpt.chunks():
            part = got[s] if s in got else ckpt.load_part(s, e)
            if part is None:  # pragma: no cover - a part vanished while we ran
                raise BakeoffError(f"ray engine: chunk {s}-{e} of {kind}/{key} is missing")
            chunks.append(part)
        return ckpt.finish(chunks), False

    def score_pairs(
        self,
        *,
        cache: Cache | None,
        kind: str,
        key: str,
        pairs: Sequence[tuple[str, str]],
        scorer_options: dict[str, Any],
        batch_size: int,
        chunk_rows: int,
        progress: bool = True,
        desc: str = "",
    ) -> tuple[np.ndarray, bool]:
        """Cross-encoder scores of ``pairs`` in chunks of ``chunk_rows`` spread over the actors.

        Each actor builds ``CrossEncoderScorer(**scorer_options)`` once; each chunk is
        ``scorer.score(pairs[s:e], batch_size=batch_size)``. Same cache entries and result as the
        rerank arm's local ``checkpointed_rows(cache, kind, key, len(pairs), ..., batch_size=chunk_rows)``.
        """
        factory = _ScoreWith(scorer_options, batch_size, _driver_torch_threads())
        return self.encode_rows(cache=cache, kind=kind, key=key, texts=[(str(a), str(b)) for a, b in pairs],
                                encoder_factory=factory, chunk_rows=chunk_rows, progress=progress,
                                desc=desc or "rerank (ray)", unit="pair")
