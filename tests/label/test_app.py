"""The web app's guards, through Starlette's test client: CSP on every response, the start page,
annotator names, JSON-only actions, the Host check (DNS rebinding), escaping in fragments."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from bakeoff.data.model import Corpus, Document  # noqa: E402
from bakeoff.label.app import CSP, make_app  # noqa: E402
from bakeoff.label.pool import PooledDoc  # noqa: E402
from bakeoff.label.sources import SourceQuery  # noqa: E402
from bakeoff.label.store import Store  # noqa: E402


@pytest.fixture()
def client(tmp_path):
    corpus = Corpus.from_documents([Document("d1", "<b>bold</b> & <script>x()</script>", "T<i>1</i>"),
                                    Document("d2", "plain", "T2")])
    qs = [SourceQuery("q1", "what <em>is</em> this?", "dataset")]
    Store.create(tmp_path / "j.sqlite", meta={"dataset": {"name": "t"}}, queries=qs, required={},
                 pools={"q1": [PooledDoc("d1", {"bm25": 1}), PooledDoc("d2", {"bm25": 2})]})
    store = Store(tmp_path / "j.sqlite")
    app = make_app(store=store, corpus=corpus, title="t", allowed_hosts=["127.0.0.1", "localhost"])
    with TestClient(app, base_url="http://127.0.0.1:9") as c:
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
    r = client.post("/api/ana/label/judge", json={"qid": "q1", "doc": "d1", "grade": 2})
    assert r.status_code == 200 and 'data-doc="d2"' in r.text
    r = client.post("/api/ana/label/judge", json={"qid": "q1", "doc": "nope", "grade": 2})
    assert r.status_code == 409 and "Not done" in r.text
    r = client.post("/api/ana/label/judge", json={"qid": "q1", "doc": "d2", "grade": True})
    assert r.status_code == 409
    r = client.post("/api/ana/label/explode", json={})
    assert r.status_code == 404
    r = client.get("/label/ana", headers={"host": "evil.example:9"})
    assert r.status_code == 400  # a rebinding DNS name is refused
