"""Rerank arm: a cross-encoder over the top-N documents of any other arm.

For each query the base arm's run (obtained through ``ctx.search``, so a
cached base run is reused) is cut to its top ``top`` documents; each
(query text, document ``title + " " + text``) pair is scored by a
cross-encoder (:mod:`bakeoff.models.cross_encoders`) and the documents are re-ordered
by that score with the package tie rule (score desc, then doc id desc).
**Documents below the base's top ``top`` are dropped**: the reranked run has
at most ``top`` documents per query, whatever ``k`` asks for. Base scores
play no part in the new order. Masks are passed to the base arm.

With ``ctx.extras["encode_engine"]`` a Ray engine (``--engine ray``), the chunks are
scored by actors holding the model (:meth:`bakeoff.engine.ray_engine.RayEngine.score_pairs`);
the scores are identical to the local path.

Scores are computed in fixed chunks of pairs with crash-safe resume
(:func:`bakeoff.cache.checkpointed_rows`, kind ``rerank``): a ``kill -9``
loses at most one chunk and the resumed result equals an uninterrupted one.
Pairs are sorted by character length (longest first, stable) before
batching, which minimises padding; chunk and batch boundaries depend only on
the pair set, so scores are reproducible bit for bit. The cache key covers the
scorer identity (model name, weights hash, precision, max length, head seed),
the library versions, the batch size and the exact (query text, document
text) pairs, so any change computes afresh and a re-run hits the cache.

Options: ``base`` (the arm to rerank; required), ``model`` (name or local
path; default the bundled all-MiniLM-L6-v2 — untrained head, see
:mod:`bakeoff.models.cross_encoders`: not a quality anchor), ``top`` (default 100),
``precision`` (``fp32`` default; ``bf16`` autocast, the fast mode on CPUs with AMX;
``int8`` ONNX Runtime dynamic quantisation), ``backend`` (``torch`` default; ``openvino``:
the model compiled by OpenVINO, bf16 unless ``precision=fp32``; ``precision=int8`` with it is
static int8 calibrated on ``calibration`` (default 256; more is slower to calibrate, closer to
fp32) (pseudo-query, document) pairs drawn from the corpus with ``seed``,
:mod:`bakeoff.models.cross_encoders.static_int8` -- the fastest CPU mode; the calibration digest is
in the cache key),
``batch_size`` (32), ``max_length`` (256 tokens, all-MiniLM-L6-v2's training length; raise it for trained long-context rerankers), ``seed`` (0; seeds any
head weights missing from the checkpoint), ``revision`` (hub revision),
``chunk`` (pairs per checkpoint, a multiple of ``batch_size``; default 1024).
"""

from __future__ import annotations

import hashlib
import time
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from ..cache import cache_key, checkpointed_rows
from ..data.model import Corpus, Queries, Run
from ..data.ranking import top_k
from ..errors import ConfigError
from ..library_versions import version_of
from ..models.cross_encoders import BACKENDS, PRECISIONS, CrossEncoderScorer, model_identity
from ..models.cross_encoders.openvino import OPENVINO_CODE_VERSION
from ..models.training_record import training_mark
from ..validation import NonNegativeInt, PositiveInt
from .base import Arm, ArmContext, DocMask, register_arm

__all__ = ["RerankArm", "pair_order"]


def pair_order(pairs: list[tuple[str, str]]) -> np.ndarray:
    """Permutation sorting pairs by ``len(query) + len(doc)`` descending (stable)."""
    lengths = np.fromiter((len(q) + len(d) for q, d in pairs), dtype=np.int64, count=len(pairs))
    return np.argsort(-lengths, kind="stable")


