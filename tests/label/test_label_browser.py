"""``bakeoff label`` in a real browser: Debian's Chromium driven by Playwright (executable_path,
never ``playwright install``), the server a real ``python -m bakeoff label`` subprocess.

* SciFact, pool of bm25 + dense at depth 20: judge 10 documents by keyboard, undo one, SIGKILL
  the server, restart it, find the 9 judgments and the page on the next unjudged item; a second
  annotator judges 5 of the same items; ``label agreement`` prints the kappa computed here
  independently; the export evaluates with ``bakeoff run``. Keypress-to-update latency is
  measured in the page and written to ``test-artifacts/label-latency.json`` (reported, not
  asserted: the machine is shared).
* Two browsers, two annotators, two server processes, one database: no judgment lost or doubled.
* Injected ``<script>`` in a document and a query renders as text; every request stays on
  127.0.0.1; readable contrast; a narrow window works.
* The review page for a synthetic set: accept / edit / reject by keyboard.
Screenshots go to ``test-artifacts/`` (git-ignored)."""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tests.label.fixtures import (
    ARTIFACTS,
    ROOT,
    Server,
    current_item,
    env,
    settle,
    write_beir,
    write_synthetic,
)

pytestmark = pytest.mark.slow  # a browser


class Watch:
    """Collects page errors and every request URL of a page."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("request", lambda r: self.requests.append(r.url))

    def check(self, base: str | list[str]) -> None:
        bases = [base] if isinstance(base, str) else base
        assert self.errors == []
        assert self.requests and all(any(u.startswith(b + "/") for b in bases) for u in self.requests), self.requests


def press(page, key: str) -> None:
    page.keyboard.press(key)
    settle(page)


def goto_doc(page, doc: str) -> None:
    """Move to ``doc`` of the current query by keyboard only (k to the first, then j)."""
    n = page.locator("#items .chip").count()
    for _ in range(n):
        press(page, "k")
    for _ in range(n):
        if current_item(page)[1] == doc:
            return
        press(page, "j")
    assert current_item(page)[1] == doc, f"{doc} is not in this query's pool"


def read(db: Path, sql: str, *args):
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def hand_kappa(a: list[int], b: list[int]) -> float:
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    p_e = sum(a.count(g) * b.count(g) for g in range(4)) / n**2
    return (p_o - p_e) / (1 - p_e)


def latency_summary(page) -> dict:
    rec = page.evaluate("window.__bakeoffLatency")
    res = page.evaluate("""() => performance.getEntriesByType('resource')
        .filter(e => e.initiatorType === 'fetch')
        .map(e => ({total: e.duration, server: e.serverTiming.length ? e.serverTiming[0].duration : null}))""")

    def stats(xs):
        xs = sorted(x for x in xs if x is not None)
        return {"n": len(xs), "median": statistics.median(xs), "p90": xs[int(0.9 * (len(xs) - 1))], "max": xs[-1]}

    return {"dom_ms": stats([r["dom_ms"] for r in rec]), "frame_ms": stats([r["frame_ms"] for r in rec]),
            "fetch_ms": stats([r["total"] for r in res]), "server_app_ms": stats([r["server"] for r in res]),
            "samples": rec}


def test_scifact_judge_undo_kill_restart_second_annotator(tmp_path, scifact_path, shared_cache, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    db = tmp_path / "judgments.sqlite"
    args = [str(scifact_path), "--pool", "bm25", "--pool", "dense", "--depth", "20", "--db", str(db),
            "--annotator", "alice", "--overlap", "1.0", "--cache-dir", str(shared_cache.root)]
    grades = [2, 0, 1, 3, 0, 1, 2, 0, 3, 1]
    server = Server(args, log=tmp_path / "server.log")
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        watch = Watch(page)
        page.goto(server.url, wait_until="load")
        settle(page)  # the page refreshes its work area once on load
        qtext = page.inner_text("#qtext")
        pool_size = page.locator("#items .chip").count()
        assert 20 <= pool_size <= 40  # union of two top-20 lists
        seen = []
        for g in grades:  # keyboard only
            seen.append(current_item(page))
            press(page, str(g))
        assert len(set(seen)) == 10 and len({q for q, _ in seen}) == 1
        assert page.inner_text("#p-mine") == "10"
        press(page, "u")  # undo the 10th
        assert current_item(page) == seen[9]
        assert page.inner_text("#p-mine") == "9" and "removed grade 1" in page.inner_text("#message")
        press(page, "c")
        page.keyboard.type("needs a second look")
        page.keyboard.press("Escape")
        page.screenshot(path=str(ARTIFACTS / "label-page.png"))
        press(page, "?")
        assert page.locator("#help").is_visible()
        page.screenshot(path=str(ARTIFACTS / "label-help.png"))
        press(page, "Escape")
        lat_alice = latency_summary(page)
        watch.check(server.base)
        page.close()
    finally:
        server.kill()  # SIGKILL: no shutdown, no checkpoint
    assert server.proc.returncode == -9

    rows = read(db, "SELECT qid, doc_id, grade FROM judgments WHERE annotator = 'alice'")
    assert sorted(rows) == sorted((q, d, g) for (q, d), g in zip(seen[:9], grades[:9]))

    server = Server(args, log=tmp_path / "server.log")
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        watch = Watch(page)
        page.goto(server.url, wait_until="load")
        settle(page)  # the page refreshes its work area once on load
        assert current_item(page) == seen[9]  # the next unjudged item, where the page stood
        assert page.inner_text("#qtext") == qtext
        assert page.inner_text("#p-mine") == "9" and page.inner_text("#p-query") == f"9/{pool_size}"
        chips = page.locator("#items .chip")
        assert [chips.nth(i).get_attribute("data-doc") for i in range(10)] == [d for _, d in seen]
        watch.check(server.base)
        page.close()

        # a second annotator on the same items (every query routed to two annotators)
        bob_grades = [2, 1, 1, 3, 0]
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        watch = Watch(page)
        page.goto(server.link("/label/bob"), wait_until="load")
        settle(page)  # the page refreshes its work area once on load
        assert page.inner_text("#p-mine") == "0" and "also judged by alice" in page.inner_text(".query .meta")
        for i, g in enumerate(bob_grades):
            assert current_item(page) == seen[i]
            press(page, str(g))
        lat_bob = latency_summary(page)
        page.screenshot(path=str(ARTIFACTS / "label-page-bob.png"))
        watch.check(server.base)
        page.close()
    finally:
        server.stop()

    # agreement: the CLI's kappa equals the one computed here on the 5 shared items
    kappa = hand_kappa(grades[:5], bob_grades)
    out = subprocess.run([sys.executable, "-m", "bakeoff", "label", "agreement", "--db", str(db)], env=env(),
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert f"alice / bob: items 5, observed agreement 0.8000, kappa {kappa:.4f}" in out
    assert "alice (9 judgments), bob (5 judgments)" in out

    # export, then bakeoff run evaluates the exported qrels and the database itself
    from bakeoff.cli import main

    exp = tmp_path / "export"
    assert main(["label", "export", "--db", str(db), "--out", str(exp)]) == 0
    prov = json.loads((exp / "provenance.json").read_text())
    assert prov["counts"]["conflicts"] == 1 and prov["counts"]["resolved_by_lower_grade"] == 1  # item 2: 0 vs 1
    assert prov["pool"]["arms"] == ["bm25", "dense"] and prov["pool"]["depth"] == 20
    base = ["--beir", str(scifact_path), "--arm", "bm25", "--cache-dir", str(shared_cache.root), "--no-progress",
            "--latency-sample", "0"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["run", *base, "--queries", str(exp / "queries.jsonl"), "--qrels", str(exp / "qrels/test.tsv"),
                     "--out", str(tmp_path / "r1")]) == 0
        assert main(["run", *base, "--qrels", str(db), "--out", str(tmp_path / "r2")]) == 0
    r1 = json.loads((tmp_path / "r1" / "results.json").read_text())
    r2 = json.loads((tmp_path / "r2" / "results.json").read_text())
    assert r1["dataset"]["n_queries"] == 1 and r1["arms"][0]["metrics"] == r2["arms"][0]["metrics"]
    assert r2["dataset"]["provenance"]["label_kind"] == "human"
    assert set(r2["dataset"]["provenance"]["annotators"]) == {"alice", "bob"}

    report = {"setup": "SciFact test, pool bm25 + dense (MiniLM) depth 20, 1280x800, headless Chromium",
              "alice": lat_alice, "bob": lat_bob, "kappa_alice_bob": kappa}
    (ARTIFACTS / "label-latency.json").write_text(json.dumps(report, indent=2))
    print(f"\nkeypress -> DOM updated: alice median {lat_alice['dom_ms']['median']:.1f} ms "
          f"(p90 {lat_alice['dom_ms']['p90']:.1f}, max {lat_alice['dom_ms']['max']:.1f}); bob median "
          f"{lat_bob['dom_ms']['median']:.1f} ms; server app median {lat_alice['server_app_ms']['median']:.1f} ms")


def test_two_browsers_two_annotators_one_database(tmp_path, scifact_path, shared_cache, browser):
    db = tmp_path / "two.sqlite"
    common = [str(scifact_path), "--pool", "bm25", "--depth", "10", "--db", str(db), "--sample", "12",
              "--overlap", "0.25", "--cache-dir", str(shared_cache.root)]
    s1 = Server([*common, "--annotator", "alice"], log=tmp_path / "s1.log")
    s2 = Server([*common, "--annotator", "bob"], log=tmp_path / "s2.log")  # a second process, same database
    typed = {"alice": [1, 2, 0, 3, 1, 2, 0, 3, 1, 2, 0, 3, 1, 2, 0],
             "bob": [3, 0, 2, 1, 3, 0, 2, 1, 3, 0, 2, 1, 3, 0, 2]}
    try:
        pa = browser.new_context().new_page()
        pb = browser.new_context().new_page()
        wa, wb = Watch(pa), Watch(pb)
        pa.goto(s1.url, wait_until="load")
        settle(pa)  # the page refreshes its work area once on load
        pb.goto(s2.url, wait_until="load")
        settle(pb)
        for ga, gb in zip(typed["alice"], typed["bob"]):  # interleaved, without waiting for answers
            pa.keyboard.press(str(ga))
            pb.keyboard.press(str(gb))
        settle(pa)
        settle(pb)
        assert pa.inner_text("#p-mine") == "15" and pb.inner_text("#p-mine") == "15"
        wa.check(s1.base)
        wb.check(s2.base)
    finally:
        s1.stop()
        s2.stop()
    rows = read(db, "SELECT qid, doc_id, annotator, grade FROM judgments")
    assert len(rows) == 30 and len({(q, d, a) for q, d, a, _ in rows}) == 30
    for who, grades in typed.items():
        ev = read(db, "SELECT grade FROM events WHERE annotator = ? AND kind = 'judge' ORDER BY id", who)
        assert [g for (g,) in ev] == grades  # every keypress recorded once, in order
    required = dict(read(db, "SELECT qid, required FROM queries"))
    by = {}
    for q, _d, a, _g in rows:
        by.setdefault(q, set()).add(a)
    # queries judged by both are only those routed to two annotators
    assert all(required[q] == 2 for q, who in by.items() if len(who) == 2)


def _contrast(page, selector: str) -> float:
    """WCAG contrast ratio of an element's text colour against the first opaque background up the tree."""
    fg, bg = page.evaluate("""(sel) => {
        const el = document.querySelector(sel);
        let b = el, bg = 'rgb(255, 255, 255)';
        while (b) { const c = getComputedStyle(b).backgroundColor;
                    if (c && c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') { bg = c; break; } b = b.parentElement; }
        return [getComputedStyle(el).color, bg]; }""", selector)

    def lum(rgb: str) -> float:
        vals = [int(float(x)) / 255 for x in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3]]
        lin = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in vals]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_injected_script_is_text_offline_contrast_narrow(tmp_path, browser):
    data = write_beir(tmp_path / "tiny")
    db = tmp_path / "x.sqlite"
    server = Server([str(data), "--pool", "bm25", "--pool", "tfidf", "--depth", "5", "--db", str(db), "--annotator",
                     "alice", "--cache", "off"], log=tmp_path / "s.log")
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        watch = Watch(page)
        response = page.goto(server.url, wait_until="load")
        settle(page)  # the page refreshes its work area once on load
        assert "script-src 'self'" in response.headers["content-security-policy"]
        press(page, "n")  # to q2, whose text carries the injection
        assert current_item(page)[0] == "q2"
        qtext = page.inner_text("#qtext")
        assert qtext.endswith('<script>window.__pwned = 1;</script><img src=x onerror="window.__pwned = 2">')
        goto_doc(page, "d3")  # injection in title and text
        assert page.inner_text("#dtitle") == "Evil <script>alert(1)</script> title"
        assert "<script>window.__pwned = 1;</script>" in page.inner_text("#dtext")
        press(page, "3")
        assert page.evaluate("window.__pwned") is None
        assert page.locator("#work script, #work img").count() == 0
        for sel in ("#qtext", "#dtext", ".query .meta", ".grade.g1", ".grade.g0", ".chip"):
            assert _contrast(page, sel) >= 4.5, sel
        page.screenshot(path=str(ARTIFACTS / "label-xss.png"))
        # a note on a judged document: c, type, Enter saves it with the same grade
        goto_doc(page, "d3")
        assert page.locator(".grade.g3.chosen").count() == 1
        press(page, "c")
        page.keyboard.type("has a <script> & an img")
        press(page, "Enter")
        goto_doc(page, "d3")
        assert page.input_value("#note") == "has a <script> & an img"
        # narrow window: no horizontal scrolling, the grade buttons on screen
        page.set_viewport_size({"width": 390, "height": 800})
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        for g in range(4):
            box = page.locator(f".grade.g{g}").bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390 and box["y"] + box["height"] <= 800
        page.screenshot(path=str(ARTIFACTS / "label-narrow.png"))
        watch.check(server.base)
    finally:
        server.stop()
    assert read(db, "SELECT qid, doc_id, grade, note FROM judgments") == [("q2", "d3", 3, "has a <script> & an img")]


