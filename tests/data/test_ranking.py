"""The one tie rule: score desc, then doc id desc (trec_eval)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bakeoff.data.model import Run
from bakeoff.data.ranking import NaNScoreError, rank, rank_rows, top_k, top_k_indices


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


def test_top_k_indices_never_returns_masked_and_refuses_nan():
    ids = ["a", "b", "c", "d"]
    scores = np.array([1.0, -np.inf, np.inf, 0.5])
    assert [ids[i] for i in top_k_indices(scores, ids, 10)] == ["c", "a", "d"]  # +inf first, -inf = masked
    assert top_k_indices(scores, ids, 0).size == 0
    with pytest.raises(NaNScoreError, match="document 'c' has a NaN score"):
        top_k_indices(np.array([1.0, -np.inf, np.nan, 0.5]), ids, 2)


def test_run_from_scores_applies_the_rule():
    run = Run.from_scores("x", {"q": {"a": 1.0, "b": 1.0, "c": 5.0}})
    assert run.doc_ids("q") == ["c", "b", "a"]
    assert run.cut(1).doc_ids("q") == ["c"]


# ---- NaN, ±inf and ties: the case and property tests against a reference sort ----------------------

def reference(pairs):
    """The tie rule written out independently: +inf > finite > -inf, then the doc id descending."""
    return sorted(pairs, key=lambda p: (p[1], p[0]), reverse=True)


def test_nan_is_an_error_naming_the_document():
    with pytest.raises(NaNScoreError, match="document 'n' has a NaN score"):
        rank({"a": 0.1, "b": 0.9, "n": float("nan"), "c": 0.5, "d": 0.7})
    with pytest.raises(NaNScoreError, match="run 'bm25', query 'q1': document 'n' has a NaN score"):
        Run.from_scores("bm25", {"q1": {"a": 0.1, "n": float("nan")}})


def test_inf_ranks_first_and_minus_inf_last():
    got = rank({"a": 0.5, "big": float("inf"), "small": float("-inf"), "b": 1e308})
    assert [d for d, _ in got] == ["big", "b", "a", "small"]


scores_st = st.one_of(
    st.floats(allow_nan=False, width=64),
    st.sampled_from([0.0, -0.0, 1.0, float("inf"), float("-inf")]),  # ties and infinities, often
)
ids_st = st.text(alphabet="abcdXYZ019_-é", min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(ids_st, scores_st, max_size=40), st.randoms(use_true_random=False))
def test_rank_equals_reference_sort_in_any_order(scored, rnd):
    pairs = list(scored.items())
    rnd.shuffle(pairs)
    assert list(rank(pairs)) == reference(pairs)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(ids_st, scores_st, max_size=40), st.integers(1, 45))
def test_top_k_indices_equals_reference(scored, k):
    ids = list(scored)
    scores = np.array([scored[d] for d in ids], dtype=np.float64)
    got = [ids[i] for i in top_k_indices(scores, ids, k)]
    want = [d for d, s in reference(scored.items()) if s > -np.inf][:k]
    assert got == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2", "q3"]), ids_st, scores_st), max_size=60)
       .map(lambda rows: list({(q, d): (q, d, s) for q, d, s in rows}.values())))
def test_rank_rows_equals_rank_per_query(rows):
    qids = sorted({q for q, _, _ in rows})
    group = np.array([qids.index(q) for q, _, _ in rows], dtype=np.int64)
    scores = np.array([s for _, _, s in rows], dtype=np.float64)
    ids = [d for _, d, _ in rows]
    order = rank_rows(group, scores, ids)
    got = [(rows[i][0], rows[i][1], rows[i][2]) for i in order.tolist()]
    want = [(q, d, s) for q in qids for d, s in reference([(d, s) for qq, d, s in rows if qq == q])]
    assert got == want
    # ids by callable (only tied rows asked for) give the same order
    assert rank_rows(group, scores, lambda r: [ids[i] for i in r.tolist()]).tolist() == order.tolist()


def test_rank_rows_refuses_nan():
    with pytest.raises(NaNScoreError, match="'b'"):
        rank_rows(np.array([0, 0]), np.array([1.0, np.nan]), ["a", "b"])
