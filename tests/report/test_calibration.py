"""Calibration figures against independent implementations and hand-computed cases.

τ-b is checked against ``scipy.stats.kendalltau``; τ-a against a pair count written out here;
τ_AP against the definition worked by hand (Yilmaz et al. 2008); the per-arm bias CI against
``scipy.stats.bootstrap`` on two independent samples; the significant-pair shares against
:func:`bakeoff.stats.comparison` on constructed arms; verdict agreement through the real verdict.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from bakeoff.report.calibration import (
    bias_by_bucket,
    bootstrap_agreement,
    kendall_tau,
    ordering,
    significant_pairs,
    tau_ap,
    top1_agrees,
    verdict_agreement,
)
from bakeoff.report.model import build_report
from bakeoff.report.verdict import build_verdict
from bakeoff.runner.results import StoredResults
from bakeoff.stats import comparison

ARMS = ["A", "B", "C", "D"]


def _tau_a_by_hand(x, y):
    c = d = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        s = (x[i] - x[j]) * (y[i] - y[j])
        c += s > 0
        d += s < 0
    return (c - d) / (len(x) * (len(x) - 1) / 2)


def test_ordering_ties_keep_listed_order():
    assert ordering([0.5, 0.7, 0.5, 0.1], ARMS) == ["B", "A", "C", "D"]
    assert ordering([0.5, 0.7, 0.5, 0.1], ["C", "B", "A", "D"]) == ["B", "C", "A", "D"]
    with pytest.raises(ValueError, match="NaN"):
        ordering([0.5, math.nan, 0.1, 0.2], ARMS)


@pytest.mark.parametrize("seed", range(5))
def test_tau_b_and_a_match_scipy_and_a_pair_count(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, 9).astype(float)  # ties on purpose
    y = rng.integers(0, 4, 9).astype(float)
    assert kendall_tau(x, y, variant="b") == pytest.approx(sps.kendalltau(x, y).statistic)
    assert kendall_tau(x, y, variant="a") == pytest.approx(_tau_a_by_hand(x, y))
    u, v = rng.random(9), rng.random(9)  # no ties: a == b
    assert kendall_tau(u, v, variant="a") == pytest.approx(sps.kendalltau(u, v).statistic)


def test_tau_a_hand_example_with_a_tie():
    # pairs: (0,1) concordant, (0,2) tie in x, (1,2) discordant -> (1 - 1) / 3 = 0; tau-b differs
    x, y = [1.0, 2.0, 1.0], [1.0, 3.0, 4.0]
    assert kendall_tau(x, y, variant="a") == 0.0
    assert kendall_tau(x, y, variant="b") == pytest.approx(0.0)
    x2, y2 = [1.0, 2.0, 3.0, 3.0], [1.0, 2.0, 3.0, 4.0]  # 5 concordant, 1 tied in x
    assert kendall_tau(x2, y2, variant="a") == pytest.approx(5 / 6)
    assert kendall_tau(x2, y2, variant="b") == pytest.approx(5 / math.sqrt(5 * 6))


def test_tau_ap_hand_computed():
    human = [0.9, 0.8, 0.7, 0.6]  # A > B > C > D
    # swap at the top: estimated B A C D. i=2: A, above it B (human: B below A) -> 0/1;
    # i=3: C, above B and A, both above C in human -> 2/2; i=4: D -> 3/3. 2/3 * 2 - 1 = 1/3
    assert tau_ap(human, [0.8, 0.9, 0.7, 0.6], ARMS) == pytest.approx(1 / 3)
    # swap at the bottom: A B D C. i=2: 1/1; i=3: D, above A, B -> 2/2; i=4: C, above A, B, D -> 2/3
    assert tau_ap(human, [0.9, 0.8, 0.6, 0.7], ARMS) == pytest.approx(2 / 3 * (1 + 1 + 2 / 3) - 1)
    # tau (either swap) is 2/3: tau_AP punishes the top error more
    assert kendall_tau(human, [0.8, 0.9, 0.7, 0.6]) == pytest.approx(2 / 3)
    assert tau_ap(human, human, ARMS) == pytest.approx(1.0)
    assert tau_ap(human, human[::-1], ARMS) == pytest.approx(-1.0)


def test_tau_ap_averages_zero_over_all_permutations():
    # Yilmaz et al.: like tau, tau_AP has expectation 0 when the estimated ordering is uniformly random
    human = [3.0, 2.0, 1.0]
    vals = [tau_ap(human, [3.0 - p.index(i) for i in range(3)], ["A", "B", "C"])
            for p in itertools.permutations(range(3))]
    assert np.mean(vals) == pytest.approx(0.0)


def test_top1():
    assert top1_agrees([0.9, 0.1, 0.2], [0.5, 0.4, 0.3], ["A", "B", "C"])
    assert not top1_agrees([0.9, 0.1, 0.2], [0.3, 0.4, 0.3], ["A", "B", "C"])


def _sides(seed=0, n_h=200, n_s=150, shift=(0.0, 0.0, 0.0, 0.0)):
    rng = np.random.default_rng(seed)
    base = np.array([0.7, 0.6, 0.5, 0.4])
    h = np.clip(base + rng.normal(0, 0.25, (n_h, 4)), 0, 1)
    s = np.clip(base + np.asarray(shift) + rng.normal(0, 0.25, (n_s, 4)), 0, 1)
    return h, s


@pytest.mark.slow  # work at scale (thousands of queries, bootstrap loops)
def test_bootstrap_point_values_and_bias_ci_match_scipy():
    h, s = _sides(shift=(0.0, 0.15, 0.0, 0.0))
    res = bootstrap_agreement(h, s, arms=ARMS, rng=np.random.default_rng(1), n_resamples=3000)
    hm, sm = h.mean(axis=0), s.mean(axis=0)
    assert res["human_means"] == pytest.approx(dict(zip(ARMS, hm)))
    assert res["figures"]["tau_b"]["value"] == pytest.approx(sps.kendalltau(hm, sm).statistic)
    assert res["figures"]["tau_ap"]["value"] == pytest.approx(tau_ap(hm, sm, ARMS))
    for j, arm in enumerate(ARMS):
        b = res["bias"][arm]
        assert b["value"] == pytest.approx(sm[j] - hm[j])
        ref = sps.bootstrap((s[:, j], h[:, j]), lambda a, c, axis: a.mean(axis) - c.mean(axis), vectorized=True,
                            paired=False, method="percentile", n_resamples=3000, random_state=np.random.default_rng(7))
        assert b["ci_low"] == pytest.approx(ref.confidence_interval.low, abs=0.01)
        assert b["ci_high"] == pytest.approx(ref.confidence_interval.high, abs=0.01)
        assert b["ci_low"] < b["value"] < b["ci_high"]
    # B is flattered: its whole CI lies above 0
    assert res["bias"]["B"]["ci_low"] > 0.05
    assert res["bias"]["A"]["ci_low"] < 0 < res["bias"]["A"]["ci_high"]


@pytest.mark.slow  # work at scale (thousands of queries, bootstrap loops)
def test_bootstrap_tau_ci_matches_an_independent_loop():
    h, s = _sides(seed=3, n_h=60, n_s=60)
    res = bootstrap_agreement(h, s, arms=ARMS, rng=np.random.default_rng(2), n_resamples=3000)
    rng = np.random.default_rng(11)
    taus, tops = [], []
    for _ in range(3000):
        hh = h[rng.choice(60, 60)].mean(axis=0)
        ss = s[rng.choice(60, 60)].mean(axis=0)
        taus.append(sps.kendalltau(hh, ss).statistic)
        tops.append(np.argmax(hh) == np.argmax(ss))
    lo, hi = np.nanquantile(taus, [0.025, 0.975])
    f = res["figures"]
    # tau over 4 arms moves in steps of 1/3
    assert f["tau_b"]["ci_low"] == pytest.approx(lo, abs=0.34)
    assert f["tau_b"]["ci_high"] == pytest.approx(hi, abs=0.34)
    assert f["tau_b"]["ci_low"] <= f["tau_b"]["value"] <= f["tau_b"]["ci_high"]
    assert f["top1"]["share"] == pytest.approx(np.mean(tops), abs=0.04)
    assert f["tau_a"]["ci_high"] <= 1.0 and f["tau_ap"]["ci_low"] >= -1.0


def test_bootstrap_constant_sides_collapse_and_same_generator_same_result():
    h = np.tile([0.9, 0.5, 0.3, 0.1], (10, 1))
    s = np.tile([0.8, 0.6, 0.2, 0.1], (7, 1))
    res = bootstrap_agreement(h, s, arms=ARMS, rng=np.random.default_rng(0), n_resamples=200)
    assert res["figures"]["tau_b"] == {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0, "undefined": 0}
    assert res["bias"]["A"]["ci_low"] == pytest.approx(-0.1) and res["bias"]["A"]["ci_high"] == pytest.approx(-0.1)
    h2, s2 = _sides(seed=5)
    a = bootstrap_agreement(h2, s2, arms=ARMS, rng=np.random.default_rng(9), n_resamples=300)
    b = bootstrap_agreement(h2, s2, arms=ARMS, rng=np.random.default_rng(9), n_resamples=300)
    assert a == b


def test_bootstrap_rejects_bad_shapes():
    h, s = _sides()
    with pytest.raises(ValueError, match="synthetic matrix"):
        bootstrap_agreement(h, s[:, :3], arms=ARMS, rng=np.random.default_rng(0), n_resamples=10)
    with pytest.raises(ValueError, match="no queries"):
        bootstrap_agreement(h, s[:0], arms=ARMS, rng=np.random.default_rng(0), n_resamples=10)


def test_bias_by_bucket_isolates_the_flattered_bucket():
    h, s = _sides(seed=4, n_s=200)
    s = s.copy()
    buckets = ["0.0-0.2" if i % 2 else "0.8-1.0" for i in range(200)]
    heavy = np.array([b == "0.8-1.0" for b in buckets])
    s[heavy, 3] = np.clip(s[heavy, 3] + 0.4, 0, 1)  # arm D gains only on leak-heavy queries
    out = bias_by_bucket(h, s, buckets, arms=ARMS, rng=np.random.default_rng(0), n_resamples=500)
    assert list(out) == ["0.0-0.2", "0.8-1.0"]
    assert out["0.8-1.0"]["n"] == 100
    assert out["0.8-1.0"]["bias"]["D"]["value"] == pytest.approx(s[heavy, 3].mean() - h[:, 3].mean())
    assert out["0.8-1.0"]["bias"]["D"]["ci_low"] > 0.2
    assert out["0.0-0.2"]["bias"]["D"]["ci_low"] < 0 < out["0.0-0.2"]["bias"]["D"]["ci_high"]


def _per_query(mat, arms, measure="ndcg@10"):
    return {a: {measure: {f"q{i}": float(v) for i, v in enumerate(mat[:, j])}} for j, a in enumerate(arms)}


def test_significant_pairs_through_compare():
    rng = np.random.default_rng(0)
    n = 80
    base = rng.uniform(0.2, 0.6, n)
    # human: A > B > C by a clear margin each, C ~ D
    h = np.column_stack([base + 0.3, base + 0.15, base, base + rng.normal(0, 0.01, n)])
    # synthetic: A > B kept, B/C reversed significantly, A/C kept
    s = np.column_stack([base + 0.3, base, base + 0.15, base + 0.15 + rng.normal(0, 0.01, n)])
    qids = [f"q{i}" for i in range(n)]
    ch = comparison(_per_query(h, ARMS), query_ids=qids, measures=["ndcg@10"], n_resamples=2000)
    cs = comparison(_per_query(s, ARMS), query_ids=qids, measures=["ndcg@10"], n_resamples=2000)
    out = significant_pairs(ch.pairs, cs.pairs, measure="ndcg@10")
    sig = {frozenset((p.a, p.b)) for p in ch.pairs if p.significant}
    assert out["pairs"] == 6
    assert out["human_significant"] == len(sig) == 5  # every pair but C/D
    outcomes = {(r["better"], r["worse"]): r["outcome"] for r in out["rows"]}
    assert outcomes[("B", "C")] == "reversed significantly"
    assert outcomes[("A", "B")] == "kept significantly"
    assert outcomes[("B", "D")] == "reversed significantly"  # D ~ C, and both are now above B
    assert out["reversed_significant"] == 2 and out["kept_significant"] == 3
    assert out["share_kept"] == pytest.approx(3 / 5)
    assert out["share_reversed_significant"] == pytest.approx(2 / 5)
    none = significant_pairs([], cs.pairs, measure="ndcg@10")
    assert none["human_significant"] == 0 and math.isnan(none["share_kept"])


M = "ndcg@10"


def _results(mat, arms):
    return {"dataset": {"name": "toy", "split": "test", "n_docs": 100, "source": {}}, "k": 10, "measures": [M],
            "arms": [{"name": a, "type": "x", "config": {}, "metrics": {M: float(mat[:, j].mean())},
                      "per_query": {M: {f"q{i}": float(v) for i, v in enumerate(mat[:, j])}}, "timing": {},
                      "cost": None, "footprint": {}} for j, a in enumerate(arms)]}


def test_verdict_agreement_through_the_real_verdict():
    rng = np.random.default_rng(1)
    base = rng.uniform(0.2, 0.6, 60)
    h = np.column_stack([base + 0.3, base, base - 0.1])
    s = np.column_stack([base, base + 0.3, base - 0.1])
    vh = build_verdict(build_report(StoredResults.from_dict(_results(h, ["A", "B", "C"])), n_resamples=1000))
    vs = build_verdict(build_report(StoredResults.from_dict(_results(s, ["A", "B", "C"])), n_resamples=1000))
    out = verdict_agreement(vh, vs)
    assert (out["human_pick"], out["synthetic_pick"]) == ("A", "B")
    assert not out["same_pick"] and not out["same_best"] and not out["synthetic_pick_human_candidate"]
    same = verdict_agreement(vh, vh)
    assert same["same_pick"] and same["same_best"] and same["synthetic_pick_human_candidate"]


def test_scatter_svg_escapes_names_and_places_points_on_the_diagonal_scale():
    from bakeoff.report.calibration import scatter_svg

    plot = {"arms": ["<b>x</b>", "y"], "human_means": {"<b>x</b>": 0.5, "y": 0.7},
            "synthetic_means": {"<b>x</b>": 0.5, "y": 0.6},
            "human_ci": {"<b>x</b>": [0.45, 0.55], "y": [0.65, 0.75]},
            "synthetic_ci": {"<b>x</b>": [0.4, 0.6], "y": [0.55, 0.65]}}
    svg = scatter_svg(plot, measure="ndcg@10", size=300)
    assert "<b>x</b>" not in svg and "&lt;b&gt;x&lt;/b&gt;" in svg
    assert svg.startswith('<svg class="calibration-plot"') and "stroke-dasharray" in svg
    import re

    circles = [(float(a), float(b)) for a, b in re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', svg)]
    # x on the diagonal: cx + cy == size (y = x maps to the anti-diagonal of pixel space)
    assert circles[0][0] + circles[0][1] == pytest.approx(300, abs=0.2)
    # y is below the diagonal (synthetic 0.6 < human 0.7): larger pixel y than the diagonal's
    assert circles[1][0] + circles[1][1] > 300
    assert scatter_svg({"arms": []}, measure="m") == ""


def _record(tau, lo, hi, same_pick, candidate=True):
    return {"primary": M, "corpus": {"name": "scifact"},
            "measures": {M: {"agreement": {"arms": ARMS, "n_human": 300, "n_synthetic": 120,
                                           "figures": {"tau_b": {"value": tau, "ci_low": lo, "ci_high": hi}}}}},
            "verdict": {"agreement": {"same_pick": same_pick, "human_pick": "A", "synthetic_pick": "A" if same_pick
                                      else "B", "synthetic_pick_human_candidate": candidate}}}


def test_summary_line_wording():
    from bakeoff.report.calibration import summary_line

    s = summary_line(_record(0.86, 0.71, 0.95, True))
    assert s == ("this generator's verdicts matched human ones on scifact: Kendall's τ 0.86 [0.71, 0.95] over 4 "
                 "arms on ndcg@10 (120 synthetic vs 300 human queries), same verdict (A)")
    assert "partly matched" in summary_line(_record(0.5, -0.1, 0.9, True))
    s = summary_line(_record(-0.2, -0.6, 0.3, False, candidate=False))
    assert "did not match" in s and "different verdict (B vs human A)" in s
    assert "cannot tell from the best" in summary_line(_record(0.4, -0.2, 0.8, False))
    assert "τ undefined (every arm tied on one side)" in summary_line(_record(None, None, None, True))


def _prov(**over):
    prov = {"mode": "describe", "llm": {"model": "m", "model_id": "m:abc@llama", "prompt_style": "completion",
                                        "base_url": "http://127.0.0.1:4242/v1"},
            "prompts": {"instruction": "Write one question", "example": "rendered <document text>",
                        "control": {"style": "question"}, "style": "completion", "examples": "none",
                        "bootstrapped": []},
            "parameters": {"n": 120, "seed": 0, "test_fraction": 0.5, "leak_mode": "target", "temperature": 0.8,
                           "answerability": {"reference": {"references": 99, "alpha": 0.05, "seed": 0}}},
            "answerability": {"scorer": {"kind": "bi-encoder", "model": "use"}}}
    for path, value in over.items():
        node = prov
        *head, last = path.split("__")
        for h in head:
            node = node[h]
        node[last] = value
    return prov


def test_generator_identity_ignores_sample_and_split_but_not_model_prompt_or_filters():
    from bakeoff.report.calibration import generator_identity

    key = generator_identity(_prov())["key"]
    assert len(key) == 16
    for same in ({"parameters__n": 40}, {"parameters__seed": 3}, {"parameters__test_fraction": 1.0},
                 {"parameters__answerability__reference__seed": 7}, {"llm__base_url": "http://127.0.0.1:1/v1"},
                 {"prompts__bootstrapped": [{"query": "x"}]}):
        assert generator_identity(_prov(**same))["key"] == key, same
    for other in ({"llm__model_id": "m:def@llama"}, {"prompts__instruction": "Write two"},
                  {"prompts__control": {"style": "keywords"}}, {"prompts__examples": "user"},
                  {"parameters__leak_mode": "cut"}, {"parameters__temperature": 0.2},
                  {"parameters__answerability__reference__alpha": 0.1},
                  {"answerability__scorer": {"kind": "bi-encoder", "model": "minilm"}}, {"mode": "clusters"}):
        assert generator_identity(_prov(**other))["key"] != key, other
    # bootstrapped examples show up in the rendered prompt: it is left out of the identity then
    boot = generator_identity(_prov(prompts__examples="bootstrapped"))["key"]
    assert generator_identity(_prov(prompts__examples="bootstrapped", prompts__example="other docs"))["key"] == boot
    with pytest.raises(ValueError, match="not the provenance"):
        generator_identity({"mode": "citations"})
