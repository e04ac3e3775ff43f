"""Retrieval over passages (``bakeoff run --chunk``): arms index and search passages, and the runner
gets document runs back.

:func:`chunked_corpus` chunks a corpus as :mod:`bakeoff.data.chunking` says, with the tokenizer the spec names
(:func:`bakeoff.models.tokenizer.load_tokenizer`) when it counts tokens.

**Depth** (:func:`search_passages`): an arm is asked for ``k`` passages, starting at
``depth * ceil(passages / documents)``; while a query has fewer than ``depth`` documents after
aggregation (:func:`bakeoff.data.chunking.aggregate_run`) although the arm returned all ``k``
passages asked, ``k`` doubles (up to every passage). So ``depth`` documents remain wherever the
corpus has them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..arms.base import Arm, ArmContext
from ..data.chunking import ChunkedCorpus, ChunkSpec, aggregate_run, chunk_corpus
from ..data.model import Corpus, Queries, Run

__all__ = ["chunked_corpus", "search_passages"]


def chunked_corpus(corpus: Corpus, spec: ChunkSpec) -> ChunkedCorpus:
    """``corpus`` in passages by ``spec``, with the tokenizer ``spec.tokenizer`` names for ``tokens``."""
    tokenizer = None
    if spec.unit == "tokens":
        from ..models.tokenizer import load_tokenizer

        tokenizer = load_tokenizer(spec.tokenizer)
    return chunk_corpus(corpus, spec, tokenizer=tokenizer)


def _first_k(chunked: ChunkedCorpus, depth: int) -> int:
    """The first number of passages asked for ``depth`` documents."""
    per_doc = math.ceil(len(chunked.passages) / max(1, len(chunked.documents)))
    return min(len(chunked.passages), max(1, depth * per_doc))


def search_passages(ctx: ArmContext, chunked: ChunkedCorpus, arm: Arm, queries: Queries, *, depth: int,
                    mask: Mapping[str, np.ndarray] | None = None) -> tuple[Run, Run, int]:
    """``arm``'s document run at ``depth`` over the passages in ``ctx`` (whose corpus must be
    ``chunked.passages``), with the passage run and the passage depth ``k`` it took (see the module
    docstring; ``k`` is recorded in ``chunked.passage_depths``). Each passage search goes through
    ``ctx.search`` (cached, timed)."""
    if ctx.corpus is not chunked.passages and ctx.corpus.fingerprint() != chunked.passages.fingerprint():
        raise ValueError("search_passages needs a context over the chunked corpus's passages")
    pmask = chunked.expand_mask(mask)
    k = _first_k(chunked, depth)
    total = len(chunked.passages)
    while True:
        prun = ctx.search(arm, queries, k=k, mask=pmask)
        drun = aggregate_run(prun, chunked.passage_doc, how=chunked.spec.aggregate, k=depth)
        short = any(len(drun.get(q)) < depth and len(prun.get(q)) >= k for q in queries.ids)
        if not short or k >= total:
            break
        k = min(total, 2 * k)
    chunked.passage_depths[arm.name] = k
    return drun, prun, k
