"""Validate and repair one cluster-mode answer; every repair is counted.

Given the labels shown to the model (``D1..Dm``) and one generated question
with per-document judgments, :func:`repair_question` applies, in order:

1. ``empty_question``   — blank question text: the question is dropped.
2. ``hallucinated_id``  — a judgment naming a label not in the cluster: dropped.
3. ``duplicate_id``     — a second judgment of the same label: dropped (first kept).
4. ``duplicate_rank``   — judgments sharing a rank: each judgment after the first
   with an already-used rank counts once; order is then (rank, answer order)
   and ranks are renumbered 1..k.
5. ``irrelevant_above_relevant`` — an irrelevant judgment ranked above a
   relevant one: relevant judgments are moved first (stable), counted once per
   question.
6. ``left_out``         — a cluster label with no judgment: imputed irrelevant,
   ranked last (in label order).
7. ``no_relevant``      — no relevant document remains: the question is dropped.

Grades come from the rank among relevant documents (:class:`GradeMap`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["REPAIR_KINDS", "GradeMap", "RepairedQuestion", "repair_question"]

REPAIR_KINDS: tuple[str, ...] = ("empty_question", "hallucinated_id", "duplicate_id", "duplicate_rank",
                                 "irrelevant_above_relevant", "left_out", "no_relevant")


@dataclass(frozen=True)
class GradeMap:
    """Grade of the relevant document at 1-based relevant-rank ``r``: ``by_rank[r-1]`` if
    ``r <= len(by_rank)`` else ``default``. Default: rank 1 -> 3, ranks 2-3 -> 2, others -> 1."""

    by_rank: tuple[int, ...] = (3, 2, 2)
    default: int = 1

    def grade(self, r: int) -> int:
        return self.by_rank[r - 1] if 1 <= r <= len(self.by_rank) else self.default

    @classmethod
    def parse(cls, text: str) -> GradeMap:
        """``"3,2,2;1"`` -> by_rank (3, 2, 2), default 1."""
        head, _, tail = text.partition(";")
        by_rank = tuple(int(x) for x in head.split(",") if x.strip())
        return cls(by_rank=by_rank, default=int(tail) if tail.strip() else 1)


@dataclass(frozen=True)
class RepairedQuestion:
    """A valid question: ``order`` lists every cluster label once, relevant ones first."""

    question: str
    order: tuple[str, ...]
    relevant: frozenset[str]
    reasons: dict[str, str]

    def grades(self, grade_map: GradeMap) -> dict[str, int]:
        """label -> grade for the relevant labels."""
        out: dict[str, int] = {}
        r = 0
        for label in self.order:
            if label in self.relevant:
                r += 1
                out[label] = grade_map.grade(r)
        return out

    def negatives(self) -> tuple[str, ...]:
        return tuple(label for label in self.order if label not in self.relevant)


def _field(j: Any, name: str) -> Any:
    return j[name] if isinstance(j, dict) else getattr(j, name)


def repair_question(question: str, judgments: Sequence[Any], labels: Sequence[str]) -> tuple[RepairedQuestion | None, Counter[str]]:
    """Repair one question (see the module docstring). ``judgments`` items have
    ``id``, ``relevant``, ``rank``, ``reason`` (attributes or keys)."""
    counts: Counter[str] = Counter()
    if not question.strip():
        counts["empty_question"] += 1
        return None, counts
    allowed = set(labels)
    seen: set[str] = set()
    kept: list[tuple[int, int, str, bool, str]] = []  # rank, position, label, relevant, reason
    for pos, j in enumerate(judgments):
        label = str(_field(j, "id")).strip()
        if label not in allowed:
            counts["hallucinated_id"] += 1
            continue
        if label in seen:
            counts["duplicate_id"] += 1
            continue
        seen.add(label)
        kept.append((int(_field(j, "rank")), pos, label, bool(_field(j, "relevant")), str(_field(j, "reason"))))
    used_ranks: set[int] = set()
    for rank, *_ in kept:
        if rank in used_ranks:
            counts["duplicate_rank"] += 1
        used_ranks.add(rank)
    kept.sort(key=lambda t: (t[0], t[1]))
    relevant_first = [t for t in kept if t[3]] + [t for t in kept if not t[3]]
    if relevant_first != kept:
        counts["irrelevant_above_relevant"] += 1
    order = [t[2] for t in relevant_first]
    missing = [label for label in labels if label not in seen]
    counts["left_out"] += len(missing)
    order.extend(missing)
    relevant = frozenset(t[2] for t in kept if t[3])
    if not relevant:
        counts["no_relevant"] += 1
        return None, +counts
    reasons = {t[2]: t[4] for t in kept}
    return RepairedQuestion(question.strip(), tuple(order), relevant, reasons), +counts
