"""The leak-matched table and the verdict that decides on it, against hand computations and brute force."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats

from bakeoff.data.leak_bins import DEFAULT_LEAK_TARGET, JUDGED_LEAK_SHARES, leak_bin, normalise_shares
from bakeoff.report.leak_match import MIN_ESS, leak_weights, queries_needed, weighted_sign_flip
from bakeoff.report.model import build_report
from bakeoff.runner.results import StoredResults

M = "ndcg@10"


def test_weights_by_hand() -> None:
    leak = {"a": 0.1, "b": 0.1, "c": 0.9, "d": 0.9, "e": 0.9, "f": 0.5, "g": None}
    lw = leak_weights(leak, list(leak), target=(2, 0, 1, 0, 1))  # shares 0.5, 0, 0.25, 0, 0.25
    # bin 0 holds 2/6 of the queries for a target of 1/2: weight 1.5; bin 4: 3/6 for 1/4: 0.5; bin 2: 1/6 for 1/4: 1.5
    assert lw["weights"] == pytest.approx({"a": 1.5, "b": 1.5, "c": 0.5, "d": 0.5, "e": 0.5, "f": 1.5})
    assert lw["ess"] == pytest.approx(6.0 ** 2 / (3 * 1.5 ** 2 + 3 * 0.5 ** 2))  # 4.8
    assert (lw["n"], lw["missing"], lw["uncovered"]) == (6, 1, 0.0)


def test_uncovered_target_is_reported_and_spread() -> None:
    leak = {"a": 0.1, "b": 0.9}
    lw = leak_weights(leak, ["a", "b"], target=(0.5, 0.2, 0.0, 0.0, 0.3))
    assert lw["uncovered"] == pytest.approx(0.2)
    # the covered target 0.5 / 0.3 renormalised to 0.625 / 0.375, each bin holding half the queries
    assert lw["weights"] == pytest.approx({"a": 1.25, "b": 0.75})


def test_default_target_is_the_mean_of_the_judged_collections() -> None:
    shares = [sum(v[i] for v in JUDGED_LEAK_SHARES.values()) / len(JUDGED_LEAK_SHARES) for i in range(5)]
    assert DEFAULT_LEAK_TARGET == pytest.approx(shares, abs=5.01e-4)  # rounded to three decimals
    assert sum(DEFAULT_LEAK_TARGET) == pytest.approx(1.0, abs=2e-3)
    assert [leak_bin(x) for x in (0.0, 0.19999, 0.2, 0.79, 0.8, 1.0)] == [0, 0, 1, 3, 4, 4]
    with pytest.raises(ValueError):
        normalise_shares((1, 2, 3))


def test_sign_flip_equals_brute_force_and_scipy() -> None:
    d = np.array([0.3, -0.1, 0.25, 0.4, -0.05, 0.2, 0.1])
    w = np.array([2.0, 0.5, 1.0, 0.25, 3.0, 1.0, 1.5])
    t = abs((w * d).sum())
    flips = [abs(sum(s * x for s, x in zip(signs, w * d))) for signs in itertools.product((1, -1), repeat=len(d))]
    brute = sum(f >= t - 1e-12 for f in flips) / len(flips)
    assert weighted_sign_flip(d, w, rng=np.random.default_rng(0)) == pytest.approx(brute)
    ones = np.ones_like(d)
    exact = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=10_000).pvalue
    assert weighted_sign_flip(d, ones, rng=np.random.default_rng(0)) == pytest.approx(exact)
    # sampled (2**20 > 10000 flips): within Monte Carlo error of the brute-force-free scipy value on the same data
    rng = np.random.default_rng(3)
    big = rng.normal(0.1, 0.5, size=20)
    p = weighted_sign_flip(big, np.ones(20), rng=np.random.default_rng(1), n_resamples=20_000)
    ref = stats.permutation_test((big,), np.mean, permutation_type="samples", n_resamples=20_000,
                                 random_state=np.random.default_rng(2)).pvalue
    assert abs(p - ref) < 0.02
    assert weighted_sign_flip([0.0, 0.0], [1.0, 1.0], rng=np.random.default_rng(0)) == 1.0
    assert math.isnan(weighted_sign_flip([0.2], [1.0], rng=np.random.default_rng(0)))


def test_queries_needed_by_the_normal_formula() -> None:
    d = np.array([0.1, 0.0, 0.2, -0.1, 0.05, 0.15, 0.0, 0.1])
    delta, s = d.mean(), d.std()  # population sd: the weighted sd with equal weights
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert queries_needed(d, np.ones_like(d)) == math.ceil((z * s / delta) ** 2)
    # halving the effective sample doubles the queries needed at that efficiency
    w = np.array([1, 1, 1, 1, 1, 1, 1, 1.0])
    assert queries_needed(np.zeros(4), np.ones(4)) is None
    assert queries_needed(d, w) == queries_needed(d, 2 * w)


def _results(tmp_path, *, n_low: int, n_high: int, seed: int = 0):
    """Two arms: ``lex`` near perfect on queries that copy their document (leak 0.9), poor on those that do not
    (leak 0.1); ``den`` steady. Written with a provenance whose target puts 80 % on the low bin."""
    rng = np.random.default_rng(seed)
    leak, lex, den = {}, {}, {}
    for i in range(n_low + n_high):
        q = f"q{i}"
        low = i < n_low
        leak[q] = 0.1 if low else 0.9
        lex[q] = float(np.clip((0.3 if low else 0.98) + rng.normal(0, 0.1), 0, 1))
        den[q] = float(np.clip((0.6 if low else 0.75) + rng.normal(0, 0.1), 0, 1))
    (tmp_path / "provenance.json").write_text(json.dumps({"leak": {"per_query": leak, "target": [0.8, 0, 0, 0, 0.2],
                                                                   "target_source": "test target"}}))

    def arm(name, typ, vals):
        return {"name": name, "type": typ, "config": {}, "metrics": {M: float(np.mean(list(vals.values())))},
                "per_query": {M: vals}, "timing": {}, "footprint": {}}

    return {"dataset": {"name": "toy", "split": "test", "n_docs": 100, "source": {"beir": str(tmp_path)}},
            "k": 10, "measures": [M], "arms": [arm("lex", "bm25", lex), arm("den", "dense", den)]}


def test_verdict_decides_on_the_leak_matched_table(tmp_path) -> None:
    res = _results(tmp_path, n_low=30, n_high=70)
    rep = build_report(StoredResults.from_dict(res), n_resamples=2000)
    lm = rep["truth_quality"]["leak_matched"]
    assert lm["target_source"] == "test target"
    assert lm["ess"] == pytest.approx(100 ** 2 / (30 * (0.8 / 0.3) ** 2 + 70 * (0.2 / 0.7) ** 2))
    lex = res["arms"][0]["per_query"][M]
    low = [lex[f"q{i}"] for i in range(30)]
    high = [lex[f"q{i}"] for i in range(30, 100)]
    assert lm["arms"]["lex"]["mean"] == pytest.approx(0.8 * np.mean(low) + 0.2 * np.mean(high))
    assert rep["arms"][0]["metrics"][M]["mean"] > rep["arms"][1]["metrics"][M]["mean"]  # unweighted: lex ahead
    v = rep["verdict"]
    assert v["best"] == "den" and v["pick"] == "den"
    assert v["headline"].startswith("On the 100 queries weighted to the leak of people's queries (target test target")
    assert any(line.startswith("Unweighted, lex has the highest mean") for line in v["lines"])


def test_verdict_names_no_pick_when_the_effective_sample_is_too_small(tmp_path) -> None:
    rep = build_report(StoredResults.from_dict(_results(tmp_path, n_low=4, n_high=96)), n_resamples=2000)
    lm = rep["truth_quality"]["leak_matched"]
    assert lm["ess"] < MIN_ESS
    v = rep["verdict"]
    assert v["pick"] is None
    assert v["headline"].startswith("No pick: weighted to the leak of people's queries")
    assert f"count as {lm['ess']:.1f} (effective sample size, below 30)" in v["headline"]
    # what cannot be separated is said of the weighted queries, not of the 100 (unweighted, lex is far ahead)
    from bakeoff.demo import separation_line

    assert separation_line(v, 100) == (
        f"{v['best']} is not significantly better than {v['tied'][0]['name']} on the 100 queries weighted to the leak "
        f"target (effective sample size {lm['ess']:.1f}); to separate them, generate more queries (-n) over more "
        "documents, or a stronger --llm that gets more of them through the filters")
    assert v["caveats"][-1] == (f"No pair of arms differs significantly on {M}: with these queries weighted to the "
                                f"leak target (effective sample size {lm['ess']:.1f}) the test cannot separate any of "
                                "them.")


def test_no_pick_says_when_the_arms_differ_too_little_to_be_worth_separating(tmp_path) -> None:
    """Arms a hair apart: the power calculation asks for millions of queries; the headline says the difference is
    too small instead of printing that number (above MAX_QUERIES_NEEDED), and the number otherwise."""
    from bakeoff.report.leak_match import MAX_QUERIES_NEEDED

    res = _results(tmp_path, n_low=4, n_high=96)
    lex = res["arms"][0]["per_query"][M]
    rng = np.random.default_rng(1)
    den = {q: v + float(rng.normal(2e-5, 1e-3)) for q, v in lex.items()}
    res["arms"][1]["per_query"][M] = den
    res["arms"][1]["metrics"][M] = float(np.mean(list(den.values())))
    rep = build_report(StoredResults.from_dict(res), n_resamples=2000)
    need = rep["truth_quality"]["leak_matched"]["queries_needed"]
    assert need > MAX_QUERIES_NEEDED
    head = rep["verdict"]["headline"]
    assert f"differ so little on {M} that more than 10,000 queries" in head and str(need) not in head
    small = build_report(StoredResults.from_dict(_results(tmp_path, n_low=4, n_high=96)), n_resamples=2000)
    need_small = small["truth_quality"]["leak_matched"]["queries_needed"]
    assert need_small <= MAX_QUERIES_NEEDED and f"About {need_small} queries at this leak mix" in small["verdict"]["headline"]


def test_report_renders_the_leak_matched_table_in_the_terminal_and_html(tmp_path) -> None:
    import io

    from rich.console import Console

    from bakeoff.report.html import _truth_quality_html
    from bakeoff.report.terminal import leak_matched_rows, print_truth_quality

    rep = build_report(StoredResults.from_dict(_results(tmp_path, n_low=30, n_high=70)), n_resamples=500)
    lm = rep["truth_quality"]["leak_matched"]
    header, rows = leak_matched_rows(lm)
    assert header[:4] == ["arm", "leak-matched", "95% CI", "unweighted"]
    assert header[4] == "[0, 0.2) n=30 t=80%" and header[8] == "[0.8, 1] n=70 t=20%"
    assert [r[0] for r in rows] == ["den", "lex"]
    buf = io.StringIO()
    print_truth_quality(rep, Console(file=buf, width=200))
    out = buf.getvalue()
    assert "Leak-matched ndcg@10" in out and f"count as {lm['ess']:.1f} (effective sample size" in out
    page = _truth_quality_html(rep)
    assert "Leak-matched ndcg@10 (the verdict's table)" in page and 'class="leak-matched"' in page
