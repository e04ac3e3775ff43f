"""Cluster mode: several graded answers per LLM-written question.

Embed the corpus, KMeans
(seeded) into ``round(N / cluster_size)`` clusters, draw clusters at random
(seeded), and ask for questions judging every member (relevant, rank, reason).
Answers are repaired (:mod:`bakeoff.truth.generation.repair`); relevant members become
graded qrels, irrelevant members recorded hard negatives.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import numpy as np

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
from ..filters.chain import Draft, QueryFilter, cluster_chain
from ..filters.drift import copies_example
from ..filters.leak import leak, leak_stats
from ..filters.score_filter import score_text
from ..filters.specificity import QueryLikelihood, SpecificityOptions, random_others, score_stats, specificity_scores
from ..filters.thresholds import LEAK_THRESHOLD
from ..llm.client import ChatRequest, Generation, LLMClient
from .health import truth_health
from .prompts import (
    CLUSTER_INSTRUCTION,
    CLUSTER_SHOT_QUESTIONS,
    PromptControl,
    cluster_completion,
    cluster_messages,
    cluster_question_schema,
    cluster_schema,
)
from .repair import REPAIR_KINDS, GradeMap, repair_question
from .synthetic import SyntheticTruth, doc_text

__all__ = ["CLUSTER_TEXT_DROPS", "ClusterOptions", "cluster_corpus", "cluster_leak_filter", "cluster_truth"]


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
    members = {c: _members(labels, vectors, c, o.max_cluster_docs) for c in chosen}
    reqs, req_cluster = _cluster_requests(corpus, members, o, schema, completion=completion)
    gens = client.generate_many(reqs, progress=progress, desc="clusters")
    tally = _ClusterTally()
    survivors = _survivors(req_cluster, gens, members, tally, completion=completion,
                           screen=_Screen(corpus, cluster_chain(), lang=o.prompt.lang),
                           prompts=[_instruction(r) for r in reqs])
    spec = o.specificity if scorer is not None else None
    ans = o.answerability if answerer is not None else None
    scores = _ClusterScores.of(corpus, client, survivors, members, progress=progress, spec=spec, scorer=scorer,
                               ans=ans, answerer=answerer)
    kept = _keep(corpus, survivors, members, scores, tally, spec=spec, n=o.n, grade_map=o.grade_map)
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
        "repairs": dict(tally.repairs),
        "counts": {"kept": len(kept.qids), **dict(tally.counts)},
        "hard_negatives": kept.negatives,
        "n_hard_negatives": sum(len(v) for v in kept.negatives.values()),
        "usage": client.usage.as_dict(),
    }
    scores.provenance(prov, kept.metas, spec=spec, scorer=scorer, ans=ans, answerer=answerer)
    prov["counts"]["questions_asked"] = len(reqs) * (1 if completion else o.questions_per_cluster)
    prov["health"] = _health(prov, corpus, kept.texts, kept.metas)
    return SyntheticTruth(Queries(tuple(kept.qids), tuple(kept.texts), tuple(kept.metas)), Qrels(kept.judg), prov,
                          test_fraction=o.test_fraction, split_seed=o.seed)


#: The reasons the text filters (:func:`~bakeoff.truth.filters.chain.cluster_chain`) drop a question under.
CLUSTER_TEXT_DROPS: tuple[str, ...] = tuple(f.counted_as for f in cluster_chain())
#: Counts of cluster mode that are not a reason a question was dropped.
_NOT_DROPS = frozenset({"clusters", "kept", "questions_asked", "questions_generated", "questions_dropped",
                        "questions_over_n", "pending"})


def _health(prov: dict[str, Any], corpus: Corpus, texts: list[str], metas: list[dict[str, Any]]) -> dict[str, Any]:
    """:func:`~bakeoff.truth.generation.health.truth_health` of cluster questions: the kept share of the questions
    asked, the drop reasons of ``prov["counts"]``, titles from each question's top-ranked document."""
    counts = prov["counts"]
    return truth_health(sampled=int(counts.get("questions_asked", 0)), kept=len(texts),
                        rejections={("leak" if k == "rejected_leak" else k): int(v) for k, v in counts.items()
                                    if k not in _NOT_DROPS},
                        queries=texts, titles=[corpus.titles[corpus.position[m["ranking"][0]]] for m in metas],
                        style=str((prov.get("parameters") or {}).get("prompt", {}).get("style", "question")),
                        kept_of="questions asked were kept")


