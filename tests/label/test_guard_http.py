"""The labelling server's guard tried from outside, through real HTTP against a real
``python -m bakeoff label`` subprocess: a page of a second origin open in the judge's
browser (Chromium, holding the key cookie), a DNS name rebound to the server's address, a
foreign Host, a foreign Origin, a 64 MB body and a deeply nested JSON body. Each is refused
and the database holds no judgment, skip or event afterwards."""

from __future__ import annotations

import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.label.fixtures import BROWSER_ARGS, CHROMIUM, Server, settle, write_beir
from tests.support.browser import require_browser

pytestmark = pytest.mark.slow  # a browser or a served app


def _written(db: Path) -> tuple[int, int, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return tuple(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # type: ignore[return-value]
                     for t in ("judgments", "skips", "events"))
    finally:
        conn.close()


ATTACK = """<!doctype html><meta charset="utf-8"><title>another site</title>
<iframe name="sink"></iframe>
<form id="f" method="POST" action="TARGET/api/alice/label/judge" enctype="text/plain" target="sink">
<input name='{"qid": "q1", "doc": "d1", "grade": 3, "x": "' value='"}'></form>
<script>
(async () => {
  const target = "TARGET";
  const body = JSON.stringify({qid: "q1", doc: "d1", grade: 3, replaces: null});
  const out = {};
  const tryFetch = async (name, url, init) => {
    try { const r = await fetch(url, init); out[name] = r.type + ":" + r.status; }
    catch (e) { out[name] = "blocked"; }
  };
  await tryFetch("json_cors", target + "/api/alice/label/judge",
                 {method: "POST", credentials: "include", headers: {"Content-Type": "application/json"}, body});
  await tryFetch("json_key_header", target + "/api/alice/label/judge",
                 {method: "POST", credentials: "include",
                  headers: {"Content-Type": "application/json", "X-Bakeoff-Key": "guess"}, body});
  await tryFetch("no_cors", target + "/api/alice/label/judge",
                 {method: "POST", mode: "no-cors", credentials: "include", body});
  await tryFetch("read_page", target + "/label/alice", {credentials: "include"});
  document.getElementById("f").submit();
  window.__results = out;
})();
</script>"""


class _Attacker:
    """A second origin on 127.0.0.1 (another port) serving one page that attacks ``target``."""

    def __init__(self, target: str) -> None:
        page = ATTACK.replace("TARGET", target).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def chromium_rebinding():
    """Chromium in which the DNS name ``rebound.test`` resolves to 127.0.0.2 (as a rebinding
    attacker's name would, after its first answer)."""
    require_browser()
    from playwright import sync_api

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                    args=[*BROWSER_ARGS, "--host-resolver-rules=MAP rebound.test 127.0.0.2"])
        try:
            yield browser
        finally:
            browser.close()


def test_second_origin_in_the_judges_browser_writes_nothing(tmp_path, chromium_rebinding):
    data = write_beir(tmp_path / "tiny")
    db = tmp_path / "g.sqlite"
    server = Server([str(data), "--pool", "bm25", "--depth", "3", "--db", str(db), "--annotator", "alice",
                     "--cache", "off"], log=tmp_path / "s.log")
    attacker = _Attacker(server.base)
    try:
        ctx = chromium_rebinding.new_context()
        judge = ctx.new_page()
        judge.goto(server.url, wait_until="load")  # the judge's tab: the key cookie is set
        settle(judge)
        assert judge.url == f"{server.base}/label/alice"  # the key left the address bar
        [cookie] = ctx.cookies()
        assert cookie["value"] == server.key and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        evil = ctx.new_page()
        evil.goto(attacker.url, wait_until="load")
        deadline = time.monotonic() + 30
        while evil.evaluate("window.__results") is None and time.monotonic() < deadline:
            time.sleep(0.05)
        results = evil.evaluate("window.__results")
        time.sleep(1.0)  # the form post into the iframe
        assert results["json_cors"] == "blocked" and results["json_key_header"] == "blocked"  # no preflight granted
        assert results["read_page"] == "blocked"  # the page (and its key) cannot be read
        assert results["no_cors"] == "opaque:0"  # sent, answer unreadable; the server refused it (below)
        assert _written(db) == (0, 0, 0)
        # the same request with the cookie but without the header, as the no-cors fetch sent it: 403
        r = httpx.post(f"{server.base}/api/alice/label/judge", content=b'{"qid": "q1", "doc": "d1", "grade": 3, "replaces": null}',
                       headers={"content-type": "text/plain"}, cookies={f"bakeoff_label_{server.base.rsplit(':', 1)[1]}":
                                                                         server.key})
        assert r.status_code == 403
        # the judge's own page still works
        judge.keyboard.press("2")
        settle(judge)
        assert _written(db)[0] == 1
        ctx.close()
    finally:
        attacker.close()
        server.stop()


