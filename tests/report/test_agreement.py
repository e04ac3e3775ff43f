"""Synthetic vs real (`bakeoff compare` on two query sets of one corpus): Kendall's τ against
values counted by hand and against scipy, the bootstrap CI, the verdict, and the CLI."""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from bakeoff.cli import main
from bakeoff.report.agreement import kendall_tau, ranking_agreement
from bakeoff.runner.results import StoredResults
from tests.support.report_fixture import write_tiny_beir


def test_kendall_tau_golden_by_hand_and_vs_scipy() -> None:
    from scipy.stats import kendalltau

    # (1,2) concordant, (1,3) concordant, (2,3) discordant: (2 - 1) / 3
    assert kendall_tau([0.1, 0.2, 0.3], [0.1, 0.3, 0.2]) == pytest.approx(1 / 3)
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # tau-b with a tie in x: 2 concordant, 0 discordant, n0 = 3, ties in x 1 -> 2 / sqrt((3 - 1) * 3)
    assert kendall_tau([1, 2, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(6))
    assert math.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))
    rng = np.random.default_rng(7)
    for _ in range(20):
        x, y = rng.integers(0, 4, 6).astype(float), rng.normal(size=6)
        want = kendalltau(x, y).statistic
        got = kendall_tau(x, y)
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)


def _results(means: list[float], n: int, *, spread: float, seed: int, prefix: str) -> StoredResults:
    rng = np.random.default_rng(seed)
    arms = []
    for i, m in enumerate(means):
        vals = np.clip(m + spread * rng.standard_normal(n), 0, 1)
        arms.append({"name": f"arm{i}", "metrics": {"ndcg@10": float(np.mean(vals))},
                     "per_query": {"ndcg@10": {f"{prefix}{q}": float(v) for q, v in enumerate(vals)}}})
    return StoredResults.from_dict({"k": 10, "measures": ["ndcg@10"], "arms": arms, "dataset": {}})