@dataclass
class _ClusterTally:
    """Cluster mode's counts: the repairs of :func:`~bakeoff.truth.generation.repair.repair_question` (and
    ``copied_example``), and everything else (``clusters``, ``questions_generated``, drops by reason)."""

    repairs: Counter[str] = field(default_factory=lambda: Counter({k: 0 for k in (*REPAIR_KINDS, "copied_example")}))
    counts: Counter[str] = field(default_factory=Counter)


class _Survivor(NamedTuple):
    """A question that survived the repairs: its cluster, its number among the cluster's questions, the repaired
    question."""

    cluster: int
    number: int
    fixed: Any


@dataclass
class _Kept:
    """The kept questions: ids, texts, metadata, judgments and hard negatives by id."""

    qids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    metas: list[dict[str, Any]] = field(default_factory=list)
    judg: dict[str, dict[str, int]] = field(default_factory=dict)
    negatives: dict[str, list[str]] = field(default_factory=dict)


def _cluster_requests(corpus: Corpus, members: dict[int, list[int]], o: ClusterOptions, schema: Any, *,
                      completion: bool) -> tuple[list[ChatRequest], list[int]]:
    """The requests (and the cluster of each): one chat request per cluster for all its questions, or for base
    models (``completion``) one completion request per question, a different seed each."""
    params = {"temperature": o.temperature, "max_tokens": o.max_tokens, "seed": o.seed}
    reqs: list[ChatRequest] = []
    req_cluster: list[int] = []
    for c, rows in members.items():
        docs = [(f"D{i + 1}", doc_text(corpus, r, o.max_doc_chars)) for i, r in enumerate(rows)]
        if completion:
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
    return reqs, req_cluster


def _questions(g: Generation, labels: list[str], *, completion: bool) -> list[tuple[str, Any]]:
    """The (question, judgments) pairs of one answer. A completion answer lists the labels that answer its one
    question, in rank order: those are judged relevant, the other labels irrelevant and ranked after them."""
    if not completion:
        return [(q.question, q.judgments) for q in g.value.questions]
    answers = [str(a).strip() for a in g.value.answers]
    listed = [a for a in answers if a in labels]
    judgments = [{"id": a, "relevant": True, "rank": i + 1, "reason": ""} for i, a in enumerate(answers)]
    judgments += [{"id": x, "relevant": False, "rank": len(answers) + 1 + i, "reason": ""}
                  for i, x in enumerate(x for x in labels if x not in listed)]
    return [(g.value.question, judgments)]


def _instruction(req: ChatRequest) -> str:
    """What ``req`` told the model, without the documents: its text up to the first listed document (``[D1]``)."""
    text = req.prompt if req.prompt is not None else "\n".join(m["content"] for m in req.messages)
    return text.split("\n[D1] ", 1)[0]


@dataclass(frozen=True)
class _Screen:
    """Describe mode's text filters applied to a cluster question (:func:`~bakeoff.truth.filters.chain.cluster_chain`):
    the title is its top-ranked document's, the source every member's title and text."""

    corpus: Corpus
    filters: tuple[QueryFilter, ...]
    lang: str = "en"

    def rejects(self, question: str, rows: list[int], top: int, prompt: str) -> str | None:
        """The first filter's name that rejects ``question`` (asked over ``rows``, ranked ``top`` first), or ``None``."""
        c = self.corpus
        source = " ".join(f"{c.titles[r]} {c.texts[r]}" for r in rows)
        draft = Draft(" ".join(question.split()), c.titles[top], source, CLUSTER_SHOT_QUESTIONS, (), self.lang,
                      prompt=prompt)
        return next((f.counted_as for f in self.filters if f.check(draft) is not None), None)