def test_review_page_accept_edit_reject(tmp_path, browser):
    synth = write_synthetic(tmp_path / "synth")
    db = tmp_path / "r.sqlite"
    server = Server([str(synth), "--review", "--pool", "bm25", "--pool", "tfidf", "--depth", "3", "--db", str(db),
                     "--annotator", "rita", "--cache", "off"], log=tmp_path / "s.log")
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        watch = Watch(page)
        page.goto(server.url, wait_until="load")
        settle(page)  # the page refreshes its work area once on load
        assert page.url.endswith("/review/rita")  # pending queries: the review page first
        assert page.locator("#state").get_attribute("data-qid") == "describe-00000"
        assert "Vitamin D and bone" in page.inner_text(".sources")  # the document it was written from
        press(page, "a")
        assert page.locator("#state").get_attribute("data-qid") == "describe-00001"
        page.keyboard.press("e")
        page.fill("#edit", "does coffee raise the heart rate")
        press(page, "Enter")
        press(page, "r")
        assert page.locator("#state").get_attribute("data-qid") == "describe-00003"
        press(page, "p")
        assert page.inner_text("#rstatus") == "rejected"
        press(page, "p")
        assert page.inner_text("#qtext") == "does coffee raise the heart rate"
        assert page.inner_text("#qorig") == "coffee makes heart beat faster"
        assert page.inner_text("#c-pending") == "1" and page.inner_text("#c-accepted") == "1"
        page.screenshot(path=str(ARTIFACTS / "review-page.png"))
        # accepted and edited queries were pooled at once: they are on the judging page
        page.goto(server.link("/label/rita"), wait_until="load")
        settle(page)  # the page refreshes its work area once on load
        assert page.inner_text("#qtext") == "why are my bones weak without sunshine vitamin"
        press(page, "2")
        press(page, "n")
        assert page.inner_text("#qtext") == "does coffee raise the heart rate"
        watch.check(server.base)
    finally:
        server.stop()
    rows = read(db, "SELECT qid, text, original_text, status, reviewed_by, pooled_at IS NOT NULL FROM queries "
                    "ORDER BY position")
    assert rows == [
        ("describe-00000", "why are my bones weak without sunshine vitamin",
         "why are my bones weak without sunshine vitamin", "accepted", "rita", 1),
        ("describe-00001", "does coffee raise the heart rate", "coffee makes heart beat faster", "edited", "rita", 1),
        ("describe-00002", "bacteria sharing genes antibiotic", "bacteria sharing genes antibiotic", "rejected",
         "rita", 0),
        ("describe-00003", "salt blood presure", "salt blood presure", "pending", None, 0)]
