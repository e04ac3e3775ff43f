"""`bakeoff report` and `bakeoff compare` end to end on a tiny BEIR folder (real CLI, real arms)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from bakeoff.cli import main
from tests.support.report_fixture import run_tiny

RESAMPLES = "2000"  # >= 2**10: the randomization tests are exact enumerations


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return run_tiny(tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def reported(tiny: Path, tmp_path_factory) -> tuple[Path, str]:
    pytest.importorskip("plotly")
    out = tmp_path_factory.mktemp("report-out")
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["report", str(tiny), "--out", str(out), "--resamples", RESAMPLES])
    assert rc == 0
    return out, buf.getvalue()


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_report_json_statistics_and_diagnostics(reported, tiny) -> None:
    out, _ = reported
    rep = _load(out / "report.json")
    res = _load(tiny / "results.json")
    assert rep["schema"] == "bakeoff.report" and rep["schema_version"] == 1
    assert rep["n_queries"] == 10 and rep["primary"] == "ndcg@3"
    assert "Only 10 queries" in rep["note"]
    arms = [a["name"] for a in rep["arms"]]
    assert arms == ["bm25", "bm25:stemmer=english", "tfidf"]
    assert len(rep["stats"]["pairs"]) == 3 * len(rep["measures"])
    assert rep["stats"]["n_resamples"] == int(RESAMPLES)
    # bm25 and tfidf score identically on every query here: no crash, p = 1, zero CI
    same = next(p for p in rep["stats"]["pairs"] if p["a"] == "bm25" and p["b"] == "tfidf" and p["measure"] == "mrr@3")
    assert same["diff"] == 0.0 and same["p_perm"] == 1.0 and same["diff_ci_low"] == 0.0 and same["d_z"] == 0.0
    # stemmer beats bm25 on q8, q9 (1 vs 0) and q10 (1/3 vs 0): exact test over 2**10 patterns; only the
    # 8 sign patterns of the three non-zero differences matter, |mean| >= observed for all-plus and all-minus
    st = next(p for p in rep["stats"]["pairs"] if p["a"] == "bm25" and p["b"] == "bm25:stemmer=english"
          and p["measure"] == "mrr@3")
    assert st["exact"] and st["p_perm"] == pytest.approx(2 / 8)
    assert st["diff"] == pytest.approx(-(1 + 1 + 1 / 3) / 10)
    # Holm over the 3 pairs on mrr@3: raw p = 0.25, 1 (bm25/tfidf), 0.25 -> 0.75, 1, 0.75
    mrr = {(p["a"], p["b"]): p for p in rep["stats"]["pairs"] if p["measure"] == "mrr@3"}
    assert mrr[("bm25", "bm25:stemmer=english")]["p_perm_holm"] == pytest.approx(0.75)
    assert mrr[("bm25", "tfidf")]["p_perm_holm"] == pytest.approx(1.0)
    # win/tie/loss agrees with an independent count over results.json
    pq = {a["name"]: a["per_query"]["mrr@3"] for a in res["arms"]}
    wtl = {(w["a"], w["b"]): (w["wins"], w["ties"], w["losses"]) for w in rep["diagnostics"]["win_tie_loss"]["mrr@3"]}
    assert wtl[("bm25", "bm25:stemmer=english")] == (0, 7, 3)
    for (a, b), got in wtl.items():
        w = sum(pq[a][q] > pq[b][q] for q in pq[a])
        lo = sum(pq[a][q] < pq[b][q] for q in pq[a])
        assert got == (w, len(pq[a]) - w - lo, lo)
    # coverage: q7's only relevant document is not in the corpus; it is not counted as a failure
    cov = rep["diagnostics"]["coverage"]
    assert cov["uncoverable"] == ["q7"] and cov["partial"] == []
    assert set(rep["diagnostics"]["failures"]["bm25"]["queries"]) == {"q8", "q9", "q10"}
    assert rep["diagnostics"]["failures"]["bm25:stemmer=english"]["count"] == 0
    # oracle: the stemmer is best or tied on every query -> no head-room
    o = rep["diagnostics"]["oracle"]["mrr@3"]
    assert o["best_arm"] == "bm25:stemmer=english" and o["headroom"] == pytest.approx(0.0)
    assert o["mean"] == pytest.approx((8 + 1 / 3) / 10) and o["all_zero"] == 1  # 8 ones, q10 1/3, q7 0
    # decomposition of the best arm vs the runner-up: contributions add up to the delta
    dec = [d for d in rep["diagnostics"]["decomposition"] if d["by"] == "relevant documents" and d["measure"] == "ndcg@3"]
    assert dec and abs(sum(r["contribution"] for r in dec[0]["rows"]) - dec[0]["delta"]) < 1e-12
    assert {r["bucket"] for r in dec[0]["rows"]} == {"single-relevant", "multi-relevant"}
    assert any(d["by"] == "metadata: topic" for d in rep["diagnostics"]["decomposition"])
    # disagreeing queries carry their text
    dis = next(d for d in rep["diagnostics"]["disagreements"] if d["b"] == "bm25:stemmer=english" and d["a"] == "bm25")
    assert {r["query_id"] for r in dis["queries"]} == {"q8", "q9", "q10"}
    assert any(r["text"] == "runners lowered pressures" for r in dis["queries"])


def test_terminal_latex_and_per_query_files(reported) -> None:
    out, printed = reported
    assert "Only 10 queries" in printed and "[95% CI]" in printed and "Oracle" in printed
    tex = (out / "report.tex").read_text()
    for cmd in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}{lrrr}"):
        assert cmd in tex
    # ndcg@3 of the stemmer by hand: 1 on eight queries, q10's only relevant doc at rank 3 -> 1/log2(4) = 0.5,
    # q7 0 -> 8.5 / 10
    assert r"(b) bm25:stemmer=english & \textbf{0.850}" in tex
    rows = list(csv.reader((out / "per_query.csv").open()))
    assert rows[0] == ["query_id", "measure", "bm25", "bm25:stemmer=english", "tfidf"]
    assert len(rows) == 1 + 10 * 7
    assert (out / "per_query.parquet").stat().st_size > 0


def test_html_is_self_contained_and_escaped(reported) -> None:
    out, _ = reported
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "window.__pwned" in page  # the payload is there ...
    assert "<script>window.__pwned" not in page and "<img src=x" not in page  # ... but never as markup
    assert "\\u003cscript\\u003ewindow.__pwned" in page
    assert "bold\\u003c/b\\u003e" in page and "<b>bold" not in page  # query text too
    assert "<script src" not in page and "cdn.plot.ly" not in page.split("<script>")[0]
    assert page.count("<script") == 3  # the JSON block, plotly.js, the page script


def test_churn_uses_recorded_children(tiny, tmp_path) -> None:
    pytest.importorskip("plotly")
    folder = tmp_path / "res"
    shutil.copytree(tiny, folder)
    res = _load(folder / "results.json")
    res["arms"][1]["children"] = ["bm25"]  # as run_bakeoff records for a composite arm
    (folder / "results.json").write_text(json.dumps(res))
    assert main(["report", str(folder), "--resamples", "100", "--no-html"]) == 0
    rep = _load(folder / "report.json")
    ch = rep["diagnostics"]["churn"]
    assert len(ch) == 1 and ch[0]["base"] == "bm25" and ch[0]["new"] == "bm25:stemmer=english"
    assert (ch[0]["gained"], ch[0]["lost"], ch[0]["rescued"], ch[0]["broken"]) == (3, 0, 3, 0)
    assert sorted(ch[0]["gained_queries"]) == ["q10", "q8", "q9"]
    dec = [d for d in rep["diagnostics"]["decomposition"] if d["a"] == "bm25:stemmer=english" and d["b"] == "bm25"]
    assert dec and dec[0]["delta"] > 0
    assert not (folder / "report.html").exists()


def test_moved_dataset_and_changed_dataset_are_clear_errors(tiny, tmp_path, capsys) -> None:
    folder = tmp_path / "res"
    shutil.copytree(tiny, folder)
    res = _load(folder / "results.json")
    data = Path(res["dataset"]["source"]["beir"])
    res["dataset"]["source"]["beir"] = str(tmp_path / "nowhere")
    (folder / "results.json").write_text(json.dumps(res))
    assert main(["report", str(folder), "--no-html", "--resamples", "50"]) == 2
    err = capsys.readouterr().err
    assert "moved?" in err and "--data" in err and "nowhere" in err
    changed = tmp_path / "changed"
    shutil.copytree(data, changed)
    with (changed / "qrels" / "test.tsv").open("a") as f:
        f.write("q1\td2\t1\n")
    assert main(["report", str(folder), "--no-html", "--resamples", "50", "--data", str(changed)]) == 2
    assert "qrels changed since the run" in capsys.readouterr().err
    assert not (folder / "report.json").exists()


def test_compare_two_result_sets(tiny, tmp_path, capsys) -> None:
    other = tmp_path / "other"
    shutil.copytree(tiny, other)
    out = tmp_path / "cmp"
    assert main(["compare", str(tiny / "results.json"), str(other), "--resamples", "100", "--out", str(out),
                 "--no-html"]) == 0
    rep = _load(out / "report.json")
    names = [a["name"] for a in rep["arms"]]
    assert names == [f"{tiny.name}/bm25", f"{tiny.name}/bm25:stemmer=english", f"{tiny.name}/tfidf",
                     "other/bm25", "other/bm25:stemmer=english", "other/tfidf"]
    assert len([p for p in rep["stats"]["pairs"] if p["measure"] == "mrr@3"]) == 15
    same = [p for p in rep["stats"]["pairs"] if p["a"] == f"{tiny.name}/bm25" and p["b"] == "other/bm25"]
    assert all(p["diff"] == 0.0 and p["p_perm"] == 1.0 for p in same)
    capsys.readouterr()
    # a different dataset is refused
    res = _load(other / "results.json")
    res["dataset"]["fingerprints"]["qrels"] = "0" * 64
    (other / "results.json").write_text(json.dumps(res))
    assert main(["compare", str(tiny), str(other), "--resamples", "50"]) == 2
    assert "qrels fingerprints differ" in capsys.readouterr().err


def test_churn_of_a_real_fused_arm(tmp_path) -> None:
    """A fused arm records its inputs (results.json ``children``); the report computes churn from the runs."""
    from bakeoff.arms.registry import arm_types

    if "rrf" not in arm_types():
        pytest.skip("the rrf arm is not on this branch")
    try:
        from tests.support.report_fixture import write_tiny_beir
    except ImportError:  # pragma: no cover
        from report_fixture import write_tiny_beir
    data = write_tiny_beir(tmp_path / "tiny")
    out = tmp_path / "res"
    assert main(["run", "--beir", str(data), "--arm", "bm25", "--arm", "st=bm25:stemmer=english",
                 "--arm", "hyb=rrf:arms=bm25+st", "--out", str(out), "--cache", "off", "--no-progress",
                 "--k", "3", "--depth", "10", "--latency-sample", "0"]) == 0
    res = _load(out / "results.json")
    assert [a.get("children") for a in res["arms"]] == [None, None, ["bm25", "st"]]
    assert main(["report", str(out), "--resamples", "100", "--no-html", "--no-progress"]) == 0
    rep = _load(out / "report.json")
    churn = {(c["base"], c["new"]): c for c in rep["diagnostics"]["churn"]}
    assert set(churn) == {("bm25", "hyb"), ("st", "hyb")}
    # independent recount from the TREC runs: relevant docs entering/leaving each top 3
    from bakeoff.data.loaders import read_qrels, read_trec_run

    qrels = read_qrels(data / "qrels" / "test.tsv")
    runs = {a["name"]: read_trec_run(out / a["run_file"]) for a in res["arms"]}
    for (base, new), c in churn.items():
        gained = lost = 0
        for q in qrels:
            rel = qrels.relevant(q)
            old = set(runs[base].doc_ids(q, 3)) & rel
            cur = set(runs[new].doc_ids(q, 3)) & rel
            gained += bool(cur - old)
            lost += bool(old - cur)
        assert (c["gained"], c["lost"]) == (gained, lost)
    assert churn[("bm25", "hyb")]["gained"] >= 1  # the stemmer's finds reach the fused top 3
    assert any(d["a"] == "hyb" and d["b"] == "bm25" for d in rep["diagnostics"]["decomposition"])
