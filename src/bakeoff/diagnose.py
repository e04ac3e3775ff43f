"""Per-query diagnostics: where arms differ, not only by how much on average.

Inputs are per-query metric values ``per_query[arm][measure][qid]`` (as in
``results.json``), optionally the runs, the queries and the judgments.

* :func:`metric_matrix` — queries x arms for one measure (rows in ``query_ids`` order);
  :func:`write_matrix` exports every measure as CSV or Parquet, one row per
  ``(query_id, measure)`` and one column per arm.
* :func:`win_tie_loss` — for arms ``a, b``: wins = #{q : a_q > b_q}, ties =
  #{q : |a_q - b_q| <= tol}, losses = #{q : a_q < b_q} (``tol`` = 1e-12 absorbs
  floating-point noise; ``wins + ties + losses = n``).
* :func:`disagreements` — the queries with the largest ``|a_q - b_q|`` (ties broken by
  query id), with their text.
* :func:`churn` — for an arm and its reranked/fused version: per query the relevant
  documents in each top-k; queries that *gained* a relevant document (one in the new
  top k that was not in the old) and queries that *lost* one are counted separately
  (a query can do both), as are queries *rescued* (no relevant in the old top k, some
  in the new) and *broken* (the reverse). The net change hides both directions.
* :func:`decompose` — a delta ``mean(a) - mean(b)`` split by buckets of queries: for
  bucket ``B`` of ``n_B`` queries out of ``N``, ``contribution_B = sum_{q in B}(a_q - b_q) / N``;
  the contributions add up to the overall delta. Bucketings: :func:`relevant_count_buckets`
  (single vs multi-relevant), :func:`length_buckets` (query words), :func:`metadata_buckets`.
* :func:`oracle` — per query the best value over arms; its mean is the head-room a
  perfect per-query router (or an ideal fusion) could reach; ``headroom = oracle - best arm``.
* :func:`coverage` — queries whose relevant documents are not in the corpus at all
  (``uncoverable``: none present; ``partial``: some absent). No arm can retrieve them, so
  they are reported apart from retrieval failures (:func:`failures`: coverable queries
  with no relevant document in an arm's top k).
* :func:`judged_at_k` — per arm the share of its top ``k`` that has any judgment
  (``judged@k`` of :mod:`bakeoff.metrics`, the ir_measures definition), per query and
  mean; :func:`hole_counts` — the unjudged pooled documents (:func:`bakeoff.data.pool.holes`)
  counted per arm and overall.
* :func:`round_trip` — for queries that record their source document (synthetic
  queries: metadata ``source_doc``), the share whose source is in an arm's top ``k``,
  for each ``k`` in ``ks``. A diagnostic of the *queries* (can an arm find the document
  the query was written from?), reported only: filtering on it would favour the arm used.
* :func:`leak_buckets` — each query's leak bucketed by ``edges`` (``[0, 0.1)``,
  ``[0.1, 0.35]``, ``(0.35, 1]`` by default), for :func:`decompose`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Container, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .data.model import Qrels, Queries, Run
from .data.pool import Hole
from .errors import MissingDependencyError

__all__ = [
    "LEAK_EDGES",
    "TIE_TOL",
    "BucketRow",
    "Churn",
    "WinTieLoss",
    "churn",
    "coverage",
    "decompose",
    "disagreements",
    "failures",
    "hole_counts",
    "judged_at_k",
    "leak_bucket_labels",
    "leak_buckets",
    "length_buckets",
    "matrix_rows",
    "metadata_buckets",
    "metric_matrix",
    "oracle",
    "relevant_count_buckets",
    "round_trip",
    "win_tie_loss",
    "win_tie_loss_matrix",
    "write_matrix",
]

#: Two per-query values closer than this count as a tie.
TIE_TOL = 1e-12

PerQuery = Mapping[str, Mapping[str, Mapping[str, float]]]


def metric_matrix(per_query: PerQuery, measure: str, *, query_ids: Sequence[str],
                  arms: Sequence[str] | None = None) -> np.ndarray:
    """``len(query_ids) x len(arms)`` array of ``measure`` (a missing value is a KeyError)."""
    arms = list(arms or per_query)
    out = np.empty((len(query_ids), len(arms)), dtype=float)
    for j, arm in enumerate(arms):
        vals = per_query[arm][measure]
        for i, q in enumerate(query_ids):
            out[i, j] = vals[q]
    return out


def matrix_rows(per_query: PerQuery, *, query_ids: Sequence[str], measures: Sequence[str],
                arms: Sequence[str] | None = None) -> tuple[list[str], list[list[Any]]]:
    """Header and rows of the export: ``query_id, measure, <arm>...``."""
    arms = list(arms or per_query)
    header = ["query_id", "measure", *arms]
    rows: list[list[Any]] = []
    for m in measures:
        mat = metric_matrix(per_query, m, query_ids=query_ids, arms=arms)
        for i, q in enumerate(query_ids):
            rows.append([q, m, *[float(v) for v in mat[i]]])
    return header, rows


def write_matrix(path: str | Path, per_query: PerQuery, *, query_ids: Sequence[str], measures: Sequence[str],
                 arms: Sequence[str] | None = None) -> Path:
    """Write the per-query matrix as ``.csv`` or ``.parquet`` (by suffix), atomically."""
    import csv
    import io

    from ._io import atomic_write_bytes, atomic_write_text

    p = Path(path)
    header, rows = matrix_rows(per_query, query_ids=query_ids, measures=measures, arms=arms)
    if p.suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise MissingDependencyError("pyarrow", None, "Parquet export") from None
        cols: list[Sequence[Any]] = list(zip(*rows)) if rows else [[] for _ in header]
        table = pa.table({h: (pa.array(c, type=pa.string()) if i < 2 else pa.array(c, type=pa.float64()))
                          for i, (h, c) in enumerate(zip(header, cols))})
        buf = pa.BufferOutputStream()
        pq.write_table(table, buf)
        atomic_write_bytes(p, buf.getvalue().to_pybytes())
    else:
        s = io.StringIO()
        w = csv.writer(s, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow([*r[:2], *[repr(v) for v in r[2:]]])
        atomic_write_text(p, s.getvalue())
    return p


@dataclass(frozen=True)
class WinTieLoss:
    """Counts of queries where ``a`` beats, ties or loses to ``b``."""

    a: str
    b: str
    measure: str
    wins: int
    ties: int
    losses: int

    @property
    def n(self) -> int:
        return self.wins + self.ties + self.losses


def win_tie_loss(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *,
                 tol: float = TIE_TOL) -> tuple[int, int, int]:
    """``(wins, ties, losses)`` of ``a`` against ``b`` (see module docstring)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    ties = int(np.sum(np.abs(d) <= tol))
    wins = int(np.sum(d > tol))
    return wins, ties, int(d.size - wins - ties)