def _survivors(req_cluster: list[int], gens: list[Generation], members: dict[int, list[int]], tally: _ClusterTally,
               *, completion: bool, screen: _Screen, prompts: list[str]) -> list[_Survivor]:
    """Every question that survives the example-copy check, the repairs and the text filters (``screen``), in
    answer order, counted (a filter's drops under its reason)."""
    counts, repairs = tally.counts, tally.repairs
    survivors: list[_Survivor] = []
    seen_clusters: set[int] = set()
    per_cluster_q: Counter[int] = Counter()
    for c, g, prompt in zip(req_cluster, gens, prompts, strict=True):
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
        for question, judgments in _questions(g, label_list, completion=completion):
            qi = per_cluster_q[c]
            per_cluster_q[c] += 1
            counts["questions_generated"] += 1
            if copies_example(question, examples=CLUSTER_SHOT_QUESTIONS):
                repairs["copied_example"] += 1
                counts["questions_dropped"] += 1
                continue
            fixed, rc = repair_question(question, judgments, label_list)
            repairs.update(rc)
            if fixed is None:
                counts["questions_dropped"] += 1
                continue
            rows = members[c]
            reason = screen.rejects(fixed.question, rows, rows[int(fixed.order[0][1:]) - 1], prompt)
            if reason is not None:
                counts[reason] += 1
                counts["questions_dropped"] += 1
                continue
            survivors.append(_Survivor(c, qi, fixed))
    return survivors


@dataclass
class _ClusterScores:
    """Specificity and answerability of each survivor against its top-ranked document (``None``: not scored),
    the answerability threshold in force, under the rank rule (:mod:`bakeoff.truth.filters.reference_rank`) the
    top document's rank among the reference documents, the survivors below the answerability top fraction,
    cache counts."""

    spec: list[float | None]
    ans: list[float | None]
    ans_thr: float | None
    below_top: set[int]
    spec_stats: dict[str, int]
    ans_stats: dict[str, int]
    ranks: list[int | None] = field(default_factory=list)
    rank_fails: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, corpus: Corpus, client: LLMClient, survivors: list[_Survivor], members: dict[int, list[int]], *,
           progress: bool, spec: SpecificityOptions | None, scorer: QueryLikelihood | None,
           ans: AnswerabilityOptions | None, answerer: AnswerabilityScorer | None) -> _ClusterScores:
        spec_scores: list[float | None] = [None] * len(survivors)
        spec_stats: dict[str, int] = {}
        pairs = []
        tops = []
        for c, _, fixed in survivors:
            top = members[c][int(fixed.order[0][1:]) - 1]
            tops.append(top)
            pairs.append((" ".join(fixed.question.split()), score_text(corpus, top)))
        ans_thr = ans.resolved_threshold(answerer) if ans is not None else None  # type: ignore[arg-type]
        ans_stats: dict[str, int] = {}
        ans_scores: list[float | None] = [None] * len(survivors)
        if ans is not None and survivors:
            ans_scores = list(answerability_scores(pairs, answerer, options=ans,  # type: ignore[arg-type]
                                                   cache=client.cache, stats=ans_stats))
        if spec is not None and survivors:
            got = specificity_scores(pairs, scorer, options=spec, cache=client.cache,  # type: ignore[arg-type]
                                     progress=progress, stats=spec_stats, others=random_others(corpus, spec))
            spec_scores = [x.score for x in got]
        ranks: list[int | None] = [None] * len(survivors)
        rank_fails: set[int] = set()
        if ans is not None and ans.reference is not None and ans.relative and answerer is not None and survivors:
            ranked = answerability_ranks([q for q, _ in pairs], tops, [float(a or 0.0) for a in ans_scores], answerer,
                                         doc_text=lambda r: score_text(corpus, r), n_docs=len(corpus), options=ans,
                                         cache=client.cache)
            ranks = [x.rank for x in ranked]
            rank_fails = {i for i, x in enumerate(ranked) if not x.kept(ans.reference)}
        below_top: set[int] = set()
        if ans is not None and ans.keep_fraction is not None:
            passing = [i for i, a in enumerate(ans_scores) if a is not None and a >= ans_thr]  # type: ignore[operator]
            top_mask = answer_keep_mask([ans_scores[i] for i in passing], threshold=None,  # type: ignore[misc]
                                        keep_fraction=ans.keep_fraction)
            below_top = {i for i, k in zip(passing, top_mask, strict=True) if not k}
        return cls(spec_scores, ans_scores, ans_thr, below_top, spec_stats, ans_stats, ranks, rank_fails)

    def provenance(self, prov: dict[str, Any], metas: list[dict[str, Any]], *, spec: SpecificityOptions | None,
                   scorer: QueryLikelihood | None, ans: AnswerabilityOptions | None,
                   answerer: AnswerabilityScorer | None) -> None:
        """The specificity and answerability entries of ``prov`` (when those scorers ran)."""
        if spec is not None:
            prov["specificity"] = {"scorer": scorer.identity(), "options": asdict(spec),  # type: ignore[union-attr]
                                   "all_candidates": score_stats([x for x in self.spec if x is not None],
                                                                 threshold=spec.threshold),
                                   "kept": score_stats([m["specificity"] for m in metas if "specificity" in m],
                                                       threshold=spec.threshold),
                                   "evaluations": dict(self.spec_stats)}
        if ans is not None:
            prov["answerability"] = answer_provenance(answerer, ans, self.ans_thr,  # type: ignore[arg-type]
                                                      [a for a in self.ans if a is not None],
                                                      [m.get("answerability") for m in metas], self.ans_stats)
            if ans.relative and ans.reference is not None:
                prov["answerability"]["reference"] = reference_provenance(
                    ans.reference, [r for r in self.ranks if r is not None])


