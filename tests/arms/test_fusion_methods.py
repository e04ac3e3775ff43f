"""The ``fuse`` arm and weighted RRF: hand-computed golden cases, edge cases and refused options.
(The cross-check against ranx on SciFact is tests/arms/test_fusion_ranx.py.)"""

from __future__ import annotations

import pytest

from bakeoff.arms.fusion import FuseArm, RRFArm, borda_scores, fuse_scores, isr_scores, normalize
from bakeoff.errors import ConfigError
from bakeoff.runner.config import build_arms, parse_arm_spec
from tests.arms.test_fusion import A, B, FixedArm, fuse

# q1 inputs in tie-rule order: A = d1 3, d2 2, d3 1; B = d3 4, d4 3, d1 2
RA = (("d1", 3.0), ("d2", 2.0), ("d3", 1.0))
RB = (("d3", 4.0), ("d4", 3.0), ("d1", 2.0))


def test_normalisations_golden():
    assert normalize(RA, norm="minmax") == {"d1": 1.0, "d2": 0.5, "d3": 0.0}
    z = normalize(RA, norm="zscore")  # mean 2, population std sqrt(2/3)
    assert z["d2"] == 0.0 and z["d1"] == pytest.approx(1.5 ** 0.5) and z["d3"] == pytest.approx(-(1.5 ** 0.5))
    assert normalize(RA, norm="sum") == {"d1": 2 / 3, "d2": 1 / 3, "d3": 0.0}  # (s - 1) / (6 - 3)
    assert normalize(RA, norm="rank") == {"d1": 1.0, "d2": 1 - 1 / 3, "d3": 1 - 2 / 3}
    assert normalize(RA, norm="none") == dict(RA)
    # constant and empty inputs
    for norm in ("minmax", "zscore", "sum"):
        assert normalize((("a", 5.0), ("b", 5.0)), norm=norm) == {"a": 0.0, "b": 0.0}
        assert normalize((), norm=norm) == {}
    with pytest.raises(ConfigError, match="norm must be one of"):
        normalize(RA, norm="softmax")


def test_methods_golden():
    lists = [RA, RB]
    # minmax: A d1 1, d2 .5, d3 0 ; B d3 1, d4 .5, d1 0 ; missing -> 0
    assert fuse_scores(lists, method="sum") == {"d1": 1.0, "d2": 0.5, "d3": 1.0, "d4": 0.5}
    assert fuse_scores(lists, method="sum", weights=(2.0, 1.0)) == {"d1": 2.0, "d2": 1.0, "d3": 1.0, "d4": 0.5}
    # mnz: sum over the inputs holding d, times their number (weighted: times the sum of their weights)
    assert fuse_scores(lists, method="mnz") == {"d1": 2.0, "d2": 0.5, "d3": 2.0, "d4": 0.5}
    assert fuse_scores(lists, method="mnz", weights=(2.0, 1.0)) == {"d1": 3.0, "d2": 1.0, "d3": 3.0, "d4": 0.5}
    assert fuse_scores(lists, method="max") == {"d1": 1.0, "d2": 0.5, "d3": 1.0, "d4": 0.5}
    # max of raw scores: a document's best input score
    assert fuse_scores(lists, method="max", norm="none") == {"d1": 3.0, "d2": 2.0, "d3": 4.0, "d4": 3.0}
    # isr: (1/1 + 1/9) * 2 for d1 and d3; 1/4 for the single-input d2, d4
    assert isr_scores(lists) == pytest.approx({"d1": 20 / 9, "d3": 20 / 9, "d2": 0.25, "d4": 0.25})
    # borda: N = 4 candidates; ranked 4, 3, 2 points; unranked (4 - 3 + 1) / 2 = 1
    assert borda_scores(lists) == {"d1": 6.0, "d2": 4.0, "d3": 6.0, "d4": 4.0}
    assert borda_scores(lists, weights=(1.0, 0.5)) == {"d1": 5.0, "d2": 3.5, "d3": 4.0, "d4": 2.5}
    # zscore: a missing document gets 0 (the input's mean), unlike the convex arm
    zs = fuse_scores(lists, method="sum", norm="zscore")
    assert zs["d2"] == pytest.approx(0.0 + 0.0) and zs["d4"] == pytest.approx(0.0)


def test_fuse_arm_ranks_by_the_tie_rule_and_weighted_rrf():
    a, b = FixedArm(A, name="A"), FixedArm(B, name="B")
    run = fuse(FuseArm(arms=[a, b], method="mnz"))
    assert run["q1"] == (("d3", 2.0), ("d1", 2.0), ("d4", 0.5), ("d2", 0.5))
    assert run["q2"] == (("b", 0.0), ("a", 0.0))  # A constant -> 0, B empty
    # weighted RRF, k=1: d1 = 2/2 + 1/4, d3 = 2/4 + 1/2, d2 = 2/3, d4 = 1/3
    w = fuse(RRFArm(arms=[a, b], rank_constant=1, weights="2+1"))
    assert dict(w["q1"]) == {"d1": 1.25, "d3": 1.0, "d2": 2 / 3, "d4": 1 / 3}
    same = fuse(FuseArm(arms=[a, b], method="rrf", rank_constant=1, weights=[2, 1]))
    assert same.ranked == w.ranked


def test_plain_weights_keep_the_fingerprint_and_options_are_checked():
    a, b = FixedArm(A, name="A"), FixedArm(B, name="B")
    assert RRFArm(arms=[a, b], weights="1+1").fingerprint() == RRFArm(arms=[a, b]).fingerprint()
    assert RRFArm(arms=[a, b], weights="2+1").fingerprint() != RRFArm(arms=[a, b]).fingerprint()
    assert FuseArm(arms=[a, b], method="isr").config() == {"method": "isr", "depth": 100}
    assert FuseArm(arms=[a, b]).config() == {"method": "sum", "depth": 100, "norm": "minmax"}
    bad = [
        ({"method": "rrf", "norm": "zscore"}, "uses ranks only"),
        ({"method": "sum", "rank_constant": 10}, "for method=rrf only"),
        ({"method": "max", "weights": "1+2"}, "weights= is for methods"),
        ({"method": "isr", "weights": "1+2"}, "weights= is for methods"),
        ({"method": "combfoo"}, "method must be one of"),  # combsum, wsum ... are ranx's names: accepted
        ({"method": "probfuse"}, "not supported: supervised"),
        ({"method": "sum", "norm": "l2"}, "norm must be one of"),
        ({"method": "sum", "weights": "1+2+3"}, "3 weights for 2 arms"),
        ({"method": "sum", "weights": "1+-1"}, ">= 0 and not all 0"),
        ({"method": "sum", "weights": "0+0"}, ">= 0 and not all 0"),
    ]
    for opts, msg in bad:
        with pytest.raises(ConfigError, match=msg):
            FuseArm(arms=[a, b], **opts)
    with pytest.raises(ConfigError, match="RRF constant"):
        RRFArm(arms=[a, b], rank_constant=-1)


def test_cli_spec():
    arms = build_arms([parse_arm_spec(s) for s in ["bm25", "s=bm25:stemmer=english",
                                                    "f=fuse:arms=bm25+s,method=borda,weights=0.7+0.3,depth=50"]])
    f = arms[-1]
    assert isinstance(f, FuseArm) and f.method == "borda" and f.weights == (0.7, 0.3) and f.depth == 50
