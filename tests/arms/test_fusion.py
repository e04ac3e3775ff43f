"""RRF and convex fusion: hand-computed golden cases, ties, one-input documents,
composition through ctx.search (cache reuse), masks, CLI/TOML specs."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from bakeoff.arms.base import Arm
from bakeoff.arms.fusion import ConvexArm, FuseArm, RRFArm, normalize_scores
from bakeoff.arms.lexical import BM25Arm
from bakeoff.cache import Cache
from bakeoff.data.model import Corpus, Document, Queries, Run
from bakeoff.errors import ConfigError
from bakeoff.runner.config import build_arms, parse_arm_spec
from bakeoff.runner.context import Context


class FixedArm(Arm):
    """A deterministic input arm: returns given scores (ordered by the tie rule), honours
    k and masks, and counts how often it really searched."""

    type = "fixed"

    def __init__(self, scores: dict[str, dict[str, float]], *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.scores = scores
        self.searches = 0

    def config(self) -> dict[str, Any]:
        return {"scores": json.dumps(self.scores, sort_keys=True)}

    def index(self, corpus: Corpus, *, ctx: Context) -> None:
        pass

    def search(self, queries: Queries, *, k: int, ctx: Context, mask=None) -> Run:
        self.searches += 1
        out = {}
        for qid in queries.ids:
            s = dict(self.scores.get(qid, {}))
            if mask is not None and qid in mask:
                s = {d: v for d, v in s.items() if mask[qid][ctx.corpus.position[d]]}
            out[qid] = s
        return Run.from_scores(self.name, out).cut(k)


DOCS = Corpus.from_documents([Document(f"d{i}", f"text {i}") for i in range(1, 6)] +
                             [Document("a", "x"), Document("b", "y"), Document("x", "z"), Document("y", "w"),
                              Document("z", "v")])
Q = Queries.from_dict({"q1": "query one", "q2": "query two"})


def fuse(arm: Arm, *, k: int = 10, cache: Cache | None = None, mask=None) -> Run:
    return Context(corpus=DOCS, cache=cache, progress=False).search(arm, Q, k=k, mask=mask)


A = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "q2": {"b": 1.0, "a": 1.0}}
B = {"q1": {"d3": 4.0, "d4": 3.0, "d1": 2.0}, "q2": {}}


def test_rrf_golden_ties_and_single_input_documents():
    # k_rrf = 1: q1 ranks A: d1=1 d2=2 d3=3; B: d3=1 d4=2 d1=3
    # d1 = 1/2 + 1/4 = .75, d3 = 1/4 + 1/2 = .75 (tie -> doc id desc: d3 first)
    # d2 = 1/3 (only in A), d4 = 1/3 (only in B)     (tie -> d4 first)
    run = fuse(RRFArm(arms=[FixedArm(A, name="A"), FixedArm(B, name="B")], rank_constant=1, name="rrf"))
    assert run["q1"] == (("d3", 0.75), ("d1", 0.75), ("d4", 1 / 3), ("d2", 1 / 3))
    # q2: A ties a/b at 1.0 -> tie rule puts b at rank 1, a at rank 2; B is empty
    assert run["q2"] == (("b", 1 / 2), ("a", 1 / 3))


def test_rrf_default_constant_depth_and_cutoff():
    arms = [FixedArm(A, name="A"), FixedArm(B, name="B")]
    run = fuse(RRFArm(arms=arms), k=10)
    assert run["q1"][0] == ("d3", 1 / 63 + 1 / 61) and dict(run["q1"])["d2"] == 1 / 62
    # depth=2: only the top 2 of each input count (A loses d3, B loses d1)
    run2 = fuse(RRFArm(arms=arms, rank_constant=60, depth=2), k=10)
    assert dict(run2["q1"]) == {"d1": 1 / 61, "d2": 1 / 62, "d3": 1 / 61, "d4": 1 / 62}
    assert [d for d, _ in run2["q1"]] == ["d3", "d1", "d4", "d2"]
    assert len(fuse(RRFArm(arms=arms), k=2)["q1"]) == 2


def test_convex_minmax_golden():
    # minmax A: d1=1 d2=.5 d3=0; B: d3=1 d4=.5 d1=0; missing -> 0
    # w=.25: d1=.25, d2=.125, d3=.75, d4=.375
    run = fuse(ConvexArm(arms=[FixedArm(A, name="A"), FixedArm(B, name="B")], weight=0.25))
    assert run["q1"] == (("d3", 0.75), ("d4", 0.375), ("d1", 0.25), ("d2", 0.125))
    # q2: A constant (1.0, 1.0) -> all 0, B empty -> 0: everything ties at 0, doc id desc
    assert run["q2"] == (("b", 0.0), ("a", 0.0))


def test_convex_zscore_golden_with_missing_minimum():
    z = math.sqrt(1.5)  # (3 - 2) / sqrt(2/3) for scores [3, 2, 1]
    run = fuse(ConvexArm(arms=[FixedArm(A, name="A"), FixedArm(B, name="B")], weight=0.5, norm="zscore"))
    got = dict(run["q1"])
    # d1 = .5*z + .5*(-z) = 0 ; d3 = .5*(-z) + .5*z = 0 ; d2 = .5*0 + .5*(-z) (missing from B)
    # d4 = .5*(-z) (missing from A) + .5*0
    assert got["d1"] == pytest.approx(0.0, abs=1e-12) and got["d3"] == pytest.approx(0.0, abs=1e-12)
    assert got["d2"] == pytest.approx(-z / 2) and got["d4"] == pytest.approx(-z / 2)
    assert [d for d, _ in run["q1"]] == ["d3", "d1", "d4", "d2"]


def test_normalize_edge_cases():
    assert normalize_scores([], norm="minmax") == ([], 0.0)
    assert normalize_scores([5.0, 5.0], norm="zscore") == ([0.0, 0.0], 0.0)
    assert normalize_scores([7.0], norm="minmax") == ([0.0], 0.0)
    vals, missing = normalize_scores([1.0, 3.0], norm="zscore")
    assert vals == [-1.0, 1.0] and missing == -1.0


def test_constant_input_carries_no_information():
    x = FixedArm({"q1": {"x": 5.0, "y": 5.0}}, name="X")
    y = FixedArm({"q1": {"y": 1.0, "z": 3.0}}, name="Y")
    run = fuse(ConvexArm(arms=[x, y], weight=0.5))
    assert run["q1"] == (("z", 0.5), ("y", 0.0), ("x", 0.0))


def test_three_arm_weights_and_validation():
    c = FixedArm({"q1": {"d5": 1.0, "d1": 0.0}}, name="C")
    arm = ConvexArm(arms=[FixedArm(A, name="A"), FixedArm(B, name="B"), c], weights="0.5+0.25+0.25")
    got = dict(fuse(arm)["q1"])
    # d1: .5*1 + .25*0 + .25*0 = .5 ; d5: .5*0 (missing) + .25*0 (missing) + .25*1 = .25
    assert got["d1"] == 0.5 and got["d5"] == 0.25 and got["d3"] == 0.25
    with pytest.raises(ConfigError, match="sum to 1"):
        ConvexArm(arms=[c, c], weights=[0.5, 0.6])
    with pytest.raises(ConfigError, match="weight= is for two arms"):
        ConvexArm(arms=[c, c, c], weight=0.5)
    with pytest.raises(ConfigError, match="at least two arms"):
        RRFArm(arms=[c])
    with pytest.raises(ConfigError, match="norm"):
        ConvexArm(arms=[c, c], norm="softmax")


def test_fused_arm_reuses_cached_child_runs(tmp_path):
    cache = Cache(tmp_path / "c")
    a, b = FixedArm(A, name="A"), FixedArm(B, name="B")
    rrf = RRFArm(arms=[a, b], depth=100)
    ctx = Context(corpus=DOCS, cache=cache, progress=False)
    for arm in (a, b, rrf):
        ctx.search(arm, Q, k=100)
    assert (a.searches, b.searches) == (1, 1)  # the fused arm got the memoised child runs
    first = ctx.search(rrf, Q, k=100)
    # a fresh process: new objects, same content -> the fused run is a cache hit, children untouched
    a2, b2 = FixedArm(A, name="A"), FixedArm(B, name="B")
    rrf2 = RRFArm(arms=[a2, b2], depth=100)
    hits_before = cache.hits.get("run", 0)
    ctx2 = Context(corpus=DOCS, cache=cache, progress=False)
    assert ctx2.search(rrf2, Q, k=100).ranked == first.ranked
    assert cache.hits["run"] == hits_before + 1 and (a2.searches, b2.searches) == (0, 0)
    # a different fusion of the same inputs: children come from the cache (2 hits), not recomputed
    cvx = ConvexArm(arms=[a2, b2], depth=100)
    ctx2.search(cvx, Q, k=10)
    assert cache.hits["run"] == hits_before + 3 and (a2.searches, b2.searches) == (0, 0)
    assert ctx2.from_cache[a2.fingerprint()] is True
    # the fingerprint composes: changing a child changes the fused arm's identity
    assert RRFArm(arms=[a2, FixedArm(A, name="B")]).fingerprint() != rrf2.fingerprint()
    assert RRFArm(arms=[b2, a2]).fingerprint() != rrf2.fingerprint()


def test_masks_reach_real_bm25_inputs():
    corpus = Corpus.from_documents([Document("d1", "cats sat"), Document("d2", "cat sat on mats"),
                                    Document("d3", "dogs")])
    q = Queries.from_dict({"q": "cats sat"})
    plain, stem = BM25Arm(name="bm25"), BM25Arm(name="stem", stemmer="english")
    ctx = Context(corpus=corpus, progress=False)
    full = ctx.search(RRFArm(arms=[plain, stem]), q, k=10)
    assert {d for d, _ in full["q"]} == {"d1", "d2"}
    mask = {"q": np.array([False, True, True])}
    masked = ctx.search(RRFArm(arms=[plain, stem]), q, k=10, mask=mask)
    assert [d for d, _ in masked["q"]] == ["d2"]


def test_cli_specs_compose_by_name():
    arms = build_arms([parse_arm_spec(s) for s in [
        "bm25", "s=bm25:stemmer=english", "h=rrf:arms=bm25+s,rank_constant=10,depth=50",
        "c=convex:arms=bm25+s+h,weights=0.5+0.25+0.25,norm=zscore"]])
    h, c = arms[2], arms[3]
    assert isinstance(h, RRFArm) and h.k_rrf == 10.0 and h.depth == 50 and [x.name for x in h.arms] == ["bm25", "s"]
    assert isinstance(c, ConvexArm) and c.weights == (0.5, 0.25, 0.25) and c.norm == "zscore"
    assert c.children()[2] is h
    with pytest.raises(ConfigError, match="unknown arm"):
        build_arms([parse_arm_spec("h=rrf:arms=bm25+nope")])


def test_cached_flag_is_per_run_not_per_arm(tmp_path):
    from bakeoff.data.model import Dataset, Qrels
    from bakeoff.runner.run import run_bakeoff

    ds = Dataset(DOCS, Q, Qrels({"q1": {"d1": 1}, "q2": {"a": 1}}))
    cache = Cache(tmp_path / "c")
    a, b = FixedArm(A, name="A"), FixedArm(B, name="B")
    run_bakeoff(ds, [a, b], cache=cache, progress=False, latency_sample=0)
    # second run: A and B at depth 100 come from the cache, but a fusion of depth 2 searches them
    # afresh at k=2 -- the table must still say their depth-100 rows were cached
    a2, b2 = FixedArm(A, name="A"), FixedArm(B, name="B")
    res = run_bakeoff(ds, [a2, b2, RRFArm(arms=[a2, b2], depth=2)], cache=cache, progress=False, latency_sample=0)
    assert [r.cached for r in res.arms] == [True, True, False] and (a2.searches, b2.searches) == (1, 1)


@pytest.mark.parametrize("arm", [lambda a, b: ConvexArm(arms=[a, b], weight=0.5, name="cvx"),
                                 lambda a, b: FuseArm(arms=[a, b], method="sum", name="cvx")])
def test_an_infinite_input_score_is_named_with_the_arm_and_query(arm):
    """min-max of [inf, 1] is NaN: the error says which fused arm, query, input and document, and why."""
    from bakeoff.data.ranking import NaNScoreError

    bad = {"q1": {"d1": 2.0}, "q2": {"d2": float("inf"), "d5": 1.0}}
    with pytest.raises(NaNScoreError) as err:
        fuse(arm(FixedArm(A, name="A"), FixedArm(bad, name="B")))
    assert str(err.value) == ("arm 'cvx', query 'q2' (input 'B' scores document 'd2' inf: score fusion normalises "
                              "scores, which needs finite ones; use rrf, or fuse with norm=rank): "
                              "document 'd2' has a NaN score")
    # rank-based fusion orders the same input without complaint (inf ranks first)
    assert fuse(RRFArm(arms=[FixedArm(A, name="A"), FixedArm(bad, name="B")], rank_constant=1))["q2"][0] == ("d2", 0.5)
