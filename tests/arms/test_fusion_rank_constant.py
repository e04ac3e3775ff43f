"""The RRF constant is ``rank_constant`` (``k`` means a cutoff everywhere else); the old ``k=`` still works
for one release, with a deprecation warning, and builds the identical arm (same config, same cache key)."""

from __future__ import annotations

import logging

import pytest

from bakeoff.arms.fusion import FuseArm, RRFArm
from bakeoff.arms.lexical import BM25Arm, TfidfArm
from bakeoff.errors import ConfigError
from bakeoff.runner.config import build_arms, parse_arm_spec


def inputs():
    return [BM25Arm(name="a"), TfidfArm(name="b")]


def test_rank_constant_is_the_rrf_constant() -> None:
    assert RRFArm(arms=inputs(), rank_constant=10).k_rrf == 10.0
    assert RRFArm(arms=inputs()).k_rrf == 60.0
    assert FuseArm(arms=inputs(), method="rrf", rank_constant=5).k_rrf == 5.0


def test_old_k_warns_and_builds_the_same_arm(caplog: pytest.LogCaptureFixture) -> None:
    new = RRFArm(arms=inputs(), rank_constant=10, name="h")
    with caplog.at_level(logging.WARNING, logger="bakeoff"), \
            pytest.warns(DeprecationWarning, match=r"rrf: k= for the RRF constant is deprecated.*rank_constant=10"):
        old = RRFArm(arms=inputs(), k=10, name="h")
    assert old.config() == new.config() == {"k_rrf": 10.0, "depth": 100}
    assert old.fingerprint() == new.fingerprint()
    assert "write rank_constant=10" in caplog.text  # the command line shows it as a warning line
    with pytest.warns(DeprecationWarning, match="fuse: k="):
        assert FuseArm(arms=inputs(), method="rrf", k=7).k_rrf == 7.0


def test_spec_strings_take_both_spellings() -> None:
    specs = ["a=bm25", "b=tfidf", "h=rrf:arms=a+b,rank_constant=10"]
    assert build_arms([parse_arm_spec(s) for s in specs])[-1].k_rrf == 10.0
    with pytest.warns(DeprecationWarning):
        old = build_arms([parse_arm_spec(s) for s in ["a=bm25", "b=tfidf", "h=rrf:arms=a+b,k=10"]])[-1]
    assert old.k_rrf == 10.0


def test_both_or_the_wrong_method_are_refused() -> None:
    with pytest.raises(ConfigError, match="not both"):
        RRFArm(arms=inputs(), rank_constant=10, k=10)
    with pytest.raises(ConfigError, match="for method=rrf only"):
        FuseArm(arms=inputs(), method="sum", rank_constant=10)
    with pytest.raises(ConfigError, match="for method=rrf only"):
        FuseArm(arms=inputs(), method="sum", k=10)
    with pytest.raises(ConfigError, match="rank_constant"):
        build_arms([parse_arm_spec(s) for s in ["a=bm25", "b=tfidf", "h=rrf:arms=a+b,rank_constant=-1"]])
