"""Retrieval metrics, as values: ``ndcg@10`` parses to a :class:`Measure` and prints back.

Conventions (per query, all equal to trec_eval / pytrec_eval; checked against trec_eval's own
test files and pytrec_eval in the tests):

* A run is ordered by the tie rule of :mod:`bakeoff.data.ranking` (score desc, doc id desc;
  ``±inf`` are numbers, NaN is an error); ranks stored in files are ignored. Only the first
  ``k`` documents count; ``max_docs`` (trec_eval ``-M``) first cuts every ranking to ``M``.
* A document is relevant when its grade is ``>= relevance_level`` (default 1, trec_eval
  ``-l``) — for every measure but nDCG, whose gains are the grades themselves;
  grade 0 is judged non-relevant; unjudged documents are non-relevant.

Per query, with ``R`` the relevant set, ``rel_i`` = 1 if the document at rank
``i`` (1-based) is relevant, ``g_i`` its grade:

* ``precision@k``  = sum_{i<=k} rel_i / k                    (trec_eval ``P_k``)
* ``recall@k``     = sum_{i<=k} rel_i / |R|                  (``recall_k``)
* ``mrr@k``        = 1 / min{i <= k : rel_i}, 0 if none       (``recip_rank`` of the top-k)
* ``hit@k``        = 1 if any rel_i for i <= k else 0         (``success_k``; "the known
  document is in the top k", which some write-ups call precision@k)
* ``map@k``        = sum_{i<=k, rel_i} precision@i / |R|     (``map_cut_k``; ``map`` uncut)
* ``judged@k``     = |{i <= k : document i has any judgment (grade 0 included)}| / min(k, n)
  with ``n`` the documents retrieved (0 when none): ir_measures' ``Judged@k``, the share
  of the retrieved top k that is judged. It measures the judgments, not the arm: a low
  value means the other measures read many unjudged documents as non-relevant (see
  :mod:`bakeoff.data.pool` for the holes)
* ``ndcg@k``       = DCG@k / IDCG@k, DCG@k = sum_{i<=k} gain(g_i) / log2(i + 1),
  IDCG@k the DCG of the judged grades sorted descending. ``ndcg@k`` uses the
  **linear** gain ``gain(g) = g`` for g > 0, which is what trec_eval's
  ``ndcg_cut_k`` computes; ``ndcg_exp@k`` uses the exponential gain ``2^g - 1``
  (Burges et al.). For binary judgments the two are identical.
* ``rprec``        = sum_{i<=|R|} rel_i / |R|                (``Rprec``)
* ``bpref``        = (1/|R|) sum over retrieved relevant d of (1 - min(n_d, |R|) / min(N, |R|)),
  ``n_d`` the judged non-relevant documents ranked above d, ``N`` all judged non-relevant
  (grade 0 <= g < level; negative grades count as unjudged) — 1 when ``n_d = 0`` (``bpref``).
  Every measure but ``judged@k`` is 0 when ``|R| = 0``.

Without ``@k`` a measure has no cutoff (the whole ranking counts), except
``precision`` and ``judged`` which require one; ``rprec`` and ``bpref`` take none.

**Which queries are averaged** — three documented rules (:func:`score_run`, ``averaging=``;
:data:`AVERAGING`), stated under every table and stored in results.json:

* ``"bakeoff"`` (default): every judged query (of ``query_ids``, by default every
  query in the qrels) that has at least one relevant judgment. A judged query absent
  from the run scores 0 on every measure. Queries without a relevant judgment are
  excluded from the means and listed in :attr:`Evaluation.excluded` — a query nobody
  could answer says nothing about a system.
* ``"trec_eval"`` (``trec_eval=True``, ``bakeoff eval --trec-eval``; alias ``"intersection"``): the
  queries that are both in the run and in the qrels, *including* queries judged only with grade
  0 (they score 0); judged queries absent from the run are skipped. This is also what
  pytrec_eval evaluates and what BEIR's ``EvaluateRetrieval.evaluate`` and MTEB's retrieval
  evaluator average over.
* ``"trec_eval-c"`` (``complete=True``, trec_eval ``-c``): every query of the qrels counts,
  a missing one as 0.

When every judged query has a relevant document and every arm answers every query, the three
rules give the same numbers.

**Relevance level** — ``relevance_level`` (trec_eval ``-l``, default 1) applies to every
binary measure; a measure may carry its own (``precision@5(rel=2)``, ir_measures'
``P(rel=2)@5``, ranx's ``precision@5-l2``). nDCG and judged@k take none.

Implementation: all measures are computed at once with numpy over the concatenated
rankings (one row per retrieved document, in rank order, grouped by query), so the
evaluation costs a few vectorised passes however many queries there are; memory is
linear in the number of retrieved documents.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from .data.model import Qrels, Run
from .data.trec import RunTable, hash_strings, pair_keys, string_list_layout
from .errors import ConfigError, InputError

__all__ = [
    "AVERAGING",
    "AVERAGING_ALIASES",
    "AVERAGING_TEXT",
    "DEFAULT_MEASURES",
    "LOWER_BOUND_MEASURES",
    "RECALL_LEVELS",
    "Evaluation",
    "FileEvaluation",
    "Measure",
    "PRCurve",
    "averaging_rule",
    "conventions",
    "conventions_line",
    "default_measures",
    "evaluate_files",
    "measures_for",
    "parse_measure",
    "parse_measures",
    "pr_curve",
    "score_run",
    "trec_name",
]

MeasureName = Literal["recall", "precision", "mrr", "ndcg", "ndcg_exp", "hit", "map", "rprec", "bpref", "judged"]
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
    "rprec": "rprec",
    "r-prec": "rprec",
    "bpref": "bpref",
    "judged": "judged",
}
#: ``name``, ``name@k``, or trec_eval's spellings ``name_k`` / ``name.k`` (``ndcg_cut_10``, ``P.5``); a relevance
#: level as ir_measures writes it before the cutoff (``P(rel=2)@5``), as bakeoff prints it after
#: (``precision@5(rel=2)``) or as ranx does (``map@100-l2``).
_PATTERN = re.compile(
    r"^\s*(?P<name>[a-z_-]+?)\s*(?:\(\s*rel\s*=\s*(?P<rel_a>[+-]?\d+)\s*\))?\s*(?:[@._]\s*(?P<k>\d+))?"
    r"\s*(?:\(\s*rel\s*=\s*(?P<rel_b>[+-]?\d+)\s*\)|-l(?P<rel_c>\d+))?\s*$", re.IGNORECASE)
#: Measures defined over the whole ranking only (no cutoff).
_UNCUT = ("rprec", "bpref")
#: Measures a relevance level does not change: nDCG's gains are the grades (trec_eval's ``-l`` leaves
#: ``ndcg_cut`` unchanged, ir_measures' ``nDCG`` takes no ``rel``), judged@k counts any judgment.
_NO_LEVEL = ("ndcg", "ndcg_exp", "judged")


@dataclass(frozen=True, order=True)
class Measure:
    """A metric, its cutoff and, optionally, its own relevance level:
    ``str(Measure("ndcg", 10)) == "ndcg@10"``, ``str(Measure("precision", 5, rel=2)) == "precision@5(rel=2)"``.

    ``rel`` is the minimum grade this measure counts as relevant (ir_measures' ``rel=``, ranx's
    ``-l2``, trec_eval's ``-l`` for one measure); ``None`` uses the evaluation's ``relevance_level``.
    """

    name: MeasureName
    k: int | None = None
    rel: int | None = None

    def __post_init__(self) -> None:
        if self.k is not None and self.k < 1:
            raise ValueError(f"cutoff must be >= 1 in {self}")
        if self.name in _UNCUT and self.k is not None:
            raise ValueError(f"{self.name} takes no cutoff (it is defined over the whole ranking)")
        if self.name in ("precision", "judged") and self.k is None:
            raise ValueError(f"{self.name} needs a cutoff, e.g. {self.name}@10")
        if self.rel is not None and self.name in _NO_LEVEL:
            why = ("its gains are the grades themselves (trec_eval -l leaves it unchanged)" if self.name != "judged"
                   else "it counts any judgment, grade 0 included")
            raise ValueError(f"{self.name} takes no rel=: {why}")

    def __str__(self) -> str:
        base = self.name if self.k is None else f"{self.name}@{self.k}"
        return base if self.rel is None else f"{base}(rel={self.rel})"


def parse_measure(text: str | Measure) -> Measure:
    """Parse ``"ndcg@10"``, ``"P@5"``, ``"recip_rank"``, ``"success@1"`` ... into a Measure.

    A relevance level may follow the name as ir_measures writes it (``"P(rel=2)@5"``,
    ``"RR(rel=2)@10"``), the cutoff as bakeoff prints it (``"precision@5(rel=2)"``), or as ranx
    writes it (``"map@100-l2"``); all three parse to the same measure."""
    if isinstance(text, Measure):
        return text
    m = _PATTERN.match(text)
    name = _ALIASES.get(m.group("name").lower()) if m else None
    if m is None or name is None:
        known = ", ".join(sorted(set(_ALIASES.values())))
        raise ValueError(f"unknown measure {text!r}; known: {known} (with an optional @k and (rel=N))")
    rels = [int(r) for r in (m.group("rel_a"), m.group("rel_b"), m.group("rel_c")) if r is not None]
    if len(rels) > 1:
        raise ValueError(f"measure {text!r}: give the relevance level once")
    return Measure(name, int(m.group("k")) if m.group("k") else None, rels[0] if rels else None)


def parse_measures(texts: Iterable[str | Measure]) -> tuple[Measure, ...]:
    """Parse several measures, dropping duplicates, keeping first-seen order."""
    out: dict[Measure, None] = {}
    for t in texts:
        out[parse_measure(t)] = None
    return tuple(out)


#: Measures that stay meaningful when only *some* relevant documents are known and the rest
#: are unknown rather than wrong (citation-mined labels): they become lower bounds. Precision,
#: MAP and NDCG read unjudged documents as non-relevant, so they are undefined there.
LOWER_BOUND_MEASURES: tuple[MeasureName, ...] = ("recall", "mrr", "hit")


#: The deepest recall cutoff reported by default (BEIR's and MTEB's recall@100), whatever the retrieval depth.
DEEP_RECALL = 100


def _deep(k: int, depth: int) -> list[str]:
    """``recall@min(depth, 100)`` when that is deeper than ``k``: a run retrieved to 1,000 still reports
    recall@100 by default (ask for ``recall@1000`` to see the rest)."""
    cut = min(depth, max(DEEP_RECALL, k))
    return [f"recall@{cut}"] if cut > k else []


def default_measures(k: int, depth: int) -> tuple[Measure, ...]:
    """NDCG, Recall, MRR, Precision, Hit and MAP at ``k``, plus Recall at ``min(depth, 100)`` (when deeper
    than ``k``)."""
    names = [f"ndcg@{k}", f"recall@{k}", f"mrr@{k}", f"precision@{k}", f"hit@{k}", f"map@{k}"]
    return parse_measures(names + _deep(k, depth))


#: The measures reported when none are asked for (``bakeoff run`` at k 10, ``bakeoff eval``, :func:`bakeoff.evaluate`):
#: NDCG, Recall, MRR, Precision, Hit and MAP at 10, and Recall at 100.
DEFAULT_MEASURES: tuple[Measure, ...] = default_measures(10, 100)


def measures_for(label_kind: str, *, k: int, depth: int,
                 requested: Iterable[str | Measure] | None = None) -> tuple[Measure, ...]:
    """The measure policy: which measures a dataset whose labels are of ``label_kind``
    (:attr:`bakeoff.data.model.Dataset.label_kind`) may report.

    * ``"judged"`` (complete judgments): ``requested``, else :func:`default_measures`.
    * ``"citation"`` (lower-bound labels): ``requested`` if every one is in
      :data:`LOWER_BOUND_MEASURES`, else :class:`~bakeoff.errors.ConfigError`; by default
      Recall@k and MRR@k, plus Recall at ``min(depth, 100)`` when deeper.
    """
    if label_kind != "citation":
        return parse_measures(requested) if requested is not None else default_measures(k, depth)
    if requested is None:
        return parse_measures([f"recall@{k}", f"mrr@{k}"] + _deep(k, depth))
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
    queries); ``means[measure]`` is their arithmetic mean. ``rule`` is the averaging rule,
    one of :data:`AVERAGING` (see the module docstring); ``missing_from_run`` lists judged
    queries the run has no results for (scored 0 under bakeoff's rule and with
    ``complete``, skipped under trec_eval's rule without it).
    """

    per_query: Mapping[str, Mapping[str, float]]
    means: Mapping[str, float]
    query_ids: tuple[str, ...]
    missing_from_run: tuple[str, ...] = ()
    excluded: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    rule: str = "bakeoff"

    def to_df(self, *, per_query: bool = True) -> object:
        """A pandas DataFrame: one row per averaged query and one column per measure (``per_query``),
        or one row of means (``per_query=False``); the index is the query id (``"all"`` for the means)."""
        import pandas as pd

        if not per_query:
            return pd.DataFrame([dict(self.means)], index=pd.Index(["all"], name="qid"))
        return pd.DataFrame({m: [v[q] for q in self.query_ids] for m, v in self.per_query.items()},
                            index=pd.Index(list(self.query_ids), name="qid"))


#: The grade of a retrieved document nobody judged (below any relevance level).
_UNJUDGED = np.int64(-(2**62))


@dataclass(frozen=True)
class _Rows:
    """Every evaluated ranking as columns: row ``i`` is the document at 0-based rank
    ``pos[i]`` of query ``group[i]`` (an index into the evaluated queries), with grade
    ``grade[i]`` (:data:`_UNJUDGED` when unjudged). Rows of one query are contiguous and
    in rank order; queries may come in any order."""

    group: np.ndarray
    pos: np.ndarray
    grade: np.ndarray


def _positions(group: np.ndarray) -> np.ndarray:
    """0-based position of each row within its run of equal ``group`` values."""
    n = group.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.ones(n, dtype=bool)
    start[1:] = group[1:] != group[:-1]
    idx = np.arange(n, dtype=np.int64)
    first = np.maximum.accumulate(np.where(start, idx, 0))
    return idx - first


def _rows_from_run(run: Run, queries: Sequence[str], qrels: Qrels, max_docs: int | None) -> _Rows:
    group: list[int] = []
    grade: list[int] = []
    unjudged = int(_UNJUDGED)
    for j, q in enumerate(queries):
        judged = qrels.get(q)
        docs = run.doc_ids(q, max_docs)
        group.extend([j] * len(docs))
        grade.extend(judged.get(d, unjudged) for d in docs)
    g = np.asarray(group, dtype=np.int64)
    return _Rows(g, _positions(g), np.asarray(grade, dtype=np.int64))


def _rows_from_table(table: RunTable, queries: Sequence[str], qrels: Qrels, max_docs: int | None) -> _Rows:
    """The same rows from a columnar run, joined with the qrels on 64-bit (query, doc id) hash keys
    (:func:`~bakeoff.data.trec.pair_keys`), every match confirmed on the ids: no per-line objects."""
    where = {q: j for j, q in enumerate(queries)}
    code_to_j = np.array([where.get(q, -1) for q in table.query_ids], dtype=np.int64)
    order = table.order()
    group = code_to_j[table.query[order]]
    keep = group >= 0
    if not keep.all():
        order, group = order[keep], group[keep]
    pos = _positions(group)
    if max_docs is not None:
        cut = pos < max_docs
        order, group, pos = order[cut], group[cut], pos[cut]
    grade = np.full(group.size, _UNJUDGED, dtype=np.int64)
    code_of = {q: i for i, q in enumerate(table.query_ids)}
    qcode: list[int] = []
    qdocs: list[str] = []
    qgrades: list[int] = []
    for q in queries:
        if q in code_of:
            judged = qrels.get(q)
            qcode.extend([code_of[q]] * len(judged))
            qdocs.extend(judged)
            qgrades.extend(judged.values())
    if qdocs and group.size:
        jkeys = pair_keys(np.asarray(qcode, dtype=np.int64), hash_strings(*string_list_layout(qdocs)))
        srt = np.argsort(jkeys, kind="stable")
        jkeys = jkeys[srt]
        rkeys = pair_keys(table.query[order], table.doc_hash[order])
        # a direct-mapped bit table on the low key bits keeps only the few rows that may be judged
        bits = 1 << max(16, int(jkeys.size * 64).bit_length())
        low = np.uint64(bits - 1)
        present = np.zeros(bits, dtype=bool)
        present[(jkeys & low).astype(np.intp)] = True
        maybe = np.flatnonzero(present[(rkeys & low).astype(np.intp)])
        at = np.minimum(np.searchsorted(jkeys, rkeys[maybe]), jkeys.size - 1)
        hit = maybe[jkeys[at] == rkeys[maybe]]
        at = at[jkeys[at] == rkeys[maybe]]
        if hit.size:
            cand = srt[at]
            same = [a == qdocs[b] for a, b in zip(table.doc_ids(order[hit]), cand.tolist(), strict=True)]
            if not all(same):  # a 64-bit hash collision: join on the strings themselves
                return _rows_by_dict(table, order, group, pos, queries, qrels)
            grade[hit] = np.asarray(qgrades, dtype=np.int64)[cand]
    return _Rows(group, pos, grade)


def _rows_by_dict(table: RunTable, order: np.ndarray, group: np.ndarray, pos: np.ndarray,
                  queries: Sequence[str], qrels: Qrels) -> _Rows:
    ids = table.doc_ids(order)
    judged = [qrels.get(q) for q in queries]
    grade = np.fromiter((judged[j].get(d, _UNJUDGED) for j, d in zip(group.tolist(), ids, strict=True)),
                        dtype=np.int64, count=len(ids))
    return _Rows(group, pos, grade)


def _ideal_dcg(queries: Sequence[str], qrels: Qrels, k: int | None, exponential: bool) -> np.ndarray:
    """IDCG@k of every query: the DCG of its positive grades sorted descending."""
    out = np.zeros(len(queries))
    for j, q in enumerate(queries):
        gains = sorted((g for g in qrels.get(q).values() if g > 0), reverse=True)
        if k is not None:
            gains = gains[:k]
        total = 0.0
        for i, g in enumerate(gains):
            total += _gain(g, exponential) / math.log2(i + 2)
        out[j] = total
    return out


def _gain(grade: int, exponential: bool) -> float:
    if grade <= 0:
        return 0.0
    return float(2**grade - 1) if exponential else float(grade)


def _values(ms: Sequence[Measure], rows: _Rows, queries: Sequence[str], qrels: Qrels,
            level: int) -> dict[str, np.ndarray]:
    """Every measure for every query (arrays aligned with ``queries``), by the formulas of the
    module docstring, each a few vectorised passes over ``rows``. A measure with its own
    relevance level (``Measure.rel``) is computed at that level, the others at ``level``."""
    out: dict[str, np.ndarray] = {}
    levels = dict.fromkeys(level if m.rel is None else m.rel for m in ms)
    for lv in levels:
        out.update(_values_at(tuple(m for m in ms if (level if m.rel is None else m.rel) == lv), rows, queries,
                              qrels, lv))
    return {str(m): out[str(m)] for m in ms}


def _values_at(ms: Sequence[Measure], rows: _Rows, queries: Sequence[str], qrels: Qrels,
               level: int) -> dict[str, np.ndarray]:
    """:func:`_values` of measures sharing one relevance level."""
    nq = len(queries)
    group, pos, grade = rows.group, rows.pos, rows.grade
    rel = grade >= level
    n_rel = np.array([sum(1 for g in qrels.get(q).values() if g >= level) for q in queries], dtype=np.float64)
    safe_rel = np.where(n_rel > 0, n_rel, 1.0)
    rank1 = (pos + 1).astype(np.float64)
    # relevant documents up to and including each row, within its query
    crel = np.cumsum(rel, dtype=np.int64)
    if crel.size:
        start = np.ones(group.size, dtype=bool)
        start[1:] = group[1:] != group[:-1]
        before = np.where(start, crel - rel, 0)
        crel = crel - np.maximum.accumulate(before)
    out: dict[str, np.ndarray] = {}

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(group[mask], minlength=nq).astype(np.float64)

    def total(mask: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.bincount(group[mask], weights=weights[mask], minlength=nq)

    for m in ms:
        top = np.ones(group.size, dtype=bool) if m.k is None else pos < m.k
        name = m.name
        if name in ("ndcg", "ndcg_exp"):
            exp = name == "ndcg_exp"
            g = np.where(grade > 0, grade, 0).astype(np.float64)
            gain = np.exp2(g) - 1.0 if exp else g
            dcg = total(top & (grade > 0), gain / np.log2(rank1 + 1.0))
            idcg = _ideal_dcg(queries, qrels, m.k, exp)
            val = np.divide(dcg, idcg, out=np.zeros(nq), where=idcg > 0)
        elif name == "precision":
            val = count(top & rel) / float(m.k or 1)
        elif name == "recall":
            val = np.where(n_rel > 0, count(top & rel) / safe_rel, 0.0)
        elif name == "hit":
            val = (count(top & rel) > 0).astype(np.float64)
        elif name == "mrr":
            hits = np.flatnonzero(top & rel)
            val = np.zeros(nq)
            if hits.size:
                first_q, first_at = np.unique(group[hits], return_index=True)
                val[first_q] = 1.0 / rank1[hits[first_at]]
        elif name == "map":
            val = np.where(n_rel > 0, total(top & rel, crel / rank1) / safe_rel, 0.0)
        elif name == "judged":
            n_ret = count(np.ones(group.size, dtype=bool))
            shown = np.minimum(n_ret, float(m.k or 1))
            val = np.divide(count(top & (grade != _UNJUDGED)), shown, out=np.zeros(nq), where=shown > 0)
        elif name == "rprec":
            within = pos < n_rel[group] if group.size else top
            val = np.where(n_rel > 0, count(within & rel) / safe_rel, 0.0)
        elif name == "bpref":
            nonrel = (grade >= 0) & ~rel
            n_nonrel = np.array([sum(1 for g in qrels.get(q).values() if 0 <= g < level) for q in queries],
                                dtype=np.float64)
            cnon = np.cumsum(nonrel, dtype=np.int64)
            if cnon.size:
                start = np.ones(group.size, dtype=bool)
                start[1:] = group[1:] != group[:-1]
                cnon = cnon - np.maximum.accumulate(np.where(start, cnon - nonrel, 0))
            r = n_rel[group]
            denom = np.minimum(n_nonrel[group], r)
            frac = np.divide(np.minimum(cnon, r), denom, out=np.zeros(group.size), where=denom > 0)
            term = np.where(cnon > 0, 1.0 - frac, 1.0)
            val = np.where(n_rel > 0, total(rel, term) / safe_rel, 0.0)
        else:  # pragma: no cover - Measure admits no other names
            raise AssertionError(name)
        out[str(m)] = val
    return out


#: The averaging rules (which queries a mean is over; module docstring, "Which queries are averaged").
AVERAGING = ("bakeoff", "trec_eval", "trec_eval-c")
#: Other names of the rules: pytrec_eval, BEIR and MTEB average over the queries of both the run and the
#: qrels, which is trec_eval's rule without ``-c``.
AVERAGING_ALIASES: Mapping[str, str] = {"intersection": "trec_eval", "trec_eval_c": "trec_eval-c",
                                        "complete": "trec_eval-c"}
#: One line per rule, printed under every table that shows means.
AVERAGING_TEXT: Mapping[str, str] = {
    "bakeoff": "bakeoff's rule: judged queries with a relevant document; a query missing from a run scores 0",
    "trec_eval": "trec_eval's rule (pytrec_eval, BEIR, MTEB): queries in both the run and the qrels, "
                 "judged-0-only queries as 0",
    "trec_eval-c": "trec_eval -c: every judged query, judged-0-only and missing queries as 0",
}


def conventions(results: Mapping[str, object]) -> dict[str, object]:
    """How a ``results.json`` / ``report.json`` / ``tune.json`` dict's numbers were computed:
    ``{"averaging", "averaging_text", "relevance_level", "identical_ids_removed", "identical_ids_how",
    "own_document_queries"}`` (files written before they were recorded: bakeoff's rule, level 1)."""
    rule = str(results.get("averaging") or "bakeoff")
    dataset = results.get("dataset")
    ds: Mapping[str, object] = dataset if isinstance(dataset, Mapping) else {}
    ids = ds.get("identical_ids")
    ident: Mapping[str, object] = ids if isinstance(ids, Mapping) else {}
    removed = bool(ident.get("removed", ds.get("ignore_identical_ids", False)))
    level = results.get("relevance_level", 1)
    return {"averaging": rule, "averaging_text": AVERAGING_TEXT.get(rule, rule),
            "relevance_level": int(level) if isinstance(level, (int, float, str)) else 1,
            "identical_ids_removed": removed, "identical_ids_how": ident.get("how"),
            "own_document_queries": ident.get("own_document_queries")}


def conventions_line(results: Mapping[str, object]) -> str:
    """The line every table (terminal, HTML, LaTeX, Markdown) puts above its numbers: the averaging rule
    with its meaning, the relevance level and whether each query's own id was removed, e.g.
    ``averaging: bakeoff (judged queries with a relevant document; a query missing from a run scores 0);
    relevant: grade >= 1; own-id documents kept``."""
    c = conventions(results)
    text = str(c["averaging_text"]).split(": ", 1)[-1]
    ident = "own-id documents removed" if c["identical_ids_removed"] else "own-id documents kept"
    if c["identical_ids_how"] == "auto" and c["identical_ids_removed"]:
        ident += f" (auto: {c['own_document_queries']} queries are documents)"
    return f"averaging: {c['averaging']} ({text}); relevant: grade >= {c['relevance_level']}; {ident}"


def averaging_rule(averaging: str | None = None, *, trec_eval: bool = False, complete: bool = False) -> str:
    """The canonical name of an averaging rule (one of :data:`AVERAGING`), from its name or alias, or
    from the older flags ``trec_eval`` / ``complete`` when ``averaging`` is None."""
    if averaging is None:
        if complete and not trec_eval:
            raise ValueError("complete (-c) belongs to trec_eval's rule; bakeoff's rule always scores missing "
                             "queries 0")
        return "trec_eval-c" if complete else "trec_eval" if trec_eval else "bakeoff"
    name = str(averaging).strip().lower()
    name = AVERAGING_ALIASES.get(name, name)
    if name not in AVERAGING:
        raise ValueError(f"unknown averaging rule {averaging!r}; known: {', '.join(AVERAGING)} "
                         f"(or {', '.join(AVERAGING_ALIASES)})")
    if (trec_eval or complete) and (name, complete) not in (("trec_eval", False), ("trec_eval-c", True),
                                                             ("trec_eval-c", False)):
        raise ValueError(f"averaging={averaging!r} contradicts trec_eval={trec_eval}, complete={complete}")
    return name


def score_run(
    run: Run | RunTable,
    qrels: Qrels,
    measures: Iterable[str | Measure] = DEFAULT_MEASURES,
    *,
    query_ids: Iterable[str] | None = None,
    relevance_level: int = 1,
    averaging: str | None = None,
    trec_eval: bool = False,
    complete: bool = False,
    max_docs: int | None = None,
) -> Evaluation:
    """Score ``run`` (a :class:`~bakeoff.data.model.Run` or a columnar
    :class:`~bakeoff.data.trec.RunTable`) against ``qrels``. Pure: never mutates its inputs.

    ``query_ids`` restricts the candidate queries (e.g. a dataset's); by default every
    query in ``qrels`` is a candidate. Which candidates are averaged follows ``averaging``
    (:data:`AVERAGING`: ``"bakeoff"`` by default, ``"trec_eval"`` = the run ∩ qrels queries as
    trec_eval, pytrec_eval, BEIR and MTEB average, ``"trec_eval-c"`` = trec_eval ``-c``); the older
    flags ``trec_eval=True`` (``complete`` = ``-c``) name the same rules. See the module docstring.
    Under trec_eval's rules a query of a :class:`~bakeoff.data.model.Run` with an empty ranking is
    not "in the run" (a TREC file cannot hold it). ``relevance_level`` is trec_eval's ``-l`` (a measure's own ``rel=`` wins;
    bakeoff's rule keeps the queries with a document at this level), ``max_docs`` its ``-M``.
    Run queries that are not candidates are listed in ``excluded["not_judged"]``.
    """
    ms = parse_measures(measures)
    if max_docs is not None and max_docs < 1:
        raise ValueError("max_docs must be >= 1")
    rule = averaging_rule(averaging, trec_eval=trec_eval, complete=complete)
    candidates = list(qrels) if query_ids is None else [q for q in dict.fromkeys(query_ids)]
    if isinstance(run, RunTable):
        run_queries = run.query_ids
        in_run = set(run_queries)
    else:
        run_queries = tuple(run)
        in_run = {q for q in run_queries if run.get(q)} if rule != "bakeoff" else set(run_queries)
    no_rel: list[str] = []
    if rule != "bakeoff":
        judged = sorted(q for q in candidates if q in qrels)  # trec_eval walks the qrels in qid order
        evaluated = judged if rule == "trec_eval-c" else [q for q in judged if q in in_run]
        missing = tuple(q for q in judged if q not in in_run)
    else:
        evaluated = []
        for q in candidates:
            if any(g >= relevance_level for g in qrels.get(q).values()):
                evaluated.append(q)
            else:
                no_rel.append(q)
        missing = tuple(q for q in evaluated if q not in in_run)
    cand_set = set(candidates)
    not_judged = tuple(q for q in run_queries if q not in cand_set or q not in qrels)
    if isinstance(run, RunTable):
        rows = _rows_from_table(run, evaluated, qrels, max_docs)
    else:
        rows = _rows_from_run(run, evaluated, qrels, max_docs)
    values = _values(ms, rows, evaluated, qrels, relevance_level)
    per_query = {name: dict(zip(evaluated, vals.tolist(), strict=True)) for name, vals in values.items()}
    means = {name: (math.fsum(v.values()) / len(v) if v else float("nan")) for name, v in per_query.items()}
    return Evaluation(
        per_query=per_query,
        means=means,
        query_ids=tuple(evaluated),
        missing_from_run=missing,
        excluded={"no_relevant": tuple(no_rel), "not_judged": not_judged},
        rule=rule,
    )


#: trec_eval's recall levels of ``iprec_at_recall``: 0.0, 0.1, ..., 1.0.
RECALL_LEVELS: tuple[float, ...] = tuple(i / 10.0 for i in range(11))


@dataclass(frozen=True)
class PRCurve:
    """Interpolated precision at the 11 standard recall levels (trec_eval ``iprec_at_recall``).

    ``per_query[qid][j]`` is the query's interpolated precision at recall ``levels[j]``: the highest
    precision at any rank whose recall reaches that level, as trec_eval rounds it (:func:`pr_curve`; 0
    beyond the recall the run reaches, and for a query without relevant document). ``mean[j]`` averages it over ``query_ids`` (the
    averaging rule ``rule``, as :func:`score_run`).
    """

    levels: tuple[float, ...]
    per_query: Mapping[str, tuple[float, ...]]
    mean: tuple[float, ...]
    query_ids: tuple[str, ...]
    rule: str = "bakeoff"


def pr_curve(
    run: Run | RunTable,
    qrels: Qrels,
    *,
    query_ids: Iterable[str] | None = None,
    relevance_level: int = 1,
    averaging: str | None = None,
    max_docs: int | None = None,
    legacy: bool = False,
) -> PRCurve:
    """The 11-point interpolated precision-recall curve of ``run`` (:class:`PRCurve`; trec_eval's
    ``iprec_at_recall``, equal to pytrec_eval's per query). Queries are chosen as :func:`score_run` does
    with the same arguments. With ``R`` relevant documents and the ``c``-th relevant one at rank
    ``i_c``, the interpolated precision at level ``l`` is ``max{c / i_c : c >= n_l}``, 0 when no
    retrieved relevant document qualifies, where ``n_l = max(1, round(l * R))`` (half away from zero) is
    trec_eval 10.0's translation of the level into a number of relevant documents. trec_eval 9 and
    pytrec_eval compute ``n_l = max(1, floor(l * R + 0.9))`` instead ("the cutoffs of historical MAP
    implementations"; trec_eval 10 dropped it as not platform-safe): ``legacy=True`` gives theirs. The
    two differ on some levels of some queries (``R = 474``, level 0.1: the 47th or the 48th relevant
    document)."""
    ev = score_run(run, qrels, ["map"], query_ids=query_ids, relevance_level=relevance_level, averaging=averaging,
                  max_docs=max_docs)
    queries = list(ev.query_ids)
    rows = _rows_from_table(run, queries, qrels, max_docs) if isinstance(run, RunTable) else \
        _rows_from_run(run, queries, qrels, max_docs)
    levels = np.asarray(RECALL_LEVELS)
    out = np.zeros((len(queries), levels.size))
    rel = rows.grade >= relevance_level
    hits = np.flatnonzero(rel)
    n_rel = np.array([sum(1 for g in qrels.get(q).values() if g >= relevance_level) for q in queries], dtype=float)
    if hits.size:
        grp = rows.group[hits]
        # c: the hit's count within its query (hits are in rank order, grouped by query)
        c = _positions(grp) + 1
        prec = c / (rows.pos[hits] + 1.0)
        for j, lv in enumerate(levels):
            x = lv * n_rel
            if legacy:  # trec_eval 9 and pytrec_eval: (long)(l * R + 0.9)
                n_l = np.floor(x + 0.9)
            else:  # trec_eval 10: lround(l * R), half away from zero (exact: x - floor(x) is exact)
                n_l = np.floor(x) + ((x - np.floor(x)) >= 0.5)
            need = np.maximum(n_l, 1.0)[grp]
            ok = c >= need
            if ok.any():
                np.maximum.at(out[:, j], grp[ok], prec[ok])
    per_query = {q: tuple(float(x) for x in out[i]) for i, q in enumerate(queries)}
    mean = tuple(float(math.fsum(out[:, j]) / len(queries)) if queries else math.nan for j in range(levels.size))
    return PRCurve(RECALL_LEVELS, per_query, mean, tuple(queries), ev.rule)


def trec_name(measure: Measure) -> str:
    """trec_eval's name of a measure (``ndcg@10`` -> ``ndcg_cut_10``, ``precision@5`` -> ``P_5``,
    ``mrr`` -> ``recip_rank``, ``hit@5`` -> ``success_5``, ``map@10`` -> ``map_cut_10``,
    ``rprec`` -> ``Rprec``); measures trec_eval lacks (``mrr@k``, ``ndcg_exp``) keep bakeoff's name."""
    k = measure.k
    name = measure.name
    if name == "ndcg":
        return "ndcg" if k is None else f"ndcg_cut_{k}"
    if name == "map":
        return "map" if k is None else f"map_cut_{k}"
    if name == "precision":
        return f"P_{k}"
    if name == "recall" and k is not None:
        return f"recall_{k}"
    if name == "hit" and k is not None:
        return f"success_{k}"
    if name == "mrr" and k is None:
        return "recip_rank"
    return {"rprec": "Rprec", "bpref": "bpref"}.get(name, str(measure))


@dataclass(frozen=True)
class FileEvaluation:
    """What :func:`evaluate_files` found: the evaluation and the warnings to show (with counts)."""

    evaluation: Evaluation
    warnings: tuple[str, ...]
    run_lines: int


def evaluate_files(
    qrels_path: str | os.PathLike[str],
    run_path: str | os.PathLike[str],
    measures: Iterable[str | Measure] = DEFAULT_MEASURES,
    *,
    averaging: str | None = None,
    trec_eval: bool = False,
    complete: bool = False,
    relevance_level: int = 1,
    max_docs: int | None = None,
    allow_duplicate_judgments: bool = False,
) -> FileEvaluation:
    """Read a qrels file and a TREC run (:mod:`bakeoff.data.trec`) and :func:`score_run` the run:
    the whole of ``bakeoff eval``. The run is read as columns and scored without one Python
    object per line. Warnings: an empty run, judged queries missing from the run, run queries
    without judgments, queries without a relevant judgment, repeated judgments overridden,
    extra run columns. Under trec_eval's rule a run sharing no query with the qrels is an
    :class:`~bakeoff.errors.InputError` (trec_eval stops there too). ``averaging`` names the rule
    (:data:`AVERAGING`), or ``trec_eval`` / ``complete`` do."""
    from .data.trec import TrecReadReport, read_qrels, read_run_table

    rule = averaging_rule(averaging, trec_eval=trec_eval, complete=complete)
    trec_eval, complete = rule != "bakeoff", rule == "trec_eval-c"
    qreport = TrecReadReport()
    qrels = read_qrels(qrels_path, allow_duplicates=allow_duplicate_judgments, report=qreport)
    table = read_run_table(run_path)
    ev = score_run(table, qrels, measures, relevance_level=relevance_level, averaging=rule, max_docs=max_docs)
    warnings: list[str] = [*qreport.warnings(str(qrels_path)), *table.report.warnings(str(run_path))]
    n_judged = len(qrels)
    if len(table) == 0:
        warnings.append(f"{run_path}: the run is empty (no result lines): every judged query "
                        + ("scores 0" if (complete or not trec_eval) else "is skipped"))
    elif ev.missing_from_run:
        fate = "skipped, as trec_eval does without -c" if trec_eval and not complete else "scored 0"
        warnings.append(f"{len(ev.missing_from_run)} of {n_judged} judged queries have no results in the run "
                        f"({fate}; e.g. {ev.missing_from_run[0]!r})")
    if ev.excluded.get("not_judged"):
        warnings.append(f"{len(ev.excluded['not_judged'])} run queries have no judgments; not evaluated")
    if ev.excluded.get("no_relevant"):
        warnings.append(f"{len(ev.excluded['no_relevant'])} judged queries have no relevant document; excluded "
                        "from the means (bakeoff's rule; --averaging trec_eval counts them as 0)")
    if trec_eval and not ev.query_ids:
        raise InputError("no query has both results and judgments (trec_eval stops here too); "
                         "-c scores the judged queries 0", path=run_path)
    return FileEvaluation(ev, tuple(warnings), len(table))
