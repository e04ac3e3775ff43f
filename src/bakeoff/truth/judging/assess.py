"""An LLM assessor for the *holes* of a judgment set (``bakeoff assess``).

A hole is an unjudged document in the pooled top ``depth`` of the arms
(:func:`bakeoff.data.pool.holes`). Each one is graded 0-3 by an LLM with an
UMBRELA-style prompt (Upadhyay et al. 2024, "UMBRELA: UMbrela is the (open-source
reproduction of the) Bing RELevance Assessor", after Thomas et al. 2023): the TREC-style
rubric

    0 = the passage has nothing to do with the query
    1 = related to the query but does not answer it
    2 = has some answer, but unclear or hidden among extraneous information
    3 = dedicated to the query and contains the exact answer

and the steps "consider the underlying intent of the search; measure how well the content
matches a likely intent (M); measure how trustworthy the passage is (T); decide on a final
score (O)". The answer is structured: ``{"intent_match": M, "trustworthiness": T,
"final_score": O}``, each an integer in 0..3 (a pydantic schema). Instruction models get a
chat prompt; base models (the bundled Gemma 3 270M) a few-shot completion in the same
rubric. An answer that does not validate (a grade outside 0..3, broken JSON) is re-asked
with another sampling seed (``schema_retries``, :class:`bakeoff.truth.llm.client.LLMClient`) and,
if it never validates, counted as ``failed`` and left unjudged. Answers are cached and their
tokens priced by the same client as ``bakeoff generate``.

**Never mixed silently.** The grades go to their own TREC qrels file
(``assessed.qrels``), beside ``assessment.json`` holding the provenance (model and client
configuration without any key, the prompt text and its sha256, the parameters, the date,
the counts, the usage and the cost) and the metrics of every arm with the original labels
and with original + assessed labels side by side. For the merged evaluation an assessed
grade ``g`` counts as ``min(g, top)`` when ``g >= relevant_from`` (default 2: "has an
answer") and 0 otherwise, with ``top`` the highest original grade (1 for binary sets such
as SciFact), so that an assessed "3" never outweighs an original "1". Original judgments
always win (only unjudged pairs are assessed).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._io import atomic_write_json
from ...cache import Cache
from ...data.model import Corpus, Qrels, Run
from ...data.pool import Hole, holes
from ...errors import ConfigError, InputError
from ...metrics import score_run
from ..llm.client import ChatRequest, Generation, LLMClient
from ..llm.spec import LLMSpec

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

    from ...runner.results import StoredResults
    from ..filters.specificity import QueryLikelihood

__all__ = [
    "ASSESS_INSTRUCTION",
    "COMPLETION_GRAMMAR",
    "METHODS",
    "POOLED_GRADE",
    "SOURCE_GRADE",
    "AssessOptions",
    "AssessOutcome",
    "Judgment",
    "PoolJudgment",
    "assess_completion",
    "assess_messages",
    "assess_request",
    "assess_results",
    "assess_schema",
    "grade_pairs",
    "judge_completion",
    "judge_holes",
    "judge_likelihood",
    "judge_messages",
    "judge_pairs",
    "merged_qrels",
    "pooled_qrels",
    "prompt_hash",
    "read_judgment",
]

log = logging.getLogger("bakeoff")

ASSESS_INSTRUCTION = (
    "Given a query and a passage, grade the passage on an integer scale of 0 to 3:\n"
    "0 = the passage has nothing to do with the query,\n"
    "1 = the passage seems related to the query but does not answer it,\n"
    "2 = the passage has some answer for the query, but the answer may be a bit unclear, or hidden amongst "
    "extraneous information,\n"
    "3 = the passage is dedicated to the query and contains the exact answer.\n"
    "Split the problem into steps: consider the underlying intent of the search; measure how well the content "
    "matches a likely intent of the query (M, 0-3); measure how trustworthy the passage is (T, 0-3); consider "
    "these aspects and their relative importance and decide on a final score (O, 0-3). Each score is an integer."
)

#: Worked examples for base models, in the rubric's terms: the same query with a passage that answers
#: it and one that does not, so a small model sees that the grade depends on the pair, not on the query.
_SHOTS: tuple[tuple[str, str, int, int, int], ...] = (
    ("does vitamin d help bones",
     "Vitamin D supplementation reduced hip fractures by 20% in adults over 65 in a randomised trial.", 3, 3, 3),
    ("does vitamin d help bones",
     "The mitochondrion is the site of oxidative phosphorylation in eukaryotic cells.", 0, 3, 0),
    ("what causes earthquakes",
     "Volcanoes are openings in the Earth's crust through which lava and gases escape.", 1, 3, 1),
    ("how do I copy a folder in python",
     "shutil.copy(src, dst): copy the file src to dst. See also copytree for whole directories.", 2, 3, 2),
    ("what causes earthquakes",
     "Earthquakes happen when stress built up where tectonic plates meet is suddenly released along a fault.",
     3, 3, 3),
)
_COMPLETION_HEADER = ("Relevance assessments. " + ASSESS_INSTRUCTION.split("\n", 1)[0]
                      + " 0 = nothing to do with the query, 1 = related but does not answer it, 2 = some answer, "
                      "unclear or hidden, 3 = dedicated to the query with the exact answer. M = match with the "
                      "query's intent, T = trustworthiness, O = final score.\n\n")


def assess_schema() -> type[BaseModel]:
    """``{"intent_match": 0..3, "trustworthiness": 0..3, "final_score": 0..3}`` (integers)."""
    from pydantic import BaseModel, Field

    class Assessment(BaseModel):
        intent_match: int = Field(ge=0, le=3)
        trustworthiness: int = Field(ge=0, le=3)
        final_score: int = Field(ge=0, le=3)

    return Assessment


def _answer(m: int, t: int, o: int) -> str:
    return json.dumps({"intent_match": m, "trustworthiness": t, "final_score": o})


def _user(query: str, passage: str) -> str:
    return (f"{ASSESS_INSTRUCTION}\n\nQuery: {query}\nPassage: {passage}\n\n"
            'Answer as JSON: {"intent_match": M, "trustworthiness": T, "final_score": O}')


def assess_messages(query: str, passage: str) -> tuple[dict[str, str], ...]:
    """Chat turns for instruction models: the rubric and the pair (zero-shot, as UMBRELA)."""
    return ({"role": "system", "content": "You are a search quality rater evaluating the relevance of passages."},
            {"role": "user", "content": _user(query, passage)})


def assess_completion(query: str, passage: str) -> tuple[str, str]:
    """``(prompt, prefill)`` for base models: a few-shot log of graded pairs ending with this pair."""
    parts = [_COMPLETION_HEADER]
    for q, p, m, t, o in _SHOTS:
        parts.append(f"Query: {q}\nPassage: {p}\nGrades: {_answer(m, t, o)}\n\n")
    parts.append(f"Query: {query}\nPassage: {passage}\nGrades: ")
    return "".join(parts), '{"intent_match": '


def prompt_hash(style: str) -> str:
    """sha256 of the prompt template of ``style`` (``chat`` or ``completion``), rendered with placeholders."""
    if style == "completion":
        text = "".join(assess_completion("{query}", "{passage}"))
    else:
        text = json.dumps(assess_messages("{query}", "{passage}"), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, kw_only=True)
class AssessOptions:
    """How holes are chosen and graded (all recorded in provenance).

    ``depth``: pool cutoff; ``arms``: the arms pooled (default all with a run);
    ``max_pairs``: grade at most this many holes (disputed ones first, then by best rank,
    then query order; the rest are counted as ``skipped``); ``relevant_from``: the lowest
    assessed grade counted relevant in the merged evaluation; ``method``: one of :data:`METHODS`
    (how a grade is read from the model, see :func:`judge_pairs`); ``threshold`` and ``baseline``: the
    ``likelihood`` method's cut (nats per query token) and baseline (see :func:`judge_likelihood`).
    """

    depth: int = 10
    arms: tuple[str, ...] = ()
    max_pairs: int | None = None
    max_doc_chars: int = 1000
    temperature: float = 0.0
    max_tokens: int = 48
    seed: int = 0
    relevant_from: int = 2
    method: str = "umbrela"
    threshold: float = 1.0
    baseline: str = "random"

    def check(self) -> None:
        """Refuse options no judging can use (one line naming the command-line option)."""
        if self.depth < 1:
            raise ConfigError("--depth must be >= 1")
        if self.method not in METHODS:
            raise ConfigError(f"--method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.baseline not in ("random", "none"):
            raise ConfigError(f"--baseline must be random or none, got {self.baseline!r}")
        if self.max_pairs is not None and self.max_pairs < 0:
            raise ConfigError("--max-pairs must be >= 0")


def _doc_text(corpus: Corpus, doc_id: str, max_chars: int) -> str:
    i = corpus.position[doc_id]
    title, text = corpus.titles[i], corpus.texts[i]
    full = " ".join((f"{title}\n{text}" if title else text).split())
    return full if len(full) <= max_chars else full[:max_chars].rsplit(" ", 1)[0] + " ..."


#: GBNF grammar of the completion after the prefill, sent to llama.cpp servers (``grammar`` is a
#: llama.cpp server extension of ``/v1/completions``): three grades in 0..3 and the closing brace.
COMPLETION_GRAMMAR = ('root ::= [0-3] ", \\"trustworthiness\\": " [0-3] ", \\"final_score\\": " [0-3] "}"')


def assess_request(query: str, passage: str, client: LLMClient, options: AssessOptions) -> ChatRequest:
    """The request grading one (query, passage) pair in the client's prompt style. A completion
    request to a llama.cpp server (the bundled model) carries :data:`COMPLETION_GRAMMAR`, so the
    small model can only answer in the schema; the answer is validated all the same."""
    params: dict[str, Any] = {"temperature": options.temperature, "max_tokens": options.max_tokens,
                              "seed": options.seed}
    if client.config.prompt_style == "completion":
        prompt, prefill = assess_completion(query, passage)
        extra: dict[str, Any] = {"stop": ["\n"]}
        if "llama.cpp" in client.config.identity:
            extra["grammar"] = COMPLETION_GRAMMAR
        return ChatRequest.completion(prompt, assess_schema(), {**params, **extra}, prefill=prefill)
    return ChatRequest(assess_messages(query, passage), assess_schema(), params)


def grade_pairs(client: LLMClient, pairs: Sequence[tuple[str, str]], *, options: AssessOptions = AssessOptions(),
                progress: bool = True) -> list[Generation]:
    """Grade ``(query text, passage text)`` pairs; a Generation per pair (``value.final_score`` when ok)."""
    reqs = [assess_request(q, p, client, options) for q, p in pairs]
    return client.generate_many(reqs, progress=progress, desc="assess")


#: How a grade is read from the model (:func:`judge_pairs`).
METHODS = ("umbrela", "expected", "yesno", "likelihood")

_GRADE_TOKENS = {str(g): g for g in range(4)}
_YES, _NO = ("yes",), ("no",)

_DIGIT_INSTRUCTION = ASSESS_INSTRUCTION.split("Split the problem", 1)[0].rstrip()
_YESNO_QUESTION = ("Is the passage relevant to the query: does it answer the query, fully or in part, or, if the query "
                   "is a claim, does it give evidence for or against it? Answer Yes or No.")
_YESNO_SHOTS = tuple((q, p, "Yes" if o >= 2 else "No") for q, p, _m, _t, o in _SHOTS)


@dataclass(frozen=True)
class Judgment:
    """One pair's verdict: ``grade`` (0-3) and ``p_relevant`` (the model's probability that the pair is
    relevant, when read from token probabilities) or ``score`` (the ``likelihood`` method's PMI), or ``error``."""

    grade: int | None
    p_relevant: float | None = None
    expected: float | None = None
    error: str | None = None
    score: float | None = None
    cached: bool = False
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.grade is not None


def judge_messages(query: str, passage: str, method: str) -> tuple[dict[str, str], ...]:
    """Chat turns of a logprob method: the rubric and one-digit answer (``expected``) or a yes/no question."""
    system = {"role": "system", "content": "You are a search quality rater evaluating the relevance of passages."}
    if method == "yesno":
        return system, {"role": "user", "content": f"Query: {query}\nPassage: {passage}\n\n{_YESNO_QUESTION}"}
    return system, {"role": "user", "content": f"{_DIGIT_INSTRUCTION}\n\nQuery: {query}\nPassage: {passage}\n\n"
                                               "Answer with the grade only: one digit, 0, 1, 2 or 3."}


def judge_completion(query: str, passage: str, method: str) -> str:
    """A few-shot completion prompt of a logprob method for base models, ending where the grade (or Yes/No) goes."""
    if method == "yesno":
        parts = [("Relevance assessments: does the passage answer the query, fully or in part, or give evidence for or "
                 "against it?\n\n")]
        parts += [f"Query: {q}\nPassage: {p}\nAnswers the query: {a}\n\n" for q, p, a in _YESNO_SHOTS]
        parts.append(f"Query: {query}\nPassage: {passage}\nAnswers the query:")
        return "".join(parts)
    parts = [_COMPLETION_HEADER]
    parts += [f"Query: {q}\nPassage: {p}\nGrade: {o}\n\n" for q, p, _m, _t, o in _SHOTS]
    parts.append(f"Query: {query}\nPassage: {passage}\nGrade:")
    return "".join(parts)


def _mass(logprobs: Mapping[str, float], vocab: Mapping[str, Any]) -> dict[Any, float]:
    """Probability of each label of ``vocab`` (``{token text: label}``): the tokens whose stripped,
    lower-cased text is a key, their probabilities summed per label."""
    import math

    out: dict[Any, float] = {}
    for tok, lp in logprobs.items():
        label = vocab.get(tok.strip().lower())
        if label is not None:
            out[label] = out.get(label, 0.0) + math.exp(lp)
    return out


def read_judgment(logprobs: Mapping[str, float], method: str, *, relevant_from: int = 2) -> Judgment:
    """A :class:`Judgment` from the first answer token's log-probabilities.

    ``expected``: ``p(g)`` = the probability of the token ``g`` in 0..3, renormalised over the four;
    expected grade ``E = sum g p(g)``, ``p_relevant = sum_{g >= relevant_from} p(g)``, grade ``round(E)``
    (half up). ``yesno``: ``p_relevant = p(yes) / (p(yes) + p(no))`` (case and leading space ignored),
    grade ``relevant_from`` when ``p_relevant >= 0.5`` else 0. No label among the returned tokens: an error.
    """
    if method == "yesno":
        m = _mass(logprobs, {"yes": True, "no": False})
        total = sum(m.values())
        if total <= 0:
            return Judgment(None, error="neither Yes nor No among the most likely answers")
        p = m.get(True, 0.0) / total
        return Judgment(relevant_from if p >= 0.5 else 0, p_relevant=p)
    m = _mass(logprobs, _GRADE_TOKENS)
    total = sum(m.values())
    if total <= 0:
        return Judgment(None, error="no grade 0-3 among the most likely answers")
    probs = {g: m.get(g, 0.0) / total for g in range(4)}
    e = sum(g * pg for g, pg in probs.items())
    return Judgment(int(e + 0.5), p_relevant=sum(pg for g, pg in probs.items() if g >= relevant_from), expected=e)


def judge_pairs(client: LLMClient, pairs: Sequence[tuple[str, str]], *, options: AssessOptions = AssessOptions(),
                progress: bool = True) -> list[Judgment]:
    """Judge ``(query text, passage text)`` pairs with ``options.method``:

    * ``umbrela`` — the sampled JSON answer of the UMBRELA prompt (:func:`grade_pairs`); its ``final_score``;
    * ``expected`` — the one-digit rubric prompt; the grade read from the first token's probabilities
      (:func:`read_judgment`), no sampling;
    * ``yesno`` — "does the passage answer the query?"; ``P(yes)`` from the first token's probabilities.

    The logprob methods need a server that returns ``top_logprobs`` (llama.cpp's server, OpenAI, vLLM).
    ``likelihood`` reads no answer at all: see :func:`judge_likelihood`.
    """
    if options.method == "likelihood":
        raise ConfigError("the likelihood method scores with a language model, not a chat client: judge_likelihood")
    if options.method not in METHODS:
        raise ConfigError(f"--method must be one of {', '.join(METHODS)}, got {options.method!r}")
    if options.method == "umbrela":
        gens = grade_pairs(client, pairs, options=options, progress=progress)
        return [Judgment(int(g.value.final_score), cached=g.cached, attempts=g.attempts) if g.ok
                else Judgment(None, error=g.error, cached=g.cached, attempts=g.attempts) for g in gens]
    params = {"temperature": 0.0, "seed": options.seed}
    if client.config.prompt_style == "completion":
        reqs = [ChatRequest.completion(judge_completion(q, p, options.method), assess_schema(), params)
                for q, p in pairs]
    else:
        reqs = [ChatRequest(judge_messages(q, p, options.method), assess_schema(), params) for q, p in pairs]
    gens = client.logprobs_many(reqs, progress=progress, desc="assess")
    out = []
    for g in gens:
        if not g.ok:
            out.append(Judgment(None, error=g.error, cached=g.cached))
            continue
        j = read_judgment(g.value, options.method, relevant_from=options.relevant_from)
        out.append(Judgment(j.grade, j.p_relevant, j.expected, j.error, cached=g.cached))
    return out


def judge_likelihood(lm: QueryLikelihood, pairs: Sequence[tuple[str, str]], *,
                     options: AssessOptions = AssessOptions(), cache: Cache | None = None,
                     others: Sequence[str] = (), progress: bool = True,
                     stats: dict[str, int] | None = None) -> list[Judgment]:
    """Judge ``(query text, passage text)`` pairs by query likelihood (the ``likelihood`` method).

    The score is the query's pointwise mutual information with the passage, per token, as the
    specificity filter computes it (:mod:`bakeoff.truth.filters.specificity`)::

        s(q, d) = lp(q | d) - lp(q | b)

    with ``lp`` the mean natural-log probability of the query's tokens after the prompt
    ``"Document: <d>\n\nA question this document answers:"`` and ``b`` the baseline: the mean over
    ``n_random`` seeded documents of ``others`` (``baseline="random"``) or the empty document
    (``"none"``). Grade: ``relevant_from`` when ``s >= threshold``, 1 when ``0 <= s < threshold``
    (the passage makes the query likelier than the baseline does, but not by the margin), 0 when
    ``s < 0``. No answer is sampled, so there is nothing to fail validation; ``score`` holds ``s``.
    """
    from ..filters.specificity import SpecificityOptions, specificity_scores

    so = SpecificityOptions(threshold=None, max_doc_chars=options.max_doc_chars,
                            baseline="none" if options.baseline == "none" else "random", seed=options.seed)
    scored = specificity_scores(pairs, lm, options=so, cache=cache, others=others, progress=progress, stats=stats)
    grades = [options.relevant_from if s.score >= options.threshold else (1 if s.score >= 0 else 0) for s in scored]
    return [Judgment(g, score=s.score) for g, s in zip(grades, scored, strict=True)]


def merged_qrels(original: Qrels, assessed: Mapping[str, Mapping[str, int]], *, relevant_from: int = 2) -> Qrels:
    """Original judgments plus the assessed ones mapped to the original scale (module docstring)."""
    top = max((g for q in original for g in original[q].values()), default=1)
    top = max(top, 1)
    out: dict[str, dict[str, int]] = {q: dict(original[q]) for q in original}
    for q, docs in assessed.items():
        row = out.setdefault(q, {})
        for d, g in docs.items():
            if d not in row:
                row[d] = min(int(g), top) if int(g) >= relevant_from else 0
    return Qrels(out)


#: Grades of a pooled synthetic truth (:func:`pooled_qrels`).
SOURCE_GRADE, POOLED_GRADE = 2, 1


def pooled_qrels(source: Qrels, assessed: Mapping[str, Mapping[str, int]], *, relevant_from: int = 2) -> Qrels:
    """A synthetic truth widened by judging the pool: per query, the documents it was written from
    (``source``'s relevant documents) at :data:`SOURCE_GRADE` (2), a pooled document the judge graded
    ``>= relevant_from`` at :data:`POOLED_GRADE` (1), one graded lower at 0 (judged non-relevant).

    The source stays above what the judge adds: the query was written to be answered by it, while a
    pooled grade is one model's reading. With trec_eval's linear gains NDCG@k then rewards finding
    the source twice as much as another document the judge calls relevant; binary measures (recall,
    MRR, MAP at relevance level 1) count both."""
    out: dict[str, dict[str, int]] = {}
    for q in source:
        row = {d: (SOURCE_GRADE if g >= 1 else int(g)) for d, g in source[q].items()}
        for d, g in (assessed.get(q) or {}).items():
            if d not in row:
                row[d] = POOLED_GRADE if int(g) >= relevant_from else 0
        out[q] = row
    return Qrels(out)


@dataclass
class AssessOutcome:
    """What ``bakeoff assess`` did: counts, the metrics table, the files written, usage and time."""

    counts: dict[str, int]
    metrics: list[dict[str, Any]]
    measures: list[str]
    grades: dict[str, int]
    usage: dict[str, Any]
    seconds: float
    llm_startup_s: float
    folder: Path | None = None
    written: list[str] = field(default_factory=list)


def _order(hs: Sequence[Hole], query_ids: Sequence[str]) -> list[Hole]:
    pos = {q: i for i, q in enumerate(query_ids)}
    return sorted(hs, key=lambda h: (not h.disputed, h.best_rank, pos.get(h.query_id, 0), h.doc_id))


def _side_by_side(results: StoredResults, runs: Mapping[str, Run], original: Qrels, merged: Qrels, *,
                  query_ids: Sequence[str], depth: int) -> tuple[list[str], list[dict[str, Any]]]:
    k = results.k
    measures = [m for m in (f"ndcg@{k}", f"recall@{k}", f"mrr@{k}") if m in results.measures] or \
        list(results.measures[:3])
    measures = [*measures, f"judged@{depth}"]
    rows = []
    for name in results.arm_names:
        if name not in runs:
            continue
        before = score_run(runs[name], original, measures, query_ids=query_ids, relevance_level=1)
        after = score_run(runs[name], merged, measures, query_ids=query_ids, relevance_level=1)
        rows.append({"arm": name, "original": {m: before.means[m] for m in measures},
                     "with_assessed": {m: after.means[m] for m in measures}, "n_queries": len(before.query_ids)})
    return measures, rows


@dataclass
class PoolJudgment:
    """The holes of a pool and what the judge said about those asked (:func:`judge_holes`)."""

    holes: list[Hole]            # every hole, in grading order (disputed first, then best rank, then query order)
    asked: list[Hole]            # the first ``max_pairs`` of them
    judgments: list[Judgment]    # one per asked hole
    options: AssessOptions
    usage: dict[str, Any]
    config: dict[str, Any]       # the judge's public configuration (never a key)
    style: str                   # chat, completion or likelihood
    seconds: float
    started: float               # of ``seconds``, opening the judge

    def assessed(self) -> dict[str, dict[str, int]]:
        """``{qid: {doc: grade}}`` of the pairs judged."""
        out: dict[str, dict[str, int]] = {}
        for h, j in zip(self.asked, self.judgments, strict=True):
            if j.grade is not None:
                out.setdefault(h.query_id, {})[h.doc_id] = j.grade
        return out

    def grades(self) -> dict[str, int]:
        """How many judged pairs got each grade 0-3."""
        c: Counter[str] = Counter({str(g): 0 for g in range(4)})
        c.update(str(j.grade) for j in self.judgments if j.grade is not None)
        return dict(c)

    def counts(self) -> dict[str, int]:
        n_ok = sum(1 for j in self.judgments if j.ok)
        return {"holes": len(self.holes), "disputed": sum(1 for h in self.holes if h.disputed),
                "asked": len(self.asked), "assessed": n_ok, "failed": len(self.asked) - n_ok,
                "skipped": len(self.holes) - len(self.asked), "queries": len({h.query_id for h in self.asked}),
                "re_asked": int(self.usage.get("schema_retries", 0)),
                "cache_hits": int(self.usage.get("cache_hits", 0))}

    def records(self) -> list[dict[str, Any]]:
        """One provenance row per asked hole: the pair, the pool facts, the grade (or the error)."""
        out = []
        for h, j in zip(self.asked, self.judgments, strict=True):
            rec: dict[str, Any] = {"query_id": h.query_id, "doc_id": h.doc_id, "best_rank": h.best_rank,
                                   "arms": list(h.arms), "disputed": h.disputed, "attempts": j.attempts,
                                   "cached": j.cached}
            if j.ok:
                rec["grade"] = j.grade
                for key, v in (("p_relevant", j.p_relevant), ("expected_grade", j.expected), ("score", j.score)):
                    if v is not None:
                        rec[key] = round(v, 6)
            else:
                rec.update(grade=None, error=j.error)
            out.append(rec)
        return out

    def provenance(self, *, arms: Sequence[str]) -> dict[str, Any]:
        """The judge, its prompt (text and sha256), the parameters, counts, grades, usage and time."""
        options = self.options
        if options.method == "likelihood":
            from ..filters.specificity import PROMPT

            example: list[Any] = [PROMPT.format(document="{passage}") + " {query}"]
            method = (f"query likelihood: mean log p(query token | passage) minus the same under the "
                      f"{'empty document' if options.baseline == 'none' else 'random documents'}; grade "
                      f"{options.relevant_from} at >= {options.threshold} nats/token, 1 at >= 0, else 0")
        elif options.method != "umbrela":
            example = ([judge_completion("{query}", "{passage}", options.method)] if self.style == "completion"
                       else list(judge_messages("{query}", "{passage}", options.method)))
            method = {"expected": "expected grade over 0-3 from the first token's probabilities",
                      "yesno": "P(yes) of 'does the passage answer the query?' from the first token's "
                               "probabilities"}[options.method]
        else:
            example = (list(assess_completion("{query}", "{passage}")) if self.style == "completion"
                       else list(assess_messages("{query}", "{passage}")))
            method = "UMBRELA-style 0-3 rubric (Upadhyay et al. 2024)"
        sha = (prompt_hash(self.style) if options.method == "umbrela"
               else hashlib.sha256(json.dumps(example).encode()).hexdigest())
        return {"llm": self.config,
                "prompt": {"method": method, "style": self.style, "instruction": ASSESS_INSTRUCTION,
                           "template": example, "sha256": sha},
                "parameters": {**asdict(options), "arms": list(arms), "schema": assess_schema().model_json_schema()},
                "counts": self.counts(), "grades": self.grades(), "usage": self.usage,
                "seconds": round(self.seconds, 3), "llm_startup_s": round(self.started, 3)}


def judge_holes(dataset: Any, runs: Mapping[str, Run], *, query_ids: Sequence[str], llm: LLMSpec | str = "local",
                options: AssessOptions = AssessOptions(), cache: Cache | None = None, concurrency: int | None = None,
                price: str | None = None, progress: bool = True,
                open_client: Callable[..., Any] | None = None) -> PoolJudgment:
    """Pool ``runs``' top ``options.depth`` for ``query_ids``, and grade the pool's holes (documents
    ``dataset.qrels`` does not judge) with ``llm`` by ``options.method``: the first ``max_pairs`` holes,
    disputed ones first (:func:`bakeoff.data.pool.holes`)."""
    from ..llm.open import open_llm

    llm = LLMSpec.of(llm)
    options.check()
    all_holes = _order(holes(runs, dataset.qrels, k=options.depth, query_ids=query_ids), query_ids)
    todo = all_holes if options.max_pairs is None else all_holes[:options.max_pairs]
    t0 = time.perf_counter()
    pairs = [(dataset.queries[h.query_id].text, _doc_text(dataset.corpus, h.doc_id, options.max_doc_chars))
             for h in todo]
    if options.method == "likelihood":
        judged, usage, config, started = _by_likelihood(llm, pairs, dataset.corpus, options=options, cache=cache,
                                                         progress=progress)
        style = "likelihood"
    else:
        with (open_client or open_llm)(llm, cache=cache, concurrency=concurrency, price=price) as client:
            started = time.perf_counter() - t0
            judged = judge_pairs(client, pairs, options=options, progress=progress)
            usage = client.usage.as_dict()
            config = client.public()
            style = client.config.prompt_style
    return PoolJudgment(all_holes, todo, judged, options, usage, config, style, time.perf_counter() - t0, started)


def assess_results(
    results_dir: str | Path,
    *,
    llm: LLMSpec | str = "local",
    options: AssessOptions = AssessOptions(),
    out: str | Path | None = None,
    data: str | Path | None = None,
    cache: Cache | None = None,
    concurrency: int | None = None,
    price: str | None = None,
    progress: bool = True,
    open_client: Callable[..., Any] | None = None,
) -> AssessOutcome:
    """``bakeoff assess``: grade the holes of a results folder (see the module docstring).

    Writes ``assessed.qrels`` and ``assessment.json`` into ``out`` (default
    ``RESULTS_DIR/assessed``). Bad input (no results, unknown arm, an arm without a run,
    ``depth < 1``) raises before anything is asked or written.
    """
    from ...data.writers import write_trec_qrels
    from ...runner.reopen import load_dataset, load_runs, results_path
    from ...runner.results import read_results

    options.check()
    path = results_path(results_dir)
    results = read_results(path)
    names = results.arm_names
    chosen = list(options.arms) or names
    for a in chosen:
        if a not in names:
            raise ConfigError(f"--arms: unknown arm {a!r}; arms in {path}: {', '.join(names)}")
    dataset = load_dataset(results, path=path, data=data)
    runs = load_runs(results, folder=path.parent)
    missing = [a for a in chosen if a not in runs]
    if missing:
        raise InputError(f"arm {missing[0]!r} has no run file to pool", path=path, field="arms.run_file")
    qids = results.query_ids
    folder = Path(out) if out is not None else path.parent / "assessed"
    done = judge_holes(dataset, {a: runs[a] for a in chosen}, query_ids=qids, llm=llm, options=options, cache=cache,
                       concurrency=concurrency, price=price, progress=progress, open_client=open_client)
    assessed, counts, grades = done.assessed(), done.counts(), done.grades()
    merged = merged_qrels(dataset.qrels, assessed, relevant_from=options.relevant_from)
    measures, rows = _side_by_side(results, runs, dataset.qrels, merged, query_ids=qids, depth=options.depth)
    prov = {
        "schema": "bakeoff.assessment", "schema_version": 1,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "results": str(path),
        "dataset": {"name": results.dataset.name, "fingerprints": dict(results.fingerprints)},
        **done.provenance(arms=chosen),
        "merge_rule": (f"assessed grade g counts as min(g, highest original grade) when g >= "
                       f"{options.relevant_from}, else 0; original judgments always win"),
        "measures": measures, "metrics": rows,
        "judgments": done.records(),
        "files": {"qrels": "assessed.qrels"},
    }
    folder.mkdir(parents=True, exist_ok=True)
    write_trec_qrels(Qrels(assessed), folder / "assessed.qrels")
    atomic_write_json(folder / "assessment.json", prov)
    return AssessOutcome(counts, rows, measures, grades, done.usage, done.seconds, done.started, folder,
                         ["assessed.qrels", "assessment.json"])


def _by_likelihood(llm: LLMSpec, pairs: Sequence[tuple[str, str]], corpus: Corpus, *, options: AssessOptions,
                   cache: Cache | None, progress: bool) -> tuple[list[Judgment], dict[str, Any], dict[str, Any], float]:
    """The ``likelihood`` method of :func:`assess_results`: the model of ``llm`` opened in-process
    (``local``, ``local:NAME|PATH.gguf``) or as an echoing completions server; ``n_random + 1`` baseline
    documents drawn (seeded) from the corpus. Returns judgments, usage, the public model config and the
    start-up time."""
    import numpy as np

    from ..filters.specificity import SpecificityOptions, open_likelihood

    t0 = time.perf_counter()
    lm = open_likelihood(llm)
    assert lm is not None
    started = time.perf_counter() - t0
    try:
        others: list[str] = []
        if options.baseline == "random":
            rng = np.random.default_rng(options.seed)
            n = min(len(corpus), SpecificityOptions().n_random + 8)
            others = [_doc_text(corpus, corpus.ids[int(i)], options.max_doc_chars)
                      for i in sorted(rng.choice(len(corpus), size=n, replace=False))]
        stats: dict[str, int] = {}
        judged = judge_likelihood(lm, pairs, options=options, cache=cache, others=others, progress=progress,
                                  stats=stats)
        decoded = int(getattr(lm, "decoded_tokens", 0))
        config = {"model": str(llm), "identity": lm.identity(), "prompt_style": "likelihood"}
    finally:
        close = getattr(lm, "close", None)
        if close is not None:
            close()
    usage = {"requests": stats["evaluated"] + stats["cached"], "cache_hits": stats["cached"],
             "prompt_tokens": decoded, "completion_tokens": 0, "cost_usd": 0.0, "schema_retries": 0}
    return judged, usage, config, started
