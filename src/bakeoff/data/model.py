"""The data model: Corpus, Queries, Qrels, Run, Dataset.

All containers are immutable, keyed by string ids, and keep their input order.
Each has :meth:`fingerprint`: sha256 over its ordered content, the key that
caching builds on. Two objects with equal content have equal fingerprints; any
change (an id, a title, a character of text, a grade, a score) changes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

from .ranking import NaNScoreError, rank

__all__ = ["Corpus", "Dataset", "Document", "Qrels", "Queries", "Query", "Run", "label_kind_of"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


class _Hasher:
    """sha256 over records, each record a canonical JSON line (unambiguous framing)."""

    def __init__(self, kind: str) -> None:
        self._h = hashlib.sha256()
        self._h.update(kind.encode() + b"\n")

    def add(self, *parts: Any) -> None:
        self._h.update(_canon(parts).encode("utf-8") + b"\n")

    def hexdigest(self) -> str:
        return self._h.hexdigest()


@dataclass(frozen=True, slots=True)
class Document:
    """One retrievable unit. ``text`` is the body; ``title`` may be empty."""

    id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, eq=False)
class Corpus:
    """An ordered, id-keyed collection of documents (column storage for large corpora).

    Row ``i`` is ``(ids[i], titles[i], texts[i], metadata[i])``. Ids are unique.
    """

    ids: tuple[str, ...]
    texts: tuple[str, ...]
    titles: tuple[str, ...]
    metadata: tuple[Mapping[str, Any], ...]

    def __post_init__(self) -> None:
        n = len(self.ids)
        if not (len(self.texts) == len(self.titles) == len(self.metadata) == n):
            raise ValueError("Corpus columns differ in length")
        if len(self.position) != n:
            raise ValueError("Corpus ids must be unique")

    @classmethod
    def from_documents(cls, docs: Sequence[Document] | Iterator[Document]) -> Corpus:
        docs = list(docs)
        return cls(
            ids=tuple(d.id for d in docs),
            texts=tuple(d.text for d in docs),
            titles=tuple(d.title for d in docs),
            metadata=tuple(d.metadata for d in docs),
        )

    @cached_property
    def position(self) -> Mapping[str, int]:
        """doc id -> row index."""
        return {d: i for i, d in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self.position

    def __iter__(self) -> Iterator[Document]:
        for i in range(len(self.ids)):
            yield self[i]

    def __getitem__(self, key: int | str) -> Document:
        i = self.position[key] if isinstance(key, str) else key
        return Document(self.ids[i], self.texts[i], self.titles[i], self.metadata[i])

    def full_texts(self, *, sep: str = " ") -> list[str]:
        """``title + sep + text`` per document (title omitted when empty), the
        convention BEIR uses for lexical and dense indexing."""
        return [f"{t}{sep}{x}" if t else x for t, x in zip(self.titles, self.texts, strict=True)]

    def fingerprint(self) -> str:
        """sha256 over (id, title, text, metadata) of every document, in order."""
        return self._fingerprint

    @cached_property
    def _fingerprint(self) -> str:
        h = _Hasher("corpus")
        for row in zip(self.ids, self.titles, self.texts, self.metadata, strict=True):
            h.add(row[0], row[1], row[2], dict(row[3]))
        return h.hexdigest()


@dataclass(frozen=True, slots=True)
class Query:
    """One query. ``metadata`` may carry e.g. a ``date`` for as-of search."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, eq=False)
