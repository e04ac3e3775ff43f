"""LLM-written ground truth for a corpus: describe mode and cluster mode.

**Describe mode** (one known answer per query): sample ``n`` documents
(seeded, optionally stratified by a metadata field), ask the model for the
query a layman would type to find each one, and keep it only when
``leak(query, document) <= leak_threshold`` (see :mod:`bakeoff.truth.leak`).
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

**Cluster mode** (several graded answers per query): embed the corpus, KMeans
(seeded) into ``round(N / cluster_size)`` clusters, draw clusters at random
(seeded), and ask for questions judging every member (relevant, rank, reason).
Answers are repaired (:mod:`bakeoff.truth.repair`); relevant members become
graded qrels, irrelevant members recorded hard negatives.

Output: :class:`SyntheticTruth`, written by :meth:`SyntheticTruth.write` as a
BEIR folder (``corpus.jsonl`` copy, ``queries.jsonl``, ``qrels/train.tsv``,
``qrels/test.tsv`` — deterministic split by query id, see
:func:`~bakeoff.truth.sampling.split_of`) plus ``provenance.json``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write_json, staged_as
from ..data.leak_bins import DEFAULT_LEAK_TARGET, LEAK_BINS, leak_bin, leak_bin_counts
from ..data.model import Corpus, Qrels, Queries
from ..data.writers import write_beir
from .answerability import AnswerabilityOptions, AnswerabilityScorer, answerability_ranks, answerability_scores
from .answerability import keep_mask as answer_keep_mask
from .answerability import score_stats as answer_stats
from .drift import MAX_BORROWED, borrowed_words, foreign_scripts
from .health import looks_like_title, truth_health
from .leak import copied_run, leak, leak_histogram, leak_stats, mask_rare_terms, title_copy
from .llm import ChatRequest, LLMClient
from .prompts import (
    CLUSTER_INSTRUCTION,
    CLUSTER_SHOT_QUESTIONS,
    RETRY_FIX,
    STEER,
    PromptControl,
    cluster_completion,
    cluster_messages,
    cluster_question_schema,
    cluster_schema,
    describe_completion,
    describe_messages,
    describe_schema,
    shot_queries,
)
from .queries_like import draw_style
from .repair import REPAIR_KINDS, GradeMap, repair_question
from .sampling import eligible_rows, sample_rows, sampled_mix, split_of
from .self_reference import refers_to_document
from .specificity import QueryLikelihood, SpecificityOptions, keep_mask, score_stats, specificity_scores

__all__ = [
    "LEAK_BINS",
    "LEAK_MODES",
    "ClusterOptions",
    "DescribeOptions",
    "SyntheticTruth",
    "cluster_corpus",
    "cluster_truth",
    "describe_truth",
    "leak_bin",
    "leak_quota",
    "leak_target_shares",
]

log = logging.getLogger("bakeoff")


def _doc_text(corpus: Corpus, row: int, max_chars: int, *, title: bool = True) -> str:
    """The document as the generator sees it: title (unless ``title`` is false) and text, whitespace collapsed,
    cut at a word boundary before ``max_chars`` characters with " ..." appended."""
    head, text = corpus.titles[row], corpus.texts[row]
    full = f"{head}\n{text}" if head and title else text
    full = " ".join(full.split())
    return full if len(full) <= max_chars else full[:max_chars].rsplit(" ", 1)[0] + " ..."


#: ``--leak-mode``: ``target`` matches the kept queries' leak to a target distribution; ``cut`` rejects
#: (and regenerates) queries above ``leak_threshold``; ``record`` only measures.
LEAK_MODES: tuple[str, ...] = ("target", "cut", "record")
#: The leak quota is waived after a round once at least ``STEER_MIN_TRIES`` steered regenerations were
#: judged and fewer than ``STEER_MIN_SUCCESS`` of them reached a bin with room: a model that does not follow
#: the steer would spend every later round on regenerations that land in the same full bins.
STEER_MIN_TRIES = 20
STEER_MIN_SUCCESS = 0.1


def leak_quota(n: int, target: tuple[float, ...], slack: float) -> list[int]:
    """Kept queries allowed per leak bin: ``ceil(slack * share * n)`` (shares normalised to sum 1)."""
    total = sum(target)
    return [math.ceil(slack * (t / total) * n - 1e-9) for t in target]


def leak_target_shares(spec: str, *, lang: str = "en") -> tuple[float, ...]:
    """The leak target of ``--leak-target``: ``default`` (:data:`~bakeoff.data.leak_bins.DEFAULT_LEAK_TARGET`, the
    mean of judged collections' human queries); ``uniform``; five comma-separated shares (one per bin of
    :data:`LEAK_BINS`); or a judged dataset (a BEIR folder or anything ``--dataset`` takes) whose
    real (query, relevant document) pairs give the shares (:func:`judged_leak_shares`)."""
    from ..errors import ConfigError

    spec = spec.strip()
    if spec == "default":
        return DEFAULT_LEAK_TARGET
    if spec == "uniform":
        return (0.2,) * (len(LEAK_BINS) + 1)
    parts = spec.split(",")
    if len(parts) == len(LEAK_BINS) + 1:
        try:
            return tuple(float(x) for x in parts)
        except ValueError:
            raise ConfigError(f"--leak-target: {spec!r} is not {len(LEAK_BINS) + 1} numbers") from None
    if not Path(spec).exists():
        raise ConfigError(f"--leak-target must be default, uniform, {len(LEAK_BINS) + 1} comma-separated shares or a judged "
                          f"dataset folder, got {spec!r}")
    from ..data.datasets import DatasetSpec, open_dataset

    ds, _ = open_dataset(DatasetSpec(beir=spec), plain=True)
    shares = judged_leak_shares(ds.queries, ds.qrels, ds.corpus, lang=lang)
    if shares is None:
        raise ConfigError(f"--leak-target {spec}: no judged query with a relevant document in its corpus")
    return shares


@dataclass(frozen=True)
class DescribeOptions:
    """Describe-mode parameters (all recorded in provenance).

    **Leak** (:mod:`bakeoff.truth.leak`, the share of a query's words copied from its document):
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
    #: (:func:`bakeoff.truth.leak.title_copy`; naming the title is not an answer); ``None``: off.
    max_title_copy: float | None = 0.8
    #: Reject a query holding a run of at least this many consecutive words of its document (title and
    #: text; :func:`bakeoff.truth.leak.copied_run`: a pasted sentence, not a query); ``None``: off.
    max_copied_run: int | None = 10
    #: A document whose last query was rejected as ``copies_passage`` or ``copies_title`` is asked again with
    #: that reason said in its next request (:data:`~bakeoff.truth.prompts.RETRY_FIX`); ``False``: asked the same way.
    retry_fix: bool = True
    #: Show the generator each document's title. ``False``: the text only, so that a query cannot restate the
    #: title or name it (a docstring's qualified name, a paper's claim); the filters and scorers still read both.
    show_title: bool = True
    #: Real queries of the collection (``--queries-like``): each request shows
    #: :data:`~bakeoff.truth.queries_like.STYLE_SHOTS` of them as style (:mod:`bakeoff.truth.queries_like`);
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
        from ..errors import ConfigError

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


@dataclass(frozen=True)
class ClusterOptions:
    """Cluster-mode parameters (all recorded in provenance)."""

    n: int = 200
    seed: int = 0
    cluster_size: int = 10
    max_cluster_docs: int = 12
    questions_per_cluster: int = 2
    max_doc_chars: int = 300
    grade_map: GradeMap = field(default_factory=GradeMap)
    temperature: float = 0.7
    max_tokens: int = 1024
    test_fraction: float = 0.5
    schema_max_docs: int = 16
    specificity: SpecificityOptions | None = field(default_factory=SpecificityOptions)
    #: How queries are scored for answerability when an answerability scorer is given (``None``: no filter).
    answerability: AnswerabilityOptions | None = field(default_factory=AnswerabilityOptions)
    prompt: PromptControl = field(default_factory=PromptControl)


@dataclass
class SyntheticTruth:
    """Generated queries + qrels, their split, and everything needed to audit them."""

    queries: Queries
    qrels: Qrels
    provenance: dict[str, Any]
    test_fraction: float = 0.5
    split_seed: int = 0

    def splits(self) -> dict[str, Qrels]:
        parts: dict[str, dict[str, dict[str, int]]] = {"train": {}, "test": {}}
        for qid in self.queries.ids:
            if qid in self.qrels:
                parts[split_of(qid, test_fraction=self.test_fraction, seed=self.split_seed)][qid] = dict(self.qrels[qid])
        return {name: Qrels(j) for name, j in parts.items()}

    def write(self, out: str | os.PathLike[str], *, corpus: Corpus) -> Path:
        """Write the BEIR folder. Files are staged in a temporary sibling folder and moved in only
        when all are complete, so a crash leaves no half-written dataset."""
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        splits = self.splits()
        stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        with staged_as(stage, out):  # an error names the file as it will be called in out
            try:
                write_beir(stage, corpus=corpus, queries=self.queries, qrels=splits)
                prov = dict(self.provenance)
                prov["split"] = {"test_fraction": self.test_fraction, "seed": self.split_seed,
                                 "n_train": len(splits["train"]), "n_test": len(splits["test"]),
                                 "rule": "test iff sha256(f'{seed}\\0{qid}')[:16] / 2**64 < test_fraction"}
                prov["corpus"] = {**prov.get("corpus", {}), "fingerprint": corpus.fingerprint(), "n_docs": len(corpus),
                                  "copied": "corpus.jsonl"}
                atomic_write_json(stage / "provenance.json", prov)
                out.mkdir(parents=True, exist_ok=True)
                (out / "qrels").mkdir(exist_ok=True)
                for rel in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv", "provenance.json"):
                    os.replace(stage / rel, out / rel)
            finally:
                shutil.rmtree(stage, ignore_errors=True)
        return out


# -- describe mode ----------------------------------------------------------------

def _copies_example(query: str, *, examples: frozenset[str] = frozenset(),
                    max_jaccard: float = 0.6) -> bool:
    """True when ``query``'s word set has Jaccard >= ``max_jaccard`` with a few-shot example answer
    (small base models often echo their examples)."""
    words = set(query.lower().split())
    for shot in examples:
        other = set(shot.lower().split())
        if words and len(words & other) / len(words | other) >= max_jaccard:
            return True
    return False


def describe_request(corpus: Corpus, row: int, client: LLMClient, options: DescribeOptions, *,
                     attempt: int, control: PromptControl | None = None, masked: bool = False) -> ChatRequest:
    """The request number ``attempt`` for document ``row`` (seed ``seed * 100003 + attempt``; request ``j``
    of regeneration round ``a`` is number ``a * options.candidates + j``); ``control`` overrides
    ``options.prompt`` (bootstrapped examples); ``masked`` shows the document with ``options.mask_terms`` of its
    rare words masked (:func:`bakeoff.truth.leak.mask_rare_terms`, drawn with ``default_rng([seed, row, 5])``)."""
    o = options
    ctl = control or o.prompt
    params: dict[str, Any] = {"temperature": o.temperature, "max_tokens": o.max_tokens,
                              "seed": o.seed * 100_003 + attempt}
    text = _doc_text(corpus, row, o.max_doc_chars, title=o.show_title)
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


def _score_text(corpus: Corpus, row: int) -> str:
    """The document as the specificity scorer reads it: title and text."""
    title, text = corpus.titles[row], corpus.texts[row]
    return f"{title}\n{text}" if title else text


def describe_truth(corpus: Corpus, client: LLMClient, *, options: DescribeOptions = DescribeOptions(),
                   progress: bool = True, scorer: QueryLikelihood | None = None,
                   answerer: AnswerabilityScorer | None = None) -> SyntheticTruth:
    """Describe-mode ground truth (see the module docstring and :class:`DescribeOptions`).

    Filters, in order, each counted under its reason: ``failed`` (no valid answer),
    ``copied_example`` (echoes an example of the prompt), ``too_short`` (< ``min_query_words``),
    ``refers_to_document`` ("this study", :mod:`bakeoff.truth.self_reference`),
    ``foreign_script`` and ``borrowed_example`` (the query drifted into another writing system or into
    an example's content, :mod:`bakeoff.truth.drift`),
    ``copies_title`` (``title_copy >= max_title_copy``), ``copies_passage`` (``copied_run >= max_copied_run``),
    ``rejected`` (``leak_mode="cut"``: leak > ``leak_threshold``), ``not_answerable`` (with an
    ``answerer`` and ``options.answerability``: the source document ranks below the reference rule,
    or scores below the absolute threshold, see :mod:`bakeoff.truth.answerability`),
    ``low_specificity`` (with a ``scorer`` and ``options.specificity``, see
    :mod:`bakeoff.truth.specificity`; scored only for each document's best candidate),
    ``leak_quota`` (``leak_mode="target"``: the query's leak bin is full; not in the last round; the
    document's next request asks for fewer of its words when a lower bin has room, else for more,
    :data:`~bakeoff.truth.prompts.STEER`; waived early when steering fails, :data:`STEER_MIN_TRIES`).
    Each rejection sends the document to the next regeneration round; after ``copies_passage`` or
    ``copies_title`` that request says why (``retry_fix``, :data:`~bakeoff.truth.prompts.RETRY_FIX`). The ``keep_fraction`` options
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
            if _copies_example(q, examples=examples):
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
            answers = list(answerability_scores([(q, _score_text(corpus, r)) for r, q, _ in candidates],
                                                answerer, options=ans, cache=client.cache, stats=ans_stats))  # type: ignore[arg-type]
            all_ans.extend(answers)  # type: ignore[arg-type]
            if relative:
                got = answerability_ranks([q for _, q, _ in candidates], [r for r, _, _ in candidates],
                                          answers, answerer, doc_text=lambda r: _score_text(corpus, r),  # type: ignore[arg-type]
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
            got_spec = specificity_scores([(candidates[i][1], _score_text(corpus, candidates[i][0])) for i in chosen],
                                          scorer, options=spec, cache=client.cache, progress=progress,  # type: ignore[arg-type]
                                          stats=spec_stats, others=_random_others(corpus, spec))
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
                pool = tuple((_doc_text(corpus, r, o.example_doc_chars, title=o.show_title), accepted[r][0])
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
        prov["answerability"] = _answer_provenance(answerer, ans, ans_thr, all_ans,  # type: ignore[arg-type]
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


def _answer_provenance(answerer: AnswerabilityScorer, options: AnswerabilityOptions, threshold: float | None,
                       candidates: list[float], kept: list[float | None], stats: dict[str, int]) -> dict[str, Any]:
    """Provenance entry of the answerability filter: scorer identity, options, threshold in force,
    score distributions of the candidates and of the kept queries, cache counts."""
    return {"scorer": answerer.identity(), "options": asdict(options), "threshold": threshold,
            "score": ("cosine of query and document vectors" if answerer.kind == "bi-encoder"
                      else "cross-encoder relevance logit"),
            "all_candidates": answer_stats(candidates, threshold=threshold),
            "kept": answer_stats([x for x in kept if x is not None], threshold=threshold),
            "evaluations": dict(stats)}


def _random_others(corpus: Corpus, spec: SpecificityOptions) -> list[str]:
    """Candidate documents of the ``random`` baseline (empty for ``none``): up to 200 rows drawn with
    ``spec.seed`` — the same in every round, so the reference documents are read once per round."""
    if spec.baseline != "random" or len(corpus) < 2:
        return []
    rows = np.random.default_rng(spec.seed).choice(len(corpus), size=min(200, len(corpus)), replace=False)
    return [_score_text(corpus, int(r)) for r in rows]


# -- cluster mode ------------------------------------------------------------------

def cluster_corpus(vectors: np.ndarray, *, cluster_size: int, seed: int) -> np.ndarray:
    """KMeans labels (scikit-learn, ``random_state=seed``, ``n_init=1``) with
    ``max(1, round(N / cluster_size))`` clusters over L2-normalised ``vectors``."""
    from sklearn.cluster import KMeans

    raw = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    x = raw / np.where(norms == 0, 1, norms)
    k = max(1, min(len(x), round(len(x) / cluster_size)))
    return KMeans(n_clusters=k, random_state=seed, n_init=1).fit_predict(x).astype(np.int64)


def _members(labels: np.ndarray, vectors: np.ndarray, c: int, limit: int) -> list[int]:
    """Rows of cluster ``c``; when more than ``limit``, the ``limit`` nearest to the centroid
    (ties by row index)."""
    rows = np.flatnonzero(labels == c)
    if len(rows) <= limit:
        return [int(r) for r in rows]
    x = np.asarray(vectors[rows], dtype=np.float64)
    d = ((x - x.mean(axis=0)) ** 2).sum(axis=1)
    order = np.lexsort((rows, d))[:limit]
    return sorted(int(rows[i]) for i in order)


def cluster_truth(corpus: Corpus, client: LLMClient, *, vectors: np.ndarray | None = None,
                  embed: Callable[[Corpus], np.ndarray] | None = None,
                  options: ClusterOptions = ClusterOptions(), progress: bool = True,
                  encoder_name: str = "", scorer: QueryLikelihood | None = None,
                  answerer: AnswerabilityScorer | None = None) -> SyntheticTruth:
    """Cluster-mode ground truth. Give the document ``vectors`` (row-aligned with ``corpus``) or an
    ``embed(corpus) -> vectors`` function. With ``scorer`` / ``answerer``, each surviving question is
    scored against its top-ranked relevant document and dropped below the threshold
    (``low_specificity`` / ``not_answerable``; no regeneration)."""
    o = options
    if vectors is None:
        if embed is None:
            raise ValueError("cluster mode needs vectors or an embed function")
        vectors = embed(corpus)
    vectors = np.asarray(vectors)
    if vectors.shape[0] != len(corpus):
        raise ValueError(f"{vectors.shape[0]} vectors for {len(corpus)} documents")
    labels = cluster_corpus(vectors, cluster_size=o.cluster_size, seed=o.seed)
    rng = np.random.default_rng(o.seed)
    clusters = [c for c in rng.permutation(int(labels.max()) + 1) if (labels == c).sum() >= 2]
    need = math.ceil(o.n / max(1, o.questions_per_cluster))
    chosen = [int(c) for c in clusters[:need]]
    completion = client.config.prompt_style == "completion"
    schema = (cluster_question_schema(max_docs=o.schema_max_docs) if completion
              else cluster_schema(max_questions=o.questions_per_cluster, max_docs=o.schema_max_docs))
    params = {"temperature": o.temperature, "max_tokens": o.max_tokens, "seed": o.seed}
    members: dict[int, list[int]] = {}
    reqs: list[ChatRequest] = []
    req_cluster: list[int] = []
    for c in chosen:
        rows = _members(labels, vectors, c, o.max_cluster_docs)
        members[c] = rows
        docs = [(f"D{i + 1}", _doc_text(corpus, r, o.max_doc_chars)) for i, r in enumerate(rows)]
        if completion:  # base models: one question per request, a different seed each
            prompt, prefill = cluster_completion(docs, o.prompt)
            for qi in range(o.questions_per_cluster):
                reqs.append(ChatRequest.completion(prompt, schema, {**params, "seed": o.seed * 100_003 + qi,
                                                                    "max_tokens": min(o.max_tokens, 160),
                                                                    "stop": ["\n"]}, prefill=prefill))
                req_cluster.append(c)
        else:
            reqs.append(ChatRequest(cluster_messages(docs, n_questions=o.questions_per_cluster, control=o.prompt),
                                    schema, params))
            req_cluster.append(c)
    gens = client.generate_many(reqs, progress=progress, desc="clusters")
    repairs: Counter[str] = Counter({k: 0 for k in (*REPAIR_KINDS, "copied_example")})
    counts: Counter[str] = Counter()
    # (cluster, question index, repaired question) of every question that survives the repairs
    survivors: list[tuple[int, int, Any]] = []
    seen_clusters: set[int] = set()
    per_cluster_q: Counter[int] = Counter()
    for c, g in zip(req_cluster, gens, strict=True):
        if g.pending:
            counts["pending"] += 1
            continue
        if c not in seen_clusters:
            seen_clusters.add(c)
            counts["clusters"] += 1
        if not g.ok:
            counts["failed_clusters" if not completion else "failed_questions"] += 1
            continue
        label_list = [f"D{i + 1}" for i in range(len(members[c]))]
        if completion:
            answers = [str(a).strip() for a in g.value.answers]
            listed = [a for a in answers if a in label_list]
            judgments = [{"id": a, "relevant": True, "rank": i + 1, "reason": ""} for i, a in enumerate(answers)]
            judgments += [{"id": x, "relevant": False, "rank": len(answers) + 1 + i, "reason": ""}
                          for i, x in enumerate(x for x in label_list if x not in listed)]
            questions = [(g.value.question, judgments)]
        else:
            questions = [(q.question, q.judgments) for q in g.value.questions]
        for question, judgments in questions:
            qi = per_cluster_q[c]
            per_cluster_q[c] += 1
            counts["questions_generated"] += 1
            if _copies_example(question, examples=CLUSTER_SHOT_QUESTIONS):
                repairs["copied_example"] += 1
                counts["questions_dropped"] += 1
                continue
            fixed, rc = repair_question(question, judgments, label_list)
            repairs.update(rc)
            if fixed is None:
                counts["questions_dropped"] += 1
                continue
            survivors.append((c, qi, fixed))
    spec = o.specificity if scorer is not None else None
    spec_scores: list[float | None] = [None] * len(survivors)
    spec_stats: dict[str, int] = {}
    pairs = []
    for c, _, fixed in survivors:
        top = members[c][int(fixed.order[0][1:]) - 1]
        pairs.append((" ".join(fixed.question.split()), _score_text(corpus, top)))
    ans = o.answerability if answerer is not None else None
    ans_thr = ans.resolved_threshold(answerer) if ans is not None else None  # type: ignore[arg-type]
    ans_stats: dict[str, int] = {}
    ans_scores: list[float | None] = [None] * len(survivors)
    if ans is not None and survivors:
        ans_scores = list(answerability_scores(pairs, answerer, options=ans, cache=client.cache,  # type: ignore[arg-type]
                                               stats=ans_stats))
    if spec is not None and survivors:
        got = specificity_scores(pairs, scorer, options=spec, cache=client.cache, progress=progress,  # type: ignore[arg-type]
                                 stats=spec_stats, others=_random_others(corpus, spec))
        spec_scores = [x.score for x in got]
    qids: list[str] = []
    texts, metas, judg, negatives = [], [], {}, {}
    if ans is not None and ans.keep_fraction is not None:
        passing = [i for i, a in enumerate(ans_scores) if a is not None and a >= ans_thr]  # type: ignore[operator]
        top_mask = answer_keep_mask([ans_scores[i] for i in passing], threshold=None,  # type: ignore[misc]
                                    keep_fraction=ans.keep_fraction)
        below_top = {i for i, k in zip(passing, top_mask, strict=True) if not k}
    else:
        below_top = set()
    for pos, ((c, qi, fixed), sc, an) in enumerate(zip(survivors, spec_scores, ans_scores, strict=True)):
        if sc is not None and spec is not None and spec.threshold is not None and sc < spec.threshold:
            counts["low_specificity"] += 1
            counts["questions_dropped"] += 1
            continue
        if an is not None and ans_thr is not None and an < ans_thr:
            counts["not_answerable"] += 1
            counts["questions_dropped"] += 1
            continue
        if pos in below_top:
            counts["below_answerability_top"] += 1
            counts["questions_dropped"] += 1
            continue
        if len(qids) >= o.n:
            counts["questions_over_n"] += 1
            continue
        label_to_doc = {f"D{i + 1}": corpus.ids[r] for i, r in enumerate(members[c])}
        qid = f"cluster-{c:05d}-{qi}"
        if qid in judg:
            continue
        grades = fixed.grades(o.grade_map)
        qids.append(qid)
        texts.append(" ".join(fixed.question.split()))
        meta: dict[str, Any] = {"cluster": c, "ranking": [label_to_doc[x] for x in fixed.order],
                                "reasons": {label_to_doc[k]: v for k, v in fixed.reasons.items()}}
        if sc is not None:
            meta["specificity"] = round(sc, 6)
        if an is not None:
            meta["answerability"] = round(an, 6)
        metas.append(meta)
        judg[qid] = {label_to_doc[x]: gr for x, gr in grades.items()}
        negatives[qid] = [label_to_doc[x] for x in fixed.negatives()]
    sizes = np.bincount(labels)
    prov: dict[str, Any] = {
        "mode": "clusters",
        "llm": client.public(),
        "encoder": encoder_name,
        "prompts": {"instruction": CLUSTER_INSTRUCTION, "style": client.config.prompt_style,
                    "control": asdict(o.prompt),
                    "example": (cluster_completion([("D1", "<document text>")], o.prompt) if completion else
                                list(cluster_messages([("D1", "<document text>")], n_questions=o.questions_per_cluster,
                                                      control=o.prompt)))},
        "parameters": {**asdict(o), "schema": schema.model_json_schema()},
        "clustering": {"n_clusters": len(sizes), "mean_size": float(sizes.mean()),
                       "min_size": int(sizes.min()), "max_size": int(sizes.max()), "used": len(chosen)},
        "repairs": dict(repairs),
        "counts": {"kept": len(qids), **dict(counts)},
        "hard_negatives": negatives,
        "n_hard_negatives": sum(len(v) for v in negatives.values()),
        "usage": client.usage.as_dict(),
    }
    if spec is not None:
        prov["specificity"] = {"scorer": scorer.identity(), "options": asdict(spec),  # type: ignore[union-attr]
                               "all_candidates": score_stats([x for x in spec_scores if x is not None],
                                                             threshold=spec.threshold),
                               "kept": score_stats([m["specificity"] for m in metas if "specificity" in m],
                                                   threshold=spec.threshold),
                               "evaluations": dict(spec_stats)}
    if ans is not None:
        prov["answerability"] = _answer_provenance(answerer, ans, ans_thr,  # type: ignore[arg-type]
                                                   [a for a in ans_scores if a is not None],
                                                   [m.get("answerability") for m in metas], ans_stats)
    return SyntheticTruth(Queries(tuple(qids), tuple(texts), tuple(metas)), Qrels(judg), prov,
                          test_fraction=o.test_fraction, split_seed=o.seed)


def leak_report(queries: Queries, qrels: Qrels, corpus: Corpus, *, lang: str = "en") -> list[float]:
    """Leak of each judged query against the concatenation of its relevant documents'
    (title + text); queries without a relevant document in the corpus are skipped."""
    out = []
    for qid, text in zip(queries.ids, queries.texts, strict=True):
        docs = [d for d in qrels.relevant(qid) if d in corpus]
        if not docs:
            continue
        source = " ".join(f"{corpus.titles[corpus.position[d]]} {corpus.texts[corpus.position[d]]}" for d in docs)
        out.append(leak(text, source, lang=lang))
    return out


def judged_leak_shares(queries: Queries, qrels: Qrels, corpus: Corpus, *, lang: str = "en") -> tuple[float, ...] | None:
    """The leak-bin shares of people's (query, relevant document) pairs, each query weighted 1 (a query with ``m``
    relevant documents in the corpus gives each pair ``1/m``): the leak a synthetic query has against its one
    source document, read on human pairs. ``None`` without any such pair."""
    shares = [0.0] * (len(LEAK_BINS) + 1)
    n = 0
    for qid, text in zip(queries.ids, queries.texts, strict=True):
        docs = [d for d in qrels.relevant(qid) if d in corpus]
        if not docs:
            continue
        n += 1
        for d in docs:
            row = corpus.position[d]
            shares[leak_bin(leak(text, f"{corpus.titles[row]} {corpus.texts[row]}", lang=lang))] += 1 / len(docs)
    return tuple(x / n for x in shares) if n else None


def histogram_table(columns: dict[str, list[float]]) -> str:
    """Side-by-side leak histograms (counts and shares) of several query sets, as text."""
    hists = {name: leak_histogram(vals) for name, vals in columns.items()}
    bins = list(next(iter(hists.values())))
    width = max(14, *(len(n) for n in columns))
    lines = ["leak bin".ljust(11) + "".join(n.rjust(width + 2) for n in columns)]
    for b in bins:
        cells = []
        for name, vals in columns.items():
            c = hists[name][b]
            cells.append(f"{c} ({c / max(1, len(vals)):.0%})".rjust(width + 2))
        lines.append(b.ljust(11) + "".join(cells))
    for label, fn in (("n", len), ("mean", lambda v: float(np.mean(v)) if v else 0.0),
                      ("median", lambda v: float(np.median(v)) if v else 0.0),
                      ("> 0.35", lambda v: float(np.mean(np.asarray(v) > 0.35)) if v else 0.0)):
        cells = []
        for vals in columns.values():
            x = fn(vals)
            cells.append((f"{x}" if label == "n" else f"{x:.3f}").rjust(width + 2))
        lines.append(label.ljust(11) + "".join(cells))
    return "\n".join(lines)


def provenance_json(truth: SyntheticTruth) -> str:
    return json.dumps(truth.provenance, indent=2, sort_keys=True, default=str)


def cluster_leak_filter(truth: SyntheticTruth, corpus: Corpus, *, threshold: float | None = 0.35,
                        lang: str = "en") -> SyntheticTruth:
    """Cluster mode's leak filter and statistics (describe mode has them built in).

    Each question's leak is measured against the concatenated (title + text) of its relevant
    documents (:func:`leak_report`'s rule) and recorded in its metadata (``leak``); with a
    ``threshold``, questions above it are dropped with their judgments and hard negatives
    (no regeneration: a cluster answer is one request for several questions). Provenance gets
    ``leak`` = ``{"kept", "all_generations", "rejection_rate", "threshold", "lang"}`` as in
    describe mode, and ``counts["rejected_leak"]``.
    """
    ids, texts, metas, judg, values = [], [], [], {}, []
    kept_vals: list[float] = []
    negatives = dict(truth.provenance.get("hard_negatives") or {})
    rejected = 0
    for qid, text, meta in zip(truth.queries.ids, truth.queries.texts, truth.queries.metadata, strict=True):
        docs = [d for d in truth.qrels.relevant(qid) if d in corpus] if qid in truth.qrels else []
        source = " ".join(f"{corpus.titles[corpus.position[d]]} {corpus.texts[corpus.position[d]]}" for d in docs)
        lk = leak(text, source, lang=lang)
        values.append(lk)
        if threshold is not None and lk > threshold:
            rejected += 1
            negatives.pop(qid, None)
            continue
        kept_vals.append(lk)
        ids.append(qid)
        texts.append(text)
        metas.append({**dict(meta), "leak": round(lk, 6)})
        if qid in truth.qrels:
            judg[qid] = dict(truth.qrels[qid])
    prov = dict(truth.provenance)
    prov["leak"] = {"kept": leak_stats(kept_vals, threshold=threshold),
                    "all_generations": leak_stats(values, threshold=threshold),
                    "rejection_rate": rejected / len(values) if values else 0.0, "threshold": threshold, "lang": lang}
    prov["counts"] = {**dict(prov.get("counts") or {}), "kept": len(ids), "rejected_leak": rejected}
    if "hard_negatives" in prov:
        prov["hard_negatives"] = negatives
        prov["n_hard_negatives"] = sum(len(v) for v in negatives.values())
    return SyntheticTruth(Queries(tuple(ids), tuple(texts), tuple(metas)), Qrels(judg), prov,
                          test_fraction=truth.test_fraction, split_seed=truth.split_seed)