def test_foreign_host_origin_and_bodies_refused(tmp_path):
    data = write_beir(tmp_path / "tiny")
    db = tmp_path / "h.sqlite"
    server = Server([str(data), "--pool", "bm25", "--depth", "3", "--db", str(db), "--annotator", "alice",
                     "--cache", "off"], log=tmp_path / "s.log")
    port = server.base.rsplit(":", 1)[1]
    jar = {f"bakeoff_label_{port}": server.key}
    ok = {"content-type": "application/json", "x-bakeoff-key": server.key}
    body = b'{"qid": "q1", "doc": "d1", "grade": 3, "replaces": null}'
    url = f"{server.base}/api/alice/label/judge"
    try:
        with httpx.Client(cookies=jar, timeout=60) as c:
            assert c.get(f"{server.base}/label/alice").status_code == 200
            assert c.get(f"{server.base}/label/alice", headers={"host": f"rebound.test:{port}"}).status_code == 400
            assert c.post(url, content=body, headers={**ok, "host": f"rebound.test:{port}"}).status_code == 400
            assert c.post(url, content=body, headers={**ok, "origin": "http://rebound.test"}).status_code == 403
            assert c.post(url, content=body, headers={**ok, "origin": "http://127.0.0.1:1"}).status_code == 403
            assert c.post(url, content=body, headers={**ok, "x-bakeoff-key": "x"}).status_code == 403
            r = c.post(url, content=b'{"note": "' + b"x" * (64 * 2**20) + b'"}', headers=ok)
            assert r.status_code == 413
            r = c.post(url, content=b'{"qid": "q1", "x": ' + b"[" * 50000 + b"]" * 50000 + b"}", headers=ok)
            assert r.status_code in (400, 413)
            r = c.post(url, content=b'{"qid": "q1", "x": ' + b"[" * 30000 + b"]" * 30000 + b"}", headers=ok)
            assert r.status_code == 400 and "nested deeper" in r.text
            assert _written(db) == (0, 0, 0)
            r = c.post(url, content=body, headers={**ok, "origin": server.base})
            assert r.status_code == 200 and _written(db)[0] == 1
    finally:
        server.stop()
    log = (tmp_path / "s.log").read_text()
    assert "Traceback" not in log and "RecursionError" not in log and server.key not in log


def test_other_loopback_address_refuses_a_rebound_name(tmp_path, chromium_rebinding):
    data = write_beir(tmp_path / "tiny")
    db = tmp_path / "r.sqlite"
    server = Server([str(data), "--pool", "bm25", "--depth", "3", "--db", str(db), "--annotator", "alice",
                     "--cache", "off", "--host", "127.0.0.2"], log=tmp_path / "s.log")
    port = server.base.rsplit(":", 1)[1]
    assert server.base.startswith("http://127.0.0.2:")
    try:
        ctx = chromium_rebinding.new_context()
        page = ctx.new_page()
        # the attacker's name now points at 127.0.0.2: the browser treats the page as the
        # attacker's origin, so anything it serves could be read and posted to
        r = page.goto(f"http://rebound.test:{port}/label/alice?key={server.key}", wait_until="load")
        assert r is not None and r.status == 400
        r = page.goto(f"http://rebound.test:{port}/static/label.js", wait_until="load")
        assert r is not None and r.status == 400
        with httpx.Client(cookies={f"bakeoff_label_{port}": server.key}, timeout=30) as c:
            r = c.post(f"{server.base}/api/alice/label/judge", content=b'{"qid": "q1", "doc": "d1", "grade": 3, "replaces": null}',
                       headers={"content-type": "application/json", "x-bakeoff-key": server.key,
                                "host": f"rebound.test:{port}"})
            assert r.status_code == 400
        assert _written(db) == (0, 0, 0)
        page.goto(server.url, wait_until="load")  # the real address works
        settle(page)
        page.keyboard.press("1")
        settle(page)
        assert _written(db)[0] == 1
        ctx.close()
    finally:
        server.stop()