def _keep(corpus: Corpus, survivors: list[_Survivor], members: dict[int, list[int]], scores: _ClusterScores,
          tally: _ClusterTally, *, spec: SpecificityOptions | None, n: int, grade_map: GradeMap) -> _Kept:
    """The survivors that pass the scores, up to ``n``: ids ``cluster-CCCCC-I``, graded judgments, hard negatives."""
    counts = tally.counts
    kept = _Kept()
    for pos, ((c, qi, fixed), sc, an) in enumerate(zip(survivors, scores.spec, scores.ans, strict=True)):
        if sc is not None and spec is not None and spec.threshold is not None and sc < spec.threshold:
            counts["low_specificity"] += 1
            counts["questions_dropped"] += 1
            continue
        if (an is not None and scores.ans_thr is not None and an < scores.ans_thr) or pos in scores.rank_fails:
            counts["not_answerable"] += 1
            counts["questions_dropped"] += 1
            continue
        if pos in scores.below_top:
            counts["below_answerability_top"] += 1
            counts["questions_dropped"] += 1
            continue
        if len(kept.qids) >= n:
            counts["questions_over_n"] += 1
            continue
        label_to_doc = {f"D{i + 1}": corpus.ids[r] for i, r in enumerate(members[c])}
        qid = f"cluster-{c:05d}-{qi}"
        if qid in kept.judg:
            continue
        grades = fixed.grades(grade_map)
        kept.qids.append(qid)
        kept.texts.append(" ".join(fixed.question.split()))
        meta: dict[str, Any] = {"cluster": c, "ranking": [label_to_doc[x] for x in fixed.order],
                                "reasons": {label_to_doc[k]: v for k, v in fixed.reasons.items()}}
        if sc is not None:
            meta["specificity"] = round(sc, 6)
        if an is not None:
            meta["answerability"] = round(an, 6)
        if scores.ranks and scores.ranks[pos] is not None:
            meta["answer_rank"] = scores.ranks[pos]
        kept.metas.append(meta)
        kept.judg[qid] = {label_to_doc[x]: gr for x, gr in grades.items()}
        kept.negatives[qid] = [label_to_doc[x] for x in fixed.negatives()]
    return kept


def cluster_leak_filter(truth: SyntheticTruth, corpus: Corpus, *, threshold: float | None = LEAK_THRESHOLD,
                        lang: str = "en") -> SyntheticTruth:
    """Cluster mode's leak filter and statistics (describe mode has them built in).

    Each question's leak is measured against the concatenated (title + text) of its relevant
    documents and recorded in its metadata (``leak``); with a ``threshold``, questions above it
    are dropped with their judgments and hard negatives
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
    if "health" in prov:  # again, on what the cut kept
        prov["health"] = _health(prov, corpus, texts, metas)
    if "hard_negatives" in prov:
        prov["hard_negatives"] = negatives
        prov["n_hard_negatives"] = sum(len(v) for v in negatives.values())
    return SyntheticTruth(Queries(tuple(ids), tuple(texts), tuple(metas)), Qrels(judg), prov,
                          test_fraction=truth.test_fraction, split_seed=truth.split_seed)
