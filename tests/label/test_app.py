"""The web app's guards, through Starlette's test client: CSP on every response, the start page,
annotator names, JSON-only actions, the Host check (DNS rebinding), escaping in fragments."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from bakeoff.data.model import Corpus, Document
from bakeoff.label.app import CSP, make_app
from bakeoff.label.guard import KEY_HEADER, cookie_name
from bakeoff.label.pool import PooledDoc
from bakeoff.label.sources import SourceQuery
from bakeoff.label.store import Store

KEY = "k" * 32


@pytest.fixture()
def client(tmp_path):
    corpus = Corpus.from_documents([Document("d1", "<b>bold</b> & <script>x()</script>", "T<i>1</i>"),
                                    Document("d2", "plain", "T2")])
    qs = [SourceQuery("q1", "what <em>is</em> this?", "dataset")]
    Store.create(tmp_path / "j.sqlite", meta={"dataset": {"name": "t"}}, queries=qs, required={},
                 pools={"q1": [PooledDoc("d1", {"bm25": 1}), PooledDoc("d2", {"bm25": 2})]})
    store = Store(tmp_path / "j.sqlite")
    app = make_app(store=store, corpus=corpus, title="t", allowed_hosts=["127.0.0.1", "localhost"], key=KEY, port=9)
    with TestClient(app, base_url="http://127.0.0.1:9") as c:
        c.cookies.set(cookie_name(9), KEY)
        c.headers[KEY_HEADER] = KEY
        c.app_store = store
        yield c
    store.close()


def test_headers_start_page_and_names(client):
    r = client.get("/")
    assert r.status_code == 200 and "Who is judging?" in r.text
    assert r.headers["content-security-policy"] == CSP and "frame-ancestors 'none'" in CSP
    assert r.headers["x-content-type-options"] == "nosniff"
    r = client.get("/start?annotator=ana", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/label/ana"
    assert client.get("/start?annotator=a%20b").status_code == 400
    assert client.get("/label/%3Cx%3E").status_code == 400
    assert client.get("/static/label.js").headers["content-security-policy"] == CSP


def test_fragments_escape_text(client):
    page = client.get("/label/ana").text
    assert "what &lt;em&gt;is&lt;/em&gt; this?" in page
    assert "&lt;script&gt;x()&lt;/script&gt;" in page and "<script>x()" not in page
    assert "<script" not in page.replace('<script src="/static/label.js" defer></script>', "")


def test_actions_need_json_and_a_known_host(client):
    r = client.post("/api/ana/label/judge", data={"qid": "q1", "doc": "d1", "grade": "2"})
    assert r.status_code == 415
    r = client.post("/api/ana/label/judge", json={"qid": "q1", "doc": "d1", "grade": 2, "replaces": None})
    assert r.status_code == 200 and 'data-doc="d2"' in r.text
    r = client.post("/api/ana/label/judge", json={"qid": "q1", "doc": "nope", "grade": 2, "replaces": None})
    assert r.status_code == 409 and "Not done" in r.text
    r = client.post("/api/ana/label/judge", json={"qid": "q1", "doc": "d2", "grade": True, "replaces": None})
    assert r.status_code == 409
    r = client.post("/api/ana/label/explode", json={})
    assert r.status_code == 404
    r = client.get("/label/ana", headers={"host": "evil.example:9"})
    assert r.status_code == 400  # a rebinding DNS name is refused


def _judgments(client) -> int:
    store = client.app_store
    return store._conn.execute("SELECT count(*) FROM judgments").fetchone()[0]


def test_key_needed_on_pages_and_actions(client):
    page = client.get("/label/ana")
    assert page.status_code == 200 and f'<meta name="bakeoff-key" content="{KEY}">' in page.text
    client.cookies.clear()
    assert client.get("/label/ana").status_code == 403
    assert client.get("/static/label.js").status_code == 200  # static files hold no data
    r = client.get(f"/label/ana?key={KEY}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/label/ana"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"bakeoff_label_9={KEY};") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert client.get("/label/ana?key=wrong", follow_redirects=False).status_code == 403
    # cookie alone (what a cross-site form or fetch could carry) is not enough for an action
    client.cookies.set(cookie_name(9), KEY)
    body = {"qid": "q1", "doc": "d1", "grade": 2, "replaces": None}
    assert client.post("/api/ana/label/judge", json=body, headers={KEY_HEADER: ""}).status_code == 403
    assert client.post("/api/ana/label/judge", json=body, headers={KEY_HEADER: "x" * 32}).status_code == 403
    # key right, but another origin or a cross-site fetch
    r = client.post("/api/ana/label/judge", json=body, headers={"origin": "http://127.0.0.1:8000"})
    assert r.status_code == 403
    r = client.post("/api/ana/label/judge", json=body, headers={"sec-fetch-site": "same-site"})
    assert r.status_code == 403
    assert _judgments(client) == 0
    r = client.post("/api/ana/label/judge", json=body, headers={"origin": "http://127.0.0.1:9",
                                                                 "sec-fetch-site": "same-origin"})
    assert r.status_code == 200 and _judgments(client) == 1


def test_body_size_and_depth_capped(client):
    from bakeoff.label.guard import MAX_BODY

    big = '{"qid": "q1", "doc": "d1", "grade": 2, "note": "' + "x" * MAX_BODY + '"}'
    r = client.post("/api/ana/label/judge", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413

    def chunks():  # no Content-Length: the limit applies while reading
        yield b'{"qid": "q1", "doc": "d1", "grade": 2, "note": "'
        for _ in range(MAX_BODY // 1024 + 1):
            yield b"y" * 1024
        yield b'"}'

    r = client.post("/api/ana/label/judge", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    deep = '{"qid": "q1", "doc": "d1", "grade": 2, "x": ' + "[" * 100000 + "]" * 100000 + "}"
    r = client.post("/api/ana/label/judge", content=deep[:MAX_BODY - 10], headers={"content-type": "application/json"})
    assert r.status_code == 400 and "nested deeper" in r.text
    # brackets inside strings do not count
    r = client.post("/api/ana/label/judge",
                    json={"qid": "q1", "doc": "d1", "grade": 2, "replaces": None, "note": "[[[[[[[[[["})
    assert r.status_code == 200
    assert _judgments(client) == 1


def test_unexpected_error_is_a_500_with_an_id(client, caplog):
    client.app_store.close()  # every store call now raises sqlite3.ProgrammingError
    with caplog.at_level("ERROR", logger="bakeoff"):
        r = client.post("/api/ana/label/judge", json={"qid": "q1", "doc": "d1", "grade": 2, "replaces": None})
    assert r.status_code == 500
    error_id = re.search(r"error ([0-9a-f]{12})", r.text).group(1)
    assert "Traceback" not in r.text and "sqlite" not in r.text.lower() and KEY not in r.text
    lines = [rec.getMessage() for rec in caplog.records]
    assert any(error_id in m and "ProgrammingError" in m for m in lines)
    assert not any("Traceback" in m or KEY in m for m in lines)


def test_allowed_hosts():
    from bakeoff.label.guard import allowed_hosts

    assert allowed_hosts("127.0.0.1") == ["127.0.0.1", "localhost"]
    assert allowed_hosts("127.0.0.2") == ["127.0.0.2"]  # not every loopback address is "localhost"
    assert allowed_hosts("::1") == ["::1", "[::1]", "localhost"]
    assert allowed_hosts("10.1.2.3", asked="judge.lan") == ["10.1.2.3", "judge.lan"]
    assert allowed_hosts("0.0.0.0") == ["*"]
