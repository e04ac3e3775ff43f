"""Seeded document sampling (optionally stratified) and the deterministic train/test split.

Stratified allocation: with strata sizes ``N_g`` (rows grouped by a metadata
field, missing values in ``"<missing>"``) and ``n`` wanted, each stratum gets
``floor(n * N_g / N)`` and the remaining slots go to the largest fractional
remainders (ties: stratum name ascending), capped at ``N_g``. Rows within a
stratum are drawn without replacement with the given ``np.random.Generator``;
strata are visited in name order, so the result depends only on the seed.

Eligibility: with ``min_chars > 0`` only documents whose text (whitespace runs collapsed to one
space; the title is not counted) has at least ``min_chars`` characters are sampled — a one-line
docstring such as "Deprecated AST node class." carries no question anyone could ask. The
eligible rows are filtered *before* sampling, so ``min_chars=0`` samples exactly as before.

Split: query ``q`` is in *test* iff ``int(sha256(f"{seed}\\0{q}")[:16], 16) / 2**64 <
test_fraction`` — stable under adding or removing other queries.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ...data.model import Corpus

__all__ = ["MISSING", "eligible_rows", "sample_rows", "sampled_mix", "split_of"]

MISSING = "<missing>"


def eligible_rows(corpus: Corpus, *, min_chars: int = 0) -> np.ndarray:
    """Rows whose whitespace-collapsed text has at least ``min_chars`` characters (all rows for 0)."""
    if min_chars <= 0:
        return np.arange(len(corpus), dtype=np.int64)
    return np.asarray([i for i, t in enumerate(corpus.texts) if len(" ".join(t.split())) >= min_chars],
                      dtype=np.int64)


def _strata(corpus: Corpus, field: str, rows: Iterable[int] | None = None) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i in (range(len(corpus)) if rows is None else rows):
        i = int(i)
        meta = corpus.metadata[i]
        value = meta.get(field) if meta else None
        groups.setdefault(MISSING if value is None else str(value), []).append(i)
    return dict(sorted(groups.items()))


def _allocate(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    total = sum(sizes.values())
    n = min(n, total)
    exact = {g: n * s / total for g, s in sizes.items()}
    alloc = {g: min(sizes[g], int(np.floor(v))) for g, v in exact.items()}
    left = n - sum(alloc.values())
    order = sorted(sizes, key=lambda g: (-(exact[g] - np.floor(exact[g])), g))
    while left > 0:
        progressed = False
        for g in order:
            if left and alloc[g] < sizes[g]:
                alloc[g] += 1
                left -= 1
                progressed = True
        if not progressed:
            break
    return alloc


def sample_rows(corpus: Corpus, n: int, *, rng: np.random.Generator, stratify_by: str | None = None,
                eligible: np.ndarray | None = None) -> np.ndarray:
    """``min(n, len(pool))`` distinct row indices, in sampling order; the pool is ``eligible``
    (see :func:`eligible_rows`) or every row."""
    if eligible is not None and len(eligible) == len(corpus):
        eligible = None  # every row: sample exactly as without the filter
    pool_size = len(corpus) if eligible is None else len(eligible)
    if n <= 0 or pool_size == 0:
        return np.empty(0, dtype=np.int64)
    if stratify_by is None:
        picked = rng.choice(pool_size, size=min(n, pool_size), replace=False).astype(np.int64)
        return picked if eligible is None else np.asarray(eligible, dtype=np.int64)[picked]
    strata = _strata(corpus, stratify_by, eligible)
    alloc = _allocate({g: len(rows) for g, rows in strata.items()}, n)
    chosen: list[int] = []
    for g, rows in strata.items():
        if alloc[g]:
            chosen.extend(int(x) for x in rng.choice(np.asarray(rows), size=alloc[g], replace=False))
    return np.asarray(chosen, dtype=np.int64)


def sampled_mix(corpus: Corpus, rows: Iterable[int], field: str) -> dict[str, dict[str, Any]]:
    """Per stratum: corpus count and share, sampled count and share."""
    strata = _strata(corpus, field)
    rows = list(rows)
    where = {i: g for g, rs in strata.items() for i in rs}
    got = Counter(where[i] for i in rows)
    n, total = max(1, len(rows)), max(1, len(corpus))
    return {g: {"corpus": len(rs), "corpus_share": len(rs) / total, "sampled": got.get(g, 0),
                "sampled_share": got.get(g, 0) / n} for g, rs in strata.items()}


def split_of(qid: str, *, test_fraction: float, seed: int = 0) -> str:
    """``"test"`` or ``"train"`` for ``qid`` (see the module docstring)."""
    h = int(hashlib.sha256(f"{seed}\0{qid}".encode()).hexdigest()[:16], 16)
    return "test" if h / 2**64 < test_fraction else "train"
