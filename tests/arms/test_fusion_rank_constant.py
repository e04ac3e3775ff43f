"""The RRF constant of the fusion arms is ``rank_constant`` (``k`` means a cutoff everywhere else); ``k=`` is not
one of their options. (``bakeoff.fuse`` still takes ranx's ``k=`` and ``params={"k": ...}``: tests/test_api_fuse_ranx.py.)"""

from __future__ import annotations

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
    assert RRFArm(arms=inputs(), rank_constant=10).config() == {"k_rrf": 10.0, "depth": 100}


def test_spec_strings_take_rank_constant_and_refuse_k() -> None:
    specs = ["a=bm25", "b=tfidf", "h=rrf:arms=a+b,rank_constant=10"]
    assert build_arms([parse_arm_spec(s) for s in specs])[-1].k_rrf == 10.0
    with pytest.raises(ConfigError, match="k"):
        build_arms([parse_arm_spec(s) for s in ["a=bm25", "b=tfidf", "h=rrf:arms=a+b,k=10"]])
    with pytest.raises(TypeError):
        RRFArm(arms=inputs(), k=10)


def test_the_wrong_method_or_value_is_refused() -> None:
    with pytest.raises(ConfigError, match="for method=rrf only"):
        FuseArm(arms=inputs(), method="sum", rank_constant=10)
    with pytest.raises(ConfigError, match="rank_constant"):
        build_arms([parse_arm_spec(s) for s in ["a=bm25", "b=tfidf", "h=rrf:arms=a+b,rank_constant=-1"]])
