"""Every fusion method of the ``fuse`` arm (and weighted RRF) equals ranx's ``fuse`` on real
SciFact runs: three pairs of inputs (bm25 / tfidf / bm25 with an English stemmer, top 100 of
the 300 test queries), every method x normalisation, weighted and not.

ranx is the independent reference (test-only dependency, ``test`` extra). Its ``Run``
constructor re-sorts documents with an unstable sort, so ranx is given the inputs in bakeoff's
tie-rule order directly (a numba typed dict in that order, which ranx's normalisations and
fusions iterate as is): "equal modulo the tie rule". Checked per query: the same documents, every
score within 1e-9, and ranx's own output order has, position by position, the scores of
bakeoff's order (so the orders differ at most inside groups of tied scores).
"""

from __future__ import annotations

import math

import pytest

from bakeoff.arms.fusion import FuseArm, RRFArm, fuse_scores, rrf_scores
from bakeoff.arms.lexical import BM25Arm, TfidfArm
from bakeoff.data.ranking import rank
from bakeoff.runner.context import Context

pytestmark = pytest.mark.slow  # SciFact and real models

ranx = pytest.importorskip("ranx", reason="ranx (test extra) is the reference implementation")
numba_typed = pytest.importorskip("numba.typed")
numba_types = pytest.importorskip("numba.core.types")

DEPTH = 100
TOL = 1e-9
PAIRS = [("bm25", "tfidf"), ("bm25", "stem"), ("tfidf", "stem")]
SCORE_METHODS = ["sum", "mnz", "max"]
NORMS = {"minmax": "min-max", "zscore": "zmuv", "sum": "sum", "rank": "rank", "none": None}


@pytest.fixture(scope="module")
def runs(scifact, shared_cache):
    """Top-100 runs of three lexical arms on the SciFact test queries (cached across sessions)."""
    arms = [BM25Arm(name="bm25"), TfidfArm(name="tfidf"), BM25Arm(name="stem", stemmer="english")]
    ctx = Context(corpus=scifact.corpus, cache=shared_cache, progress=False)
    return {a.name: ctx.search(a, scifact.queries, k=DEPTH) for a in arms}, list(scifact.queries.ids)


def to_ranx(run, qids):
    """A ranx Run holding exactly ``run``'s lists in bakeoff's order (no re-sorting)."""
    t = numba_types
    outer = numba_typed.Dict.empty(key_type=t.unicode_type, value_type=t.DictType(t.unicode_type, t.float64))
    for q in qids:
        inner = numba_typed.Dict.empty(key_type=t.unicode_type, value_type=t.float64)
        for d, s in run.get(q):
            inner[d] = float(s)
        outer[q] = inner
    r = ranx.Run()
    r.run = outer
    return r


def check_equal(ours_by_q, ranx_run, qids):
    """Same documents, scores within TOL, ranx's order = ours up to tied scores."""
    n_docs = 0
    for q in qids:
        ours = ours_by_q[q]
        theirs = dict(ranx_run.run[q]) if q in ranx_run.run else {}
        assert set(ours) == set(theirs), q
        for d, s in ours.items():
            assert math.isclose(s, theirs[d], rel_tol=0, abs_tol=TOL), (q, d, s, theirs[d])
        our_order = [s for _, s in rank(ours)]
        their_order = list(ranx_run.run[q].values()) if q in ranx_run.run else []
        assert len(our_order) == len(their_order)
        assert all(abs(a - b) <= TOL for a, b in zip(our_order, their_order)), q
        n_docs += len(ours)
    assert n_docs > len(qids) * DEPTH  # the union of two top-100 lists: real overlap checked


def ours(runs_, names, qids, **kw):
    return {q: fuse_scores([runs_[n].get(q) for n in names], **kw) for q in qids}


@pytest.mark.parametrize("pair", PAIRS, ids=["+".join(p) for p in PAIRS])
def test_score_methods_equal_ranx_for_every_norm(runs, pair):
    runs_, qids = runs
    rx = [to_ranx(runs_[n], qids) for n in pair]
    for method in SCORE_METHODS:
        for norm, rnorm in NORMS.items():
            got = ours(runs_, pair, qids, method=method, norm=norm)
            check_equal(got, ranx.fuse(rx, norm=rnorm, method=method), qids)


@pytest.mark.parametrize("pair", PAIRS, ids=["+".join(p) for p in PAIRS])
def test_rank_methods_equal_ranx(runs, pair):
    runs_, qids = runs
    rx = [to_ranx(runs_[n], qids) for n in pair]
    for k in (60, 10):
        check_equal(ours(runs_, pair, qids, method="rrf", k_rrf=k),
                    ranx.fuse(rx, norm=None, method="rrf", params={"k": k}), qids)
    check_equal(ours(runs_, pair, qids, method="isr"), ranx.fuse(rx, norm=None, method="isr"), qids)
    check_equal(ours(runs_, pair, qids, method="borda"), ranx.fuse(rx, norm=None, method="bordafuse"), qids)


@pytest.mark.parametrize("pair", PAIRS, ids=["+".join(p) for p in PAIRS])
def test_weighted_methods_equal_ranx(runs, pair):
    runs_, qids = runs
    rx = [to_ranx(runs_[n], qids) for n in pair]
    w = [0.7, 0.3]
    for norm in ("minmax", "zscore"):
        check_equal(ours(runs_, pair, qids, method="sum", norm=norm, weights=w),
                    ranx.fuse(rx, norm=NORMS[norm], method="wsum", params={"weights": w}), qids)
        check_equal(ours(runs_, pair, qids, method="mnz", norm=norm, weights=w),
                    ranx.fuse(rx, norm=NORMS[norm], method="wmnz", params={"weights": w}), qids)
    check_equal(ours(runs_, pair, qids, method="borda", weights=w),
                ranx.fuse(rx, norm=None, method="w_bordafuse", params={"weights": w}), qids)
    # weighted RRF: ranx has no such method; its own RRF scorer per input, then its weighted sum
    from ranx.fusion.rrf import _rrf_score_parallel

    scored = []
    for r in rx:
        s = ranx.Run()
        s.run = _rrf_score_parallel(r.run, 60)
        scored.append(s)
    check_equal(ours(runs_, pair, qids, method="rrf", k_rrf=60, weights=w),
                ranx.fuse(scored, norm=None, method="wsum", params={"weights": w}), qids)


def test_arms_give_the_pure_functions_scores(runs, scifact):
    """The arms (through ctx.search, cut to k) rank by exactly these scores."""
    runs_, qids = runs
    ctx = Context(corpus=scifact.corpus, progress=False)
    a, b = BM25Arm(name="bm25"), TfidfArm(name="tfidf")
    fused = ctx.search(FuseArm(arms=[a, b], method="mnz", norm="zscore"), scifact.queries, k=10)
    rrf = ctx.search(RRFArm(arms=[a, b], weights="2+1"), scifact.queries, k=10)
    for q in qids[:50]:
        lists = [runs_["bm25"].get(q), runs_["tfidf"].get(q)]
        assert fused[q] == rank(fuse_scores(lists, method="mnz", norm="zscore"))[:10]
        assert rrf[q] == rank(rrf_scores(lists, k_rrf=60, weights=(2.0, 1.0)))[:10]
