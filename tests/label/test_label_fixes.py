"""The places where judging silently lost or distorted work, each tried in Chromium against a
real ``python -m bakeoff label`` subprocess: the next document opening scrolled down,
browsing that claimed queries, a stale tab overwriting a grade, and judgments left in the
WAL file by SIGTERM."""

from __future__ import annotations

import re
import shutil
import signal
import sqlite3
from pathlib import Path

import httpx
import pytest

from tests.label.fixtures import (
    DOCS,
    QRELS,
    QUERIES,
    Server,
    current_item,
    settle,
    write_beir,
)

pytestmark = pytest.mark.slow  # a browser or a served app

SHOTS = Path("/tmp/label-shots")


def press(page, key: str) -> None:
    page.keyboard.press(key)
    settle(page)


def read(db: Path, sql: str, *args):
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def long_docs() -> list[tuple[str, str, str]]:
    """The tiny corpus with every text forty paragraphs long (taller than any screen)."""
    return [(i, t, "\n\n".join(f"{x} (paragraph {k + 1})" for k in range(40))) for i, t, x in DOCS]


@pytest.mark.parametrize("width,height", [(1280, 800), (375, 700)])
def test_next_document_opens_at_its_top(tmp_path, browser, width, height):
    data = write_beir(tmp_path / "long", docs=long_docs())
    db = tmp_path / "s.sqlite"
    server = Server([str(data), "--pool", "bm25", "--pool", "tfidf", "--depth", "4", "--db", str(db), "--annotator",
                     "alice", "--cache", "off"], log=tmp_path / "s.log")
    try:
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(server.url, wait_until="load")
        settle(page)
        for key in ("2", "n", "j"):  # a grade, the next query, the next document
            page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
            assert page.evaluate("window.scrollY") > 1000
            before = current_item(page)
            press(page, key)
            assert current_item(page) != before
            assert page.evaluate("window.scrollY") == 0, key
            box = page.locator("#dtitle").bounding_box()
            assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= height
            assert page.evaluate("document.activeElement.id") == "work"
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / f"next-doc-top-{width}.png"))
        # no horizontal scrolling at this width
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        server.stop()


def test_browsing_claims_nothing(tmp_path, browser):
    data = write_beir(tmp_path / "tiny")
    db = tmp_path / "c.sqlite"
    common = [str(data), "--pool", "bm25", "--depth", "3", "--db", str(db), "--overlap", "0", "--cache", "off"]
    server = Server([*common, "--annotator", "alice"], log=tmp_path / "s.log")
    try:
        alice = browser.new_context().new_page()
        alice.goto(server.url, wait_until="load")
        settle(alice)
        assert alice.inner_text(".query .meta").startswith("Query 1 of 6")
        for _ in range(5):  # browse through every query without a grade
            press(alice, "n")
        assert current_item(alice)[0] == "q6"
        press(alice, "n")
        assert alice.inner_text("#message") == "there is no later query"
        assert read(db, "SELECT count(*) FROM claims") == [(0,)]
        bob = browser.new_context().new_page()
        bob.goto(server.link("/label/bob"), wait_until="load")
        settle(bob)
        # alice reads q6: bob is offered the other five, numbered among his own
        assert current_item(bob)[0] == "q1" and bob.inner_text(".query .meta").startswith("Query 1 of 5")
        for i in range(4):
            press(bob, "n")
            assert bob.inner_text(".query .meta").startswith(f"Query {i + 2} of 5")
        assert current_item(bob)[0] == "q5"
        press(bob, "n")  # not stuck without a word
        assert current_item(bob)[0] == "q5"
        assert "being judged by other annotators" in bob.inner_text("#message")
        # bob grades q5: his first grade claims it, and only it
        press(bob, "2")
        assert read(db, "SELECT qid, annotator FROM claims") == [("q5", "bob")]
        # alice moves on to q1 without grading q6: q6 is free, q5 is bob's
        for _ in range(5):
            press(alice, "p")
        assert current_item(alice)[0] == "q1"
        press(bob, "n")
        assert current_item(bob)[0] == "q6"
        qids = []
        for _ in range(6):
            press(alice, "n")
            qids.append(current_item(alice)[0])
        assert "q5" not in qids and "q6" not in qids  # bob's claim and bob's place
    finally:
        server.stop()


