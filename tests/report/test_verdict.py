"""The verdict on constructed results: each wording branch, through the real statistics.

Per-query values are built so that the paired tests have a known outcome (an arm equal to
another except on a few queries is tied; an arm 0.3 lower on every query is significantly
worse), and the sentences are checked against the report's own Holm p-values.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from bakeoff.report.model import build_report
from bakeoff.report.verdict import TOLERANCE, build_verdict, costs_of, fmt_p, median_se
from bakeoff.runner.results import StoredResults

M = "ndcg@10"
RESAMPLES = 2000


def _arm(name: str, values, *, p50=None, usd=None, index_s=None, model_bytes=None, added_mb=None, empty=None):
    vals = {f"q{i}": float(v) for i, v in enumerate(values)}
    arm = {"name": name, "type": "x", "config": {}, "metrics": {M: float(np.mean(values))}, "per_query": {M: vals},
           "timing": {"index_total_s": index_s} if index_s is not None else {},
           "cost": {"usd_per_1k_queries": usd} if usd is not None else None,
           "footprint": {"model_bytes": model_bytes, "added_mb": added_mb}}
    if p50 is not None:
        arm["timing"]["latency"] = {"p50_ms": p50, "p95_ms": p50}
    if empty is not None:
        arm["empty"] = empty
    return arm


def _results(*arms, n=None, label_kind=None):
    ds = {"name": "toy", "split": "test", "n_docs": 100, "source": {}}
    if label_kind:
        ds["provenance"] = {"label_kind": label_kind}
    return {"dataset": ds, "k": 10, "measures": [M], "arms": list(arms)}


def _report(*arms, **kw):
    return build_report(StoredResults.from_dict(_results(*arms, **kw)), n_resamples=RESAMPLES)


def _base(n=60, seed=1):
    return np.random.default_rng(seed).uniform(0.2, 0.9, size=n)


def _tied(base):
    """``base`` a little lower on four queries and higher on three: a small mean drop whose sign flips
    the randomization test cannot tell from noise."""
    out = base.copy()
    out[:4] -= 0.05
    out[4:7] += 0.04
    return out


def _pair_p(report, a, b):
    return next(p for p in report["stats"]["pairs"] if {p["a"], p["b"]} == {a, b})["p_perm_holm"]


def test_tied_and_cheaper_arm_is_deployed() -> None:
    base = _base()
    dense = base.copy()
    bm25 = _tied(base)
    rep = _report(_arm("dense", dense, p50=40.0, usd=0.001, index_s=120.0, model_bytes=90 << 20, added_mb=300.0),
                  _arm("bm25", bm25, p50=1.0, usd=0.000025, index_s=2.0, model_bytes=0, added_mb=50.0))
    v = rep["verdict"]
    assert v["best"] == "dense" and v["pick"] == "bm25" and v["candidates"] == ["dense", "bm25"]
    p = _pair_p(rep, "dense", "bm25")
    assert p >= 0.05
    assert v["headline"] == (f"dense and bm25 are statistically tied on {M} (Holm {fmt_p(p)}; dense "
                             f"{np.mean(dense):.4f} vs bm25 {np.mean(bm25):.4f}); bm25 is 40x faster per query "
                             "(p50 latency 1.00 vs 40.0 ms) → deploy bm25.")
    assert v["reason"] == {"cost": "latency_ms", "ratio": pytest.approx(40.0)}
    assert not re.search(r"\b(better|worse)\b", v["headline"])  # a tie is never called a difference
    assert any(line.startswith("Head-room: picking the best arm for each query (oracle) would reach") for line in
               v["lines"])


def test_best_significantly_better_than_all() -> None:
    base = _base()
    rep = _report(_arm("dense", base, p50=40.0), _arm("bm25", base - 0.3, p50=1.0), _arm("tfidf", base - 0.2, p50=2.0))
    v = rep["verdict"]
    assert v["pick"] == "dense" and v["tied"] == [] and {r["name"] for r in v["below"]} == {"bm25", "tfidf"}
    worst = max(_pair_p(rep, "dense", "bm25"), _pair_p(rep, "dense", "tfidf"))
    assert worst < 0.05
    assert v["headline"].startswith(f"dense has the highest mean {M} ({np.mean(base):.4f}, 95% CI [")
    assert v["headline"].endswith(f"and is significantly better than every other arm (Holm "
                                  f"{fmt_p(worst).replace('p=', 'p≤')} for the closest) → deploy dense.")
    assert v["lines"][1] == (f"The fastest arm, bm25 (p50 1.00 ms), is significantly below dense on {M} by 0.3000 "
                             f"(Holm {fmt_p(_pair_p(rep, 'dense', 'bm25'))}).")


@pytest.mark.slow  # a real model
def test_tied_but_best_is_also_cheapest() -> None:
    base = _base()
    other = _tied(base)
    rep = _report(_arm("bm25", base, p50=1.0), _arm("dense", other, p50=30.0))
    v = rep["verdict"]
    assert v["pick"] == "bm25" and v["reason"] is None
    assert v["headline"] == (f"bm25 has the highest mean {M} ({np.mean(base):.4f}, 95% CI "
                             f"[{rep['arms'][0]['metrics'][M]['ci_low']:.4f}, "
                             f"{rep['arms'][0]['metrics'][M]['ci_high']:.4f}]); dense "
                             f"(Holm {fmt_p(_pair_p(rep, 'bm25', 'dense'))}) is statistically tied with it (no significant "
                             "difference after Holm); bm25 is also the cheapest of them to run (30x faster per query "
                             "than dense: p50 latency 1.00 vs 30.0 ms) → deploy bm25.")


def test_tied_within_tolerance_higher_mean_decides() -> None:
    base = _base()
    other = _tied(base)
    # 5 % apart on latency (within the 10 % tolerance), the same index time: no cost decides
    rep = _report(_arm("a", base, p50=10.0, index_s=5.0), _arm("b", other, p50=10.0 / (1 + TOLERANCE / 2), index_s=5.0))
    v = rep["verdict"]
    assert v["pick"] == "a"
    assert "no cost tells them apart beyond its measurement noise (more than 10% and above its noise floor), and none is simpler, so the higher mean decides → deploy a." in v["headline"]


#: Timings of the kind two fusion arms gave on SciFact (p50 and p95 in ms, 50 timed queries): a query takes
#: about 20 ms or about 115 ms, and the median lands wherever the split falls in that run.
TWO_MODES_FAST = [20.0] * 24 + [38.0, 40.0] + [115.0] * 24      # median 39
TWO_MODES_SLOW = [22.0] * 23 + [80.0, 90.0] + [118.0] * 25      # median 104


@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")  # scipy, on the many equal timings
def test_median_se_matches_scipy_and_is_wide_for_two_modes() -> None:
    from scipy.stats import bootstrap

    for x in (TWO_MODES_FAST, list(np.random.default_rng(3).normal(50.0, 2.0, size=50))):
        ours = median_se(x)
        theirs = bootstrap((np.asarray(x),), np.median, n_resamples=20000, method="percentile",
                           random_state=np.random.default_rng(1)).standard_error
        assert ours == pytest.approx(theirs, rel=0.1)
    assert median_se(TWO_MODES_FAST) > 20.0  # the median may sit in either mode
    assert median_se(list(np.random.default_rng(3).normal(50.0, 2.0, size=50))) < 1.0
    assert median_se(TWO_MODES_FAST) == median_se(TWO_MODES_FAST)  # seeded


def _timed(arm: dict, samples: list[float]) -> dict:
    arm["timing"]["latency"] = {"p50_ms": float(np.median(samples)), "p95_ms": float(np.percentile(samples, 95)),
                                "n": len(samples), "samples_ms": samples}
    return arm


def test_two_mode_latencies_do_not_decide() -> None:
    """A 2.7x gap between medians of two-mode timings is within their bootstrap noise: the higher mean decides
    (the normal approximation from p50 and p95 would have picked the faster median)."""
    base = _base()
    other = _tied(base)
    best, fast = _timed(_arm("a", base), TWO_MODES_SLOW), _timed(_arm("b", other), TWO_MODES_FAST)
    rep = _report(best, fast)
    a, b = (costs_of(r) for r in rep["arms"])
    assert b["latency_ms"] == 39.0 and a["latency_ms"] == 104.0
    assert a["latency_se_ms"] == pytest.approx(median_se(TWO_MODES_SLOW)) and a["latency_se_ms"] > 20.0
    v = rep["verdict"]
    assert v["pick"] == "a" and v["reason"] is None
    assert "no cost tells them apart beyond its measurement noise" in v["headline"]
    # the same medians from one-mode timings (without samples) still decide
    rep = _report(_arm("a", base, p50=104.0), _arm("b", other, p50=39.0))
    assert rep["verdict"]["pick"] == "b"


def test_later_cost_decides_when_latency_ties() -> None:
    base = _base()
    other = _tied(base)
    rep = _report(_arm("big", base, p50=5.0, usd=0.0001, index_s=300.0),
                  _arm("small", other, p50=5.2, usd=0.0001, index_s=3.0))
    v = rep["verdict"]
    assert v["pick"] == "small" and v["reason"]["cost"] == "index_s"
    assert "small is 100x faster to index (index time 3.00 vs 300 s) → deploy small." in v["headline"]


def test_index_restored_from_the_cache_counts_what_building_it_took() -> None:
    """A dense arm whose embeddings came from the cache indexed in 2 ms here but took 30 s to build: BM25 is
    the one faster to index (before, "dense is 62x faster to index (index time 0.00 vs 0.11 s)")."""
    base = _base()
    dense, bm25 = _arm("dense", base, p50=5.0, index_s=0.002), _arm("bm25", _tied(base), p50=5.2, index_s=0.11)
    dense["timing"]["index_cached_total_s"] = 30.0
    v = _report(dense, bm25)["verdict"]
    assert v["pick"] == "bm25" and v["reason"]["cost"] == "index_s"
    assert "bm25 is 273x faster to index (index time 0.11 vs 30.0 s) → deploy bm25." in v["headline"]


def test_single_arm_and_no_latency() -> None:
    rep = _report(_arm("only", _base()))
    assert rep["verdict"]["headline"] == f"Only one valid arm, only: {M} = {np.mean(_base()):.4f}; nothing to compare it with → only."
    base = _base()
    twin = _tied(base)
    v = _report(_arm("a", base), _arm("b", twin))["verdict"]
    assert "no latency was measured to tell them apart, so the higher mean decides → deploy a." in v["headline"]


def test_broken_arm_is_left_out_and_named() -> None:
    base = _base()
    empty = {"queries": 60, "n": 60, "share": 1.0, "max_share": 0.5, "broken": True}
    rep = _report(_arm("bm25", base, p50=1.0), _arm("dead", np.zeros(60), p50=0.1, empty=empty),
                  _arm("tfidf", base - 0.3, p50=2.0))
    assert [a["name"] for a in rep["arms"]] == ["bm25", "tfidf"]  # not ranked
    assert all("dead" not in (p["a"], p["b"]) for p in rep["stats"]["pairs"])  # not tested
    assert [b["name"] for b in rep["broken_arms"]] == ["dead"]
    v = rep["verdict"]
    assert v["pick"] == "bm25" and "dead" not in v["headline"]
    assert ("Broken, left out of the ranking and the tests: dead (empty ranking for 60 of 60 queries, 100% > 50%)."
            in v["lines"])
    # every arm broken: a report all the same, and the verdict says so
    rep = _report(_arm("dead", np.zeros(60), empty=empty))
    assert rep["arms"] == [] and rep["verdict"]["headline"].startswith("No valid arm")
    from bakeoff.report.terminal import print_report

    buf = io.StringIO()
    print_report(rep, file=buf)
    assert "No valid arm" in buf.getvalue() and "Broken, left out" in buf.getvalue()


def test_caveats() -> None:
    base = _base(n=20)
    twin = _tied(base)
    rep = build_report(StoredResults.from_dict(_results(_arm("a", base, p50=2.0), _arm("b", twin, p50=1.0),
                                                        label_kind="citation")), n_resamples=RESAMPLES)
    caveats = rep["verdict"]["caveats"]
    assert caveats[0].startswith("Labels are citation-mined: only cited documents are known relevant")
    assert caveats[1] == "Only 20 queries: the tests have little power, and a tie here may hide a real difference."
    assert caveats[-1] == f"No pair of arms differs significantly on {M}: with these queries the test cannot " \
                          "separate any of them."
    # leak-heavy synthetic queries and a low judged@k (as the truth-quality section reports it)
    rep = dict(rep)
    rep["leak"] = {"values": [0.9] * 8 + [0.1] * 12}
    rep["truth_quality"] = {"judged": {"a": 0.12, "b": 0.8}}
    caveats = build_verdict(rep)["caveats"]
    assert any(c.startswith("40% of the queries are leak-heavy (leak >= 0.5") for c in caveats)
    assert any(c.startswith("judged@10 is low for a (0.12): most of their top 10 has no judgment") for c in caveats)
    rep["leak"] = {"values": [0.9] * 2 + [0.1] * 18}  # 10 %: below the share that triggers the caveat
    assert not any("leak-heavy" in c for c in build_verdict(rep)["caveats"])


def test_verdict_rendered_first_in_terminal_and_html(tmp_path) -> None:
    pytest.importorskip("plotly")
    from bakeoff.report.html import render_html
    from bakeoff.report.terminal import print_report

    base = _base()
    bm25 = _tied(base)
    rep = _report(_arm("dense <b>", base, p50=40.0), _arm("bm25", bm25, p50=1.0))
    buf = io.StringIO()
    print_report(rep, file=buf)
    text = buf.getvalue()
    assert text.lstrip().startswith(f"Verdict (on {M}, alpha=0.05): dense <b> and bm25 are statistically tied")
    page = render_html(rep, explorer={"arms": [], "measures": [], "queries": [], "tops": {}, "docs": {}, "rel": {}})
    assert '<section id="verdict"' in page and "dense &lt;b&gt; and bm25 are statistically tied" in page
    assert page.index('id="verdict"') < page.index("<h2>Summary</h2>")


def _with_leak_buckets(rep, per_query_values, leak):
    """``rep`` with the truth-quality leak section computed by the real :func:`leak_verdict` (best arm first)."""
    from bakeoff.report.quality import leak_verdict

    order = sorted(per_query_values, key=lambda a: -np.mean(per_query_values[a]))
    per_query = {a: {M: {f"q{i}": float(x) for i, x in enumerate(v)}} for a, v in per_query_values.items()}
    qids = [f"q{i}" for i in range(len(leak))]
    out = dict(rep)
    out["truth_quality"] = {"leak_buckets": leak_verdict(per_query, leak=dict(zip(qids, leak)), arms=order,
                                                         measure=M, query_ids=qids, n_resamples=RESAMPLES)}
    return out


def test_leak_check_flags_a_cheap_pick_that_loses_on_low_leak_queries() -> None:
    # 20 low-leak queries where dense is 0.3 ahead, 40 leaky ones where bm25 is 0.14 ahead: overall a small,
    # non-significant dense lead, so the cheaper bm25 is picked -- and the low-leak bucket contradicts it.
    base = np.random.default_rng(3).uniform(0.35, 0.65, size=60)
    dense, bm25 = base.copy(), base.copy()
    bm25[:20] -= 0.3
    bm25[20:] += 0.14
    leak = [0.0] * 20 + [0.8] * 40
    rep = _report(_arm("dense", dense, p50=40.0), _arm("bm25", bm25, p50=1.0))
    assert rep["verdict"]["pick"] == "bm25" and rep["verdict"]["leak_check"] == []  # no leak section: no check
    v = build_verdict(_with_leak_buckets(rep, {"dense": dense, "bm25": bm25}, leak))
    assert v["best"] == "dense" and v["pick"] == "bm25"  # the check never re-decides
    row = v["leak_check"]
    assert [(c["winner"], c["loser"], c["overall"], c["n"], c["bucket"]) for c in row] == [
        ("dense", "bm25", "tied", 20, "[0, 0.1)")]
    assert row[0]["mean_winner"] == pytest.approx(float(np.mean(dense[:20])))
    assert row[0]["mean_loser"] == pytest.approx(float(np.mean(bm25[:20])))
    assert row[0]["p_holm"] < 0.05
    assert v["headline"].endswith("→ deploy bm25, but the leak check below disagrees.")
    assert v["lines"][1].startswith(
        f"Leak check: on the 20 queries with the least leak ([0, 0.1)), dense is significantly better than bm25 on "
        f"{M} ({np.mean(dense[:20]):.4f} vs {np.mean(bm25[:20]):.4f}, Holm {fmt_p(row[0]['p_holm'])} within the "
        "bucket), although the overall test cannot separate them.")


def test_leak_check_flags_a_reversal_and_stays_quiet_when_buckets_agree() -> None:
    base = np.random.default_rng(4).uniform(0.35, 0.65, size=60)
    dense, bm25 = base.copy(), base.copy()
    bm25[:20] -= 0.3  # dense ahead on the 20 low-leak queries
    bm25[20:] += 0.4  # bm25 far ahead on the 40 leaky ones: significantly better overall
    leak = [0.05] * 20 + [0.9] * 40
    rep = _report(_arm("dense", dense, p50=40.0), _arm("bm25", bm25, p50=1.0))
    assert rep["verdict"]["best"] == "bm25" and [r["name"] for r in rep["verdict"]["below"]] == ["dense"]
    v = build_verdict(_with_leak_buckets(rep, {"dense": dense, "bm25": bm25}, leak))
    assert [(c["winner"], c["loser"], c["overall"]) for c in v["leak_check"]] == [("dense", "bm25", "reversed")]
    assert "although overall bm25 is significantly better" in v["lines"][1]
    # the best arm ahead in every bucket: nothing to flag
    agree = base.copy() - 0.3
    rep = _report(_arm("dense", dense, p50=40.0), _arm("bm25", agree, p50=1.0))
    v = build_verdict(_with_leak_buckets(rep, {"dense": dense, "bm25": agree}, leak))
    assert v["pick"] == "dense" and v["leak_check"] == [] and not any("Leak check" in x for x in v["lines"])
    # every query in one bucket: the overall test already covers it
    v = build_verdict(_with_leak_buckets(rep, {"dense": dense, "bm25": bm25}, [0.0] * 60))
    assert v["leak_check"] == []


def test_caveat_when_the_answerability_filter_used_an_arms_model(tmp_path) -> None:
    # a synthetic BEIR folder whose provenance says the queries were kept by the scorer with weights "w-minilm"
    import json as _json

    (tmp_path / "provenance.json").write_text(_json.dumps({"answerability": {"scorer": {
        "scorer": "bi-encoder", "model": "sentence-transformers/all-MiniLM-L6-v2", "weights": "w-minilm"}}}))
    base = _base()
    dense = _arm("dense", base, p50=40.0)
    dense["config"] = {"encoder": {"model": "sentence-transformers/all-MiniLM-L6-v2", "weights": "w-minilm"}}
    rrf = _arm("rrf", base, p50=41.0)
    rrf["children"] = ["bm25", "dense"]
    bm25 = _arm("bm25", base - 0.3, p50=1.0)
    results = _results(dense, rrf, bm25)
    results["dataset"]["source"] = {"beir": str(tmp_path), "split": "test"}
    rep = build_report(StoredResults.from_dict(results), n_resamples=RESAMPLES)
    assert rep["filter_bias"] == {"model": "sentence-transformers/all-MiniLM-L6-v2", "scorer": "bi-encoder",
                                  "arms": ["dense", "rrf"], "file": str(tmp_path / "provenance.json")}
    assert ("The queries were kept by the answerability score of sentence-transformers/all-MiniLM-L6-v2, the model "
            "that dense and rrf rank with: the filter chose queries this model finds easy, which favours them; "
            "regenerate with another scorer (`--answerability use`) or check on real queries before trusting "
            "their lead.") in rep["verdict"]["caveats"]
    # another scorer's weights (USE, as in the demo): nothing to say
    (tmp_path / "provenance.json").write_text(_json.dumps({"answerability": {"scorer": {
        "scorer": "bi-encoder", "model": "universal-sentence-encoder-multilingual-3", "weights": "w-use"}}}))
    rep = build_report(StoredResults.from_dict(results), n_resamples=RESAMPLES)
    assert rep["filter_bias"] is None and not any("answerability" in c for c in rep["verdict"]["caveats"])
