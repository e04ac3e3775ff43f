"""Inter-annotator agreement on a judgments database.

* **Cohen's kappa, unweighted** (scikit-learn's ``cohen_kappa_score``), for every pair of
  annotators on the items (query, document pairs) both judged:
  ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the share of items given the same grade
  and ``p_e = sum_g p_A(g) * p_B(g)`` the agreement expected from the two annotators' own
  grade frequencies. Every disagreement counts the same (a 0-vs-3 is no worse than a
  0-vs-1); undefined (reported as such) when ``p_e = 1``, i.e. both used one same grade only.
* **Cohen's kappa, quadratic-weighted** (the same function, ``weights="quadratic"``), beside it:
  ``kappa_w = 1 - sum_ij w_ij O_ij / sum_ij w_ij E_ij`` with ``w_ij = (i - j)^2 / 9`` over the
  grades 0-3, ``O`` the observed and ``E`` the expected (product of marginals) proportions —
  a 0-vs-3 disagreement costs nine times a 0-vs-1.
* **Krippendorff's alpha, ordinal metric** (the ``krippendorff`` package), over all items
  judged by at least two annotators, any number of annotators, missing judgments allowed:
  ``alpha = 1 - D_o / D_e`` where the ordinal distance between grades ``c < k`` is
  ``(sum_{g=c..k} n_g - (n_c + n_k) / 2) ** 2`` with ``n_g`` the number of pairable values
  equal to ``g`` — so a 0-vs-3 disagreement weighs more than a 0-vs-1. Undefined when all
  pairable values are equal.

* **Per annotator** (:func:`annotator_figures`): judgments; how many of each grade; mean
  grade; on the items shared with others, the share given the same grade as each other
  annotator (pooled over the pairs); and the pace, the median time between consecutive
  judgments in minutes, gaps over 30 minutes (a break) left out; and on the *known answers*
  (pooled pairs the dataset's qrels judge, :func:`bakeoff.label.pool.with_gold`), the
  share on the same side of relevance as the known grade (relevant = grade >= 1, the
  qrels' convention) and the share with exactly the known grade.

Counts go with every figure: items, judgments, annotators.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations, pairwise
from pathlib import Path
from typing import Any

import numpy as np

from ..data.judgments import GRADES, connect_readonly, read_judgments
from ..errors import MissingDependencyError

__all__ = ["Agreement", "AnnotatorFigures", "PairAgreement", "agreement", "agreement_of_db", "annotator_figures", "cohen_kappa", "ordinal_alpha"]

_LABELS = [g for g, _ in GRADES]


@dataclass(frozen=True)
class PairAgreement:
    """Two annotators on the items both judged."""

    a: str
    b: str
    items: int
    observed: float | None
    kappa: float | None
    kappa_quadratic: float | None = None


@dataclass(frozen=True)
class AnnotatorFigures:
    """One annotator's figures (module docstring)."""

    annotator: str
    judgments: int
    grades: Mapping[int, int]
    mean_grade: float | None
    shared: int
    agreement: float | None
    pace: float | None
    gold_items: int = 0
    gold_relevance: float | None = None
    gold_exact: float | None = None


@dataclass(frozen=True)
class Agreement:
    """Pairwise kappas, the overall ordinal alpha, and counts."""

    annotators: Mapping[str, int]
    pairs: tuple[PairAgreement, ...]
    alpha: float | None
    alpha_items: int
    alpha_judgments: int
    items: int
    items_multi: int
    notes: tuple[str, ...] = field(default_factory=tuple)
    per_annotator: tuple[AnnotatorFigures, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "annotators": dict(self.annotators),
            "items": self.items,
            "items_judged_by_two_or_more": self.items_multi,
            "cohen_kappa_unweighted": [
                {"a": p.a, "b": p.b, "items": p.items, "observed_agreement": p.observed, "kappa": p.kappa}
                for p in self.pairs],
            "cohen_kappa_quadratic": [
                {"a": p.a, "b": p.b, "items": p.items, "kappa": p.kappa_quadratic} for p in self.pairs],
            "krippendorff_alpha_ordinal": {"alpha": self.alpha, "items": self.alpha_items,
                                           "judgments": self.alpha_judgments},
            "per_annotator": [
                {"annotator": f.annotator, "judgments": f.judgments, "grades": dict(f.grades), "mean_grade": f.mean_grade,
                 "shared_items": f.shared, "agreement_with_others": f.agreement, "median_minutes_per_judgment": f.pace,
                 "known_answers": f.gold_items, "known_answers_same_relevance": f.gold_relevance,
                 "known_answers_same_grade": f.gold_exact}
                for f in self.per_annotator],
            "notes": list(self.notes),
        }


def cohen_kappa(a: Sequence[int], b: Sequence[int], *, weights: str | None = None) -> float | None:
    """Cohen's kappa of two equally long grade lists, unweighted or with ``weights``
    ``"linear"`` / ``"quadratic"`` (None when undefined)."""
    from sklearn.metrics import cohen_kappa_score

    if not a:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = float(cohen_kappa_score(list(a), list(b), labels=_LABELS, weights=weights))
    return None if math.isnan(k) else k