class Queries:
    """An ordered, id-keyed collection of queries."""

    ids: tuple[str, ...]
    texts: tuple[str, ...]
    metadata: tuple[Mapping[str, Any], ...]

    def __post_init__(self) -> None:
        if not (len(self.ids) == len(self.texts) == len(self.metadata)):
            raise ValueError("Queries columns differ in length")
        if len(self.position) != len(self.ids):
            raise ValueError("Query ids must be unique")

    @classmethod
    def from_queries(cls, queries: Sequence[Query] | Iterator[Query]) -> Queries:
        qs = list(queries)
        return cls(
            ids=tuple(q.id for q in qs),
            texts=tuple(q.text for q in qs),
            metadata=tuple(q.metadata for q in qs),
        )

    @classmethod
    def from_dict(cls, mapping: Mapping[str, str]) -> Queries:
        return cls(tuple(mapping), tuple(mapping.values()), tuple(_EMPTY for _ in mapping))

    @cached_property
    def position(self) -> Mapping[str, int]:
        return {q: i for i, q in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, qid: object) -> bool:
        return qid in self.position

    def __iter__(self) -> Iterator[Query]:
        for i in range(len(self.ids)):
            yield self[i]

    def __getitem__(self, key: int | str) -> Query:
        i = self.position[key] if isinstance(key, str) else key
        return Query(self.ids[i], self.texts[i], self.metadata[i])

    def subset(self, ids: Sequence[str] | set[str]) -> Queries:
        """The queries whose id is in ``ids``, in this collection's order."""
        keep = set(ids)
        rows = [i for i, q in enumerate(self.ids) if q in keep]
        return Queries(
            tuple(self.ids[i] for i in rows),
            tuple(self.texts[i] for i in rows),
            tuple(self.metadata[i] for i in rows),
        )

    def fingerprint(self) -> str:
        """sha256 over (id, text, metadata) of every query, in order."""
        return self._fingerprint

    @cached_property
    def _fingerprint(self) -> str:
        h = _Hasher("queries")
        for qid, text, meta in zip(self.ids, self.texts, self.metadata, strict=True):
            h.add(qid, text, dict(meta))
        return h.hexdigest()


@dataclass(frozen=True, eq=False)
class Qrels:
    """Graded relevance judgments: query id -> {doc id: integer grade}.

    Grade 0 means judged non-relevant; a document is *relevant* when its grade
    is >= ``relevance_level`` (default 1, as trec_eval). Absent = unjudged.
    """

    judgments: Mapping[str, Mapping[str, int]]

    def __post_init__(self) -> None:
        frozen = {
            str(q): MappingProxyType({str(d): int(g) for d, g in docs.items()})
            for q, docs in self.judgments.items()
        }
        object.__setattr__(self, "judgments", MappingProxyType(frozen))

    def __getitem__(self, qid: str) -> Mapping[str, int]:
        return self.judgments[qid]

    def __contains__(self, qid: object) -> bool:
        return qid in self.judgments

    def __iter__(self) -> Iterator[str]:
        return iter(self.judgments)

    def __len__(self) -> int:
        return len(self.judgments)

    def get(self, qid: str) -> Mapping[str, int]:
        return self.judgments.get(qid, _EMPTY)

    def relevant(self, qid: str, *, relevance_level: int = 1) -> frozenset[str]:
        """Doc ids judged relevant (grade >= relevance_level) for ``qid``."""
        return frozenset(d for d, g in self.get(qid).items() if g >= relevance_level)

    def n_judgments(self) -> int:
        return sum(len(v) for v in self.judgments.values())

    @classmethod
    def from_df(cls, df: Any, *, query_col: str | None = None, doc_col: str | None = None,
                grade_col: str | None = None) -> Qrels:
        """Judgments from a pandas DataFrame: PyTerrier's ``qid``/``docno``/``label`` or ranx's
        ``q_id``/``doc_id``/``score`` columns (:mod:`bakeoff.data.frames`)."""
        from .frames import qrels_from_df

        return qrels_from_df(df, query_col=query_col, doc_col=doc_col, grade_col=grade_col)

    def to_df(self) -> Any:
        """The judgments as a DataFrame: ``qid``, ``docno``, ``label`` (:mod:`bakeoff.data.frames`)."""
        from .frames import qrels_to_df

        return qrels_to_df(self)

    to_dataframe = to_df  # ranx's name

    def fingerprint(self) -> str:
        """sha256 over (query id, doc id, grade) triples, sorted by ids."""
        h = _Hasher("qrels")
        for q in sorted(self.judgments):
            for d in sorted(self.judgments[q]):
                h.add(q, d, self.judgments[q][d])
        return h.hexdigest()


