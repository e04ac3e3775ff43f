"""Pooling: the documents a person judges for a query are the union of the pool arms' top
``depth`` (TREC-style depth-k pooling), shown in a seeded random order so that the order
does not reveal which arm found a document or how high it ranked.

Per query: the union of each arm's first ``depth`` documents (package tie rule order),
sorted by document id, then permuted with ``numpy.random.default_rng(s)`` where ``s`` is the
first 8 bytes of sha256(``"{seed}:pool:{qid}"``) — so a query's order depends only on the
seed, the query id and its pooled set. Each pooled document records, for provenance only,
the 1-based rank at which each arm retrieved it (never shown to annotators).

Runs come from :class:`~bakeoff.runner.context.Context` (memoised, cached and timed like
any bake-off run), so pooling after ``bakeoff run`` with the same arms re-searches nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..data.model import Queries

if TYPE_CHECKING:
    from ..arms.base import Arm
    from ..runner.context import Context

__all__ = ["PooledDoc", "pool_queries", "shuffle_seed"]


@dataclass(frozen=True)
class PooledDoc:
    """A pooled document: its id and the rank each arm retrieved it at."""

    doc_id: str
    ranks: Mapping[str, int]


def shuffle_seed(seed: int, qid: str) -> int:
    """The per-query shuffle seed (see module docstring)."""
    return int.from_bytes(hashlib.sha256(f"{seed}:pool:{qid}".encode()).digest()[:8], "big")


def pool_queries(arms: Sequence[Arm], queries: Queries, *, ctx: Context, depth: int,
                 seed: int) -> dict[str, list[PooledDoc]]:
    """qid -> the pooled documents in display order (module docstring)."""
    if not arms:
        raise ValueError("pooling needs at least one arm")
    runs = [(arm.name, ctx.search(arm, queries, k=depth)) for arm in arms]
    out: dict[str, list[PooledDoc]] = {}
    for qid in queries.ids:
        union: dict[str, dict[str, int]] = {}
        for name, run in runs:
            for rank, doc_id in enumerate(run.doc_ids(qid, depth), start=1):
                union.setdefault(doc_id, {})[name] = rank
        ids = sorted(union)
        perm = np.random.default_rng(shuffle_seed(seed, qid)).permutation(len(ids))
        out[qid] = [PooledDoc(ids[i], union[ids[i]]) for i in perm]
    return out
