"""The one tie rule: score desc, then doc id desc (trec_eval)."""

import numpy as np
import pytest

from bakeoff.data.model import Run
from bakeoff.data.ranking import rank, top_k, top_k_indices


def test_rank_orders_by_score_then_doc_id_descending():
    pairs = [("a", 1.0), ("c", 2.0), ("b", 1.0), ("d", 0.5)]
    assert rank(pairs) == (("c", 2.0), ("b", 1.0), ("a", 1.0), ("d", 0.5))


def test_rank_is_independent_of_input_order():
    rng = np.random.default_rng(7)
    pairs = [(f"d{i}", float(rng.integers(0, 3))) for i in range(50)]
    expected = rank(pairs)
    for _ in range(20):
        shuffled = [pairs[i] for i in rng.permutation(len(pairs))]
        assert rank(shuffled) == expected
        assert rank(dict(shuffled)) == expected


def test_doc_id_comparison_is_bytewise_string_not_numeric():
    # "9" > "10" as strings: trec_eval compares docnos with strcmp.
    assert [d for d, _ in rank([("10", 1.0), ("9", 1.0), ("100", 1.0)])] == ["9", "100", "10"]


def test_top_k_cuts_and_allows_k_beyond_length():
    pairs = {"a": 3.0, "b": 2.0}
    assert top_k(pairs, 1) == (("a", 3.0),)
    assert top_k(pairs, 10) == (("a", 3.0), ("b", 2.0))
    with pytest.raises(ValueError):
        top_k(pairs, -1)


@pytest.mark.parametrize("k", [1, 3, 7, 20, 40])
def test_top_k_indices_equals_rank_on_ties(k):
    rng = np.random.default_rng(k)
    ids = [f"doc{rng.integers(0, 10**6)}-{i}" for i in range(30)]
    scores = rng.integers(0, 4, size=30).astype(np.float32)
    idx = top_k_indices(scores, ids, k)
    expected = rank(zip(ids, scores.tolist()))[:k]
    assert [ids[i] for i in idx] == [d for d, _ in expected]


def test_top_k_indices_never_returns_masked_or_nan():
    ids = ["a", "b", "c", "d"]
    scores = np.array([1.0, -np.inf, np.nan, 0.5])
    assert [ids[i] for i in top_k_indices(scores, ids, 10)] == ["a", "d"]
    assert top_k_indices(scores, ids, 0).size == 0


def test_run_from_scores_applies_the_rule():
    run = Run.from_scores("x", {"q": {"a": 1.0, "b": 1.0, "c": 5.0}})
    assert run.doc_ids("q") == ["c", "b", "a"]
    assert run.cut(1).doc_ids("q") == ["c"]