@dataclass(frozen=True, eq=False)
class Run:
    """A named retrieval result: query id -> ranked ``(doc id, score)`` pairs.

    The pairs are always in :func:`~bakeoff.data.ranking.rank` order, whatever
    order they were given in; use :meth:`from_scores` to build one.
    """

    name: str
    ranked: Mapping[str, tuple[tuple[str, float], ...]]

    @classmethod
    def from_scores(
        cls, name: str, scores: Mapping[str, Mapping[str, float] | Sequence[tuple[str, float]]]
    ) -> Run:
        """Build a run from unordered per-query scores, ordering each with ``rank``.

        A NaN score raises :class:`~bakeoff.data.ranking.NaNScoreError` naming the run and query."""
        ranked: dict[str, tuple[tuple[str, float], ...]] = {}
        for q, s in scores.items():
            try:
                ranked[str(q)] = rank(s)
            except NaNScoreError as exc:
                raise exc.within(f"run {name!r}, query {str(q)!r}") from None
        return cls(name, MappingProxyType(ranked))

    @classmethod
    def from_ranked(cls, name: str, ranked: Mapping[str, Sequence[tuple[str, float]]]) -> Run:
        """Wrap rankings that are already in ``rank`` order (trusted fast path for arms
        that order with :func:`~bakeoff.data.ranking.top_k_indices`)."""
        return cls(name, MappingProxyType({str(q): tuple(v) for q, v in ranked.items()}))

    def __getitem__(self, qid: str) -> tuple[tuple[str, float], ...]:
        return self.ranked[qid]

    def __contains__(self, qid: object) -> bool:
        return qid in self.ranked

    def __iter__(self) -> Iterator[str]:
        return iter(self.ranked)

    def __len__(self) -> int:
        return len(self.ranked)

    def get(self, qid: str) -> tuple[tuple[str, float], ...]:
        return self.ranked.get(qid, ())

    def doc_ids(self, qid: str, k: int | None = None) -> list[str]:
        """The ranked doc ids of ``qid`` (the first ``k`` when given)."""
        pairs = self.get(qid)
        return [d for d, _ in (pairs if k is None else pairs[:k])]

    def cut(self, k: int) -> Run:
        """The same run truncated to its top ``k`` per query."""
        return Run(self.name, MappingProxyType({q: v[:k] for q, v in self.ranked.items()}))

    def renamed(self, name: str) -> Run:
        return Run(name, self.ranked)

    @classmethod
    def from_df(cls, df: Any, *, name: str = "run", query_col: str | None = None, doc_col: str | None = None,
                score_col: str | None = None) -> Run:
        """A run from a pandas DataFrame: PyTerrier's ``qid``/``docno``/``score`` or ranx's
        ``q_id``/``doc_id``/``score`` columns, ordered by the tie rule (:mod:`bakeoff.data.frames`)."""
        from .frames import run_from_df

        return run_from_df(df, name=name, query_col=query_col, doc_col=doc_col, score_col=score_col)

    def to_df(self) -> Any:
        """The run as a DataFrame: ``qid``, ``docno``, ``score``, ``rank`` (0-based), in rank order."""
        from .frames import run_to_df

        return run_to_df(self)

    to_dataframe = to_df  # ranx's name

    def fingerprint(self) -> str:
        """sha256 over (query id, doc id, score) in query-id order then rank order."""
        h = _Hasher("run")
        for q in sorted(self.ranked):
            for d, s in self.ranked[q]:
                h.add(q, d, repr(float(s)))
        return h.hexdigest()


def label_kind_of(info: Mapping[str, Any] | None) -> str:
    """What a dataset's judgments mean, from its ``info`` (or a results file's ``dataset``):
    ``"citation"`` when ``info["provenance"]["label_kind"]`` says they are citation-mined (only
    cited documents are known relevant, every other one is *unknown*, not wrong: measures that
    need judged negatives are undefined, Recall and MRR are lower bounds), else ``"judged"``."""
    prov = (info or {}).get("provenance") or {}
    return "citation" if isinstance(prov, Mapping) and prov.get("label_kind") == "citation" else "judged"


@dataclass(frozen=True, eq=False)
class Dataset:
    """A corpus, the queries to evaluate and their judgments, with a display name."""

    corpus: Corpus
    queries: Queries
    qrels: Qrels
    name: str = "dataset"
    split: str = "test"
    info: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    @property
    def label_kind(self) -> str:
        """What the judgments mean (:func:`label_kind_of` its ``info``)."""
        return label_kind_of(self.info)

    def fingerprint(self) -> str:
        h = _Hasher("dataset")
        h.add(self.corpus.fingerprint(), self.queries.fingerprint(), self.qrels.fingerprint())
        return h.hexdigest()