def _pairs_digest(pairs: list[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for q, d in pairs:
        h.update(q.encode("utf-8") + b"\0" + d.encode("utf-8") + b"\1")
    return h.hexdigest()


def _int_option(value: Any, key: str, *, minimum: int = 1) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"rerank: {key} must be an integer, got {value!r}") from None
    if out < minimum or out != float(value):
        raise ConfigError(f"rerank: {key} must be an integer >= {minimum}, got {value!r}")
    return out


@register_arm("rerank", code_version="1")
class RerankArm(Arm):
    """Cross-encoder reranking of another arm's top ``top`` (see module docstring)."""
    code_components = (CrossEncoderScorer,)

    def __init__(
        self,
        *,
        name: str | None = None,
        base: Arm | None = None,
        model: str | None = None,
        top: PositiveInt = 100,
        precision: str | None = None,
        backend: str = "torch",
        batch_size: PositiveInt = 32,
        max_length: Annotated[int, Field(ge=8)] = 256,
        seed: NonNegativeInt = 0,
        revision: str | None = None,
        chunk: PositiveInt = 1024,
        calibration: Annotated[int, Field(ge=16)] = 256,
    ) -> None:
        super().__init__(name=name)
        if not isinstance(base, Arm):
            raise ConfigError(f"arm {name or 'rerank'!r} (rerank): base= must name an arm defined before it")
        self.base = base
        self.model = None if model in (None, "") else str(model)
        self.top = _int_option(top, "top")
        self.backend = str(backend or "torch").lower()
        if self.backend not in BACKENDS:
            raise ConfigError(f"rerank: backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.precision = str(precision or ("bf16" if self.backend == "openvino" else "fp32")).lower()
        if self.precision not in PRECISIONS:
            raise ConfigError(f"rerank: precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        self.batch_size = _int_option(batch_size, "batch_size")
        self.max_length = _int_option(max_length, "max_length", minimum=8)
        self.seed = _int_option(seed, "seed", minimum=0)
        self.revision = None if revision in (None, "") else str(revision)
        self.chunk = _int_option(chunk, "chunk")
        if self.chunk % self.batch_size:
            raise ConfigError(f"rerank: chunk ({self.chunk}) must be a multiple of batch_size ({self.batch_size})")
        self._scorer: CrossEncoderScorer | None = None
        self._corpus: Corpus | None = None
        self._doc_texts: list[str] = []
        self.calibration = _int_option(calibration, "calibration", minimum=16)
        self._calibration: list[tuple[str, str]] | None = None

    def config(self) -> dict[str, Any]:
        out = {**model_identity(self.model, revision=self.revision), "top": self.top, "precision": self.precision,
               "batch_size": self.batch_size, "max_length": self.max_length, "seed": self.seed,
               "chunk": self.chunk}
        if self.backend != "torch":
            out.update(backend=self.backend, openvino_graph=OPENVINO_CODE_VERSION)
        if self._static_int8:
            from ..models.cross_encoders.static_int8 import QUANTIZATION_VERSION

            out.update(int8=QUANTIZATION_VERSION, calibration=f"corpus:{self.calibration}")
        if self.precision == "bf16" or self.backend != "torch":
            from ..models.cpu import cpu_capability

            out["cpu_capability"] = cpu_capability()
        return out

    def provenance(self) -> dict[str, Any] | None:
        """Where the model comes from when bakeoff fine-tuned it: its folder's
        ``bakeoff_training.json`` (see :func:`bakeoff.models.training_record.training_mark`),
        recorded as ``fine_tuned`` in results.json; ``None`` for any other model."""
        return training_mark(self.config())

    def versions(self) -> dict[str, str]:
        out = {lib: version_of(lib) for lib in ("sentence-transformers", "transformers", "torch")}
        if self.precision == "int8":
            out.update({lib: version_of(lib) for lib in ("onnxruntime", "onnx")})
        if self.backend == "openvino":
            out["openvino"] = version_of("openvino")
        if self._static_int8:
            out["nncf"] = version_of("nncf")
        return out

    @property
    def _static_int8(self) -> bool:
        return self.backend == "openvino" and self.precision == "int8"

    def children(self) -> tuple[Arm, ...]:
        return (self.base,)

    def index(self, corpus: Corpus, *, ctx: ArmContext) -> None:
        """Load the cross-encoder (and export/quantise it once for ``int8``; OpenVINO int8 is calibrated
        on pairs drawn from ``corpus``, so a new corpus reloads it)."""
        changed = self._corpus is None or self._corpus.fingerprint() != corpus.fingerprint()
        if changed:
            self._corpus, self._doc_texts = corpus, corpus.full_texts()
            if self._static_int8:
                from ..models.cross_encoders.static_int8 import calibration_pairs

                self._calibration = calibration_pairs(self._doc_texts, n=self.calibration,
                                                      rng=np.random.default_rng(self.seed))
        if self._scorer is None or (changed and self._static_int8):
            self._scorer = CrossEncoderScorer(**self._scorer_options(ctx))

    def _scorer_options(self, ctx: ArmContext) -> dict[str, Any]:
        """Keyword arguments of :class:`CrossEncoderScorer` (also sent to Ray actors)."""
        onnx_dir = None if ctx.cache is None or ctx.cache.policy == "off" else ctx.cache.root / "onnx"
        return {"model": self.model, "precision": self.precision, "max_length": self.max_length, "seed": self.seed,
                "revision": self.revision, "onnx_dir": onnx_dir, "backend": self.backend,
                "calibration": self._calibration}

    def _calibration_key(self) -> dict[str, str]:
        """``{"calibration": digest}`` of the int8 calibration pairs (OpenVINO int8 only; else empty)."""
        if not self._calibration:
            return {}
        from ..models.cross_encoders.static_int8 import calibration_digest

        return {"calibration": calibration_digest(self._calibration)}

    def search(self, queries: Queries, *, k: int, ctx: ArmContext, mask: DocMask | None = None) -> Run:
        if self._scorer is None or self._corpus is None:
            raise RuntimeError("index() must run before search()")
        base_run = ctx.search(self.base, queries, k=self.top, mask=mask)
        pos = self._corpus.position
        owners: list[tuple[str, str]] = []
        pairs: list[tuple[str, str]] = []
        for qi, qid in enumerate(queries.ids):
            for doc, _ in base_run.get(qid)[: self.top]:
                owners.append((qid, doc))
                pairs.append((queries.texts[qi], self._doc_texts[pos[doc]]))
        order = pair_order(pairs)
        ordered = [pairs[i] for i in order]
        scorer = self._scorer
        key = cache_key({"kind": "rerank", "scorer": {**self.config(), "top": None}, "versions": self.versions(),
                         "pairs": _pairs_digest(pairs), "n": len(pairs), "order": "length-desc-stable",
                         "code": self.code_versions(), **self._calibration_key()})
        t0 = time.perf_counter()
        engine = ctx.extras.get("encode_engine")
        if hasattr(engine, "score_pairs"):  # distributed (Ray): the same chunks, scored in parallel actors
            sorted_scores, hit = engine.score_pairs(  # type: ignore[union-attr]
                cache=ctx.cache, kind="rerank", key=key, pairs=ordered, scorer_options=self._scorer_options(ctx),
                batch_size=self.batch_size, chunk_rows=self.chunk, progress=ctx.progress,
                desc=f"rerank {self.name} (ray)")
        else:
            sorted_scores, hit = checkpointed_rows(
                ctx.cache, "rerank", key, len(ordered),
                lambda s, e: scorer.score(ordered[s:e], batch_size=self.batch_size),
                batch_size=self.chunk, progress=ctx.progress, desc=f"rerank {self.name}", unit="pair")
        if not hit and pairs:  # throughput of this call (pairs/s = pairs_scored / score_s)
            stats = ctx.timings.setdefault(self.fingerprint(), {})
            stats["pairs_scored"] = stats.get("pairs_scored", 0.0) + float(len(pairs))
            stats["score_s"] = stats.get("score_s", 0.0) + time.perf_counter() - t0
        scores = np.empty(len(pairs), dtype=np.float64)
        scores[order] = np.asarray(sorted_scores, dtype=np.float64).reshape(len(pairs))
        per_query: dict[str, dict[str, float]] = {qid: {} for qid in queries.ids}
        for (qid, doc), s in zip(owners, scores.tolist(), strict=True):
            per_query[qid][doc] = s
        return Run.from_ranked(self.name, {qid: top_k(per_query[qid], k) for qid in queries.ids})
