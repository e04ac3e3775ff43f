"""Leak bins and the leak distribution of people's queries: what a synthetic truth is matched to.

The leak of a query (:func:`bakeoff.truth.filters.leak.leak`, the share of its rare words found in its source
document) is binned into five bins of width 0.2::

    bin 0: [0, 0.2)   bin 1: [0.2, 0.4)   bin 2: [0.4, 0.6)   bin 3: [0.6, 0.8)   bin 4: [0.8, 1]

A **leak target** is five shares, one per bin (summing to 1). Generation records the target in its
provenance; the report weights the synthetic queries to it (:mod:`bakeoff.report.leak_match`), so a
verdict on synthetic truth is read at the leak that people's queries have, not at the generator's.

:data:`JUDGED_LEAK_SHARES` are the shares of the human (query, relevant document) pairs of judged
collections, each query weighted 1 (a query with several relevant documents spreads its weight over
them): how much people's queries copy their answers' words. They differ a lot between collections
(SciFact's claims were written by people reading the cited paper: about uniform; CISI's long
library-science needs were written before any document was seen: three quarters in bin 0), so the
default target, :data:`DEFAULT_LEAK_TARGET`, is their mean: the middle of what is known, stated
rather than tuned. A user with real queries gives their own (``--leak-target``, ``--queries-like``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise

__all__ = ["DEFAULT_LEAK_TARGET", "JUDGED_LEAK_SHARES", "LEAK_BINS", "bin_labels", "leak_bin", "leak_bin_counts",
           "normalise_shares"]

#: Upper edges of the leak bins: [0, .2), [.2, .4), [.4, .6), [.6, .8), [.8, 1].
LEAK_BINS: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8)

#: Per-query leak shares of people's queries on judged collections (``benchmarks/filter_acceptance.py``
#: prints them): SciFact's test and train splits together (1,109 claims with a judgment: 300 test + 809
#: train; BEIR, byte-exact), CISI's 76 judged queries (3,114 pairs).
JUDGED_LEAK_SHARES: Mapping[str, tuple[float, ...]] = {
    "scifact": (0.186, 0.175, 0.237, 0.207, 0.194),
    "cisi": (0.794, 0.158, 0.024, 0.017, 0.007),
}


def normalise_shares(shares: Sequence[float]) -> tuple[float, ...]:
    """``shares`` divided by their sum (a ``ValueError`` when not five non-negative numbers with a positive sum)."""
    s = [float(x) for x in shares]
    if len(s) != len(LEAK_BINS) + 1 or any(not (x >= 0) for x in s) or sum(s) <= 0:
        raise ValueError(f"a leak target is {len(LEAK_BINS) + 1} non-negative shares with a positive sum, got {s}")
    total = sum(s)
    return tuple(x / total for x in s)


#: The default leak target: the mean of :data:`JUDGED_LEAK_SHARES`, rounded to three decimals.
DEFAULT_LEAK_TARGET: tuple[float, ...] = tuple(
    round(sum(v[i] for v in JUDGED_LEAK_SHARES.values()) / len(JUDGED_LEAK_SHARES), 3)
    for i in range(len(LEAK_BINS) + 1))


def leak_bin(value: float) -> int:
    """The bin (0-4) of a leak value: the number of :data:`LEAK_BINS` edges at or below it."""
    return sum(value >= edge for edge in LEAK_BINS)


def leak_bin_counts(values: Iterable[float]) -> list[int]:
    """How many of ``values`` fall in each leak bin (:func:`leak_bin`)."""
    counts = [0] * (len(LEAK_BINS) + 1)
    for v in values:
        counts[leak_bin(v)] += 1
    return counts


def bin_labels() -> list[str]:
    """``["[0, 0.2)", "[0.2, 0.4)", ..., "[0.8, 1]"]``."""
    edges = [0.0, *LEAK_BINS, 1.0]
    return [f"[{lo:g}, {hi:g}{']' if i == len(LEAK_BINS) else ')'}" for i, (lo, hi) in enumerate(pairwise(edges))]