def win_tie_loss_matrix(per_query: PerQuery, measure: str, *, query_ids: Sequence[str],
                        arms: Sequence[str] | None = None) -> list[WinTieLoss]:
    """Win/tie/loss for every ordered pair ``(a, b)``, ``a != b``."""
    arms = list(arms or per_query)
    mat = metric_matrix(per_query, measure, query_ids=query_ids, arms=arms)
    out = []
    for i, a in enumerate(arms):
        for j, b in enumerate(arms):
            if i != j:
                out.append(WinTieLoss(a, b, measure, *win_tie_loss(mat[:, i], mat[:, j])))
    return out


def disagreements(per_query: PerQuery, a: str, b: str, measure: str, *, query_ids: Sequence[str],
                  queries: Queries | None = None, n: int = 10) -> list[dict[str, Any]]:
    """The ``n`` queries with the largest ``|a_q - b_q|`` (non-zero only), with their text."""
    va, vb = per_query[a][measure], per_query[b][measure]
    rows = [(q, va[q], vb[q]) for q in query_ids if abs(va[q] - vb[q]) > TIE_TOL]
    rows.sort(key=lambda r: (-abs(r[1] - r[2]), r[0]))
    out = []
    for q, x, y in rows[:n]:
        text = queries[q].text if queries is not None and q in queries else None
        out.append({"query_id": q, "text": text, a: x, b: y, "delta": x - y})
    return out


