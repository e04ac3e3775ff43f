"""Describe mode: one LLM-written query per sampled document, that document its one known answer.

Sample ``n`` documents
(seeded, optionally stratified by a metadata field), ask the model for the
query a layman would type to find each one, and keep it only when
``leak(query, document) <= leak_threshold`` (see :mod:`bakeoff.truth.filters.leak`).
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
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ...data.leak_bins import DEFAULT_LEAK_TARGET, LEAK_BINS, leak_bin, leak_bin_counts
from ...data.model import Corpus, Qrels, Queries
from ..filters.answerability import (
    AnswerabilityOptions,
    AnswerabilityScorer,
    answer_provenance,
    answerability_ranks,
    answerability_scores,
)
from ..filters.answerability import keep_mask as answer_keep_mask
from ..filters.drift import MAX_BORROWED, borrowed_words, copies_example, foreign_scripts
from ..filters.leak import copied_run, leak, leak_stats, mask_rare_terms, title_copy
from ..filters.score_filter import score_text
from ..filters.self_reference import refers_to_document
from ..filters.specificity import (
    QueryLikelihood,
    SpecificityOptions,
    keep_mask,
    random_others,
    score_stats,
    specificity_scores,
)
from ..llm.client import ChatRequest, LLMClient
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

__all__ = ["STEER_MIN_SUCCESS", "STEER_MIN_TRIES", "DescribeOptions", "describe_request", "describe_requests", "describe_truth", "mask_share", "masked_plan"]


#: The leak quota is waived after a round once at least ``STEER_MIN_TRIES`` steered regenerations were
#: judged and fewer than ``STEER_MIN_SUCCESS`` of them reached a bin with room: a model that does not follow
#: the steer would spend every later round on regenerations that land in the same full bins.
STEER_MIN_TRIES = 20


STEER_MIN_SUCCESS = 0.1


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
    leak_threshold: float = 0.35
    max_regenerations: int = 3
    stratify_by: str | None = None
    lang: str = "en"
    max_doc_chars: int = 1200
    min_query_words: int = 3
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
    leak_slack: float = 1.25
    bootstrap: int = 0
    bootstrap_pilot: int = 16
    #: Best kept pilot queries kept as examples; each request shows ``bootstrap`` of them, drawn per request.
    bootstrap_pool: int = 8
    #: Characters of a bootstrapped example's document shown in the prompt.
    example_doc_chars: int = 400
    #: Reject a query when at least this share of its words is in its document's title
    #: (:func:`bakeoff.truth.filters.leak.title_copy`; naming the title is not an answer); ``None``: off.
    max_title_copy: float | None = 0.8
    #: Reject a query holding a run of at least this many consecutive words of its document (title and
    #: text; :func:`bakeoff.truth.filters.leak.copied_run`: a pasted sentence, not a query); ``None``: off.
    max_copied_run: int | None = 10
    #: A document whose last query was rejected as ``copies_passage`` or ``copies_title`` is asked again with
    #: that reason said in its next request (:data:`~bakeoff.truth.generation.prompts.RETRY_FIX`); ``False``: asked the same way.
    retry_fix: bool = True
    #: Show the generator each document's title. ``False``: the text only, so that a query cannot restate the
    #: title or name it (a docstring's qualified name, a paper's claim); the filters and scorers still read both.
    show_title: bool = True
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

    Filters, in order, each counted under its reason: ``failed`` (no valid answer),
    ``copied_example`` (echoes an example of the prompt), ``too_short`` (< ``min_query_words``),
    ``refers_to_document`` ("this study", :mod:`bakeoff.truth.filters.self_reference`),
    ``foreign_script`` and ``borrowed_example`` (the query drifted into another writing system or into
    an example's content, :mod:`bakeoff.truth.filters.drift`),
    ``copies_title`` (``title_copy >= max_title_copy``), ``copies_passage`` (``copied_run >= max_copied_run``),
    ``rejected`` (``leak_mode="cut"``: leak > ``leak_threshold``), ``not_answerable`` (with an
    ``answerer`` and ``options.answerability``: the source document ranks below the reference rule,
    or scores below the absolute threshold, see :mod:`bakeoff.truth.filters.answerability`),
    ``low_specificity`` (with a ``scorer`` and ``options.specificity``, see
    :mod:`bakeoff.truth.filters.specificity`; scored only for each document's best candidate),
    ``leak_quota`` (``leak_mode="target"``: the query's leak bin is full; not in the last round; the
    document's next request asks for fewer of its words when a lower bin has room, else for more,
    :data:`~bakeoff.truth.generation.prompts.STEER`; waived early when steering fails, :data:`STEER_MIN_TRIES`).
    Each rejection sends the document to the next regeneration round; after ``copies_passage`` or
    ``copies_title`` that request says why (``retry_fix``, :data:`~bakeoff.truth.generation.prompts.RETRY_FIX`). The ``keep_fraction`` options
    are applied at the end (``below_top_fraction``, ``below_answerability_top``). Kept queries carry
    ``leak``, ``answerability``, ``answer_rank`` and ``specificity`` in metadata as measured.
    """
    o = options
    rng = np.random.default_rng(o.seed)
    eligible = eligible_rows(corpus, min_chars=o.min_doc_chars)
    rows = sample_rows(corpus, o.n, rng=rng, stratify_by=o.stratify_by, eligible=eligible)
    schema = describe_schema()
    completion = client.config.prompt_style == "completion"
    spec = o.specificity if scorer is not None else None
    ans = o.answerability if answerer is not None else None
    ans_thr = ans.resolved_threshold(answerer) if ans is not None else None  # type: ignore[arg-type]
    relative = ans is not None and ans.relative
    all_ans: list[float] = []
    all_ranks: list[int] = []
    ans_stats: dict[str, int] = {}
    quota = leak_quota(len(rows), o.leak_target, o.leak_slack) if o.leak_mode == "target" else None
    in_bin = [0] * (len(LEAK_BINS) + 1)

    # row -> (query, leak, round, specificity, answerability, rank)
    accepted: dict[int, tuple[str, float, int, float | None, float | None, int | None]] = {}
    all_leaks: list[float] = []
    all_spec: list[float] = []
    spec_stats: dict[str, int] = {}
    counts = Counter[str]()
    audit: list[dict[str, Any]] = []  # every answered generation with its outcome

    def note(r: int, attempt: int, query: str, outcome: str, **extra: Any) -> None:
        audit.append({"doc": corpus.ids[r], "round": attempt, "query": query, "outcome": outcome, **extra})

    masked_rows = masked_plan([int(r) for r in rows], o)
    control = o.prompt
    policy = "user" if o.prompt.examples else "none"
    boot: list[dict[str, Any]] = []
    pool: tuple[tuple[str, str], ...] = ()  # bootstrapped (document, query) examples
    steer: dict[int, str] = {}  # row -> "lower" / "higher": its last query's leak bin was full
    fault: dict[int, str] = {}  # row -> its last query's copying rejection (a RETRY_FIX key)
    pilot = min(len(rows), o.bootstrap_pilot) if (o.bootstrap > 0 and not o.prompt.examples and len(rows) > 1) else 0
    open_rows = [int(r) for r in rows]
    waived_after: int | None = None  # the round after which the leak quota is waived (steering failed)
    steer_tries = [0, 0]  # steered regenerations that reached a bin with room, steered regenerations judged
    n_c = o.candidates
    n_rounds = o.max_regenerations + 1 + (1 if pilot else 0)
    for attempt in range(n_rounds):
        if not open_rows:
            break
        batch = open_rows[:pilot] if pilot and attempt == 0 else open_rows
        last = attempt == n_rounds - 1
        examples = shot_queries(control) | frozenset(q for _, q in pool)

        def control_for(r: int, number: int, control: PromptControl = control,
                        pool: tuple[tuple[str, str], ...] = pool) -> PromptControl:
            """The pool's examples shown to request ``number`` of row ``r``: ``bootstrap`` of them, drawn
            with ``default_rng([seed, r, number])`` and shown in pool order (a small model copies the
            examples it sees; a different draw per request keeps one example from being copied everywhere)."""
            ctl = control
            if o.queries_like:
                ctl = replace(ctl, style_queries=draw_style(o.queries_like, seed=o.seed, row=r, number=number))
            if pool:
                pick = np.random.default_rng([o.seed, r, number]).choice(len(pool), size=min(o.bootstrap, len(pool)),
                                                                         replace=False)
                ctl = replace(ctl, examples=tuple(pool[i] for i in sorted(int(x) for x in pick)))
            fixes = [RETRY_FIX[ctl.lang][fault[r]]] if r in fault else []
            if r in steer:
                fixes.append(STEER[ctl.lang][steer[r]])
            for extra in fixes:
                ctl = replace(ctl, instruction=f"{ctl.instruction} {extra}" if ctl.instruction else extra)
            return ctl

        steered = set(steer)
        reqs = [describe_request(corpus, r, client, o, attempt=attempt * n_c + j,
                                 control=control_for(r, attempt * n_c + j), masked=r in masked_rows)
                for r in batch for j in range(n_c)]
        desc = "describe (pilot)" if pilot and attempt == 0 else f"describe (round {attempt + 1 - (1 if pilot else 0)})"
        gens = client.generate_many(reqs, progress=progress, desc=desc)
        numbered = [(r, attempt * n_c + j) for r in batch for j in range(n_c)]
        waiting: set[int] = set()
        candidates: list[tuple[int, str, float]] = []
        for i, ((r, number), g) in enumerate(zip(numbered, gens, strict=True)):
            if g.pending:
                counts["pending"] += 1
                waiting.add(r)
                continue
            counts["generations"] += 1
            if not g.ok:
                counts["failed"] += 1
                continue
            q = " ".join(g.value.query.split())
            fault.pop(r, None)
            if copies_example(q, examples=examples):
                counts["copied_example"] += 1
                note(r, attempt, q, "copied_example")
                continue
            if len(q.split()) < o.min_query_words:
                counts["too_short"] += 1
                note(r, attempt, q, "too_short")
                continue
            if refers_to_document(q, lang=o.lang):
                counts["refers_to_document"] += 1
                note(r, attempt, q, "refers_to_document")
                continue
            source = f"{corpus.titles[r]} {corpus.texts[r]}"
            if foreign_scripts(q, source):
                counts["foreign_script"] += 1
                note(r, attempt, q, "foreign_script")
                continue
            shown = examples | frozenset(draw_style(o.queries_like, seed=o.seed, row=r, number=number)
                                         if o.queries_like else ())
            borrowed = borrowed_words(q, source, shown, lang=o.lang)
            if len(borrowed) > MAX_BORROWED:
                counts["borrowed_example"] += 1
                note(r, attempt, q, "borrowed_example", borrowed=borrowed)
                continue
            if o.max_title_copy is not None and title_copy(q, corpus.titles[r]) >= o.max_title_copy:
                counts["copies_title"] += 1
                note(r, attempt, q, "copies_title")
                if o.retry_fix:
                    fault[r] = "copies_title"
                continue
            if o.max_copied_run is not None and copied_run(q, source) >= o.max_copied_run:
                counts["copies_passage"] += 1
                note(r, attempt, q, "copies_passage")
                if o.retry_fix:
                    fault[r] = "copies_passage"
                continue
            lk = leak(q, source, lang=o.lang)
            all_leaks.append(lk)
            counts["scored"] += 1
            if o.leak_mode == "cut" and lk > o.leak_threshold:
                counts["rejected"] += 1
                note(r, attempt, q, "leak", leak=round(lk, 6))
                continue
            candidates.append((r, q, lk))
        # answerability first (cheap), then specificity (an LLM pass) only for each document's best passing candidate
        answers: list[float | None] = [None] * len(candidates)
        ranks: list[int | None] = [None] * len(candidates)
        passes = [True] * len(candidates)
        if ans is not None and candidates:
            answers = list(answerability_scores([(q, score_text(corpus, r)) for r, q, _ in candidates],
                                                answerer, options=ans, cache=client.cache, stats=ans_stats))  # type: ignore[arg-type]
            all_ans.extend(answers)  # type: ignore[arg-type]
            if relative:
                got = answerability_ranks([q for _, q, _ in candidates], [r for r, _, _ in candidates],
                                          answers, answerer, doc_text=lambda r: score_text(corpus, r),  # type: ignore[arg-type]
                                          n_docs=len(corpus), options=ans, cache=client.cache)
                ranks = [x.rank for x in got]
                all_ranks.extend(x.rank for x in got)
                passes = [x.kept(ans.reference) for x in got]  # type: ignore[arg-type]
            else:
                passes = [a >= ans_thr for a in answers]  # type: ignore[operator]
        best: dict[int, int] = {}  # row -> index of its best candidate passing answerability

        def room(i: int, waived_after: int | None = waived_after,
                 candidates: list[tuple[int, str, float]] = candidates) -> bool:
            """Candidate ``i``'s leak bin still has room under the quota (always, without one)."""
            if quota is None or waived_after is not None:
                return True
            b_ = leak_bin(candidates[i][2])
            return in_bin[b_] < quota[b_]

        for i, (r, _, _) in enumerate(candidates):
            if not passes[i]:
                continue
            if r not in best:
                best[r] = i
            elif room(i) != room(best[r]):
                if room(i):
                    best[r] = i
            elif _better(ranks[i], answers[i], ranks[best[r]], answers[best[r]]):
                best[r] = i
        chosen = sorted(best.values())
        scores: list[float | None] = [None] * len(candidates)
        if spec is not None and chosen:
            got_spec = specificity_scores([(candidates[i][1], score_text(corpus, candidates[i][0])) for i in chosen],
                                          scorer, options=spec, cache=client.cache, progress=progress,  # type: ignore[arg-type]
                                          stats=spec_stats, others=random_others(corpus, spec))
            for i, x in zip(chosen, got_spec, strict=True):
                scores[i] = x.score
            all_spec.extend(x.score for x in got_spec)
        for i, ((r, q, lk), sc, an, rk) in enumerate(zip(candidates, scores, answers, ranks, strict=True)):
            extra: dict[str, Any] = {"leak": round(lk, 6)}
            if sc is not None:
                extra["specificity"] = round(sc, 6)
            if an is not None:
                extra["answerability"] = round(an, 6)
            if rk is not None:
                extra["answer_rank"] = rk
            if not passes[i]:
                counts["not_answerable"] += 1
                note(r, attempt, q, "not_answerable", **extra)
                continue
            if best[r] != i:
                counts["below_best_of_n"] += 1
                note(r, attempt, q, "below_best_of_n", **extra)
                continue
            if sc is not None and spec is not None and spec.threshold is not None and sc < spec.threshold:
                counts["low_specificity"] += 1
                note(r, attempt, q, "low_specificity", **extra)
                continue
            if quota is not None:
                b_ = leak_bin(lk)
                if in_bin[b_] >= quota[b_] and not last and waived_after is None:
                    below = any(in_bin[k] < quota[k] for k in range(b_))
                    if r in steered:
                        steer_tries[1] += 1
                    steer[r] = "lower" if below else "higher"
                    counts["leak_quota"] += 1
                    note(r, attempt, q, "leak_quota", **extra)
                    continue
                if r in steered and waived_after is None and not last:
                    steer_tries[0] += 1
                    steer_tries[1] += 1
                in_bin[b_] += 1
            note(r, attempt, q, "kept", **extra)
            accepted[r] = (q, lk, attempt, sc, an, rk)
        if (quota is not None and waived_after is None and steer_tries[1] >= STEER_MIN_TRIES
                and steer_tries[0] < STEER_MIN_SUCCESS * steer_tries[1]):
            waived_after = attempt  # the model does not follow the steer: later rounds keep what passes
        if pilot and attempt == 0 and o.bootstrap > 0:
            best_kept = sorted((r for r in batch if r in accepted and not looks_like_title(accepted[r][0], corpus.titles[r])),
                               key=lambda r: (accepted[r][5] or 0, -(accepted[r][4] or 0.0), r))[: o.bootstrap_pool]
            if best_kept:
                pool = tuple((doc_text(corpus, r, o.example_doc_chars, title=o.show_title), accepted[r][0])
                             for r in best_kept)
                control = replace(o.prompt, examples=pool[: o.bootstrap])
                policy = "bootstrapped"
                boot = [{"doc": corpus.ids[r], "query": accepted[r][0]} for r in best_kept]
        open_rows = [r for r in open_rows if r not in accepted and r not in waiting]
    if spec is not None and spec.keep_fraction is not None and accepted:
        order = sorted(accepted)
        mask = keep_mask([accepted[r][3] or 0.0 for r in order], replace(spec, threshold=None))
        for r, keep in zip(order, mask, strict=True):
            if not keep:
                counts["below_top_fraction"] += 1
                note(r, accepted[r][2], accepted[r][0], "below_top_fraction")
                del accepted[r]
    if ans is not None and ans.keep_fraction is not None and accepted:
        order = sorted(accepted)
        mask = answer_keep_mask([accepted[r][4] or 0.0 for r in order], threshold=None,
                                keep_fraction=ans.keep_fraction)
        for r, keep in zip(order, mask, strict=True):
            if not keep:
                counts["below_answerability_top"] += 1
                note(r, accepted[r][2], accepted[r][0], "below_answerability_top")
                del accepted[r]
    counts["dropped_docs"] = len(rows) - len(accepted)
    qids, texts, metas, judg = [], [], [], {}
    for pos, r in enumerate(int(x) for x in rows):
        if r not in accepted:
            continue
        q, lk, attempt, sc, an, rk = accepted[r]
        qid = f"describe-{pos:05d}"
        qids.append(qid)
        texts.append(q)
        meta: dict[str, Any] = {"source_doc": corpus.ids[r], "leak": round(lk, 6), "attempt": attempt}
        if sc is not None:
            meta["specificity"] = round(sc, 6)
        if an is not None:
            meta["answerability"] = round(an, 6)
        if rk is not None:
            meta["answer_rank"] = rk
        metas.append(meta)
        judg[qid] = {corpus.ids[r]: 1}
    kept = [accepted[r][1] for r in accepted]
    scored = counts["scored"]
    leak_thr = o.leak_threshold if o.leak_mode == "cut" else None
    kept_by_bin = leak_bin_counts(kept)
    prov: dict[str, Any] = {
        "mode": "describe",
        "llm": client.public(),
        "prompts": {"style": client.config.prompt_style,
                    "example": (describe_completion("<document text>", control) if completion
                                else list(describe_messages("<document text>", control))),
                    "instruction": o.prompt.describe_instruction(), "control": asdict(o.prompt),
                    "examples": policy, "bootstrapped": boot},
        "parameters": {**asdict(o), "schema": schema.model_json_schema()},
        "leak": {"kept": leak_stats(kept, threshold=leak_thr),
                 "all_generations": leak_stats(all_leaks, threshold=leak_thr),
                 "rejection_rate": (counts["rejected"] + counts["leak_quota"]) / scored if scored else 0.0,
                 "mode": o.leak_mode, "threshold": leak_thr, "lang": o.lang,
                 "bins": [0.0, *LEAK_BINS, 1.0], "kept_by_bin": kept_by_bin,
                 "target": list(o.leak_target), "target_source": o.leak_target_source, "quota": quota,
                 "steered": {"reached_room": steer_tries[0], "judged": steer_tries[1]} if quota is not None else None,
                 "quota_waived_after_round": waived_after},
        "counts": {"sampled": len(rows), "kept": len(qids), **dict(counts)},
        "documents": {"corpus": len(corpus), "eligible": len(eligible),
                      "too_short": len(corpus) - len(eligible), "min_doc_chars": o.min_doc_chars},
        "rejections": {"failed": counts["failed"], "copied_example": counts["copied_example"],
                       "too_short": counts["too_short"], "refers_to_document": counts["refers_to_document"],
                       "foreign_script": counts["foreign_script"], "borrowed_example": counts["borrowed_example"],
                       "copies_title": counts["copies_title"], "copies_passage": counts["copies_passage"],
                       "leak": counts["rejected"], "leak_quota": counts["leak_quota"],
                       "low_specificity": counts["low_specificity"], "not_answerable": counts["not_answerable"],
                       "below_top_fraction": counts["below_top_fraction"],
                       "below_answerability_top": counts["below_answerability_top"],
                       "below_best_of_n": counts["below_best_of_n"]},
        "generations": audit,
        "masked": {"share": mask_share(o), "terms": o.mask_terms, "documents": sorted(corpus.ids[r] for r in masked_rows),
                   "rule": ("row r is shown masked iff default_rng([seed, r, 17]).random() < share; each distinct rare "
                            "word of its text is masked iff default_rng([seed, r, 5]) draws < terms, in sorted order")},
        "usage": client.usage.as_dict(),
    }
    prov["health"] = truth_health(sampled=len(rows), kept=len(qids), rejections=prov["rejections"], queries=texts,
                                  titles=[corpus.titles[corpus.position[m["source_doc"]]] for m in metas],
                                  style=o.prompt.style)
    if spec is not None:
        kept_spec = [s for r in accepted if (s := accepted[r][3]) is not None]
        prov["specificity"] = {"scorer": scorer.identity(), "options": asdict(spec),  # type: ignore[union-attr]
                               "all_candidates": score_stats(all_spec, threshold=spec.threshold),
                               "kept": score_stats(kept_spec, threshold=spec.threshold),
                               "evaluations": dict(spec_stats)}
    if ans is not None:
        prov["answerability"] = answer_provenance(answerer, ans, ans_thr, all_ans,  # type: ignore[arg-type]
                                                   [accepted[r][4] for r in accepted], ans_stats)
        if relative:
            ref = ans.reference
            hist = Counter(min(rk, 11) for rk in all_ranks)
            prov["answerability"]["reference"] = {
                **asdict(ref), "max_rank": ref.max_rank,  # type: ignore[union-attr, arg-type]
                "rule": "kept iff 1 + #{reference docs scoring >= own - 1e-6} <= max(1, floor(alpha * (R + 1)))",
                "rank_histogram": {("11+" if k == 11 else str(k)): hist[k] for k in sorted(hist)},
                "share_kept": (sum(rk <= ref.max_rank for rk in all_ranks) / len(all_ranks)) if all_ranks else 0.0}  # type: ignore[union-attr]
    if o.stratify_by:
        prov["sampled_mix"] = sampled_mix(corpus, rows, o.stratify_by)
        prov["kept_mix"] = sampled_mix(corpus, [r for r in rows if int(r) in accepted], o.stratify_by)
    return SyntheticTruth(Queries(tuple(qids), tuple(texts), tuple(metas)), Qrels(judg), prov,
                          test_fraction=o.test_fraction, split_seed=o.seed)


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
