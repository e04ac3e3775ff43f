"""Dev splits: parsing, the refusal of the test split, leak detection, seeded group slices and folds."""

from __future__ import annotations

import pytest

from bakeoff.errors import ConfigError
from bakeoff.tune.devsplit import DevSplit, assign_folds, leaks, slice_queries

TEXTS = {f"q{i}": f"query number {i}" for i in range(20)}
TEXTS["q19"] = "Query number 3!"  # a near-duplicate of q3 (same text after normalisation)


def test_parse_and_refuse():
    assert DevSplit.parse("train") == DevSplit("split", split="train")
    assert DevSplit.parse("slice:0.25") == DevSplit("slice", fraction=0.25)
    assert DevSplit.parse("kfold:5") == DevSplit("kfold", folds=5)
    for bad, msg in [("slice:1.5", "strictly between"), ("kfold:1", "at least 2"), ("slice:x", "expected"),
                     ("", "expected")]:
        with pytest.raises(ConfigError, match=msg):
            DevSplit.parse(bad)
    with pytest.raises(ConfigError, match="shares the split 'test'"):
        DevSplit.parse("test").check_against("test")
    with pytest.raises(ConfigError, match="shares the split 'test'"):
        DevSplit.parse("train+test").check_against("test")
    DevSplit.parse("train").check_against("test")
    DevSplit.parse("kfold:3").check_against("test")


def test_leaks_by_id_and_by_normalised_text():
    dev = {"a": "Does ACE2 bind?", "b": "something else", "t1": "other"}
    test = {"t1": "a test query", "t2": "does  ace2 bind"}
    assert leaks(dev, test) == [("a", "t2", "same text after normalisation"), ("t1", "t1", "same query id")]
    assert leaks({"x": "unrelated"}, test) == []


def test_slices_are_seeded_disjoint_and_keep_duplicates_together():
    ids = list(TEXTS)
    dev, test = slice_queries(ids, TEXTS, fraction=0.3, seed=1)
    assert set(dev).isdisjoint(test) and set(dev) | set(test) == set(ids)
    assert (("q3" in dev) == ("q19" in dev))  # near-duplicates on the same side
    assert (dev, test) == slice_queries(ids, TEXTS, fraction=0.3, seed=1)
    assert dev != slice_queries(ids, TEXTS, fraction=0.3, seed=2)[0]
    assert len(dev) in (5, 6, 7)  # round(0.3 * 19 groups) = 6 groups, one of which may hold 2 queries
    with pytest.raises(ConfigError, match="empty dev or test"):
        slice_queries(ids[:2], TEXTS, fraction=0.1, seed=0)


def test_folds_partition_by_groups():
    ids = list(TEXTS)
    folds = assign_folds(ids, TEXTS, folds=4, seed=0)
    assert set(folds) == set(ids) and set(folds.values()) == {0, 1, 2, 3}
    assert folds["q3"] == folds["q19"]
    sizes = sorted(list(folds.values()).count(f) for f in range(4))
    assert sizes[-1] - sizes[0] <= 2  # 19 groups over 4 folds: 4 or 5 groups each (one group has 2 queries)
    with pytest.raises(ConfigError, match="only 2 distinct"):
        assign_folds(["a", "b"], {"a": "x", "b": "y"}, folds=3, seed=0)