def ordinal_alpha(matrix: np.ndarray) -> float | None:
    """Krippendorff's alpha (ordinal) of an annotators x items matrix (NaN = not judged)."""
    try:
        import krippendorff
    except ImportError:
        raise MissingDependencyError("krippendorff", "label", "Krippendorff's alpha") from None
    if matrix.size == 0 or int((~np.isnan(matrix)).sum(axis=0).max(initial=0)) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            alpha = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal",
                                             value_domain=_LABELS))
        except ValueError:
            return None
    return None if math.isnan(alpha) else alpha


def agreement(judgments: Sequence[tuple[str, str, str, int]]) -> Agreement:
    """Agreement from ``(qid, doc_id, annotator, grade)`` rows (one per annotator and item)."""
    by_item: dict[tuple[str, str], dict[str, int]] = {}
    counts: dict[str, int] = {}
    for qid, doc, who, grade in judgments:
        by_item.setdefault((qid, doc), {})[who] = int(grade)
        counts[who] = counts.get(who, 0) + 1
    names = sorted(counts)
    pairs = []
    notes = []
    for x, y in combinations(names, 2):
        both = [(g[x], g[y]) for g in by_item.values() if x in g and y in g]
        ga, gb = [p[0] for p in both], [p[1] for p in both]
        k = cohen_kappa(ga, gb)
        obs = sum(1 for p, q in both if p == q) / len(both) if both else None
        if both and k is None:
            notes.append(f"kappa {x}/{y} undefined: both gave every shared item the same single grade")
        pairs.append(PairAgreement(x, y, len(both), obs, k, cohen_kappa(ga, gb, weights="quadratic")))
    multi = [item for item, g in by_item.items() if len(g) >= 2]
    matrix = np.full((len(names), len(multi)), np.nan)
    for j, item in enumerate(multi):
        for i, who in enumerate(names):
            if who in by_item[item]:
                matrix[i, j] = by_item[item][who]
    alpha = ordinal_alpha(matrix)
    if multi and alpha is None:
        notes.append("alpha undefined: every pairable judgment has the same grade")
    return Agreement(dict(counts), tuple(pairs), alpha, len(multi), int((~np.isnan(matrix)).sum()), len(by_item),
                     len(multi), tuple(notes))


def annotator_figures(raw: Sequence[tuple[str, str, str, int, str, str]],
                      gold: Mapping[tuple[str, str], int] | None = None) -> tuple[AnnotatorFigures, ...]:
    """Per-annotator figures from ``(qid, doc, annotator, grade, note, judged_at)`` rows and
    the known grades ``gold`` of (qid, doc) pairs."""
    gold = gold or {}
    from datetime import datetime

    by_item: dict[tuple[str, str], dict[str, int]] = {}
    times: dict[str, list[datetime]] = {}
    for q, d, who, g, _n, at in raw:
        by_item.setdefault((q, d), {})[who] = int(g)
        times.setdefault(who, []).append(datetime.fromisoformat(at))
    out = []
    for who in sorted(times):
        mine = [gs[who] for gs in by_item.values() if who in gs]
        same = pairs = 0
        shared = 0
        for gs in by_item.values():
            if who in gs and len(gs) > 1:
                shared += 1
                for other, g in gs.items():
                    if other != who:
                        pairs += 1
                        same += g == gs[who]
        ts = sorted(times[who])
        gaps = [(b - a).total_seconds() / 60 for a, b in pairwise(ts) if (b - a).total_seconds() <= 1800]
        checks = [(gs[who], gold[item]) for item, gs in by_item.items() if who in gs and item in gold]
        out.append(AnnotatorFigures(who, len(mine), {g: mine.count(g) for g in _LABELS},
                                    sum(mine) / len(mine) if mine else None, shared,
                                    same / pairs if pairs else None, float(np.median(gaps)) if gaps else None,
                                    len(checks),
                                    sum((g >= 1) == (k >= 1) for g, k in checks) / len(checks) if checks else None,
                                    sum(g == k for g, k in checks) / len(checks) if checks else None))
    return tuple(out)


def agreement_of_db(db: str | os.PathLike[str]) -> Agreement:
    """:func:`agreement` over the judgments of a database (queries that count only), with
    the per-annotator figures."""
    human = read_judgments(db)
    ag = agreement([(q, d, who, g) for q, d, who, g, _n, _t in human.raw])
    conn = connect_readonly(Path(db))
    try:
        gold = {}
        for q, d, arms in conn.execute("SELECT qid, doc_id, arms FROM pool WHERE arms LIKE '%\"gold\"%'"):
            g = json.loads(arms).get("gold")
            if isinstance(g, int):
                gold[(q, d)] = g
    finally:
        conn.close()
    return replace(ag, per_annotator=annotator_figures(human.raw, gold))
