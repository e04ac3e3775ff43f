"""Describe mode's filter chain: each filter a small frozen object with a name, one check and one reason.

A filter reads a :class:`Draft` — a generated query, the document it was written from and what the prompt
showed beside it — and passes it (:meth:`QueryFilter.check` returns ``None``) or rejects it (``check``
returns the details recorded with the rejection, ``{}`` when there are none). Its ``name`` is the rejection
reason recorded in provenance (the audit's ``outcome`` and the key of ``rejections``); ``counted_as`` is
its key in provenance's ``counts`` (the name, but ``rejected`` for the leak cut); ``retry_fix`` says whether
the document's next request names the fault (:data:`~bakeoff.truth.generation.prompts.RETRY_FIX`, when
describe mode's ``retry_fix`` is on).

The chain is declared once, :func:`describe_chain`: the text filters, in order, then the leak cut
(``leak_mode="cut"`` only) on the measured leak. Their thresholds default to
:mod:`bakeoff.truth.filters.thresholds`. After the chain come describe mode's selection steps
(answerability, best of n, specificity, leak quota), which compare candidates with each other
(:func:`bakeoff.truth.generation.describe.describe_truth`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from .drift import borrowed_words, copies_example, foreign_scripts
from .leak import copied_run, title_copy, words
from .self_reference import refers_to_document
from .thresholds import (
    EXAMPLE_JACCARD,
    LEAK_THRESHOLD,
    MAX_BORROWED,
    MAX_COPIED_RUN,
    MAX_QUERY_CHARS,
    MAX_QUESTION_CHARS,
    MAX_TITLE_COPY,
    MIN_QUERY_WORDS,
    MIN_WHOLE_COPY,
    TRUNCATION_SLACK,
)

__all__ = [
    "BorrowedExample",
    "Chain",
    "CopiedExample",
    "CopiesPassage",
    "CopiesTitle",
    "Draft",
    "EchoesPrompt",
    "ForeignScript",
    "LeakCut",
    "QueryFilter",
    "RefersToDocument",
    "TooShort",
    "Truncated",
    "cluster_chain",
    "describe_chain",
]


@dataclass(frozen=True)
class Draft:
    """A generated query (whitespace collapsed) and what the filters read beside it: its document's
    ``title`` and ``source`` (``f"{title} {text}"``), the example answers of the prompt (``examples``), the
    real queries it showed as style (``style``), the leak-metric language, and once measured its ``leak``."""

    query: str
    title: str
    source: str
    examples: frozenset[str]
    style: tuple[str, ...]
    lang: str
    leak: float | None = None
    #: The instruction the model was given (without the documents); only :class:`EchoesPrompt` reads it.
    prompt: str = ""


class QueryFilter(Protocol):
    """One rejection reason of describe mode (see the module docstring)."""

    name: ClassVar[str]
    retry_fix: ClassVar[bool]

    @property
    def counted_as(self) -> str: ...

    def check(self, draft: Draft) -> Mapping[str, Any] | None:
        """``None`` when ``draft`` passes; else the details recorded with its rejection."""
        ...


class _Filter:
    """A filter's defaults: counted under its name, no retry fix."""

    name: ClassVar[str]
    retry_fix: ClassVar[bool] = False

    @property
    def counted_as(self) -> str:
        return self.name


@dataclass(frozen=True)
class CopiedExample(_Filter):
    """The query echoes an example answer of the prompt (word-set Jaccard >= ``max_jaccard``)."""

    max_jaccard: float = EXAMPLE_JACCARD
    name: ClassVar[str] = "copied_example"

    def check(self, draft: Draft) -> Mapping[str, Any] | None:
        return {} if copies_example(draft.query, examples=draft.examples, max_jaccard=self.max_jaccard) else None


@dataclass(frozen=True)
class TooShort(_Filter):
    """The query has fewer than ``min_words`` words."""

    min_words: int = MIN_QUERY_WORDS
    name: ClassVar[str] = "too_short"

    def check(self, draft: Draft) -> Mapping[str, Any] | None:
        return {} if len(draft.query.split()) < self.min_words else None


#: Characters that may end a complete query: sentence punctuation, closing brackets and quotes.
_ENDINGS = frozenset(".?!)]}\"'»”’")


@dataclass(frozen=True)
class Truncated(_Filter):
    """The query is unfinished: cut by its schema's length cap (within ``slack`` characters of ``max_chars``
    and not ending a sentence: "… and how does this affect their susceptibility to Clostridium difficil"), or
    trailing off in an ellipsis ("The stream position to the given byte offset is...", "N-cadherin is
    involved in ..."). A grammar-constrained server closes the string at the schema's ``maxLength`` wherever the
    model is. A query as long that ends a sentence passes, and so does a longer one: the cap did not cut it."""

    max_chars: int = MAX_QUERY_CHARS
    slack: int = TRUNCATION_SLACK
    name: ClassVar[str] = "truncated"
    retry_fix: ClassVar[bool] = True

    def check(self, draft: Draft) -> Mapping[str, Any] | None:
        q = draft.query.rstrip()
        trails = q.endswith(("...", "…"))
        cut = self.max_chars - self.slack <= len(q) <= self.max_chars and q[-1:] not in _ENDINGS
        return {"chars": len(q)} if cut or trails else None


@dataclass(frozen=True)
class RefersToDocument(_Filter):
    """The query points at its document ("this study", :mod:`bakeoff.truth.filters.self_reference`)."""

    name: ClassVar[str] = "refers_to_document"

    def check(self, draft: Draft) -> Mapping[str, Any] | None:
        return {} if refers_to_document(draft.query, lang=draft.lang) else None


