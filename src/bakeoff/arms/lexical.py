"""Lexical arms: BM25 (bm25s + PyStemmer) and TF-IDF (scikit-learn).

Both index ``title + " " + text`` (BEIR convention), tokenize queries exactly
as documents (:mod:`bakeoff.arms._text`), drop documents with a zero score
(they share no term with the query), and order the rest with the package tie
rule. A query whose tokens are all out of vocabulary gets an empty ranking.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.model import Corpus, Queries, Run
from ..data.ranking import top_k_indices
from ..errors import ConfigError, MissingDependencyError
from ..library_versions import version_of
from ..progress import progress_bar
from ..validation import Fraction, NonNegative, PositiveInt
from ._text import make_analyzer, make_stemmer, stopword_list
from .base import Arm, ArmContext, DocMask, group_by_mask, register_arm

__all__ = ["BM25Arm", "TfidfArm"]

_BM25_METHODS = ("robertson", "lucene", "atire", "bm25l", "bm25+")


def _ranked(scores: np.ndarray, corpus: Corpus, k: int, mask: np.ndarray | None) -> tuple[tuple[str, float], ...]:
    """Top-k of the documents with a positive score (and allowed by ``mask``), tie rule applied."""
    cand = np.flatnonzero(scores > 0)
    if mask is not None:
        cand = cand[mask[cand]]
    idx = top_k_indices(scores, corpus.ids, k, candidates=cand)
    ids = corpus.ids
    return tuple(zip([ids[i] for i in idx.tolist()], scores[idx].astype(np.float64).tolist()))


def _auto_stopwords(stopwords: str | None, stemmer: str | None) -> str | None:
    if stopwords == "auto":
        return stemmer if stemmer and stemmer not in ("none", "porter", "dutch_porter") else "english"
    return stopwords


@register_arm("bm25", code_version="1")
class BM25Arm(Arm):
    """Okapi BM25 via bm25s.

    Score (``method="lucene"``, the default): for query terms t in document d,
    ``sum_t idf(t) * tf(t,d) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl))``
    with ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` (Lucene omits Robertson's
    constant ``(k1 + 1)`` factor, which does not change the ranking). Other methods:
    robertson, atire, bm25l, bm25+ (``delta`` for the last two).
    ``stopwords="auto"`` uses the stemmer's language (English without a stemmer).
    """

    def __init__(
        self,
        *,
        name: str | None = None,
        k1: NonNegative = 1.5,
        b: Fraction = 0.75,
        delta: NonNegative = 0.5,
        method: str = "lucene",
        stemmer: str | None = None,
        stopwords: str | None = "auto",
        lower: bool = True,
    ) -> None:
        super().__init__(name=name)
        if method not in _BM25_METHODS:
            raise ConfigError(f"bm25 method must be one of {', '.join(_BM25_METHODS)}, got {method!r}")
        self.k1, self.b, self.delta, self.method = float(k1), float(b), float(delta), method
        self.stemmer = None if stemmer in (None, "none", "") else str(stemmer).lower()
        self.stopwords = _auto_stopwords(stopwords, self.stemmer)
        self.lower = bool(lower)
        make_stemmer(self.stemmer)  # validate early
        stopword_list(self.stopwords)
        self._retriever: Any = None
        self._corpus: Corpus | None = None

    def config(self) -> dict[str, Any]:
        return {"k1": self.k1, "b": self.b, "delta": self.delta, "method": self.method,
                "stemmer": self.stemmer, "stopwords": self.stopwords, "lower": self.lower}

    def versions(self) -> dict[str, str]:
        return {"bm25s": version_of("bm25s"), "PyStemmer": version_of("PyStemmer")}

    def _tokenize(self, texts: list[str], *, ctx: ArmContext, ids: bool) -> Any:
        import bm25s

        return bm25s.tokenize(
            texts,
            lower=self.lower,
            stopwords=list(stopword_list(self.stopwords)) or None,
            stemmer=_StemAdapter(self.stemmer) if self.stemmer else None,
            return_ids=ids,
            show_progress=False,  # bakeoff's own bars only
        )

    def index(self, corpus: Corpus, *, ctx: ArmContext) -> None:
        try:
            import bm25s
        except ImportError:
            raise MissingDependencyError("bm25s", None, "the bm25 arm") from None
        tokens = self._tokenize(corpus.full_texts(), ctx=ctx, ids=True)
        retriever = bm25s.BM25(k1=self.k1, b=self.b, delta=self.delta, method=self.method)
        retriever.index(tokens, show_progress=False)
        self._retriever, self._corpus = retriever, corpus

    def search(self, queries: Queries, *, k: int, ctx: ArmContext, mask: DocMask | None = None) -> Run:
        if self._retriever is None or self._corpus is None:
            raise RuntimeError("index() must run before search()")
        tokens: list[list[str]] = self._tokenize(list(queries.texts), ctx=ctx, ids=False)
        vocab = self._retriever.vocab_dict
        out: dict[str, tuple[tuple[str, float], ...]] = {}
        bar = progress_bar(total=len(queries), desc=f"search {self.name}", enabled=ctx.progress)
        for m, rows in group_by_mask(queries, mask):
            for i in rows:
                ids = [vocab[t] for t in tokens[i] if t in vocab]
                if not ids:
                    out[queries.ids[i]] = ()
                else:
                    scores = self._retriever.get_scores(ids)
                    out[queries.ids[i]] = _ranked(scores, self._corpus, k, m)
                bar.update(1)
        bar.close()
        return Run.from_ranked(self.name, {q: out[q] for q in queries.ids})


class _StemAdapter:
    """bm25s calls ``stemmer(list_of_words)`` or ``stemmer.stemWords``; give it PyStemmer's."""

    def __init__(self, language: str) -> None:
        stem = make_stemmer(language)
        assert stem is not None
        self.stemWords = stem

    def __call__(self, words: list[str]) -> list[str]:
        return self.stemWords(words)


@register_arm("tfidf", code_version="1")
class TfidfArm(Arm):
    """TF-IDF cosine similarity via scikit-learn's ``TfidfVectorizer``.

    ``w(t,d) = tf(t,d) * (ln((1 + N) / (1 + df(t))) + 1)`` (smooth idf), with
    ``tf`` raw or ``1 + ln(tf)`` when ``sublinear_tf``; rows L2-normalised, so
    the score is the cosine of query and document vectors.
    """

    def __init__(
        self,
        *,
        name: str | None = None,
        stemmer: str | None = None,
        stopwords: str | None = "auto",
        sublinear_tf: bool = True,
        min_df: PositiveInt = 1,
        lower: bool = True,
    ) -> None:
        super().__init__(name=name)
        self.stemmer = None if stemmer in (None, "none", "") else str(stemmer).lower()
        self.stopwords = _auto_stopwords(stopwords, self.stemmer)
        self.sublinear_tf, self.min_df, self.lower = bool(sublinear_tf), int(min_df), bool(lower)
        make_stemmer(self.stemmer)
        stopword_list(self.stopwords)
        self._vectorizer: Any = None
        self._matrix: Any = None
        self._corpus: Corpus | None = None

    def config(self) -> dict[str, Any]:
        return {"stemmer": self.stemmer, "stopwords": self.stopwords, "sublinear_tf": self.sublinear_tf,
                "min_df": self.min_df, "lower": self.lower}

    def versions(self) -> dict[str, str]:
        return {"scikit-learn": version_of("scikit-learn"), "PyStemmer": version_of("PyStemmer")}

    def index(self, corpus: Corpus, *, ctx: ArmContext) -> None:
        try:
            from sklearn.feature_extraction.text import TfidfVectorizer
        except ImportError:
            raise MissingDependencyError("scikit-learn", None, "the tfidf arm") from None
        analyzer = make_analyzer(lower=self.lower, stopwords=self.stopwords, stemmer=self.stemmer)
        self._vectorizer = TfidfVectorizer(analyzer=analyzer, sublinear_tf=self.sublinear_tf, min_df=self.min_df,
                                           dtype=np.float64)
        texts = corpus.full_texts()
        try:
            self._matrix = self._vectorizer.fit_transform(
                progress_bar(texts, total=len(texts), desc=f"index {self.name}", enabled=ctx.progress)
            ).tocsr()
        except ValueError as exc:  # min_df above the corpus size, or no term left at all
            raise ConfigError(f"tfidf arm {self.name!r}: no term to index with min_df={self.min_df} over "
                              f"{len(texts)} documents ({exc})") from None
        self._corpus = corpus

    def search(self, queries: Queries, *, k: int, ctx: ArmContext, mask: DocMask | None = None) -> Run:
        if self._vectorizer is None or self._corpus is None:
            raise RuntimeError("index() must run before search()")
        q = self._vectorizer.transform(list(queries.texts))
        out: dict[str, tuple[tuple[str, float], ...]] = {}
        bar = progress_bar(total=len(queries), desc=f"search {self.name}", enabled=ctx.progress)
        for m, rows in group_by_mask(queries, mask):
            for start in range(0, len(rows), 256):
                chunk = rows[start : start + 256]
                sims = (q[chunk] @ self._matrix.T).toarray()
                for j, i in enumerate(chunk):
                    out[queries.ids[i]] = _ranked(sims[j], self._corpus, k, m)
                bar.update(len(chunk))
        bar.close()
        return Run.from_ranked(self.name, {qid: out[qid] for qid in queries.ids})