@dataclass(frozen=True)
class Churn:
    """Movement of relevant documents in the top ``k`` from ``base`` to ``new``."""

    base: str
    new: str
    k: int
    n_queries: int
    gained: int        # queries with >= 1 relevant doc entering the top k
    lost: int          # queries with >= 1 relevant doc leaving the top k
    both: int          # queries that gained one and lost another
    rescued: int       # no relevant doc in base top k -> some in new top k
    broken: int        # some -> none
    docs_gained: int   # relevant (query, doc) pairs entering the top k
    docs_lost: int     # relevant (query, doc) pairs leaving the top k
    gained_queries: tuple[str, ...] = ()
    lost_queries: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["gained_queries"] = list(self.gained_queries)
        d["lost_queries"] = list(self.lost_queries)
        return d


def churn(base: Run, new: Run, qrels: Qrels, *, k: int, query_ids: Sequence[str], base_name: str | None = None,
          new_name: str | None = None, relevance_level: int = 1) -> Churn:
    """Queries that gained or lost a relevant document in the top ``k`` (see module docstring)."""
    gained, lost, both, rescued, broken, dg, dl = [], [], 0, 0, 0, 0, 0
    for q in query_ids:
        rel = qrels.relevant(q, relevance_level=relevance_level)
        old = {d for d in base.doc_ids(q, k) if d in rel}
        cur = {d for d in new.doc_ids(q, k) if d in rel}
        g, lo = cur - old, old - cur
        dg += len(g)
        dl += len(lo)
        if g:
            gained.append(q)
        if lo:
            lost.append(q)
        if g and lo:
            both += 1
        if not old and cur:
            rescued += 1
        if old and not cur:
            broken += 1
    return Churn(base_name or base.name, new_name or new.name, k, len(query_ids), len(gained), len(lost), both,
                 rescued, broken, dg, dl, tuple(gained), tuple(lost))


@dataclass(frozen=True)
class BucketRow:
    """One bucket of a decomposed delta ``a - b``."""

    bucket: str
    n: int
    mean_a: float
    mean_b: float
    delta: float          # mean over the bucket of a_q - b_q
    contribution: float   # sum over the bucket of (a_q - b_q) / N; rows add up to the overall delta
    wins: int
    ties: int
    losses: int


def decompose(per_query: PerQuery, a: str, b: str, measure: str, *, buckets: Mapping[str, str],
              query_ids: Sequence[str]) -> list[BucketRow]:
    """Split ``mean(a) - mean(b)`` over ``buckets`` (qid -> label); rows sorted by label."""
    va, vb = per_query[a][measure], per_query[b][measure]
    n_total = len(query_ids)
    groups: dict[str, list[str]] = {}
    for q in query_ids:
        groups.setdefault(str(buckets.get(q, "(none)")), []).append(q)
    rows = []
    for label in sorted(groups, key=_natural):
        qs = groups[label]
        x = np.array([va[q] for q in qs])
        y = np.array([vb[q] for q in qs])
        w, t, lo = win_tie_loss(x, y)
        rows.append(BucketRow(label, len(qs), float(x.mean()), float(y.mean()), float((x - y).mean()),
                              float((x - y).sum() / n_total), w, t, lo))
    return rows


def _natural(label: str) -> tuple[Any, ...]:
    m = re.match(r"^(\d+)", label)
    return (0, int(m.group(1)), label) if m else (1, 0, label)


def relevant_count_buckets(qrels: Qrels, query_ids: Sequence[str], *, relevance_level: int = 1) -> dict[str, str]:
    """``"single-relevant"`` or ``"multi-relevant"`` per query."""
    return {q: ("single-relevant" if len(qrels.relevant(q, relevance_level=relevance_level)) == 1
                else "multi-relevant") for q in query_ids}


_WORD = re.compile(r"\w+", re.UNICODE)


def length_buckets(queries: Queries, query_ids: Sequence[str], *,
                   edges: Sequence[int] = (5, 10, 15, 20)) -> dict[str, str]:
    """Query length in words (``\\w+`` tokens) bucketed by ``edges``: ``1-5``, ``6-10``, ..., ``21+``."""
    labels = []
    lo = 1
    for e in edges:
        labels.append((e, f"{lo}-{e} words"))
        lo = e + 1
    out = {}
    for q in query_ids:
        n = len(_WORD.findall(queries[q].text)) if q in queries else 0
        out[q] = next((lab for e, lab in labels if n <= e), f"{lo}+ words")
    return out


