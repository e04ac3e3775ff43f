"""Pooling: the documents several runs put in their top ``k``, and the *holes* among them.

TREC builds its judgments from a pool: the union of the participating runs' top ``k``.
A judgment set that was not built that way (one known answer per synthetic query, a
few labels by hand) leaves documents that an arm ranks high *unjudged*; every measure
then reads them as non-relevant. :func:`holes` lists them.

Conventions:

* ``pool(q) = ∪_arms top_k(arm, q)`` (TREC's depth-k pooling; :func:`pool`, also what ``bakeoff label``
  shows people), with the 1-based rank at which each arm retrieved each document. A hole's ``arms`` are
  those that put it in their top ``k`` and ``best_rank`` its best rank among them.
* A *hole* is a pooled document with no judgment at all for ``q`` (grade 0 counts as
  judged). It is ``disputed`` when some arms of the pool put it in their top ``k`` and
  others did not (the arms disagree about it, so it can change their order); a hole
  every arm agrees on moves every arm alike.
* Order: by query (in ``query_ids`` order), then best rank, then number of arms
  (descending), then doc id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .model import Qrels, Run

__all__ = ["Hole", "holes", "pool"]


@dataclass(frozen=True)
class Hole:
    """An unjudged pooled document of one query."""

    query_id: str
    doc_id: str
    arms: tuple[str, ...]     # the arms with it in their top k, in the runs' order
    best_rank: int            # 1-based
    disputed: bool            # not in every arm's top k

    def to_dict(self) -> dict[str, object]:
        return {"query_id": self.query_id, "doc_id": self.doc_id, "arms": list(self.arms),
                "best_rank": self.best_rank, "disputed": self.disputed}


def pool(runs: Mapping[str, Run], *, k: int, query_ids: Sequence[str]) -> dict[str, dict[str, dict[str, int]]]:
    """``{qid: {doc: {arm: rank}}}``: every document in some arm's top ``k``, in the order first met (runs in
    their order, each by rank), with the 1-based rank of each arm that retrieved it, arms in the runs' order."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for q in query_ids:
        docs: dict[str, dict[str, int]] = {}
        for name, run in runs.items():
            for i, d in enumerate(run.doc_ids(q, k), start=1):
                docs.setdefault(d, {})[name] = i
        out[q] = docs
    return out


def holes(runs: Mapping[str, Run], qrels: Qrels, *, k: int, query_ids: Sequence[str]) -> list[Hole]:
    """The unjudged documents of the pool (see the module docstring)."""
    n_arms = len(runs)
    out: list[Hole] = []
    for q, docs in pool(runs, k=k, query_ids=query_ids).items():
        judged = qrels.get(q)
        rows = [Hole(q, d, tuple(ranks), min(ranks.values()), len(ranks) < n_arms) for d, ranks in docs.items()
                if d not in judged]
        rows.sort(key=lambda h: (h.best_rank, -len(h.arms), h.doc_id))
        out.extend(rows)
    return out
