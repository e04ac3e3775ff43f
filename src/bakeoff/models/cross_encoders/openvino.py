"""The OpenVINO cross-encoder backend: the transformer + head traced and compiled (bf16 on AMX CPUs).

For a BERT classifier the traced graph computes the last layer for the ``[CLS]`` token only
(:mod:`.first_token`: the same logits, ~1/6 less work); :data:`OPENVINO_CODE_VERSION` names that
scoring in the scorer identity and the rerank arm's config (``"3"``: batches balanced over the
streams, :func:`batch_sizes`; ``"2"``: full batches; ``"1"``: the full graph, one chunk).

The traced model is cached across processes (:mod:`bakeoff.models._openvino`), keyed by
:func:`state_digest` of the weights. ``precision="int8"`` quantises it first (:mod:`.static_int8`,
calibrated on the pairs given; the quantised IR is cached too) and runs the rest in bf16. Pairs are tokenised in chunks of :data:`CHUNK_BATCHES` batches as the streams need them (the
next chunk while the streams run the current one), re-sorted by token count within the chunk, cut
into batches of at most ``batch_size``, balanced over the streams (:func:`batch_sizes`; each cut to its longest pair) and run on all streams (:mod:`bakeoff.models._openvino`); the
logits come back in fp32 and are returned in input order. A batch's result
depends only on its own pairs.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import ConfigError
from .._openvino import (
    cached_model,
    compile_config,
    import_openvino,
    infer_batches,
    output_module,
    save_model,
    token_count_order,
    traced_model,
)
from .first_token import first_token_model
from .precut import DocumentCut, applies

__all__ = ["CHUNK_BATCHES", "OPENVINO_CODE_VERSION", "ChunkedFeeds", "OpenVinoCrossEncoder", "batch_sizes", "state_digest"]

#: Version of the OpenVINO cross-encoder's scoring (bump when its scores change): "3" = the last layer
#: for the first token only (:mod:`.first_token`) where the model allows it, batches formed within
#: chunks of :data:`CHUNK_BATCHES` batches, their sizes balanced over the streams (:func:`batch_sizes`;
#: a pair's logit depends on its batch's width by float rounding, ~1e-4). "2" cut full batches.
OPENVINO_CODE_VERSION = "3"

log = logging.getLogger(__name__)

Features = Callable[[Sequence[tuple[str, str]]], dict[str, np.ndarray]]


def state_digest(module: Any) -> str:
    """sha256 over a PyTorch module's parameters and buffers (names, dtypes, shapes, bytes), so the
    cached OpenVINO model is keyed by the exact weights, including a freshly seeded head."""
    import torch

    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}\n".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


class OpenVinoCrossEncoder:
    """``hf`` compiled by OpenVINO at ``precision``; ``features`` is the CrossEncoder's own tokenisation."""

    def __init__(self, ce: Any, hf: Any, *, precision: str, max_length: int, features: Features,
                 calibration: Sequence[tuple[str, str]] | None = None) -> None:
        import torch

        ov = import_openvino("rerank backend=openvino")
        self._ce, self.max_length, self._features = ce, max_length, features
        self.chunk_batches = CHUNK_BATCHES
        enc = features([("a query", "a document to score"), ("q", "d")])
        self._inputs: tuple[str, ...] = tuple(n for n in ("input_ids", "attention_mask", "token_type_ids") if n in enc)
        self.document_cut = self._document_cut(ce.tokenizer)
        with first_token_model(hf) as self.first_token_only:
            graph = "first-token-last-layer" if self.first_token_only else "full"
            key = {"kind": "cross-encoder-logits", "state": state_digest(hf), "graph": graph}
            model = traced_model(output_module(hf, self._inputs, "logits"),
                                 {n: torch.as_tensor(enc[n]) for n in self._inputs},
                                 purpose="rerank backend=openvino", cache_key=key)
            if precision == "int8":
                model = self._int8(model, key, hf, calibration)
        self._compiled = ov.Core().compile_model(model, "CPU", compile_config("bf16" if precision == "int8" else precision))
        self.streams = max(1, int(self._compiled.get_property("NUM_STREAMS")))

    def _int8(self, model: Any, key: dict[str, Any], hf: Any, calibration: Sequence[tuple[str, str]] | None) -> Any:
        """``model`` quantised by :func:`.static_int8.quantize` on ``calibration`` (cached across processes)."""
        from ...library_versions import version_of
        from .static_int8 import CALIBRATION_BATCH, QUANTIZATION_VERSION, calibration_digest, ignored_patterns, quantize

        if not calibration:
            raise ConfigError("rerank backend=openvino precision=int8 needs calibration pairs (the rerank arm draws "
                              "them from the corpus)")
        qkey = {**key, "int8": QUANTIZATION_VERSION, "nncf": version_of("nncf"),
                "calibration": calibration_digest(calibration)}
        quantised = cached_model(qkey, self._inputs)
        if quantised is None:
            t0 = time.perf_counter()
            log.info("rerank: calibrating int8 on %d corpus pairs (once per corpus and model)", len(calibration))
            ordered = list(calibration)
            sizes = [CALIBRATION_BATCH] * (len(ordered) // CALIBRATION_BATCH)
            if len(ordered) % CALIBRATION_BATCH:
                sizes.append(len(ordered) % CALIBRATION_BATCH)
            _, feeds = self.tokenise(ordered, sizes)
            quantised = quantize(model, feeds, ignored=ignored_patterns(hf))
            save_model(quantised, qkey, self._inputs)
            log.info("rerank: int8 model calibrated in %.1f s", time.perf_counter() - t0)
        return quantised

    def _document_cut(self, tokenizer: Any) -> DocumentCut | None:
        """A :class:`~.precut.DocumentCut` when it is exact for this tokenizer: :func:`~.precut.applies`,
        and the CrossEncoder's own tokenisation cuts a long pair to exactly ``max_length`` tokens."""
        if not applies(tokenizer):
            return None
        words = " ".join(["word"] * self.max_length)
        if self._features([(words, words)])["input_ids"].shape != (1, self.max_length):
            return None
        return DocumentCut(tokenizer, self.max_length)

    def feeds(self, pairs: Sequence[tuple[str, str]], batch_size: int) -> ChunkedFeeds:
        """The input arrays of ``pairs``'s batches, tokenised chunk by chunk on first use (:class:`ChunkedFeeds`)."""
        return ChunkedFeeds(self, pairs, batch_size)

    def tokenise(self, pairs: Sequence[tuple[str, str]],
                 sizes: Sequence[int]) -> tuple[list[np.ndarray], list[dict[str, np.ndarray]]]:
        """``(batches, feeds)`` of ``pairs``: row indices of each batch (descending token count) and its inputs;
        batch ``j`` holds ``sizes[j]`` pairs (``sum(sizes) == len(pairs)``).

        The pairs are tokenised by the CrossEncoder's own preprocessing (padded to the longest pair;
        long documents pre-cut, :meth:`_cut_features`) and each batch
        takes its rows cut to its own longest pair: with right padding that is exactly what
        tokenising the batch alone gives (pad id, mask 0 and type 0 after each pair's tokens), at
        half the cost of counting tokens first and tokenising per batch."""
        if getattr(self._ce.tokenizer, "padding_side", "right") != "right":  # cutting columns needs right padding
            tok = self._ce.tokenizer
            counts = np.array([len(ids) for ids in tok([q for q, _ in pairs], [d for _, d in pairs], truncation=True,
                                                       max_length=self.max_length)["input_ids"]])
            batches = np.split(token_count_order(counts), np.cumsum(sizes)[:-1])
            return batches, [{n: v for n, v in self._features([pairs[i] for i in rows]).items() if n in self._inputs}
                             for rows in batches]
        feats = self._cut_features(pairs)
        counts = feats["attention_mask"].sum(axis=1)
        batches = np.split(token_count_order(counts), np.cumsum(sizes)[:-1])
        feeds = []
        for rows in batches:
            width = int(counts[rows].max())
            feeds.append({n: np.ascontiguousarray(feats[n][rows, :width]) for n in self._inputs})
        return batches, feeds

    def _cut_features(self, pairs: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
        """The CrossEncoder's tokenisation of ``pairs``, long documents pre-cut (:mod:`.precut`: the same
        arrays, less text to tokenise); if a cut row came out short, the pairs are tokenised again
        with that row's full text."""
        if self.document_cut is None:
            return self._features(pairs)
        cut, was_cut = self.document_cut.cut(pairs)
        feats = self._features(cut)
        short = self.document_cut.short_rows(was_cut, feats["attention_mask"])
        if short.any():
            feats = self._features([pairs[i] if short[i] else cut[i] for i in range(len(pairs))])
        return feats

    def score(self, pairs: Sequence[tuple[str, str]], batch_size: int) -> np.ndarray:
        feeds = self.feeds(pairs, batch_size)
        out = np.empty(len(pairs), dtype=np.float32)
        for i, logits in enumerate(infer_batches(self._compiled, feeds)):
            rows = feeds.rows[i]
            out[rows] = np.asarray(logits, dtype=np.float32).reshape(len(rows))
        return out


#: Pairs are tokenised this many batches at a time (a chunk), when the request pool first asks
#: for one of the chunk's batches: the streams start after the first chunk's tokenisation instead
#: of the whole call's, and the main thread tokenises the next chunk while they run.
CHUNK_BATCHES = 4


def batch_sizes(n: int, batch_size: int, streams: int) -> list[int]:
    """Sizes of the batches for ``n`` pairs: ``b = ceil(n / batch_size)`` batches rounded up to a
    multiple of ``streams`` (at most ``n``), sizes ``floor(n / b)`` or one more (larger first), none
    above ``batch_size``.

    The streams take batches as they free up, so with ``b`` not a multiple of ``streams`` the last
    round leaves cores idle for up to a whole batch (13 batches of 32 on 2 streams: one core idles
    for the 13th); balanced sizes finish the streams together, and a call smaller than
    ``streams`` batches (one query's top 20) still uses every core."""
    if n <= 0:
        return []
    b = -(-n // max(1, int(batch_size)))
    b = min(n, -(-b // max(1, int(streams))) * max(1, int(streams)))
    base, extra = divmod(n, b)
    return [base + 1] * extra + [base] * (b - extra)


class ChunkedFeeds(Sequence[dict[str, np.ndarray]]):
    """The batches of one ``score`` call as a lazy sequence for :func:`~bakeoff.models._openvino.infer_batches`.

    The batch sizes are :func:`batch_sizes` (``sizes``), balanced over the backend's streams. Chunk
    ``c`` holds batches ``[c * C, (c + 1) * C)``, ``C`` the backend's ``chunk_batches``
    (:data:`CHUNK_BATCHES`), i.e. the next ``sum(sizes[c * C : (c + 1) * C])`` pairs in the caller's
    order (the rerank arm sends them sorted by text length); within a chunk they are sorted by token
    count and cut into batches of those sizes (:meth:`OpenVinoCrossEncoder.tokenise`), so batch ``i``
    belongs to chunk ``i // C``. The pool asks for batches in index order; asking for one tokenises
    every chunk up to it. ``rows[i]`` are batch ``i``'s row indices into ``pairs`` (known once it was
    asked for).
    """

    def __init__(self, backend: OpenVinoCrossEncoder, pairs: Sequence[tuple[str, str]], batch_size: int) -> None:
        self._backend, self._pairs = backend, pairs
        self.sizes = batch_sizes(len(pairs), batch_size, backend.streams)
        self._offsets = np.concatenate([[0], np.cumsum(self.sizes, dtype=np.int64)])
        self._n = len(self.sizes)
        self.rows: list[np.ndarray] = []
        self._feeds: list[dict[str, np.ndarray]] = []

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> dict[str, np.ndarray]:  # type: ignore[override]
        if not 0 <= i < self._n:
            raise IndexError(i)
        while len(self._feeds) <= i:
            first = len(self._feeds)
            last = min(first + self._backend.chunk_batches, self._n)
            start, stop = int(self._offsets[first]), int(self._offsets[last])
            batches, feeds = self._backend.tokenise(self._pairs[start:stop], self.sizes[first:last])
            self.rows.extend(rows + start for rows in batches)
            self._feeds.extend(feeds)
        return self._feeds[i]