def metadata_buckets(queries: Queries, query_ids: Sequence[str], field: str) -> dict[str, str]:
    """The value of a query metadata field per query (``(missing)`` when absent)."""
    out = {}
    for q in query_ids:
        meta = queries[q].metadata if q in queries else {}
        v = meta.get(field) if isinstance(meta, Mapping) else None
        out[q] = "(missing)" if v is None else str(v)
    return out


def bucketable_metadata_fields(queries: Queries, query_ids: Sequence[str], *, max_values: int = 20) -> list[str]:
    """Metadata fields with 2..``max_values`` distinct scalar values over the queries."""
    seen: dict[str, set[str]] = {}
    for q in query_ids:
        if q not in queries:
            continue
        meta = queries[q].metadata
        if not isinstance(meta, Mapping):
            continue
        for k, v in meta.items():
            if isinstance(v, (str, int, bool)) or v is None:
                seen.setdefault(str(k), set()).add(str(v))
    return sorted(k for k, vs in seen.items() if 2 <= len(vs) <= max_values)


def oracle(per_query: PerQuery, measure: str, *, query_ids: Sequence[str],
           arms: Sequence[str] | None = None) -> dict[str, Any]:
    """The per-query best arm: oracle mean, head-room over the best single arm, sole-best counts."""
    arms = list(arms or per_query)
    mat = metric_matrix(per_query, measure, query_ids=query_ids, arms=arms)
    if mat.size == 0:
        return {"measure": measure, "mean": math.nan, "best_arm": None, "best_mean": math.nan, "headroom": math.nan,
                "sole_best": {}, "all_zero": 0}
    best = mat.max(axis=1)
    means = mat.mean(axis=0)
    j = int(np.argmax(means))
    is_best = np.abs(mat - best[:, None]) <= TIE_TOL
    sole = {arms[c]: int(np.sum(is_best[:, c] & (is_best.sum(axis=1) == 1))) for c in range(len(arms))}
    return {
        "measure": measure,
        "mean": float(best.mean()),
        "best_arm": arms[j],
        "best_mean": float(means[j]),
        "headroom": float(best.mean() - means[j]),
        "sole_best": sole,
        "all_zero": int(np.sum(best <= TIE_TOL)),
        "per_query": {q: float(v) for q, v in zip(query_ids, best)},
    }


def coverage(qrels: Qrels, corpus_ids: Container[str], *, query_ids: Sequence[str],
             relevance_level: int = 1) -> dict[str, Any]:
    """Queries whose relevant documents are absent from the corpus.

    ``corpus_ids`` is anything supporting ``doc_id in corpus_ids`` (a Corpus, a set).
    """
    uncoverable, partial = [], []
    missing_docs = 0
    for q in query_ids:
        rel = qrels.relevant(q, relevance_level=relevance_level)
        absent = [d for d in rel if d not in corpus_ids]
        missing_docs += len(absent)
        if rel and len(absent) == len(rel):
            uncoverable.append(q)
        elif absent:
            partial.append(q)
    return {"n_queries": len(query_ids), "uncoverable": uncoverable, "partial": partial,
            "missing_relevant_docs": missing_docs}


def failures(run: Run, qrels: Qrels, *, k: int, query_ids: Sequence[str], exclude: Sequence[str] = (),
             relevance_level: int = 1) -> list[str]:
    """Queries (not in ``exclude``, e.g. the uncoverable ones) with no relevant document in the top ``k``."""
    skip = set(exclude)
    out = []
    for q in query_ids:
        if q in skip:
            continue
        rel = qrels.relevant(q, relevance_level=relevance_level)
        if not any(d in rel for d in run.doc_ids(q, k)):
            out.append(q)
    return out