def test_stale_tab_is_refused_with_a_message(tmp_path, browser):
    data = write_beir(tmp_path / "tiny")
    db = tmp_path / "t.sqlite"
    server = Server([str(data), "--pool", "bm25", "--depth", "3", "--db", str(db), "--annotator", "alice",
                     "--cache", "off"], log=tmp_path / "s.log")
    try:
        ctx = browser.new_context()
        tab1, tab2 = ctx.new_page(), ctx.new_page()
        tab1.goto(server.url, wait_until="load")
        settle(tab1)
        tab2.goto(server.link("/label/alice"), wait_until="load")
        settle(tab2)
        item = current_item(tab1)
        assert current_item(tab2) == item
        press(tab1, "1")
        assert current_item(tab1) != item
        press(tab2, "3")  # tab 2 still shows the document without a grade
        message = tab2.inner_text("#message")
        assert "was not saved" in message and "grade 1" in message and "grade 3" in message
        assert tab2.locator("#message.error").is_visible()
        assert current_item(tab2) == item and tab2.locator(".grade.g1.chosen").count() == 1
        assert tab2.locator("#status.error").is_visible()
        SHOTS.mkdir(exist_ok=True)
        tab2.screenshot(path=str(SHOTS / "stale-tab.png"))
        assert read(db, "SELECT grade FROM judgments WHERE qid = ? AND doc_id = ?", *item) == [(1,)]
        press(tab2, "3")  # now knowingly: replaces 1
        assert read(db, "SELECT grade FROM judgments WHERE qid = ? AND doc_id = ?", *item) == [(3,)]
        assert read(db, "SELECT grade, prev_grade FROM events WHERE kind = 'judge' ORDER BY id") == [(1, None), (3, 1)]

    finally:
        server.stop()


def _judge_all_over_http(server: Server) -> list[tuple[str, str, int]]:
    """Grade every pooled item through real HTTP, as the page does; returns what was sent."""
    port = server.base.rsplit(":", 1)[1]
    sent = []
    with httpx.Client(cookies={f"bakeoff_label_{port}": server.key}, timeout=30,
                      headers={"x-bakeoff-key": server.key, "origin": server.base}) as c:
        html = c.post(f"{server.base}/api/alice/label/view", json={}).text
        for i in range(200):
            m = re.search(r'id="state" hidden data-done="0" data-qid="([^"]+)" data-doc="([^"]+)"', html)
            if m is None:
                break
            grade = i % 4
            r = c.post(f"{server.base}/api/alice/label/judge",
                       json={"qid": m.group(1), "doc": m.group(2), "grade": grade, "replaces": None})
            assert r.status_code == 200
            sent.append((m.group(1), m.group(2), grade))
            html = r.text
    return sent


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_leaves_every_judgment_in_the_database_file(tmp_path, sig):
    data = write_beir(tmp_path / "tiny", qrels=QRELS, queries=QUERIES)
    db = tmp_path / "w.sqlite"
    server = Server([str(data), "--pool", "bm25", "--pool", "tfidf", "--depth", "4", "--db", str(db),
                     "--annotator", "alice", "--cache", "off"], log=tmp_path / "s.log")
    try:
        sent = _judge_all_over_http(server)
        assert len(sent) >= 12
        server.proc.send_signal(sig)
        rc = server.proc.wait(timeout=60)
    finally:
        server.stop()
    alone = tmp_path / "copy"
    alone.mkdir()
    shutil.copy(db, alone / "w.sqlite")  # the database file alone, without -wal / -shm
    rows = read(alone / "w.sqlite", "SELECT qid, doc_id, grade FROM judgments")
    assert sorted(rows) == sorted(sent)
    assert rc == 128 + sig  # 143 after SIGTERM, 130 after Ctrl-C


