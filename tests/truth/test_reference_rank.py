"""The reference-rank rule (:mod:`bakeoff.truth.filters.reference_rank`), against hand-computed ranks."""

from __future__ import annotations

import numpy as np
import pytest

from bakeoff.errors import ConfigError
from bakeoff.truth.filters.reference_rank import (
    RankedScore,
    ReferenceRankOptions,
    rank_against,
    rank_all,
    rank_by_pairs,
    reference_rows,
)


def test_rank_counts_ties_against_the_query() -> None:
    assert rank_against(0.9, [0.1, 0.5, 0.8]) == 1
    assert rank_against(0.5, [0.1, 0.5, 0.8]) == 3          # 0.5 ties: counts against, and 0.8 beats it
    assert rank_against(0.5, [0.5 - 5e-7, 0.2]) == 2        # within 1e-6: a tie
    assert rank_against(0.5, [0.5 - 2e-6, 0.2]) == 1
    assert rank_against(-1.0, []) == 1


@pytest.mark.parametrize(("refs", "alpha", "max_rank"), [(99, 0.05, 5), (99, 0.01, 1), (19, 0.05, 1),
                                                         (9, 0.05, 1), (199, 0.05, 10), (99, 0.1, 10)])
def test_max_rank_is_floor_alpha_times_r_plus_one(refs: int, alpha: float, max_rank: int) -> None:
    assert ReferenceRankOptions(references=refs, alpha=alpha).max_rank == max_rank


def test_p_value_and_kept() -> None:
    opts = ReferenceRankOptions()
    assert RankedScore(0.7, 5, 99).p == 0.05 and RankedScore(0.7, 5, 99).kept(opts)
    assert not RankedScore(0.7, 6, 99).kept(opts)
    for bad in ({"references": 0}, {"alpha": 0.0}, {"alpha": 1.0}, {"alpha": float("nan")}):
        with pytest.raises(ConfigError):
            ReferenceRankOptions(**bad)  # type: ignore[arg-type]


def test_reference_rows_are_seeded_distinct_and_leave_out_the_own_document() -> None:
    opts = ReferenceRankOptions(references=4, seed=3)
    rows = reference_rows(10, opts)
    assert rows.tolist() == np.random.default_rng(3).choice(10, size=5, replace=False).tolist()
    assert len(set(rows.tolist())) == 5
    own = int(rows[2])
    scores = np.array([[0.1, 0.2, 0.99, 0.4, 0.5]])  # the own row's score (0.99) must not count
    got = rank_all([own], [0.45], rows, scores, opts)[0]
    assert got.references == 4 and got.rank == 2        # only 0.5 beats 0.45 among the other four
    other = rank_all([99], [0.45], rows, scores, opts)[0]  # own row not drawn: the first 4 count
    assert other.references == 4 and other.rank == 1 + 1  # 0.99 of the first four beats it
    with pytest.raises(ConfigError):
        reference_rows(1, opts)


def test_pairs_path_scores_each_query_against_each_reference() -> None:
    opts = ReferenceRankOptions(references=3, seed=0)
    docs = ["apple pie", "banana bread", "cherry tart", "date loaf", "egg custard"]
    seen: list[tuple[str, str]] = []

    def score(pairs: list[tuple[str, str]]) -> list[float]:
        seen.extend(pairs)
        return [float(len(set(q.split()) & set(d.split()))) for q, d in pairs]

    got = rank_by_pairs(["apple tart", "zebra"], [0, 4], [1.0, 0.0], lambda r: docs[r], opts, len(docs), score)
    refs = reference_rows(len(docs), opts)
    assert len(seen) == 2 * len(refs)
    # hand count: query 1 ("apple tart", own score 1) against the first 3 refs other than row 0
    others = [int(r) for r in refs if r != 0][:3]
    assert got[0].rank == 1 + sum(len({"apple", "tart"} & set(docs[r].split())) >= 1 for r in others)
    assert got[1].rank == 4  # "zebra" scores 0 everywhere: all three ties count against it