def test_agreement_verdicts_and_ci() -> None:
    real = _results([0.2, 0.4, 0.6], 40, spread=0.01, seed=1, prefix="r")
    same = _results([0.25, 0.45, 0.65], 60, spread=0.01, seed=2, prefix="s")
    agr = ranking_agreement(same, real, labels=("syn", "real"), n_resamples=300, seed=3)
    assert agr["tau"] == 1.0 and agr["ci_low"] == 1.0 and agr["ci_high"] == 1.0
    assert agr["verdict"] == "same order" and agr["same_best"] and agr["synthetic"] == "syn"
    assert "ranks the arms exactly as the real queries do" in agr["text"]
    reverse = _results([0.6, 0.4, 0.2], 60, spread=0.01, seed=4, prefix="s")
    agr = ranking_agreement(reverse, real, labels=("syn", "real"), n_resamples=300, seed=3)
    assert agr["tau"] == -1.0 and agr["ci_high"] == -1.0 and agr["verdict"] == "not reliably the same order"
    assert "does NOT reliably rank" in agr["text"] and "arm0 on the synthetic set but arm2 on the real" in agr["text"]
    # noisy, nearly equal arms: the CI is wide and reproducible with the seed
    noisy_a = _results([0.40, 0.41, 0.42, 0.43], 20, spread=0.3, seed=5, prefix="s")
    noisy_b = _results([0.40, 0.41, 0.42, 0.43], 20, spread=0.3, seed=6, prefix="r")
    a1 = ranking_agreement(noisy_a, noisy_b, labels=("a", "b"), n_resamples=400, seed=9)
    a2 = ranking_agreement(noisy_a, noisy_b, labels=("a", "b"), n_resamples=400, seed=9)
    assert (a1["ci_low"], a1["ci_high"]) == (a2["ci_low"], a2["ci_high"])
    assert a1["ci_low"] <= 0 <= a1["ci_high"] and a1["verdict"] not in ("broadly the same order", "same order")
    # same order on the point estimate but the CI reaches 0: said plainly
    close_a = _results([0.40, 0.43, 0.46], 15, spread=0.2, seed=12, prefix="s")
    close_b = _results([0.40, 0.43, 0.46], 15, spread=0.2, seed=112, prefix="r")
    c = ranking_agreement(close_a, close_b, labels=("a", "b"), n_resamples=400, seed=1)
    assert c["tau"] == 1.0 and c["ci_low"] <= 0
    assert c["verdict"] == "same order, not reliably" and "NOT reliably" in c["text"]
    # tau of the point estimate is scipy's on the arm means computed here
    from scipy.stats import kendalltau

    ma = [np.mean(list(a.per_query["ndcg@10"].values())) for a in noisy_a.arms]
    mb = [np.mean(list(a.per_query["ndcg@10"].values())) for a in noisy_b.arms]
    assert a1["tau"] == pytest.approx(kendalltau(ma, mb).statistic)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_compare_synthetic_and_real_query_sets_cli(tmp_path: Path) -> None:
    real = write_tiny_beir(tmp_path / "real")
    syn = tmp_path / "syn"
    shutil.copytree(real, syn)
    queries = [json.loads(line) for line in (syn / "queries.jsonl").read_text().splitlines()]
    with (syn / "queries.jsonl").open("w") as f:
        for q in queries:
            f.write(json.dumps({**q, "_id": "s" + q["_id"], "text": q["text"] + " study"}) + "\n")
    lines = (syn / "qrels" / "test.tsv").read_text().splitlines()
    (syn / "qrels" / "test.tsv").write_text("\n".join([lines[0], *("s" + line for line in lines[1:])]) + "\n")
    (syn / "provenance.json").write_text(json.dumps({"mode": "describe"}))
    outs = {}
    for name, data in (("real-run", real), ("syn-run", syn)):
        outs[name] = tmp_path / name
        rc, _, err = _run(["run", "--beir", str(data), "--arm", "bm25", "--arm", "tfidf", "--arm",
                           "bm25:stemmer=english", "--out", str(outs[name]), "--cache", "off", "--no-progress",
                           "--k", "3", "--depth", "10"])
        assert rc == 0, err
    rc, out, err = _run(["compare", str(outs["real-run"]), str(outs["syn-run"]), "--out", str(tmp_path / "cmp"),
                         "--resamples", "500"])
    assert rc == 0, err
    agr = json.loads((tmp_path / "cmp" / "agreement.json").read_text())
    assert agr["synthetic"] == "syn-run" and agr["real"] == "real-run"  # detected from provenance.json
    res = [json.loads((outs[n] / "results.json").read_text()) for n in ("real-run", "syn-run")]
    means = [[next(a for a in r["arms"] if a["name"] == arm)["metrics"]["ndcg@3"] for arm in agr["arms"]] for r in res]
    from scipy.stats import kendalltau

    want = kendalltau(means[0], means[1]).statistic
    assert (math.isnan(agr["tau"]) and math.isnan(want)) if agr["tau"] is None else agr["tau"] == pytest.approx(want)
    assert "Kendall's τ" in out and "The synthetic set (syn-run)" in out
    assert agr["n_resamples"] == 500 and agr["n_queries"] == [10, 10]


def test_compare_needs_two_shared_arms(tmp_path: Path) -> None:
    real = write_tiny_beir(tmp_path / "real")
    syn = tmp_path / "syn"
    shutil.copytree(real, syn)
    with (syn / "queries.jsonl").open("a") as f:
        f.write(json.dumps({"_id": "extra", "text": "extra query"}) + "\n")
    with (syn / "qrels" / "test.tsv").open("a") as f:
        f.write("extra\td2\t1\n")
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run(["run", "--beir", str(real), "--arm", "bm25", "--arm", "tfidf", "--out", str(a), "--cache", "off",
                 "--no-progress", "--k", "3"])[0] == 0
    assert _run(["run", "--beir", str(syn), "--arm", "bm25", "--arm", "bm25:stemmer=english", "--out", str(b),
                 "--cache", "off", "--no-progress", "--k", "3"])[0] == 0
    rc, _, err = _run(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")])
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "share 1 arm name" in err
    assert not (tmp_path / "cmp").exists()
