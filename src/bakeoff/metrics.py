"""Retrieval metrics, as values: ``ndcg@10`` parses to a :class:`Measure` and prints back.

Conventions (all match trec_eval / pytrec_eval, checked to 1e-9 in the tests):

* A run is ordered by :func:`bakeoff.data.ranking.rank` (score desc, doc id desc);
  ranks stored in files are ignored. Only the first ``k`` documents count.
* A document is relevant when its grade is ``>= relevance_level`` (default 1);
  grade 0 is judged non-relevant; unjudged documents are non-relevant.
* Which queries are averaged: every query that has at least one relevant
  judgment. A judged query absent from the run scores 0 on every measure
  (trec_eval ``-c``). Queries without relevant judgments are excluded from the
  means and listed in :attr:`Evaluation.excluded` — never silently scored 0.

Per query, with ``R`` the relevant set, ``rel_i`` = 1 if the document at rank
``i`` (1-based) is relevant, ``g_i`` its grade:

* ``precision@k``  = sum_{i<=k} rel_i / k                    (trec_eval ``P_k``)
* ``recall@k``     = sum_{i<=k} rel_i / |R|                  (``recall_k``)
* ``mrr@k``        = 1 / min{i <= k : rel_i}, 0 if none       (``recip_rank`` of the top-k)
* ``hit@k``        = 1 if any rel_i for i <= k else 0         (``success_k``; "the known
  document is in the top k", which some write-ups call precision@k)
* ``map@k``        = sum_{i<=k, rel_i} precision@i / |R|     (``map_cut_k``)
* ``judged@k``     = |{i <= k : document i has any judgment (grade 0 included)}| / min(k, n)
  with ``n`` the documents retrieved (0 when none): ir_measures' ``Judged@k``, the share
  of the retrieved top k that is judged. It measures the judgments, not the arm: a low
  value means the other measures read many unjudged documents as non-relevant (see
  :mod:`bakeoff.data.pool` for the holes)
* ``ndcg@k``       = DCG@k / IDCG@k, DCG@k = sum_{i<=k} gain(g_i) / log2(i + 1),
  IDCG@k the DCG of the judged grades sorted descending. ``ndcg@k`` uses the
  **linear** gain ``gain(g) = g`` for g > 0, which is what trec_eval's
  ``ndcg_cut_k`` computes (verified against pytrec_eval);
  ``ndcg_exp@k`` uses the exponential gain ``2^g - 1`` (Burges et al.). For
  binary judgments the two are identical.

Without ``@k`` a measure has no cutoff (the whole ranking counts), except
``precision`` which requires a cutoff.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from .data.model import Qrels, Run
from .errors import ConfigError

__all__ = [
    "DEFAULT_MEASURES", "LOWER_BOUND_MEASURES", "Evaluation", "Measure", "default_measures", "evaluate",
    "measures_for", "parse_measure", "parse_measures",
]

MeasureName = Literal["recall", "precision", "mrr", "ndcg", "ndcg_exp", "hit", "map", "judged"]
_ALIASES: Mapping[str, MeasureName] = {
    "recall": "recall",
    "r": "recall",
    "precision": "precision",
    "p": "precision",
    "mrr": "mrr",
    "rr": "mrr",
    "recip_rank": "mrr",
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
    "ndcg_exp": "ndcg_exp",
    "hit": "hit",
    "success": "hit",
    "hits": "hit",
    "map": "map",
    "ap": "map",
    "map_cut": "map",
    "judged": "judged",
}
_PATTERN = re.compile(r"^\s*([a-z_]+)\s*(?:@\s*(\d+))?\s*$", re.IGNORECASE)


@dataclass(frozen=True, order=True)
class Measure:
    """A metric and its cutoff; ``str(Measure("ndcg", 10)) == "ndcg@10"``."""

    name: MeasureName
    k: int | None = None

    def __post_init__(self) -> None:
        if self.k is not None and self.k < 1:
            raise ValueError(f"cutoff must be >= 1 in {self}")
        if self.name in ("precision", "judged") and self.k is None:
            raise ValueError(f"{self.name} needs a cutoff, e.g. {self.name}@10")

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"


def parse_measure(text: str | Measure) -> Measure:
    """Parse ``"ndcg@10"``, ``"P@5"``, ``"recip_rank"``, ``"success@1"`` ... into a Measure."""
    if isinstance(text, Measure):
        return text
    m = _PATTERN.match(text)
    name = _ALIASES.get(m.group(1).lower()) if m else None
    if m is None or name is None:
        known = ", ".join(sorted(set(_ALIASES.values())))
        raise ValueError(f"unknown measure {text!r}; known: {known} (with an optional @k)")
    return Measure(name, int(m.group(2)) if m.group(2) else None)


def parse_measures(texts: Iterable[str | Measure]) -> tuple[Measure, ...]:
    """Parse several measures, dropping duplicates, keeping first-seen order."""
    out: dict[Measure, None] = {}
    for t in texts:
        out[parse_measure(t)] = None
    return tuple(out)


DEFAULT_MEASURES: tuple[Measure, ...] = parse_measures(
    ["ndcg@10", "recall@10", "mrr@10", "precision@10", "hit@10", "map@10", "recall@100"]
)

#: Measures that stay meaningful when only *some* relevant documents are known and the rest
#: are unknown rather than wrong (citation-mined labels): they become lower bounds. Precision,
#: MAP and NDCG read unjudged documents as non-relevant, so they are undefined there.
LOWER_BOUND_MEASURES: tuple[MeasureName, ...] = ("recall", "mrr", "hit")


def default_measures(k: int, depth: int) -> tuple[Measure, ...]:
    """NDCG, Recall, MRR, Precision, Hit and MAP at ``k``, plus Recall at ``depth`` (when deeper)."""
    names = [f"ndcg@{k}", f"recall@{k}", f"mrr@{k}", f"precision@{k}", f"hit@{k}", f"map@{k}"]
    if depth > k:
        names.append(f"recall@{depth}")
    return parse_measures(names)


def measures_for(label_kind: str, *, k: int, depth: int,
                 requested: Iterable[str | Measure] | None = None) -> tuple[Measure, ...]:
    """The measure policy: which measures a dataset whose labels are of ``label_kind``
    (:attr:`bakeoff.data.model.Dataset.label_kind`) may report.

    * ``"judged"`` (complete judgments): ``requested``, else :func:`default_measures`.
    * ``"citation"`` (lower-bound labels): ``requested`` if every one is in
      :data:`LOWER_BOUND_MEASURES`, else :class:`~bakeoff.errors.ConfigError`; by default
      Recall@k and MRR@k, plus Recall@depth when deeper.
    """
    if label_kind != "citation":
        return parse_measures(requested) if requested is not None else default_measures(k, depth)
    if requested is None:
        return parse_measures([f"recall@{k}", f"mrr@{k}"] + ([f"recall@{depth}"] if depth > k else []))
    ms = parse_measures(requested)
    bad = [str(m) for m in ms if m.name not in LOWER_BOUND_MEASURES]
    if bad:
        raise ConfigError(
            f"{', '.join(bad)} cannot be computed on citation-mined labels: only cited targets are known "
            "relevant and everything else is unknown, not wrong; use recall@k, mrr@k or hit@k (lower bounds)")
    return ms


@dataclass(frozen=True)
class Evaluation:
    """Per-query values and means of several measures for one run.

    ``per_query[measure][qid]`` covers exactly :attr:`query_ids` (the averaged
    queries); ``means[measure]`` is their arithmetic mean.
    """

    per_query: Mapping[str, Mapping[str, float]]
    means: Mapping[str, float]
    query_ids: tuple[str, ...]
    missing_from_run: tuple[str, ...] = ()
    excluded: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _gain(grade: int, exponential: bool) -> float:
    if grade <= 0:
        return 0.0
    return float(2**grade - 1) if exponential else float(grade)


def _one(
    measure: Measure, ranked: Sequence[str], grades: Mapping[str, int], n_rel: int, level: int
) -> float:
    k = measure.k
    top = ranked if k is None else ranked[:k]
    name = measure.name
    if name in ("ndcg", "ndcg_exp"):
        exp = name == "ndcg_exp"
        dcg = sum(_gain(grades.get(d, 0), exp) / math.log2(i + 2) for i, d in enumerate(top))
        ideal = sorted((g for g in grades.values() if g > 0), reverse=True)
        if k is not None:
            ideal = ideal[:k]
        idcg = sum(_gain(g, exp) / math.log2(i + 2) for i, g in enumerate(ideal))
        return dcg / idcg if idcg > 0 else 0.0
    if name == "judged":
        return sum(1 for d in top if d in grades) / len(top) if top else 0.0
    rel = [grades.get(d, 0) >= level for d in top]
    if name == "recall":
        return sum(rel) / n_rel
    if name == "precision":
        assert k is not None
        return sum(rel) / k
    if name == "hit":
        return 1.0 if any(rel) else 0.0
    if name == "mrr":
        for i, r in enumerate(rel):
            if r:
                return 1.0 / (i + 1)
        return 0.0
    if name == "map":
        hits, total = 0, 0.0
        for i, r in enumerate(rel):
            if r:
                hits += 1
                total += hits / (i + 1)
        return total / n_rel
    raise AssertionError(name)  # pragma: no cover


def evaluate(
    run: Run,
    qrels: Qrels,
    measures: Iterable[str | Measure] = DEFAULT_MEASURES,
    *,
    query_ids: Iterable[str] | None = None,
    relevance_level: int = 1,
) -> Evaluation:
    """Score ``run`` against ``qrels``. Pure: never mutates its inputs.

    ``query_ids`` restricts evaluation to those queries (e.g. a dataset's
    queries); by default every query in ``qrels`` is a candidate. Candidates
    without a relevant judgment are excluded (``excluded["no_relevant"]``);
    run queries that are not candidates are listed in ``excluded["not_judged"]``.
    """
    ms = parse_measures(measures)
    candidates = list(qrels) if query_ids is None else list(dict.fromkeys(query_ids))
    evaluated: list[str] = []
    no_rel: list[str] = []
    for q in candidates:
        if any(g >= relevance_level for g in qrels.get(q).values()):
            evaluated.append(q)
        else:
            no_rel.append(q)
    cand_set = set(candidates)
    not_judged = tuple(q for q in run if q not in cand_set or q not in qrels)
    missing = tuple(q for q in evaluated if q not in run)
    per_query: dict[str, dict[str, float]] = {str(m): {} for m in ms}
    for q in evaluated:
        grades = qrels.get(q)
        n_rel = sum(1 for g in grades.values() if g >= relevance_level)
        ranked = run.doc_ids(q)
        for m in ms:
            per_query[str(m)][q] = _one(m, ranked, grades, n_rel, relevance_level)
    means = {
        name: (math.fsum(vals.values()) / len(vals) if vals else float("nan"))
        for name, vals in per_query.items()
    }
    return Evaluation(
        per_query=per_query,
        means=means,
        query_ids=tuple(evaluated),
        missing_from_run=missing,
        excluded={"no_relevant": tuple(no_rel), "not_judged": not_judged},
    )