def test_dead_ends_notes_skips_owed_and_the_way_back(tmp_path, browser):
    data = write_beir(tmp_path / "tiny")
    db = tmp_path / "d.sqlite"
    server = Server([str(data), "--pool", "bm25", "--pool", "tfidf", "--depth", "3", "--db", str(db), "--annotator",
                     "alice", "--overlap", "1.0", "--sample", "2", "--cache", "off"], log=tmp_path / "s.log")
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(server.url, wait_until="load")
        settle(page)
        q1 = current_item(page)[0]
        docs = [page.locator("#items .chip").nth(i).get_attribute("data-doc")
                for i in range(page.locator("#items .chip").count())]
        assert len(docs) >= 3
        # a note, then c again: typing extends it
        press(page, "c")
        page.keyboard.type("first look")
        page.keyboard.press("Escape")
        press(page, "2")
        press(page, "k")
        assert current_item(page) == (q1, docs[0]) and page.input_value("#note") == "first look"
        press(page, "c")
        page.keyboard.type(", then more")
        press(page, "Enter")
        assert read(db, "SELECT note FROM judgments WHERE doc_id = ?", docs[0]) == [("first look, then more",)]
        # skip the second document (Enter saved the note and moved on to it): it comes back at the end of
        # this query, before the next query
        assert current_item(page) == (q1, docs[1])
        press(page, "s")
        for d in docs[2:]:
            assert current_item(page) == (q1, d)
            press(page, "1")
        assert current_item(page) == (q1, docs[1])
        press(page, "s")  # skipped twice: it waits for the very end
        assert current_item(page)[0] != q1
        while page.locator("#state").get_attribute("data-done") == "0" and current_item(page) != (q1, docs[1]):
            press(page, "0")
        assert current_item(page) == (q1, docs[1])
        press(page, "3")
        # finished: second judgments are still owed (every query goes to two annotators), not "0 remaining"
        assert page.locator("#state").get_attribute("data-done") == "1"
        total = read(db, "SELECT sum(pool_size) FROM queries WHERE pool_size > 0")[0][0]
        assert page.inner_text("#p-left") == str(total)
        assert f"{total} of them second judgments" in page.inner_text(".done")
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "finished.png"))
        # the way back without undo: p to the last query, change a grade, finished again
        press(page, "p")
        assert page.locator("#state").get_attribute("data-done") == "0"
        last_q = current_item(page)[0]
        assert last_q != q1
        doc = current_item(page)[1]
        before = read(db, "SELECT grade FROM judgments WHERE qid = ? AND doc_id = ?", last_q, doc)[0][0]
        press(page, "3" if before != 3 else "2")
        assert read(db, "SELECT count(*) FROM judgments")[0][0] == total  # nothing removed
        page.goto(server.link("/label/alice"), wait_until="load")
        settle(page)
        page.click("button[data-act=first]")
        settle(page)
        assert current_item(page)[0] == q1
    finally:
        server.stop()


def test_overview_page_progress_and_jump(tmp_path, browser):
    data = write_beir(tmp_path / "tiny")
    db = tmp_path / "o.sqlite"
    server = Server([str(data), "--pool", "bm25", "--pool", "tfidf", "--depth", "3", "--db", str(db),
                     "--overlap", "0", "--annotator", "alice", "--cache", "off"], log=tmp_path / "s.log")
    try:
        bob = browser.new_context().new_page()
        bob.goto(server.link("/label/bob"), wait_until="load")
        settle(bob)
        assert current_item(bob)[0] == "q1"
        press(bob, "2")  # bob claims q1
        alice = browser.new_context().new_page()
        alice.goto(server.url, wait_until="load")
        settle(alice)
        assert current_item(alice)[0] == "q2"
        press(alice, "1")
        alice.keyboard.press("o")
        alice.wait_for_url("**/overview/alice")
        rows = alice.locator("#qtable tbody tr")
        assert rows.count() == 6
        pool = dict(read(db, "SELECT qid, pool_size FROM queries"))
        first = alice.locator('#qtable tr[data-qid="q1"]')
        assert "held by another annotator" in first.inner_text() and first.locator("a").count() == 0
        second = alice.locator('#qtable tr[data-qid="q2"]')
        assert second.locator(".frac").inner_text() == f"1/{pool['q2']}" and "you are here" in second.inner_text()
        assert "1 of them" not in alice.inner_text(".overview .meta")
        assert alice.inner_text(".overview .meta").startswith("5 of 6 queries open to you")
        SHOTS.mkdir(exist_ok=True)
        alice.screenshot(path=str(SHOTS / "overview.png"), full_page=True)
        alice.click('#qtable tr[data-qid="q5"] a')
        alice.wait_for_url("**/label/alice?q=q5")
        settle(alice)
        assert current_item(alice)[0] == "q5"
        # a query held by someone else cannot be jumped to
        alice.goto(server.link("/label/alice?q=q1"), wait_until="load")
        settle(alice)
        assert current_item(alice)[0] == "q5" and "not open to annotator" in alice.inner_text("#message")
    finally:
        server.stop()