@dataclass(frozen=True)
class ForeignScript(_Filter):
    """The query drifted into a writing system its document does not use (:mod:`bakeoff.truth.filters.drift`)."""

    name: ClassVar[str] = "foreign_script"

    def check(self, draft: Draft) -> Mapping[str, Any] | None:
        return {} if foreign_scripts(draft.query, draft.source) else None


@dataclass(frozen=True)
class BorrowedExample(_Filter):
    """The query carries more than ``max_borrowed`` content words of an example or style query, absent from its
    document (:func:`~bakeoff.truth.filters.drift.borrowed_words`); the words are recorded."""

    max_borrowed: int = MAX_BORROWED
    name: ClassVar[str] = "borrowed_example"

    def check(self, draft: Draft) -> Mapping[str, Any] | None:
        borrowed = borrowed_words(draft.query, draft.source, draft.examples | frozenset(draft.style), lang=draft.lang)
        return {"borrowed": borrowed} if len(borrowed) > self.max_borrowed else None


@dataclass(frozen=True)
class CopiesTitle(_Filter):
    """At least ``max_share`` of the query's words are in its document's title (naming the title is no answer)."""

    max_share: float = MAX_TITLE_COPY
    name: ClassVar[str] = "copies_title"
    retry_fix: ClassVar[bool] = True

    def check(self, draft: Draft) -> Mapping[str, Any] | None:
        return {} if title_copy(draft.query, draft.title) >= self.max_share else None


@dataclass(frozen=True)
class CopiesPassage(_Filter):
    """The query holds a run of at least ``max_run`` consecutive words of its document (a pasted sentence), or
    the whole query, of at least ``min_whole`` words, is one run of it (a short sentence pasted)."""

    max_run: int = MAX_COPIED_RUN
    min_whole: int = MIN_WHOLE_COPY
    name: ClassVar[str] = "copies_passage"
    retry_fix: ClassVar[bool] = True

    def check(self, draft: Draft) -> Mapping[str, Any] | None:
        run, n = copied_run(draft.query, draft.source), len(words(draft.query))
        return {} if run >= self.max_run or (n >= self.min_whole and run >= n) else None


@dataclass(frozen=True)
class EchoesPrompt(_Filter):
    """The query holds a run of at least ``max_run`` consecutive words of the prompt's instruction (the task or
    its rules written back as a question)."""

    max_run: int = MAX_COPIED_RUN
    name: ClassVar[str] = "echoes_prompt"

    def check(self, draft: Draft) -> Mapping[str, Any] | None:
        return {} if draft.prompt and copied_run(draft.query, draft.prompt) >= self.max_run else None


@dataclass(frozen=True)
class LeakCut(_Filter):
    """The query's measured leak is above ``threshold`` (``leak_mode="cut"``); the leak is recorded."""

    threshold: float = LEAK_THRESHOLD
    name: ClassVar[str] = "leak"

    @property
    def counted_as(self) -> str:
        return "rejected"

    def check(self, draft: Draft) -> Mapping[str, Any] | None:
        assert draft.leak is not None, "the leak cut reads a measured leak"
        return {"leak": round(draft.leak, 6)} if draft.leak > self.threshold else None


@dataclass(frozen=True)
class Chain:
    """Describe mode's filters in the order they run: ``text`` on every answered generation, then its leak is
    measured, then ``leak`` on the measured leak."""

    text: tuple[QueryFilter, ...]
    leak: tuple[QueryFilter, ...]


def describe_chain(*, min_query_words: int = MIN_QUERY_WORDS, max_title_copy: float | None = MAX_TITLE_COPY,
                   max_copied_run: int | None = MAX_COPIED_RUN, leak_threshold: float | None = None,
                   max_chars: int = MAX_QUERY_CHARS) -> Chain:
    """The filter chain, declared once: a ``None`` threshold leaves its filter out (``leak_threshold=None``:
    no leak cut, as in ``leak_mode`` ``target`` and ``record``); ``max_chars`` is the schema's cap on the
    query's length (:class:`Truncated`)."""
    text: list[QueryFilter] = [CopiedExample(), TooShort(min_query_words), Truncated(max_chars), RefersToDocument(),
                               ForeignScript(), BorrowedExample()]
    if max_title_copy is not None:
        text.append(CopiesTitle(max_title_copy))
    if max_copied_run is not None:
        text.append(CopiesPassage(max_copied_run))
    return Chain(text=tuple(text), leak=() if leak_threshold is None else (LeakCut(leak_threshold),))


def cluster_chain(*, min_query_words: int = MIN_QUERY_WORDS, max_title_copy: float | None = MAX_TITLE_COPY,
                  max_copied_run: int | None = MAX_COPIED_RUN) -> tuple[QueryFilter, ...]:
    """Cluster mode's text filters: describe mode's (:func:`describe_chain`, read against the question's
    top-ranked document's title and every member's text) and :class:`EchoesPrompt`. Cluster mode's leak cut
    runs after the judgments (:func:`~bakeoff.truth.generation.clusters.cluster_leak_filter`)."""
    text = describe_chain(min_query_words=min_query_words, max_title_copy=max_title_copy,
                          max_copied_run=max_copied_run, max_chars=MAX_QUESTION_CHARS).text
    return (*text, EchoesPrompt(max_copied_run if max_copied_run is not None else MAX_COPIED_RUN))
