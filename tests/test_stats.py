"""Statistics checked against independent computations: exact sign-flip enumeration by hand,
Holm on a textbook example, the t statistic and d_z from their formulas."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from bakeoff.stats import (
    SMALL_SAMPLE,
    bootstrap_ci,
    cohens_dz,
    comparison,
    derive_rng,
    holm,
    paired_tests,
    small_sample_note,
)


def _exact_sign_flip_p(d: np.ndarray) -> float:
    """Two-sided exact randomization p-value: share of the 2**n sign patterns with |mean| >= |observed|."""
    obs = abs(d.mean())
    hits = 0
    total = 0
    for signs in itertools.product((1.0, -1.0), repeat=d.size):
        total += 1
        hits += abs((np.array(signs) * d).mean()) >= obs - 1e-12
    return hits / total


def test_exact_permutation_p_value_matches_hand_enumeration() -> None:
    a = np.array([0.5, 1.0, 0.0, 0.25, 1.0])
    b = np.array([0.2, 0.5, 0.0, 0.5, 0.0])
    # d = [0.3, 0.5, 0, -0.25, 1.0], sum 1.55. With 1.0 kept positive, 1 + (±0.3 ±0.5 ±0.25) reaches
    # |sum| >= 1.55 only for (+,+,+) = 2.05 and (+,+,-) = 1.55; with 1.0 flipped, the two mirrors.
    # 4 of the 16 patterns of the non-zero d's, times 2 for the sign of 0: 8 of 32 -> p = 0.25.
    assert _exact_sign_flip_p(a - b) == pytest.approx(8 / 32)
    res = paired_tests(a, b, rng=np.random.default_rng(0))
    assert res["exact"] == 1.0
    assert res["p_perm"] == pytest.approx(0.25, abs=1e-12)


def test_exact_permutation_larger_case_against_enumeration() -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 5, size=12) / 4
    b = rng.integers(0, 5, size=12) / 4
    want = _exact_sign_flip_p(a - b)
    got = paired_tests(a, b, rng=np.random.default_rng(1), n_resamples=5000)  # 2**12 = 4096 <= 5000: exact
    assert got["exact"] == 1.0
    assert got["p_perm"] == pytest.approx(want, abs=1e-12)


def test_randomized_permutation_close_to_exact_and_seeded() -> None:
    rng = np.random.default_rng(3)
    a = rng.random(14)
    b = a - 0.1 + rng.normal(0, 0.2, 14)
    want = _exact_sign_flip_p(a - b)  # 16384 patterns
    p1 = paired_tests(a, b, rng=np.random.default_rng(5), n_resamples=4000)
    p2 = paired_tests(a, b, rng=np.random.default_rng(5), n_resamples=4000)
    assert p1["exact"] == 0.0
    assert p1["p_perm"] == p2["p_perm"]  # same seed, same answer
    # Monte Carlo error of a p-value with 4000 draws: sd <= 0.008.
    assert abs(p1["p_perm"] - want) < 0.03


def test_t_test_and_effect_size_match_formulas() -> None:
    a = np.array([0.9, 0.4, 0.7, 0.2, 0.6, 0.8])
    b = np.array([0.5, 0.5, 0.3, 0.1, 0.6, 0.2])
    d = a - b  # [0.4, -0.1, 0.4, 0.1, 0, 0.6]; mean 0.2333..., sd (ddof=1)
    mean = sum(d) / 6
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / 5)
    res = paired_tests(a, b, rng=np.random.default_rng(0))
    assert res["t"] == pytest.approx(mean / (sd / math.sqrt(6)), rel=1e-12)
    assert cohens_dz(a, b) == pytest.approx(mean / sd, rel=1e-12)
    # by hand: mean 1.4/6 = 0.23333, sum of squared deviations 0.37333, sd = sqrt(0.37333/5) = 0.27325
    assert cohens_dz(a, b) == pytest.approx(0.8539, abs=1e-4)


def test_holm_hand_example() -> None:
    # m = 4; sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005=0.02, 3*0.01=0.03, 2*0.03=0.06, max(0.06, 1*0.04)=0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # capped at 1, monotone, NaN ignored (m = 2)
    assert holm([0.6, float("nan"), 0.4]) == pytest.approx([0.8, float("nan"), 0.8], nan_ok=True)
    assert holm([]) == []


def test_identical_values_do_not_crash() -> None:
    a = np.array([0.5, 0.0, 1.0, 0.3])
    res = paired_tests(a, a.copy(), rng=np.random.default_rng(0))
    assert res == {"p_perm": 1.0, "p_ttest": 1.0, "t": 0.0, "exact": 1.0}
    assert cohens_dz(a, a) == 0.0
    lo, hi = bootstrap_ci(np.zeros(10), rng=np.random.default_rng(0), n_resamples=200)
    assert (lo, hi) == (0.0, 0.0)
    comp = comparison({"x": {"m": {"q1": 1.0, "q2": 0.0}}, "y": {"m": {"q1": 1.0, "q2": 0.0}}},
                   query_ids=["q1", "q2"], measures=["m"], n_resamples=100)
    p = comp.pair("x", "y", "m")
    assert p.diff == 0.0 and p.p_perm == 1.0 and p.p_perm_holm == 1.0 and not p.significant
    assert (p.diff_ci_low, p.diff_ci_high) == (0.0, 0.0)
    assert comp.to_dict()["pairs"][0]["d_z"] == 0.0


def test_constant_nonzero_difference() -> None:
    a = np.array([0.6, 0.7, 0.8, 0.9, 1.0])
    res = paired_tests(a, a - 0.1, rng=np.random.default_rng(0))
    assert res["p_ttest"] == 0.0 and math.isinf(res["t"])
    assert res["p_perm"] == pytest.approx(2 / 32)  # only all-plus and all-minus reach |mean| = 0.1
    assert math.isinf(cohens_dz(a, a - 0.1))


def test_bootstrap_ci_seeded_and_sane() -> None:
    x = np.random.default_rng(0).random(200)
    ci1 = bootstrap_ci(x, rng=np.random.default_rng(1), n_resamples=2000)
    ci2 = bootstrap_ci(x, rng=np.random.default_rng(1), n_resamples=2000)
    assert ci1 == ci2
    se = x.std(ddof=1) / math.sqrt(x.size)
    # the normal-theory interval, computed independently, agrees to within a tenth of a standard error
    assert ci1[0] == pytest.approx(x.mean() - 1.96 * se, abs=0.1 * se + 2e-3)
    assert ci1[1] == pytest.approx(x.mean() + 1.96 * se, abs=0.1 * se + 2e-3)


def test_compare_holm_and_significance_marks() -> None:
    qids = [f"q{i}" for i in range(40)]
    rng = np.random.default_rng(11)
    base = rng.random(40)
    per_query = {
        "good": {"m": {q: min(1.0, v + 0.3) for q, v in zip(qids, base)}},
        "mid": {"m": {q: v for q, v in zip(qids, base)}},
        "mid2": {"m": {q: v + (0.001 if i % 2 else -0.001) for i, (q, v) in enumerate(zip(qids, base))}},
    }
    comp = comparison(per_query, query_ids=qids, measures=["m"], n_resamples=999, seed=3)
    assert comp.note is None and comp.n_queries == 40
    pairs = [p for p in comp.pairs if p.measure == "m"]
    assert [(p.a, p.b) for p in pairs] == [("good", "mid"), ("good", "mid2"), ("mid", "mid2")]
    raw = [p.p_perm for p in pairs]
    assert [p.p_perm_holm for p in pairs] == pytest.approx(holm(raw))
    assert pairs[0].significant and pairs[1].significant and not pairs[2].significant
    assert pairs[0].diff == pytest.approx(np.mean([per_query["good"]["m"][q] - base[i] for i, q in enumerate(qids)]))
    assert pairs[0].diff_ci_low <= pairs[0].diff <= pairs[0].diff_ci_high
    # same seed, same numbers; a different arm set does not change this pair's resampling
    again = comparison({k: per_query[k] for k in ("good", "mid")}, query_ids=qids, measures=["m"], n_resamples=999, seed=3)
    assert again.pair("good", "mid", "m").diff_ci_low == pairs[0].diff_ci_low
    assert again.mean("good", "m").ci_low == comp.mean("good", "m").ci_low


def test_compare_missing_value_is_an_error() -> None:
    with pytest.raises(KeyError, match="no m value"):
        comparison({"x": {"m": {"q1": 1.0}}, "y": {"m": {}}}, query_ids=["q1"], measures=["m"], n_resamples=10)


def test_small_sample_note() -> None:
    assert small_sample_note(SMALL_SAMPLE) is None
    note = small_sample_note(21)
    assert note is not None and "Only 21 queries" in note and "fewer than 30" in note


def test_derive_rng_is_keyed() -> None:
    a = derive_rng(0, "m", "x").random()
    assert a == derive_rng(0, "m", "x").random()
    assert a != derive_rng(0, "m", "y").random()
    assert a != derive_rng(1, "m", "x").random()
