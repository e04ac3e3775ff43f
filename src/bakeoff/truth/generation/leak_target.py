"""The leak a describe-mode truth should have: ``--leak-mode``, ``--leak-target`` and the per-bin quota.

The leak of a query (:func:`bakeoff.truth.filters.leak.leak`) falls in one of the bins of
:data:`~bakeoff.data.leak_bins.LEAK_BINS`; a leak target gives each bin a share
(:func:`leak_target_shares`), and :func:`leak_quota` turns the shares into the number of kept
queries each bin may hold. :func:`judged_leak_shares` reads the shares off people's judged pairs.
"""

from __future__ import annotations

import math
from pathlib import Path

from ...data.leak_bins import DEFAULT_LEAK_TARGET, LEAK_BINS, leak_bin
from ...data.model import Corpus, Qrels, Queries
from ..filters.leak import leak

__all__ = ["LEAK_MODES", "judged_leak_shares", "leak_quota", "leak_target_shares"]


#: ``--leak-mode``: ``target`` matches the kept queries' leak to a target distribution; ``cut`` rejects
#: (and regenerates) queries above ``leak_threshold``; ``record`` only measures.
LEAK_MODES: tuple[str, ...] = ("target", "cut", "record")


def leak_quota(n: int, target: tuple[float, ...], slack: float) -> list[int]:
    """Kept queries allowed per leak bin: ``ceil(slack * share * n)`` (shares normalised to sum 1)."""
    total = sum(target)
    return [math.ceil(slack * (t / total) * n - 1e-9) for t in target]


def leak_target_shares(spec: str, *, lang: str = "en") -> tuple[float, ...]:
    """The leak target of ``--leak-target``: ``default`` (:data:`~bakeoff.data.leak_bins.DEFAULT_LEAK_TARGET`, the
    mean of judged collections' human queries); ``uniform``; five comma-separated shares (one per bin of
    :data:`LEAK_BINS`); or a judged dataset (a BEIR folder or anything ``--dataset`` takes) whose
    real (query, relevant document) pairs give the shares (:func:`judged_leak_shares`)."""
    from ...errors import ConfigError

    spec = spec.strip()
    if spec == "default":
        return DEFAULT_LEAK_TARGET
    if spec == "uniform":
        return (0.2,) * (len(LEAK_BINS) + 1)
    parts = spec.split(",")
    if len(parts) == len(LEAK_BINS) + 1:
        try:
            return tuple(float(x) for x in parts)
        except ValueError:
            raise ConfigError(f"--leak-target: {spec!r} is not {len(LEAK_BINS) + 1} numbers") from None
    if not Path(spec).exists():
        raise ConfigError(f"--leak-target must be default, uniform, {len(LEAK_BINS) + 1} comma-separated shares or a judged "
                          f"dataset folder, got {spec!r}")
    from ...data.datasets import DatasetSpec, open_dataset

    ds, _ = open_dataset(DatasetSpec(beir=spec), plain=True)
    shares = judged_leak_shares(ds.queries, ds.qrels, ds.corpus, lang=lang)
    if shares is None:
        raise ConfigError(f"--leak-target {spec}: no judged query with a relevant document in its corpus")
    return shares


def judged_leak_shares(queries: Queries, qrels: Qrels, corpus: Corpus, *, lang: str = "en") -> tuple[float, ...] | None:
    """The leak-bin shares of people's (query, relevant document) pairs, each query weighted 1 (a query with ``m``
    relevant documents in the corpus gives each pair ``1/m``): the leak a synthetic query has against its one
    source document, read on human pairs. ``None`` without any such pair."""
    shares = [0.0] * (len(LEAK_BINS) + 1)
    n = 0
    for qid, text in zip(queries.ids, queries.texts, strict=True):
        docs = [d for d in qrels.relevant(qid) if d in corpus]
        if not docs:
            continue
        n += 1
        for d in docs:
            row = corpus.position[d]
            shares[leak_bin(leak(text, f"{corpus.titles[row]} {corpus.texts[row]}", lang=lang))] += 1 / len(docs)
    return tuple(x / n for x in shares) if n else None