def judged_at_k(runs: Mapping[str, Run], qrels: Qrels, *, k: int, query_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{arm: {"mean", "per_query": {qid: value}}}`` of ``judged@k`` (see the module docstring).

    A query missing from a run scores 0 (nothing retrieved, nothing judged).
    """
    from .metrics import score_run

    out: dict[str, dict[str, Any]] = {}
    name = f"judged@{k}"
    for arm, run in runs.items():
        ev = score_run(run, qrels, [name], query_ids=query_ids, relevance_level=-(2**31))
        vals = {q: float(ev.per_query[name].get(q, 0.0)) for q in query_ids}
        out[arm] = {"mean": float(np.mean(list(vals.values()))) if vals else math.nan, "per_query": vals}
    return out


def hole_counts(holes: Sequence[Hole], arms: Sequence[str], *, k: int) -> dict[str, Any]:
    """Counts of unjudged pooled documents: ``total`` (query, document) pairs, ``disputed``
    ones (not in every arm's top ``k``), ``queries`` with at least one, and ``per_arm``:
    how many of each arm's top-``k`` documents are holes (``disputed_per_arm``: of those, disputed)."""
    per_arm = {a: 0 for a in arms}
    disputed_per_arm = {a: 0 for a in arms}
    for h in holes:
        for a in h.arms:
            per_arm[a] = per_arm.get(a, 0) + 1
            if h.disputed:
                disputed_per_arm[a] = disputed_per_arm.get(a, 0) + 1
    return {"k": k, "total": len(holes), "disputed": sum(1 for h in holes if h.disputed),
            "queries": len({h.query_id for h in holes}), "per_arm": per_arm, "disputed_per_arm": disputed_per_arm}


def round_trip(runs: Mapping[str, Run], queries: Queries, *, query_ids: Sequence[str], ks: Sequence[int] = (10, 100),
               field: str = "source_doc") -> dict[str, Any]:
    """Share of queries whose source document (metadata ``field``) is in each arm's top ``k``.

    Returns ``{"n": queries with a source, "ks": [...], "depth": {arm: longest ranking},
    "arms": {arm: {"top10": share, ...}}}``; ``n == 0`` (no query records a source) gives
    empty ``arms``. A run shorter than ``k`` counts what it returned.
    """
    src: dict[str, str] = {}
    for q in query_ids:
        if q in queries:
            meta = queries[q].metadata
            v = meta.get(field) if isinstance(meta, Mapping) else None
            if isinstance(v, str) and v:
                src[q] = v
    out: dict[str, Any] = {"n": len(src), "ks": list(ks), "field": field, "depth": {}, "arms": {}}
    if not src:
        return out
    for arm, run in runs.items():
        out["depth"][arm] = max((len(run.get(q)) for q in src), default=0)
        row = {}
        for k in ks:
            row[f"top{k}"] = sum(1 for q, d in src.items() if d in run.doc_ids(q, k)) / len(src)
        out["arms"][arm] = row
    return out


#: Leak bucket edges: ``[0, 0.1)``, ``[0.1, 0.35]``, ``(0.35, 1]`` (0.35 is the generator's default threshold).
LEAK_EDGES: tuple[float, ...] = (0.1, 0.35)


def leak_bucket_labels(edges: Sequence[float] = LEAK_EDGES) -> list[str]:
    """The bucket labels of :func:`leak_buckets` in increasing leak order, then ``(no leak value)``."""
    e = sorted(float(x) for x in edges)
    if not e:
        raise ValueError("leak buckets need at least one edge")
    lows = [0.0, *e[:-1]]
    labels = [f"[{lo:g}, {hi:g})" for lo, hi in zip(lows, e)]
    labels[-1] = labels[-1][:-1] + "]"  # the last edge (the filter threshold) closes its bucket
    return [*labels, f"({e[-1]:g}, 1]", "(no leak value)"]


def leak_buckets(leak: Mapping[str, float], query_ids: Sequence[str], *,
                 edges: Sequence[float] = LEAK_EDGES) -> dict[str, str]:
    """Bucket label of each query's leak: ``[0, e1)``, ``[e1, e2]``, ``(e2, 1]`` (the middle
    bucket is closed so that a threshold ``e2`` keeps its queries; more edges give more
    ``[e_i, e_{i+1})`` buckets before the last). Queries without a value: ``(no leak value)``."""
    e = sorted(float(x) for x in edges)
    *labels, last, _ = leak_bucket_labels(e)
    out = {}
    for q in query_ids:
        v = leak.get(q)
        if v is None or not math.isfinite(v):
            out[q] = "(no leak value)"
        elif v > e[-1]:
            out[q] = last
        else:
            out[q] = labels[next((i for i, hi in enumerate(e[:-1]) if v < hi), len(e) - 1)]
    return out
