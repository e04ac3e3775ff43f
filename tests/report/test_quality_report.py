"""The truth-quality section end to end on a real `bakeoff run` + `bakeoff report`: report.json figures
checked against the TREC runs and the qrels file, holes.tsv, the terminal table, and the HTML section in
headless Chromium (a screenshot goes to test-artifacts/)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from tests.support.browser import ARTIFACTS, CHROMIUM, require_browser
from tests.support.browser import BROWSER_ARGS as ARGS
from tests.support.report_fixture import run_tiny


def _report(tmp_path: Path) -> tuple[Path, dict, str]:
    from bakeoff.cli import main

    results = run_tiny(tmp_path)
    leak = {f"q{i}": v for i, v in enumerate([0.0, 0.05, 0.1, 0.2, 0.25, 0.3, 0.3, 0.3, 0.5, 0.8], start=1)}
    (tmp_path / "tiny" / "provenance.json").write_text(json.dumps({"leak": {"per_query": leak, "threshold": 0.35}}))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["report", str(results), "--resamples", "200"]) == 0
    return results, json.loads((results / "report.json").read_text()), buf.getvalue()


def _tops(results: Path, k: int) -> dict[str, dict[str, list[str]]]:
    out = {}
    for arm in json.loads((results / "results.json").read_text())["arms"]:
        rows = [line.split() for line in (results / arm["run_file"]).read_text().splitlines()]
        per: dict[str, list[tuple[int, str]]] = {}
        for r in rows:
            per.setdefault(r[0], []).append((int(r[3]), r[2]))
        out[arm["name"]] = {q: [d for _, d in sorted(v)[:k]] for q, v in per.items()}
    return out


def test_truth_quality_in_report_json_terminal_and_holes_file(tmp_path: Path) -> None:
    results, rep, printed = _report(tmp_path)
    tq = rep["truth_quality"]
    k = rep["k"]
    judged: dict[str, set[str]] = {}
    for line in (tmp_path / "tiny" / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, _ = line.split("\t")
        judged.setdefault(q, set()).add(d)
    qids = list(json.loads((results / "results.json").read_text())["arms"][0]["per_query"][f"ndcg@{k}"])
    tops = _tops(results, k)
    for arm, per in tops.items():
        want = sum(sum(d in judged.get(q, set()) for d in per.get(q, [])) / len(per[q]) if per.get(q) else 0.0
                   for q in qids) / len(qids)
        assert tq["judged"][arm] == pytest.approx(want, abs=1e-12)
    pooled = {(q, d) for per in tops.values() for q in qids for d in per.get(q, []) if d not in judged.get(q, set())}
    assert tq["holes"]["total"] == len(pooled)
    for arm, per in tops.items():
        assert tq["holes"]["per_arm"][arm] == sum(d not in judged.get(q, set()) for q in qids for d in per.get(q, []))
    lines = (results / "holes.tsv").read_text().splitlines()
    assert lines[0].startswith("query_id\tdoc_id\tbest_rank") and len(lines) == 1 + len(pooled)
    assert {tuple(line.split("\t")[:2]) for line in lines[1:]} == pooled
    # leak-robust verdict: buckets by the per-query leak of the provenance file
    lb = tq["leak_buckets"]
    assert lb["counts"] == {"[0, 0.1)": 2, "[0.1, 0.35]": 6, "(0.35, 1]": 2}
    best = lb["pairs"][0]["a"]
    means = {a["name"]: a["metrics"][rep["primary"]]["mean"] for a in rep["arms"]}
    assert means[best] == max(means.values())
    assert tq["round_trip"] is None  # the tiny queries record no source document
    assert "Truth quality" in printed and f"Judged@{k}" in printed and "Leak-robust verdict" in printed


@pytest.mark.slow  # a browser
def test_truth_quality_section_in_chromium(tmp_path: Path) -> None:
    require_browser()
    pytest.importorskip("plotly")
    from playwright.sync_api import sync_playwright

    results, rep, _ = _report(tmp_path)
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((results / "report.html").as_uri(), wait_until="load")
            sec = page.locator("#truth-quality")
            assert sec.count() == 1
            rows = sec.locator("table.truth-quality tbody tr")
            assert rows.count() == 3
            first = rows.nth(0).locator("td")
            name = first.nth(0).inner_text()
            assert float(first.nth(1).inner_text()) == pytest.approx(rep["truth_quality"]["judged"][name], abs=5e-4)
            assert sec.locator("table.leak-buckets").count() == 2  # best arm vs the two others
            assert "(0.35, 1]" in sec.inner_text()
            sec.screenshot(path=str(ARTIFACTS / "report-truth-quality.png"))
        finally:
            browser.close()
    assert errors == []
    assert (ARTIFACTS / "report-truth-quality.png").stat().st_size > 10_000


def test_demo_results_reopen_through_their_truth_folder(tmp_path: Path) -> None:
    """`bakeoff demo` records no dataset specification, only the BEIR folder it wrote (dataset.truth):
    report and assess reopen the data from there (fingerprints still checked)."""
    from bakeoff.cli import main

    results = run_tiny(tmp_path)
    res = json.loads((results / "results.json").read_text())
    res["dataset"]["source"] = "bakeoff demo"
    res["dataset"]["truth"] = str(tmp_path / "tiny")
    (results / "results.json").write_text(json.dumps(res))
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(results), "--resamples", "50", "--no-html"]) == 0
    rep = json.loads((results / "report.json").read_text())
    assert rep["truth_quality"]["holes"]["total"] > 0
    res["dataset"]["truth"] = str(tmp_path / "gone")
    (results / "results.json").write_text(json.dumps(res))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(results), "--resamples", "50", "--no-html"]) == 2
    assert "gone" in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1
