"""Describe mode: one LLM-written query per sampled document, that document its one known answer.

Sample ``n`` documents
(seeded, optionally stratified by a metadata field), ask the model for the
query a layman would type to find each one, and keep it only when it passes the filter chain
(:mod:`bakeoff.truth.filters.chain`: copies, self-reference, drift, title and passage copies, the leak cut of
``leak_mode="cut"``; see :mod:`bakeoff.truth.filters.leak`) and the round's selection below.
A rejected or failed query is regenerated (new sampling seed) up to
``max_regenerations`` times, in rounds over all documents still open; a
document with no accepted query is dropped. **Best of n** (``candidates``): each round asks for
``candidates`` queries per open document (request ``j`` of round ``a`` uses sampling seed
``seed * 100003 + a * candidates + j``, so ``candidates=1`` is the one-query-per-round scheme) and
keeps the passing one with the highest answerability score (the first passing one without an
answerability scorer) — the per-document version of InPars' "keep the top-scored queries" — preferring,
under a leak target, a candidate whose leak bin still has room (sampling several queries is how a small
model that ignores a "use other words" instruction still yields low-leak queries). Reported: mean leak and histogram
of the *kept* queries, the histogram of every scored generation, and
``rejection_rate = rejected generations / scored generations``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from ...data.leak_bins import DEFAULT_LEAK_TARGET, LEAK_BINS, leak_bin, leak_bin_counts
from ...data.model import Corpus, Qrels, Queries
from ..filters.answerability import (
    AnswerabilityOptions,
    AnswerabilityScorer,
    answer_provenance,
    answerability_ranks,
    answerability_scores,
    reference_provenance,
)
from ..filters.answerability import keep_mask as answer_keep_mask
from ..filters.chain import Draft, LeakCut, QueryFilter, describe_chain
from ..filters.leak import leak, leak_stats, mask_rare_terms
from ..filters.score_filter import score_text
from ..filters.specificity import (
    QueryLikelihood,
    SpecificityOptions,
    keep_mask,
    random_others,
    score_stats,
    specificity_scores,
)
from ..filters.thresholds import (
    LEAK_SLACK,
    LEAK_THRESHOLD,
    MAX_COPIED_RUN,
    MAX_TITLE_COPY,
    MIN_QUERY_WORDS,
    STEER_MIN_SUCCESS,
    STEER_MIN_TRIES,
)
from ..llm.client import ChatRequest, Generation, LLMClient
from .copy_penalty import CopyPenalty
from .health import looks_like_title, truth_health
from .leak_target import LEAK_MODES, leak_quota
from .prompts import (
    RETRY_FIX,
    STEER,
    PromptControl,
    describe_completion,
    describe_messages,
    describe_schema,
    shot_queries,
)
from .queries_like import draw_style
from .sampling import eligible_rows, sample_rows, sampled_mix
from .synthetic import SyntheticTruth, doc_text

__all__ = ["REJECTIONS", "Accepted", "DescribeOptions", "describe_request", "describe_requests", "describe_truth", "mask_share", "masked_plan"]




@dataclass(frozen=True)
class DescribeOptions:
    """Describe-mode parameters (all recorded in provenance).

    **Leak** (:mod:`bakeoff.truth.filters.leak`, the share of a query's words copied from its document):
    ``leak_mode="target"`` (default) keeps at most ``ceil(leak_slack * share * n)`` queries per leak
    bin of :data:`LEAK_BINS`, ``share`` from ``leak_target`` (default uniform), so the kept set copies
    its documents' words about as often as the target says instead of never; a query over its bin's
    quota is regenerated, except in the last round (no document is lost to the quota alone).
    ``"cut"``: reject above ``leak_threshold`` and regenerate, for corpora whose searchers use other
    words than the documents. ``"record"``: measure only.

    **Examples**: none by default (zero-shot). ``prompt.examples`` (``--examples FILE``) are the
    user's; otherwise, with ``bootstrap`` > 0, a pilot round over the first ``bootstrap_pilot``
    sampled documents runs zero-shot, its ``bootstrap_pool`` best kept queries (by answerability rank,
    then score) form a pool, and every later request shows ``bootstrap`` of them, drawn per request
    (InPars/Promptagator-style). A query copying any pool example is rejected (``copied_example``).
    """

    n: int = 200
    seed: int = 0
    leak_threshold: float = LEAK_THRESHOLD
    max_regenerations: int = 3
    stratify_by: str | None = None
    lang: str = "en"
    max_doc_chars: int = 1200
    min_query_words: int = MIN_QUERY_WORDS
    temperature: float = 0.8
    max_tokens: int = 64
    test_fraction: float = 0.5
    #: Documents whose text (whitespace collapsed) is shorter are never sampled (too short to describe).
    min_doc_chars: int = 0
    #: Queries generated per open document and round; the passing one with the best answerability is kept.
    candidates: int = 1
    #: How queries are scored and kept when a scorer is given (``None``: no specificity filter).
    specificity: SpecificityOptions | None = None
    #: How queries are scored for answerability when an answerability scorer is given (``None``: no filter).
    answerability: AnswerabilityOptions | None = field(default_factory=AnswerabilityOptions)
    prompt: PromptControl = field(default_factory=PromptControl)
    leak_mode: str = "record"
    leak_target: tuple[float, ...] = DEFAULT_LEAK_TARGET
    #: Where ``leak_target`` came from (recorded; the report names it beside the leak-matched verdict).
    leak_target_source: str = "default"
    leak_slack: float = LEAK_SLACK
    bootstrap: int = 0
    bootstrap_pilot: int = 16
    #: Best kept pilot queries kept as examples; each request shows ``bootstrap`` of them, drawn per request.
    bootstrap_pool: int = 8
    #: Characters of a bootstrapped example's document shown in the prompt.
    example_doc_chars: int = 400
    #: Reject a query when at least this share of its words is in its document's title
    #: (:func:`bakeoff.truth.filters.leak.title_copy`; naming the title is not an answer); ``None``: off.
    max_title_copy: float | None = MAX_TITLE_COPY
    #: Reject a query holding a run of at least this many consecutive words of its document (title and
    #: text; :func:`bakeoff.truth.filters.leak.copied_run`: a pasted sentence, not a query); ``None``: off.
    max_copied_run: int | None = MAX_COPIED_RUN
    #: A document whose last query was rejected as ``copies_passage``, ``copies_title`` or ``truncated`` is asked again with
    #: that reason said in its next request (:data:`~bakeoff.truth.generation.prompts.RETRY_FIX`); ``False``: asked the same way.
    retry_fix: bool = True
    #: Show the generator each document's title. ``False``: the text only, so that a query cannot restate the
    #: title or name it (a docstring's qualified name, a paper's claim); the filters and scorers still read both.
    show_title: bool = True
    #: A penalty at decoding on repeating a run of the prompt's tokens (:mod:`bakeoff.truth.generation.copy_penalty`:
    #: a pasted sentence costs more the longer it gets), sent to servers that take it (the bundled ``local``);
    #: ``None``: off.
    copy_penalty: CopyPenalty | None = field(default_factory=CopyPenalty)
    #: Real queries of the collection (``--queries-like``): each request shows
    #: :data:`~bakeoff.truth.generation.queries_like.STYLE_SHOTS` of them as style (:mod:`bakeoff.truth.generation.queries_like`);
    #: a query borrowing their content words is rejected (``borrowed_example``).
    queries_like: tuple[str, ...] | None = None
    #: Share of sampled documents shown to the model with part of their rare words masked (:func:`masked_plan`:
    #: leak steered before generation, the model cannot copy what it does not see); ``None``: the leak target's
    #: share below leak 0.4. Off by default: with the bundled 0.5B model, masked views lowered the kept queries'
    #: leak on CISI (0.49 against 0.93) but not on SciFact (0.86 against 0.89), and only a quarter of their
    #: queries were answerable when read strictly, against four in five from whole documents.
    mask_share: float | None = 0.0
    #: Share of a masked document's distinct rare words (the leak vocabulary) replaced by "…".
    mask_terms: float = 0.5

    def __post_init__(self) -> None:
        from ...errors import ConfigError

        if self.leak_mode not in LEAK_MODES:
            raise ConfigError(f"--leak-mode must be one of {', '.join(LEAK_MODES)}, got {self.leak_mode!r}")
        if len(self.leak_target) != len(LEAK_BINS) + 1 or any(not math.isfinite(t) or t < 0 for t in self.leak_target) \
                or sum(self.leak_target) <= 0:
            raise ConfigError(f"--leak-target must be {len(LEAK_BINS) + 1} non-negative shares with a positive sum, "
                              f"got {','.join(map(str, self.leak_target))}")
        if not (math.isfinite(self.leak_slack) and self.leak_slack >= 1.0):
            raise ConfigError(f"leak slack must be >= 1, got {self.leak_slack}")
        if self.mask_share is not None and not 0.0 <= self.mask_share <= 1.0:
            raise ConfigError(f"--mask-share must be in [0, 1], got {self.mask_share}")
        if not 0.0 <= self.mask_terms <= 1.0:
            raise ConfigError(f"mask_terms must be in [0, 1], got {self.mask_terms}")
        if self.bootstrap < 0 or self.bootstrap_pilot < 1 or self.bootstrap_pool < 1:
            raise ConfigError("--bootstrap must be >= 0 and the pilot >= 1 document")


def describe_request(corpus: Corpus, row: int, client: LLMClient, options: DescribeOptions, *,
                     attempt: int, control: PromptControl | None = None, masked: bool = False) -> ChatRequest:
    """The request number ``attempt`` for document ``row`` (seed ``seed * 100003 + attempt``; request ``j``
    of regeneration round ``a`` is number ``a * options.candidates + j``); ``control`` overrides
    ``options.prompt`` (bootstrapped examples); ``masked`` shows the document with ``options.mask_terms`` of its
    rare words masked (:func:`bakeoff.truth.filters.leak.mask_rare_terms`, drawn with ``default_rng([seed, row, 5])``)."""
    o = options
    ctl = control or o.prompt
    params: dict[str, Any] = {"temperature": o.temperature, "max_tokens": o.max_tokens,
                              "seed": o.seed * 100_003 + attempt}
    if o.copy_penalty is not None and client.config.llama_cpp_sampling:
        params.update(o.copy_penalty.request_fields())
    text = doc_text(corpus, row, o.max_doc_chars, title=o.show_title)
    if masked:
        text = mask_rare_terms(text, share=o.mask_terms, rng=np.random.default_rng([o.seed, row, 5]), lang=o.lang)
    if client.config.prompt_style == "completion":
        prompt, prefill = describe_completion(text, ctl)
        return ChatRequest.completion(prompt, describe_schema(), {**params, "stop": ["\n"]}, prefill=prefill)
    return ChatRequest(describe_messages(text, ctl), describe_schema(), params)


def describe_requests(corpus: Corpus, client: LLMClient, options: DescribeOptions, *, attempt: int) -> list[ChatRequest]:
    """Round ``attempt``'s requests (``options.candidates`` each) for every sampled document (used to
    match batch results)."""
    rows = sample_rows(corpus, options.n, rng=np.random.default_rng(options.seed), stratify_by=options.stratify_by,
                       eligible=eligible_rows(corpus, min_chars=options.min_doc_chars))
    n_c = options.candidates

    def control(r: int, number: int) -> PromptControl | None:
        if not options.queries_like:
            return None
        return replace(options.prompt, style_queries=draw_style(options.queries_like, seed=options.seed, row=r,
                                                                 number=number))

    plan = masked_plan([int(r) for r in rows], options)
    return [describe_request(corpus, int(r), client, options, attempt=attempt * n_c + j,
                             control=control(int(r), attempt * n_c + j), masked=int(r) in plan)
            for r in rows for j in range(n_c)]


def describe_truth(corpus: Corpus, client: LLMClient, *, options: DescribeOptions = DescribeOptions(),
                   progress: bool = True, scorer: QueryLikelihood | None = None,
                   answerer: AnswerabilityScorer | None = None) -> SyntheticTruth:
    """Describe-mode ground truth (see the module docstring and :class:`DescribeOptions`).

    Filters, in order, each counted under its reason: ``failed`` (no valid answer), then the filter chain of
    :func:`~bakeoff.truth.filters.chain.describe_chain` —
    ``copied_example`` (echoes an example of the prompt), ``too_short`` (< ``min_query_words``),
    ``truncated`` (cut by the schema's length cap, :class:`~bakeoff.truth.filters.chain.Truncated`),
    ``refers_to_document`` ("this study", :mod:`bakeoff.truth.filters.self_reference`),
    ``foreign_script`` and ``borrowed_example`` (the query drifted into another writing system or into
    an example's content, :mod:`bakeoff.truth.filters.drift`),
    ``copies_title`` (``title_copy >= max_title_copy``), ``copies_passage`` (``copied_run >= max_copied_run``),
    ``rejected`` (``leak_mode="cut"``: leak > ``leak_threshold``) — then ``not_answerable`` (with an
    ``answerer`` and ``options.answerability``: the source document ranks below the reference rule,
    or scores below the absolute threshold, see :mod:`bakeoff.truth.filters.answerability`),
    ``low_specificity`` (with a ``scorer`` and ``options.specificity``, see
    :mod:`bakeoff.truth.filters.specificity`; scored only for each document's best candidate),
    ``leak_quota`` (``leak_mode="target"``: the query's leak bin is full; not in the last round; the
    document's next request asks for fewer of its words when a lower bin has room, else for more,
    :data:`~bakeoff.truth.generation.prompts.STEER`; waived early when steering fails,
    :data:`~bakeoff.truth.filters.thresholds.STEER_MIN_TRIES`).
    Each rejection sends the document to the next regeneration round; after ``copies_passage``,
    ``copies_title`` or ``truncated`` that request says why (``retry_fix``, :data:`~bakeoff.truth.generation.prompts.RETRY_FIX`).
    The ``keep_fraction`` options are applied at the end (``below_top_fraction``, ``below_answerability_top``).
    Kept queries carry ``leak``, ``answerability``, ``answer_rank`` and ``specificity`` in metadata as measured.
    """
    run = _DescribeRun(corpus, client, options, progress=progress, scorer=scorer, answerer=answerer)
    for attempt in range(run.n_rounds):
        if not run.open_rows:
            break
        run.round(attempt)
    run.keep_top_fractions()
    return run.truth()


class Accepted(NamedTuple):
    """A document's kept query, with the round that wrote it and what was measured of it."""

    query: str
    leak: float
    attempt: int
    specificity: float | None
    answerability: float | None
    rank: int | None


def _measured(specificity: float | None, answerability: float | None, rank: int | None) -> dict[str, Any]:
    """A query's measured scores as its audit entry and metadata record them (rounded; unmeasured left out)."""
    out: dict[str, Any] = {}
    if specificity is not None:
        out["specificity"] = round(specificity, 6)
    if answerability is not None:
        out["answerability"] = round(answerability, 6)
    if rank is not None:
        out["answer_rank"] = rank
    return out

class _Candidate(NamedTuple):
    """A query that passed the filter chain, waiting for the round's selection."""

    row: int
    query: str
    leak: float


class _Scores(NamedTuple):
    """A round's scores of its candidates (row-aligned; ``None`` when not measured) and the answerability verdicts."""

    answers: list[float | None]
    ranks: list[int | None]
    passes: list[bool]
    specificity: list[float | None]


@dataclass
class _Tally:
    """Describe mode's accumulators across rounds: the counts, the audit of every answered generation, the kept
    queries (row -> :class:`Accepted`), every measured leak, specificity, answerability and rank, and the
    scorers' cache counts."""

    doc_ids: tuple[str, ...]
    counts: Counter[str] = field(default_factory=Counter)
    audit: list[dict[str, Any]] = field(default_factory=list)
    accepted: dict[int, Accepted] = field(default_factory=dict)
    leaks: list[float] = field(default_factory=list)
    specificity: list[float] = field(default_factory=list)
    answerability: list[float] = field(default_factory=list)
    ranks: list[int] = field(default_factory=list)
    spec_stats: dict[str, int] = field(default_factory=dict)
    ans_stats: dict[str, int] = field(default_factory=dict)

    def note(self, r: int, attempt: int, query: str, outcome: str, **extra: Any) -> None:
        self.audit.append({"doc": self.doc_ids[r], "round": attempt, "query": query, "outcome": outcome, **extra})

    def reject(self, r: int, attempt: int, query: str, reason: str, *, counted_as: str | None = None,
               **extra: Any) -> None:
        self.counts[counted_as or reason] += 1
        self.note(r, attempt, query, reason, **extra)


@dataclass
class _LeakQuota:
    """The leak quota of ``leak_mode="target"`` (``quota`` per bin, ``None`` otherwise) and its steering: ``steer``
    maps a row whose last query found its bin full to ``"lower"`` / ``"higher"``; ``tries`` counts steered
    regenerations that reached a bin with room and steered regenerations judged; ``waived_after`` is the round
    after which the quota is waived (steering failed)."""

    quota: list[int] | None
    in_bin: list[int] = field(default_factory=lambda: [0] * (len(LEAK_BINS) + 1))
    steer: dict[int, str] = field(default_factory=dict)
    tries: list[int] = field(default_factory=lambda: [0, 0])
    waived_after: int | None = None

    def room(self, lk: float) -> bool:
        """A query of leak ``lk`` finds room in its bin (always, without a quota or once it is waived)."""
        if self.quota is None or self.waived_after is not None:
            return True
        b_ = leak_bin(lk)
        return self.in_bin[b_] < self.quota[b_]

    def admit(self, r: int, lk: float, *, steered: bool, last: bool) -> bool:
        """Count row ``r``'s query of leak ``lk`` in its bin, or refuse it when the bin is full (not in the last
        round, not once waived) and steer the row's next request toward a bin with room."""
        if self.quota is None:
            return True
        b_ = leak_bin(lk)
        if self.in_bin[b_] >= self.quota[b_] and not last and self.waived_after is None:
            below = any(self.in_bin[k] < self.quota[k] for k in range(b_))
            if steered:
                self.tries[1] += 1
            self.steer[r] = "lower" if below else "higher"
            return False
        if steered and self.waived_after is None and not last:
            self.tries[0] += 1
            self.tries[1] += 1
        self.in_bin[b_] += 1
        return True

    def end_round(self, attempt: int) -> None:
        """Waive the quota after round ``attempt`` when the model does not follow the steer (later rounds keep
        what passes): :data:`~bakeoff.truth.filters.thresholds.STEER_MIN_TRIES` judged, under
        :data:`~bakeoff.truth.filters.thresholds.STEER_MIN_SUCCESS` of them reaching room."""
        if (self.quota is not None and self.waived_after is None and self.tries[1] >= STEER_MIN_TRIES
                and self.tries[0] < STEER_MIN_SUCCESS * self.tries[1]):
            self.waived_after = attempt

    def provenance(self) -> dict[str, Any]:
        return {"quota": self.quota,
                "steered": {"reached_room": self.tries[0], "judged": self.tries[1]} if self.quota is not None else None,
                "quota_waived_after_round": self.waived_after}


@dataclass
class _Prompting:
    """What the next requests show: the examples (the user's, or the bootstrapped ``pool`` and the ``control``
    showing its first ones), and per row the fault its next request names (``fault``, a
    :data:`~bakeoff.truth.generation.prompts.RETRY_FIX` key: its last query's copying rejection)."""

    options: DescribeOptions
    control: PromptControl
    policy: str
    pool: tuple[tuple[str, str], ...] = ()  # bootstrapped (document, query) examples
    boot: list[dict[str, Any]] = field(default_factory=list)
    fault: dict[int, str] = field(default_factory=dict)

    def examples(self) -> frozenset[str]:
        """The example answers any request of this round may show."""
        return shot_queries(self.control) | frozenset(q for _, q in self.pool)

    def style(self, r: int, number: int) -> tuple[str, ...]:
        """The real queries request ``number`` of row ``r`` shows as style (none without ``queries_like``)."""
        o = self.options
        return draw_style(o.queries_like, seed=o.seed, row=r, number=number) if o.queries_like else ()

    def control_for(self, r: int, number: int, steer: Mapping[int, str]) -> PromptControl:
        """The pool's examples shown to request ``number`` of row ``r``: ``bootstrap`` of them, drawn
        with ``default_rng([seed, r, number])`` and shown in pool order (a small model copies the
        examples it sees; a different draw per request keeps one example from being copied everywhere);
        then the row's retry fix and steer, appended to the instruction."""
        o, ctl, pool = self.options, self.control, self.pool
        if o.queries_like:
            ctl = replace(ctl, style_queries=self.style(r, number))
        if pool:
            pick = np.random.default_rng([o.seed, r, number]).choice(len(pool), size=min(o.bootstrap, len(pool)),
                                                                     replace=False)
            ctl = replace(ctl, examples=tuple(pool[i] for i in sorted(int(x) for x in pick)))
        fixes = [RETRY_FIX[ctl.lang][self.fault[r]]] if r in self.fault else []
        if r in steer:
            fixes.append(STEER[ctl.lang][steer[r]])
        for extra in fixes:
            ctl = replace(ctl, instruction=f"{ctl.instruction} {extra}" if ctl.instruction else extra)
        return ctl

    def bootstrap(self, corpus: Corpus, batch: list[int], accepted: Mapping[int, Accepted]) -> None:
        """After the pilot round: its ``bootstrap_pool`` best kept queries that do not read like titles (by
        answerability rank, then score, then row) become the examples of every later request."""
        o = self.options
        best_kept = sorted((r for r in batch if r in accepted and not looks_like_title(accepted[r].query,
                                                                                       corpus.titles[r])),
                           key=lambda r: (accepted[r].rank or 0, -(accepted[r].answerability or 0.0), r))
        best_kept = best_kept[: o.bootstrap_pool]
        if best_kept:
            self.pool = tuple((doc_text(corpus, r, o.example_doc_chars, title=o.show_title), accepted[r].query)
                              for r in best_kept)
            self.control = replace(o.prompt, examples=self.pool[: o.bootstrap])
            self.policy = "bootstrapped"
            self.boot = [{"doc": corpus.ids[r], "query": accepted[r].query} for r in best_kept]


class _DescribeRun:
    """One describe-mode generation: the sampled rows, the filter chain, and the state the rounds share."""

    def __init__(self, corpus: Corpus, client: LLMClient, options: DescribeOptions, *, progress: bool,
                 scorer: QueryLikelihood | None, answerer: AnswerabilityScorer | None) -> None:
        o = options
        self.corpus, self.client, self.o, self.progress = corpus, client, o, progress
        self.scorer, self.answerer = scorer, answerer
        self.eligible = eligible_rows(corpus, min_chars=o.min_doc_chars)
        self.rows = sample_rows(corpus, o.n, rng=np.random.default_rng(o.seed), stratify_by=o.stratify_by,
                                eligible=self.eligible)
        self.spec = o.specificity if scorer is not None else None
        self.ans = o.answerability if answerer is not None else None
        self.ans_thr = self.ans.resolved_threshold(answerer) if self.ans is not None else None  # type: ignore[arg-type]
        self.relative = self.ans is not None and self.ans.relative
        self.chain = describe_chain(min_query_words=o.min_query_words, max_title_copy=o.max_title_copy,
                                    max_copied_run=o.max_copied_run,
                                    leak_threshold=o.leak_threshold if o.leak_mode == "cut" else None)
        self.tally = _Tally(corpus.ids)
        self.quota = _LeakQuota(leak_quota(len(self.rows), o.leak_target, o.leak_slack)
                                if o.leak_mode == "target" else None)
        self.masked_rows = masked_plan([int(r) for r in self.rows], o)
        self.prompting = _Prompting(o, control=o.prompt, policy="user" if o.prompt.examples else "none")
        self.pilot = (min(len(self.rows), o.bootstrap_pilot)
                      if (o.bootstrap > 0 and not o.prompt.examples and len(self.rows) > 1) else 0)
        self.open_rows = [int(r) for r in self.rows]
        self.n_rounds = o.max_regenerations + 1 + (1 if self.pilot else 0)

    def round(self, attempt: int) -> None:
        """Regeneration round ``attempt``: ask for the open documents' queries, filter, select, keep."""
        o, n_c = self.o, self.o.candidates
        pilot_round = bool(self.pilot) and attempt == 0
        batch = self.open_rows[: self.pilot] if pilot_round else self.open_rows
        examples = self.prompting.examples()
        steered = set(self.quota.steer)
        numbered = [(r, attempt * n_c + j) for r in batch for j in range(n_c)]
        reqs = [describe_request(self.corpus, r, self.client, o, attempt=number,
                                 control=self.prompting.control_for(r, number, self.quota.steer),
                                 masked=r in self.masked_rows)
                for r, number in numbered]
        desc = "describe (pilot)" if pilot_round else f"describe (round {attempt + 1 - (1 if self.pilot else 0)})"
        gens = self.client.generate_many(reqs, progress=self.progress, desc=desc)
        candidates, waiting = self._screen(attempt, numbered, gens, examples)
        answers, ranks, passes = self._answerability(candidates)
        best = self._best_of_n(candidates, answers, ranks, passes)
        scores = _Scores(answers, ranks, passes, self._specificity(candidates, sorted(best.values())))
        self._judge(attempt, candidates, scores, best, steered=steered, last=attempt == self.n_rounds - 1)
        self.quota.end_round(attempt)
        if pilot_round and o.bootstrap > 0:
            self.prompting.bootstrap(self.corpus, batch, self.tally.accepted)
        self.open_rows = [r for r in self.open_rows if r not in self.tally.accepted and r not in waiting]

    def _screen(self, attempt: int, numbered: list[tuple[int, int]], gens: list[Generation],
                examples: frozenset[str]) -> tuple[list[_Candidate], set[int]]:
        """The filter loop: every answered generation through the chain; the survivors and the rows whose
        answer is pending (a batch file)."""
        counts, corpus = self.tally.counts, self.corpus
        candidates: list[_Candidate] = []
        waiting: set[int] = set()
        for (r, number), g in zip(numbered, gens, strict=True):
            if g.pending:
                counts["pending"] += 1
                waiting.add(r)
                continue
            counts["generations"] += 1
            if not g.ok:
                counts["failed"] += 1
                continue
            q = " ".join(g.value.query.split())
            self.prompting.fault.pop(r, None)
            draft = Draft(q, corpus.titles[r], f"{corpus.titles[r]} {corpus.texts[r]}", examples,
                          self.prompting.style(r, number), self.o.lang)
            if self._rejected(attempt, r, draft, self.chain.text):
                continue
            lk = leak(q, draft.source, lang=self.o.lang)
            self.tally.leaks.append(lk)
            counts["scored"] += 1
            if self._rejected(attempt, r, replace(draft, leak=lk), self.chain.leak):
                continue
            candidates.append(_Candidate(r, q, lk))
        return candidates, waiting

    def _rejected(self, attempt: int, r: int, draft: Draft, filters: tuple[QueryFilter, ...]) -> bool:
        """Run ``filters`` in order; the first that rejects ``draft`` is counted and noted, and decides whether
        the row's next request names the fault (the retry decision)."""
        for f in filters:
            details = f.check(draft)
            if details is None:
                continue
            self.tally.reject(r, attempt, draft.query, f.name, counted_as=f.counted_as, **details)
            if f.retry_fix and self.o.retry_fix:
                self.prompting.fault[r] = f.name
            return True
        return False

    def _answerability(self, candidates: list[_Candidate]) -> tuple[list[float | None], list[int | None], list[bool]]:
        """Answerability first (cheap): each candidate's score, rank (the relative rule) and verdict."""
        n = len(candidates)
        answers: list[float | None] = [None] * n
        ranks: list[int | None] = [None] * n
        passes = [True] * n
        ans, corpus, cache = self.ans, self.corpus, self.client.cache
        if ans is None or not candidates:
            return answers, ranks, passes
        answers = list(answerability_scores([(c.query, score_text(corpus, c.row)) for c in candidates],
                                            self.answerer, options=ans, cache=cache,  # type: ignore[arg-type]
                                            stats=self.tally.ans_stats))
        self.tally.answerability.extend(answers)  # type: ignore[arg-type]
        if self.relative:
            got = answerability_ranks([c.query for c in candidates], [c.row for c in candidates],
                                      answers, self.answerer,  # type: ignore[arg-type]
                                      doc_text=lambda r: score_text(corpus, r), n_docs=len(corpus), options=ans,
                                      cache=cache)
            ranks = [x.rank for x in got]
            self.tally.ranks.extend(x.rank for x in got)
            passes = [x.kept(ans.reference) for x in got]  # type: ignore[arg-type]
        else:
            passes = [a >= self.ans_thr for a in answers]  # type: ignore[operator]
        return answers, ranks, passes

    def _best_of_n(self, candidates: list[_Candidate], answers: list[float | None], ranks: list[int | None],
                   passes: list[bool]) -> dict[int, int]:
        """Row -> index of its best candidate passing answerability: one whose leak bin has room first, then
        :func:`_better`, else the first."""
        room = self.quota.room
        best: dict[int, int] = {}
        for i, c in enumerate(candidates):
            if not passes[i]:
                continue
            r = c.row
            if r not in best:
                best[r] = i
            elif room(c.leak) != room(candidates[best[r]].leak):
                if room(c.leak):
                    best[r] = i
            elif _better(ranks[i], answers[i], ranks[best[r]], answers[best[r]]):
                best[r] = i
        return best

    def _specificity(self, candidates: list[_Candidate], chosen: list[int]) -> list[float | None]:
        """Specificity (an LLM pass) of the ``chosen`` candidates only, each document's best."""
        scores: list[float | None] = [None] * len(candidates)
        spec = self.spec
        if spec is None or not chosen:
            return scores
        got = specificity_scores([(candidates[i].query, score_text(self.corpus, candidates[i].row)) for i in chosen],
                                 self.scorer, options=spec, cache=self.client.cache,  # type: ignore[arg-type]
                                 progress=self.progress, stats=self.tally.spec_stats,
                                 others=random_others(self.corpus, spec))
        for i, x in zip(chosen, got, strict=True):
            scores[i] = x.score
        self.tally.specificity.extend(x.score for x in got)
        return scores

    def _judge(self, attempt: int, candidates: list[_Candidate], scores: _Scores, best: dict[int, int], *,
               steered: set[int], last: bool) -> None:
        """The round's selection, per candidate: ``not_answerable``, ``below_best_of_n``, ``low_specificity``,
        ``leak_quota``, else kept."""
        spec, tally = self.spec, self.tally
        for i, (r, q, lk) in enumerate(candidates):
            sc, an, rk = scores.specificity[i], scores.answers[i], scores.ranks[i]
            extra = {"leak": round(lk, 6), **_measured(sc, an, rk)}
            if not scores.passes[i]:
                tally.reject(r, attempt, q, "not_answerable", **extra)
            elif best[r] != i:
                tally.reject(r, attempt, q, "below_best_of_n", **extra)
            elif sc is not None and spec is not None and spec.threshold is not None and sc < spec.threshold:
                tally.reject(r, attempt, q, "low_specificity", **extra)
            elif not self.quota.admit(r, lk, steered=r in steered, last=last):
                tally.reject(r, attempt, q, "leak_quota", **extra)
            else:
                tally.note(r, attempt, q, "kept", **extra)
                tally.accepted[r] = Accepted(q, lk, attempt, sc, an, rk)

    def keep_top_fractions(self) -> None:
        """The ``keep_fraction`` options, over all kept queries: ``below_top_fraction`` (specificity), then
        ``below_answerability_top``."""
        spec, ans, accepted = self.spec, self.ans, self.tally.accepted
        if spec is not None and spec.keep_fraction is not None and accepted:
            order = sorted(accepted)
            self._drop(order, keep_mask([accepted[r].specificity or 0.0 for r in order], replace(spec, threshold=None)),
                       "below_top_fraction")
        if ans is not None and ans.keep_fraction is not None and accepted:
            order = sorted(accepted)
            self._drop(order, answer_keep_mask([accepted[r].answerability or 0.0 for r in order], threshold=None,
                                               keep_fraction=ans.keep_fraction), "below_answerability_top")

    def _drop(self, order: list[int], mask: list[bool], reason: str) -> None:
        accepted = self.tally.accepted
        for r, keep in zip(order, mask, strict=True):
            if not keep:
                self.tally.reject(r, accepted[r].attempt, accepted[r].query, reason)
                del accepted[r]

    def truth(self) -> SyntheticTruth:
        """The kept queries (ids ``describe-NNNNN`` by sampled position) and their provenance."""
        corpus, o, accepted = self.corpus, self.o, self.tally.accepted
        self.tally.counts["dropped_docs"] = len(self.rows) - len(accepted)
        qids, texts, metas, judg = [], [], [], {}
        for pos, r in enumerate(int(x) for x in self.rows):
            if r not in accepted:
                continue
            q, lk, attempt, sc, an, rk = accepted[r]
            qid = f"describe-{pos:05d}"
            qids.append(qid)
            texts.append(q)
            metas.append({"source_doc": corpus.ids[r], "leak": round(lk, 6), "attempt": attempt,
                          **_measured(sc, an, rk)})
            judg[qid] = {corpus.ids[r]: 1}
        prov = self._provenance(n_kept=len(qids))
        prov["health"] = truth_health(sampled=len(self.rows), kept=len(qids), rejections=prov["rejections"],
                                      queries=texts,
                                      titles=[corpus.titles[corpus.position[m["source_doc"]]] for m in metas],
                                      style=o.prompt.style)
        self._scorer_provenance(prov)
        if o.stratify_by:
            prov["sampled_mix"] = sampled_mix(corpus, self.rows, o.stratify_by)
            prov["kept_mix"] = sampled_mix(corpus, [r for r in self.rows if int(r) in accepted], o.stratify_by)
        return SyntheticTruth(Queries(tuple(qids), tuple(texts), tuple(metas)), Qrels(judg), prov,
                              test_fraction=o.test_fraction, split_seed=o.seed)

    def _provenance(self, *, n_kept: int) -> dict[str, Any]:
        corpus, o, counts, control = self.corpus, self.o, self.tally.counts, self.prompting.control
        completion = self.client.config.prompt_style == "completion"
        kept = [a.leak for a in self.tally.accepted.values()]
        scored = counts["scored"]
        leak_thr = o.leak_threshold if o.leak_mode == "cut" else None
        return {
            "mode": "describe",
            "llm": self.client.public(),
            "prompts": {"style": self.client.config.prompt_style,
                        "example": (describe_completion("<document text>", control) if completion
                                    else list(describe_messages("<document text>", control))),
                        "instruction": o.prompt.describe_instruction(), "control": asdict(o.prompt),
                        "examples": self.prompting.policy, "bootstrapped": self.prompting.boot},
            "parameters": {**asdict(o), "schema": describe_schema().model_json_schema()},
            "copy_penalty": {"applied": o.copy_penalty is not None and self.client.config.llama_cpp_sampling,
                             "request_fields": o.copy_penalty.request_fields() if o.copy_penalty else None},
            "leak": {"kept": leak_stats(kept, threshold=leak_thr),
                     "all_generations": leak_stats(self.tally.leaks, threshold=leak_thr),
                     "rejection_rate": (counts["rejected"] + counts["leak_quota"]) / scored if scored else 0.0,
                     "mode": o.leak_mode, "threshold": leak_thr, "lang": o.lang,
                     "bins": [0.0, *LEAK_BINS, 1.0], "kept_by_bin": leak_bin_counts(kept),
                     "target": list(o.leak_target), "target_source": o.leak_target_source,
                     **self.quota.provenance()},
            "counts": {"sampled": len(self.rows), "kept": n_kept, **dict(counts)},
            "documents": {"corpus": len(corpus), "eligible": len(self.eligible),
                          "too_short": len(corpus) - len(self.eligible), "min_doc_chars": o.min_doc_chars},
            "rejections": {name: counts[LeakCut().counted_as if name == LeakCut.name else name] for name in REJECTIONS},
            "generations": self.tally.audit,
            "masked": {"share": mask_share(o), "terms": o.mask_terms,
                       "documents": sorted(corpus.ids[r] for r in self.masked_rows),
                       "rule": ("row r is shown masked iff default_rng([seed, r, 17]).random() < share; each distinct "
                                "rare word of its text is masked iff default_rng([seed, r, 5]) draws < terms, in "
                                "sorted order")},
            "usage": self.client.usage.as_dict(),
        }

    def _scorer_provenance(self, prov: dict[str, Any]) -> None:
        """The specificity and answerability entries of ``prov`` (when those scorers ran)."""
        spec, ans, tally, accepted = self.spec, self.ans, self.tally, self.tally.accepted
        if spec is not None:
            kept_spec = [s for a in accepted.values() if (s := a.specificity) is not None]
            prov["specificity"] = {"scorer": self.scorer.identity(), "options": asdict(spec),  # type: ignore[union-attr]
                                   "all_candidates": score_stats(tally.specificity, threshold=spec.threshold),
                                   "kept": score_stats(kept_spec, threshold=spec.threshold),
                                   "evaluations": dict(tally.spec_stats)}
        if ans is None:
            return
        prov["answerability"] = answer_provenance(self.answerer, ans, self.ans_thr,  # type: ignore[arg-type]
                                                  tally.answerability, [a.answerability for a in accepted.values()],
                                                  tally.ans_stats)
        if self.relative:
            prov["answerability"]["reference"] = reference_provenance(ans.reference, tally.ranks)  # type: ignore[arg-type]


#: Provenance's ``rejections``, in this order: every reason a generation or a kept query can be turned away for.
REJECTIONS: tuple[str, ...] = (
    "failed", "copied_example", "too_short", "truncated", "refers_to_document", "foreign_script", "borrowed_example",
    "copies_title", "copies_passage", "leak", "leak_quota", "low_specificity", "not_answerable",
    "below_top_fraction", "below_answerability_top", "below_best_of_n",
)


def mask_share(options: DescribeOptions) -> float:
    """The share of sampled documents shown masked: ``options.mask_share``, or by default the leak target's share
    below leak 0.4 (its first two bins)."""
    if options.mask_share is not None:
        return options.mask_share
    t = options.leak_target
    return float(sum(t[:2]) / sum(t))


def masked_plan(rows: list[int], options: DescribeOptions) -> frozenset[int]:
    """The documents (rows) shown masked: row ``r`` iff ``default_rng([seed, r, 17]).random() < mask_share(options)``
    — decided before any generation, the same in every round."""
    share = mask_share(options)
    if share <= 0:
        return frozenset()
    return frozenset(r for r in rows if np.random.default_rng([options.seed, r, 17]).random() < share)


def _better(rank: int | None, score: float | None, other_rank: int | None, other_score: float | None) -> bool:
    """Best of n: a lower answerability rank wins, then a higher score; without scores the first stays."""
    if rank is not None and other_rank is not None and rank != other_rank:
        return rank < other_rank
    return score is not None and other_score is not None and score > other_score
