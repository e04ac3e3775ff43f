"""The HTML report in a real browser: Debian's headless Chromium driven by Playwright, page served
over HTTP on 127.0.0.1. Checks the plots rendered, the query explorer works, and a document's
injected <script> did not run. A screenshot goes to test-artifacts/.

Needs Debian's ``chromium`` (`make install` installs it: scripts/system-deps.sh) and the
``playwright`` Python package; never ``playwright install`` (no browser download)."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.browser import ARTIFACTS, CHROMIUM, require_browser
from tests.support.browser import BROWSER_ARGS as ARGS
from tests.support.report_fixture import run_tiny

pytestmark = pytest.mark.slow  # a browser


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture()
def served_report(tmp_path):
    require_browser()
    pytest.importorskip("plotly")
    from bakeoff.cli import main

    results = run_tiny(tmp_path)
    # a synthetic set's provenance file beside the data: the report draws its leak histogram
    leak = {f"q{i}": v for i, v in enumerate([0.0, 0.1, 0.1, 0.2, 0.25, 0.3, 0.3, 0.3, 0.5, 0.8], start=1)}
    (tmp_path / "tiny" / "provenance.json").write_text(json.dumps({"leak": {"per_query": leak, "threshold": 0.35}}))
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(results), "--resamples", "200"]) == 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(results)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/report.html", results
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _top10_from_trec(results: Path, qid: str) -> dict[str, list[str]]:
    """Each arm's top 10 for ``qid`` read straight from the TREC run files (rank column order)."""
    out = {}
    for arm in json.loads((results / "results.json").read_text())["arms"]:
        rows = [line.split() for line in (results / arm["run_file"]).read_text().splitlines()]
        rows = sorted((int(r[3]), r[2]) for r in rows if r and r[0] == qid)
        out[arm["name"]] = [d for _, d in rows[:10]]
    return out


def test_report_in_headless_chromium(served_report: tuple[str, Path]) -> None:
    from playwright.sync_api import sync_playwright

    url, results = served_report
    want = _top10_from_trec(results, "q2")
    assert all(want.values())

    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url, wait_until="load")
            page.wait_for_function("window.__bakeoffPlotsRendered !== undefined", timeout=30_000)

            # plots: plotly drew an SVG in each of the three plot containers, with the arms' data
            for pid in ("plot-pareto", "plot-bars", "plot-wtl", "plot-leak"):
                assert page.locator(f"#{pid} .main-svg").count() >= 1, pid
            assert page.locator("#plot-bars .bars .point").count() == 9  # 3 arms x 3 measures
            assert page.locator("#plot-wtl .hm, #plot-wtl .heatmaplayer image, #plot-wtl image").count() >= 1
            assert "bm25:stemmer=english" in page.inner_text("#plot-pareto")
            assert page.locator("#plot-leak .bars .point").count() >= 3  # histogram bins drawn

            page.screenshot(path=str(ARTIFACTS / "report-page.png"), full_page=True)
            # the summary says there are few queries
            assert "Only 10 queries" in page.inner_text("#small-sample-note")

            # explorer: type into the search box, open a query, see every arm's top 10
            page.fill("#qsearch", "memory")
            assert page.inner_text("#qcount").startswith("1 of 10")
            page.fill("#qsearch", "sleep")
            items = page.locator("#qlist .qitem")
            assert items.count() == 2  # q2 "does sleep help ..." and q9 "... while sleeping"
            page.locator('#qlist .qitem[data-qid="q2"]').click()
            cols = page.locator("#tops .armcol")
            assert cols.count() == 3
            assert [cols.nth(i).get_attribute("data-arm") for i in range(3)] == ["bm25", "bm25:stemmer=english", "tfidf"]
            for i, arm in enumerate(["bm25", "bm25:stemmer=english", "tfidf"]):
                shown = cols.nth(i).locator("ol.top10 li")
                assert [shown.nth(j).get_attribute("data-doc") for j in range(shown.count())] == want[arm]
            # q2's relevant documents d3 and d4 are highlighted in every arm
            assert page.locator('#tops li.rel[data-doc="d3"]').count() == 3
            assert page.locator('#tops li.rel[data-doc="d4"]').count() == 3
            assert "ndcg@3 = 1.0000" in cols.nth(0).inner_text()

            # the injected markup is shown as text and did not execute
            d3 = page.locator('#tops .armcol[data-arm="bm25"] li[data-doc="d3"]')
            assert "<script>window.__pwned = 1;</script>" in d3.inner_text()
            assert page.evaluate("window.__pwned") is None
            assert page.locator("#tops img").count() == 0
            page.locator("#explorer").screenshot(path=str(ARTIFACTS / "report-explorer.png"))
        finally:
            browser.close()
    assert errors == []
    # offline: the page loaded nothing but itself
    assert all(u.startswith(("http://127.0.0.1:", "data:")) for u in requests), requests
    assert (ARTIFACTS / "report-explorer.png").stat().st_size > 10_000
    assert (ARTIFACTS / "report-page.png").stat().st_size > 50_000
