"""Search spaces: grid order, seeded random draws, refusals (empty grid, unknown option)."""

from __future__ import annotations

import numpy as np
import pytest

from bakeoff.arms.fusion import RRFArm
from bakeoff.arms.lexical import BM25Arm
from bakeoff.arms.registry import arm_type_info
from bakeoff.errors import ConfigError
from bakeoff.tune.space import Range, SearchSpace, check_options, parse_param


def test_grid_order_is_product_last_option_fastest():
    s = SearchSpace.build({"k1": [0.9, 1.2], "b": [0.3, 0.75, 1.0]})
    assert s.settings() == [{"k1": 0.9, "b": 0.3}, {"k1": 0.9, "b": 0.75}, {"k1": 0.9, "b": 1.0},
                            {"k1": 1.2, "b": 0.3}, {"k1": 1.2, "b": 0.75}, {"k1": 1.2, "b": 1.0}]


def test_random_search_is_seeded_and_drawn_as_documented():
    s = SearchSpace.build({"k1": {"low": 0.5, "high": 2.0}, "depth": {"low": 10, "high": 200},
                           "method": ["lucene", "robertson"]}, search="random", trials=5, seed=7)
    got = s.settings()
    rng = np.random.default_rng(7)  # the documented draw order: option by option, trial by trial
    want = []
    for _ in range(5):
        want.append({"k1": float(rng.uniform(0.5, 2.0)), "depth": int(rng.integers(10, 201)),
                     "method": ["lucene", "robertson"][int(rng.integers(2))]})
    assert got == want and got == SearchSpace.build(
        {"k1": {"low": 0.5, "high": 2.0}, "depth": {"low": 10, "high": 200}, "method": ["lucene", "robertson"]},
        search="random", trials=5, seed=7).settings()
    assert all(isinstance(x["depth"], int) for x in got)
    log = SearchSpace.build({"k": Range(1.0, 100.0, log=True)}, search="random", trials=50, seed=0).settings()
    assert all(1.0 <= x["k"] <= 100.0 for x in log) and len(log) == 50
    # a setting drawn twice is kept once
    dup = SearchSpace.build({"m": ["a", "b"]}, search="random", trials=20, seed=0).settings()
    assert sorted(x["m"] for x in dup) == ["a", "b"]


def test_parse_param():
    assert parse_param("k1=0.9,1.2") == ("k1", [0.9, 1.2])
    assert parse_param("method=lucene,robertson") == ("method", ["lucene", "robertson"])
    assert parse_param("weights=2+1,1+1") == ("weights", ["2+1", "1+1"])
    assert parse_param("k=1:100:log") == ("k", Range(1, 100, log=True))
    assert parse_param("b=0.1:0.9") == ("b", Range(0.1, 0.9))
    assert parse_param("k1=") == ("k1", [])


@pytest.mark.parametrize("params,kw,msg", [
    ({}, {}, "no parameter to tune"),
    ({"k1": []}, {}, "has no values \\(an empty grid\\)"),
    ({"k1": {"low": 0.5, "high": 2.0}}, {}, "a grid needs a list"),
    ({"k1": {"low": 2.0, "high": 0.5}}, {"search": "random", "trials": 3}, "need low <= high"),
    ({"k1": [1.0]}, {"search": "random"}, "needs trials >= 1"),
    ({"k1": [1.0]}, {"search": "bayes"}, "search must be one of"),
])
def test_refusals(params, kw, msg):
    with pytest.raises(ConfigError, match=msg):
        SearchSpace.build(params, **kw)


def test_unknown_option_names_the_closest():
    bm25, rrf = arm_type_info("bm25"), arm_type_info("rrf")
    assert list(bm25.options)[:4] == ["k1", "b", "delta", "method"] and bm25.factory is BM25Arm
    assert bm25.options["k1"] == 1.5  # the constructor's default
    assert "arms" not in rrf.options and {"rank_constant", "depth", "weights"} <= set(rrf.options)
    assert rrf.factory is RRFArm and "name" not in rrf.options
    with pytest.raises(ConfigError, match="has no parameter 'k2'; did you mean 'k1'\\?"):
        check_options(SearchSpace.build({"k2": [1.0]}), bm25, arm="bm25")
    with pytest.raises(ConfigError, match="wires arms together"):
        check_options(SearchSpace.build({"arms": ["a+b"]}), rrf, arm="h")
    with pytest.raises(ConfigError, match="unknown arm type 'bm52' \\(did you mean 'bm25'\\?\\)"):
        arm_type_info("bm52")


def test_the_issue_parameters_are_tunable_options():
    """BM25 k1/b/method, RRF rank_constant/depth/weights, convex weight/norm, rerank top, ANN ef_search/nprobe."""
    for type_name, names in [("bm25", ["k1", "b", "method"]), ("rrf", ["rank_constant", "depth", "weights"]),
                             ("convex", ["weight", "norm"]), ("fuse", ["method", "norm", "rank_constant", "weights", "depth"]),
                             ("rerank", ["top"]), ("ann", ["ef_search", "nprobe"])]:
        check_options(SearchSpace.build({n: [1] for n in names}), arm_type_info(type_name), arm="x")
    with pytest.raises(ConfigError, match="did you mean 'ef_search'"):
        check_options(SearchSpace.build({"efSearch": [16]}), arm_type_info("ann"), arm="hnsw")