def test_reviewer_settles_disagreements(tmp_path, browser):
    import json

    from bakeoff.cli import main
    from bakeoff.label.store import Store

    data = write_beir(tmp_path / "tiny")
    db = tmp_path / "r.sqlite"
    server = Server([str(data), "--pool", "bm25", "--pool", "tfidf", "--depth", "3", "--db", str(db),
                     "--overlap", "1.0", "--annotator", "rita", "--cache", "off"], log=tmp_path / "s.log")
    try:
        s = Store(db)  # two annotators judge q1 through the store (a second process on the same database)
        v = s.view("ann")
        docs = [it.doc_id for it in v.items]
        assert len(docs) >= 2
        for d, g in zip(docs, [3, 2, 1]):
            s.judge("ann", v.qid, d, g, "sure" if g == 3 else "")
        for d, g in zip(docs, [1, 0, 1]):
            s.judge("bob", v.qid, d, g)
        s.close()
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(server.link("/disagreements/rita"), wait_until="load")
        settle(page)
        items = page.locator("article.dis")
        assert items.count() == 2
        first = items.nth(0)
        assert first.get_attribute("data-doc") == docs[0] and "ann: 3 highly relevant — sure" in first.inner_text()
        first.locator("button[data-settle='2']").click()
        settle(page)
        assert "Settled by rita: 2 relevant" in page.locator("article.dis").nth(0).inner_text()
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "reviewer.png"), full_page=True)
        settled = json.loads(read(db, "SELECT value FROM meta WHERE key = 'settled'")[0][0])
        assert settled[f"{v.qid}\t{docs[0]}"]["grade"] == 2 and settled[f"{v.qid}\t{docs[0]}"]["by"] == "rita"
    finally:
        server.stop()
    out = tmp_path / "exp"
    assert main(["label", "export", "--db", str(db), "--out", str(out)]) == 0
    qrels = {tuple(line.split("\t")[:2]): int(line.split("\t")[2])
             for line in (out / "qrels" / "test.tsv").read_text().splitlines()[1:]}
    assert qrels[(v.qid, docs[0])] == 2  # the reviewer's grade, not the lower one (1)
    assert qrels[(v.qid, docs[1])] == 0  # unsettled tie: the lower grade
    c = json.loads((out / "provenance.json").read_text())["counts"]
    assert (c["conflicts"], c["resolved_by_review"], c["resolved_by_lower_grade"]) == (2, 1, 1)


def test_cant_tell(tmp_path, browser):
    import json

    from bakeoff.cli import main

    data = write_beir(tmp_path / "tiny")
    db = tmp_path / "x.sqlite"
    server = Server([str(data), "--pool", "bm25", "--pool", "tfidf", "--depth", "3", "--db", str(db), "--annotator",
                     "alice", "--sample", "1", "--cache", "off"], log=tmp_path / "s.log")
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(server.url, wait_until="load")
        settle(page)
        q, first = current_item(page)
        n = page.locator("#items .chip").count()
        press(page, "x")
        assert current_item(page) != (q, first)
        assert page.locator(f'#items .chip[data-doc="{first}"]').inner_text() == "1?"
        for _ in range(n - 1):
            press(page, "1")
        assert page.locator("#state").get_attribute("data-done") == "1"  # not asked again
        press(page, "u")  # the last grade back
        press(page, "1")
        assert page.locator("#state").get_attribute("data-done") == "1"
    finally:
        server.stop()
    out = tmp_path / "exp"
    assert main(["label", "export", "--db", str(db), "--out", str(out)]) == 0
    cov = json.loads((out / "provenance.json").read_text())["coverage"]
    assert cov["cant_tell"] == [{"query-id": q, "corpus-id": first, "annotator": "alice"}]
    assert first not in (out / "qrels" / "test.tsv").read_text()
