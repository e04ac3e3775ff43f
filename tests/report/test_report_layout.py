"""The report page as a reader sees it, in headless Chromium: the win/tie/loss heat map on the
verdict's measure, Pareto labels that do not overlap, the query explorer's ids in natural
order with readable columns, nothing wider than a 390 px phone; and ``bakeoff report --help``
naming the ``[report]`` extra."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.browser import ARTIFACTS, BROWSER_ARGS, CHROMIUM, require_browser
from tests.support.report_fixture import write_tiny_beir

SHOTS = Path("/tmp/label-shots")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def _boxes_overlap(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


@pytest.fixture()
def crowded_report(tmp_path):
    """Six lexical arms whose scores and latencies lie close together, and the report on them."""
    require_browser()
    pytest.importorskip("plotly")
    from bakeoff.cli import main

    data = write_tiny_beir(tmp_path / "tiny")
    out = tmp_path / "results"
    arms = ["bm25", "bm25:stemmer=english", "tfidf", "bm25-k12=bm25:k1=1.2", "bm25-b05=bm25:b=0.5",
            "bm25-k18=bm25:k1=1.8"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["run", "--beir", str(data), *[x for a in arms for x in ("--arm", a)], "--out", str(out),
                     "--cache", "off", "--no-progress", "--k", "3", "--depth", "10"]) == 0
        assert main(["report", str(out), "--resamples", "200", "--no-progress"]) == 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/report.html", out
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow  # a browser
def test_report_page_layout(crowded_report):
    from playwright.sync_api import sync_playwright

    url, out = crowded_report
    report = json.loads((out / "report.json").read_text())
    verdict_m = report["verdict"]["measure"]
    assert verdict_m == report["primary"] and verdict_m.startswith("ndcg")
    SHOTS.mkdir(exist_ok=True)
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url, wait_until="load")
            assert page.evaluate("window.__bakeoffPlotsRendered") >= 3
            # the heat map decides on the verdict's measure
            assert page.text_content("#plot-wtl .gtitle") == f"Win/tie/loss of row vs column, {verdict_m}"
            # Pareto labels: every arm's label drawn, no two overlapping, none on another arm's marker
            boxes = page.evaluate("""() => Array.from(document.querySelectorAll('#plot-pareto text.annotation-text'))
                .map(t => { const r = t.getBoundingClientRect();
                            return {text: t.textContent, x: r.x, y: r.y, width: r.width, height: r.height}; })""")
            page.locator("#plot-pareto").screenshot(path=str(SHOTS / "report-pareto.png"))
            assert len(boxes) == 6
            clashes = [(a["text"], b["text"]) for i, a in enumerate(boxes) for b in boxes[i + 1:] if _boxes_overlap(a, b)]
            assert clashes == [], boxes
            # the explorer lists ids naturally: q1, q2, ..., q10
            ids = page.evaluate("Array.from(document.querySelectorAll('#qlist .qitem')).map(d => d.dataset.qid)")
            assert ids[:3] == ["q1", "q2", "q3"] and ids.index("q10") == len(ids) - 1
            page.evaluate("window.__bakeoffOpenQuery('q2')")
            widths = page.evaluate("Array.from(document.querySelectorAll('.armcol')).map(c => c.getBoundingClientRect().width)")
            assert len(widths) == 6 and min(widths) >= 230  # readable columns; the row scrolls instead
            # a 390 px phone: the page is no wider than the screen
            page.set_viewport_size({"width": 390, "height": 800})
            page.wait_for_timeout(300)
            assert page.evaluate("document.documentElement.scrollWidth") <= 390
            page.screenshot(path=str(SHOTS / "report-390.png"), full_page=False)
        finally:
            browser.close()


def test_report_help_names_the_extra(capsys):
    from bakeoff.cli import main

    assert main(["report", "--help"]) == 0
    out = capsys.readouterr().out
    assert "the [report] extra)" in out and "the  extra" not in out
