"""``bakeoff.fuse`` called with ranx's own spellings equals ``ranx.fuse`` called with them, and the
fusion methods added for ranx's names (CombMIN, CombMED, CombANZ, CombGMNZ, Log-ISR, LogN-ISR) equal
ranx's output: the same documents, every fused score within 1e-9, and ranx's order equal to bakeoff's up
to tied fused scores. Runs: random input scores without ties (so that both rank the inputs alike), 40
queries, three inputs of 30 documents drawn from 60 (real overlap)."""

from __future__ import annotations

import math
import random

import pytest

import bakeoff
from bakeoff.arms.fusion import UNSUPPORTED_METHODS
from bakeoff.errors import ConfigError

ranx = pytest.importorskip("ranx", reason="ranx (test extra) is the reference implementation")


def _runs(seed: int = 0, n_inputs: int = 3) -> list[dict[str, dict[str, float]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n_inputs):
        run = {}
        for q in range(40):
            docs = rng.sample([f"d{i}" for i in range(60)], 30)
            run[f"q{q}"] = {d: rng.uniform(-5, 20) for d in docs}
        out.append(run)
    return out


def _theirs(dicts, **kw):
    out = ranx.fuse([ranx.Run(d, name=f"r{i}") for i, d in enumerate(dicts)], **kw)
    return {q: dict(v) for q, v in out.to_dict().items()}


def _ours(dicts, **kw):
    fused = bakeoff.fuse({f"r{i}": d for i, d in enumerate(dicts)}, **kw)
    return {q: dict(fused[q]) for q in fused}


def _ours_ranked(dicts, **kw):
    fused = bakeoff.fuse({f"r{i}": d for i, d in enumerate(dicts)}, **kw)
    return {q: fused[q] for q in fused}


def _same(ours, theirs, ours_ranked=None):
    assert set(ours) == set(theirs)
    n = 0
    for q in theirs:
        assert set(ours[q]) == set(theirs[q]), q
        for d, s in theirs[q].items():
            assert math.isclose(ours[q][d], s, rel_tol=1e-9, abs_tol=1e-9), (q, d, ours[q][d], s)
            n += 1
        # the same order up to tied fused scores (min-max gives several documents 0): position by position,
        # ranx's ranking has the scores of bakeoff's
        mine = [sc for _, sc in ours_ranked[q]] if ours_ranked else sorted(ours[q].values(), reverse=True)
        assert all(abs(a - b) <= 1e-9 for a, b in zip(mine, theirs[q].values(), strict=True)), q
    assert n > 40 * 30


CALLS = [  # (ranx's fuse keywords, also passed to bakeoff.fuse unchanged)
    {"method": "wsum", "norm": "min-max", "params": {"weights": [1.0, 1.0, 1.0]}},
    {"method": "wsum", "norm": "min-max", "params": {"weights": [0.5, 0.3, 0.2]}},
    {"method": "wsum", "norm": "zmuv", "params": {"weights": [1.0, 2.0, 0.5]}},
    {"method": "wmnz", "norm": "min-max", "params": {"weights": [0.5, 0.3, 0.2]}},
    {"method": "mnz", "norm": "zmuv"},
    {"method": "sum", "norm": "sum"},
    {"method": "max", "norm": "rank"},
    {"method": "min", "norm": "min-max"},
    {"method": "med", "norm": "min-max"},
    {"method": "med", "norm": "zmuv"},
    {"method": "anz", "norm": "min-max"},
    {"method": "gmnz", "norm": "min-max", "params": {"gamma": 0.5}},
    {"method": "gmnz", "norm": "zmuv", "params": {"gamma": 2.0}},
    {"method": "bordafuse", "norm": None},
    {"method": "w_bordafuse", "norm": None, "params": {"weights": [0.5, 0.3, 0.2]}},
    {"method": "isr", "norm": None},
    {"method": "log_isr", "norm": None},
    {"method": "logn_isr", "norm": None, "params": {"sigma": 0.01}},
    {"method": "logn_isr", "norm": None, "params": {"sigma": 0.5}},
    {"method": "rrf", "norm": None, "params": {"k": 60}},
    {"method": "rrf", "norm": None, "params": {"k": 10}},
]


@pytest.mark.parametrize("call", CALLS, ids=[f"{c['method']}-{c['norm']}-{c.get('params')}" for c in CALLS])
def test_ranx_spellings_give_ranx_output(call):
    dicts = _runs()
    ours_kw = dict(call)
    if ours_kw["norm"] is None:  # ranx's norm=None is "no normalisation"; bakeoff's None is the default
        ours_kw["norm"] = "none" if call["method"] in ("wsum", "sum", "mnz", "wmnz", "max", "min", "med", "anz",
                                                      "gmnz") else None
    _same(_ours(dicts, **ours_kw), _theirs(dicts, **call), _ours_ranked(dicts, **ours_kw))


def test_rrf_k_keyword_is_ranx_rrf_constant():
    dicts = _runs(1, n_inputs=2)
    want = _theirs(dicts, method="rrf", norm=None, params={"k": 20})
    _same(_ours(dicts, method="rrf", k=20), want)
    _same(_ours(dicts, method="rrf", rank_constant=20), want)


def test_combx_names_are_the_same_methods():
    dicts = _runs(2)
    for alias, name in (("combsum", "sum"), ("combmnz", "mnz"), ("combmax", "max"), ("combmin", "min"),
                        ("combmed", "med"), ("combanz", "anz")):
        assert _ours(dicts, method=alias) == _ours(dicts, method=name)


@pytest.mark.parametrize("method", sorted(UNSUPPORTED_METHODS))
def test_unsupported_ranx_methods_say_why(method):
    with pytest.raises(ConfigError, match="not supported: (supervised|not implemented)"):
        bakeoff.fuse({"a": {"q": {"d": 1.0}}, "b": {"q": {"e": 1.0}}}, method=method)


@pytest.mark.parametrize("kw,match", [
    ({"method": "rrf", "k": 60, "rank_constant": 60}, "not both"),
    ({"method": "rrf", "params": {"k": 60}, "rank_constant": 60}, "both in params"),
    ({"method": "sum", "params": {"alpha": 1}}, "unknown params key"),
    ({"method": "sum", "params": {"gamma": 1}}, "gamma is for method=gmnz"),
    ({"method": "logn_isr", "params": {"sigma": 2}}, "sigma"),
])
def test_bad_spellings_are_refused(kw, match):
    with pytest.raises(ConfigError, match=match):
        bakeoff.fuse({"a": {"q": {"d": 1.0}}, "b": {"q": {"e": 1.0}}}, **kw)


def test_the_fuse_arm_takes_ranx_names_with_the_canonical_fingerprint():
    from bakeoff.arms.fusion import FuseArm
    from bakeoff.arms.lexical import BM25Arm, TfidfArm

    a, b = BM25Arm(name="a"), TfidfArm(name="b")
    ranx_named = FuseArm(arms=[a, b], method="wsum", norm="min-max", weights="0.7+0.3")
    ours = FuseArm(arms=[a, b], method="sum", norm="minmax", weights="0.7+0.3")
    assert ranx_named.config() == ours.config() and ranx_named.fingerprint() == ours.fingerprint()
    assert FuseArm(arms=[a, b], method="gmnz", gamma=0.5).config()["gamma"] == 0.5
