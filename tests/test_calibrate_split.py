"""``split_by_document``: queries that share a document never sit on both sides; the split is seeded."""

from __future__ import annotations

import numpy as np
import pytest

from bakeoff.calibration_pipeline import split_by_document


def _docs() -> dict[str, list[str]]:
    # q0,q1 share d1; q2 shares d2 with q1 (so q0,q1,q2 form one group); q3..q9 stand alone; q10 shares d9 with q9
    docs = {"q0": ["d0", "d1"], "q1": ["d1", "d2"], "q2": ["d2"]}
    docs.update({f"q{i}": [f"d{i}"] for i in range(3, 10)})
    docs["q10"] = ["d9"]
    return docs


def test_groups_connected_by_documents_stay_on_one_side_for_every_seed() -> None:
    docs = _docs()
    qids = list(docs)
    for seed in range(20):
        train, test = split_by_document(qids, docs, train_fraction=0.5, seed=seed)
        assert sorted(train + test, key=qids.index) == qids and not set(train) & set(test)
        assert {d for q in train for d in docs[q]}.isdisjoint({d for q in test for d in docs[q]})
        assert len({q in train for q in ("q0", "q1", "q2")}) == 1 and ("q9" in train) == ("q10" in train)
        # 8 groups: {q0,q1,q2}, q3..q8, {q9,q10}; half of them train, in qids order
        assert len({"d0" if q in ("q0", "q1", "q2") else min(docs[q]) for q in train}) == 4
        assert train == [q for q in qids if q in set(train)]


def test_the_permutation_is_numpy_default_rng_over_groups_sorted_by_smallest_document() -> None:
    docs = _docs()
    labels = ["d0", "d3", "d4", "d5", "d6", "d7", "d8", "d9"]  # smallest document of each group, sorted
    members = {"d0": ["q0", "q1", "q2"], "d9": ["q9", "q10"]}
    for seed in (0, 7):
        perm = np.random.default_rng(seed).permutation(len(labels))
        want = {q for i in perm[:round(0.25 * 8)] for q in members.get(labels[i], [f"q{labels[i][1:]}"])}
        train, _ = split_by_document(list(docs), docs, train_fraction=0.25, seed=seed)
        assert set(train) == want
    a = split_by_document(list(docs), docs, train_fraction=0.5, seed=3)
    assert a == split_by_document(list(docs), docs, train_fraction=0.5, seed=3)
    assert a != split_by_document(list(docs), docs, train_fraction=0.5, seed=4)


@pytest.mark.parametrize(("fraction", "n_train_groups"), [(0.0, 0), (0.1, 1), (0.5, 4), (0.99, 7)])
def test_fraction_counts_groups_and_always_leaves_a_test_group(fraction: float, n_train_groups: int) -> None:
    docs = {f"q{i}": [f"d{i}"] for i in range(8)}
    train, test = split_by_document(list(docs), docs, train_fraction=fraction, seed=1)
    assert len(train) == n_train_groups and len(test) == 8 - n_train_groups
