"""The http arm against a real HTTP server on 127.0.0.1 (stdlib ThreadingHTTPServer in a thread)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from bakeoff.arms.external import ExternalError, redact_url
from bakeoff.arms.external.http import HttpArm, fill_template
from bakeoff.arms.external.jsonpath import SelectorError, select
from bakeoff.data.model import Corpus, Document, Queries
from bakeoff.runner.config import build_arms, parse_arm_spec
from bakeoff.runner.context import Context
from tests.support.fake_http import FakeServer, Reply

CORPUS = Corpus.from_documents([Document(d, f"text {d}") for d in ("a", "b", "c", "d", "e")])
QUERIES = Queries.from_dict({"q1": "alpha", "q2": "beta gamma", "q3": "delta"})


class Service(FakeServer):
    """Scripted behaviour per request: a list of (status, body, delay) consumed in order, then ``default``
    (a tuple or a function of the request body). Bodies are recorded with the Authorization header as
    ``_auth``; a GET's ``q``/``n`` query parameters are recorded as ``query``/``k``."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[dict[str, Any]] = []
        self.script: list[tuple[int, Any, float]] = []
        self.default: Any = None

    def handle(self, request: dict[str, Any]) -> Reply:
        if request["method"] == "GET":
            qs = parse_qs(urlsplit(request["path"]).query)
            body = {"query": qs["q"][0], "k": int(qs["n"][0])}
        else:
            body = dict(request["body"])
            body["_auth"] = request["headers"].get("Authorization")
        with self.lock:
            self.bodies.append(body)
            scripted = self.script.pop(0) if self.script else None
        status, payload, delay = scripted or (self.default(body) if callable(self.default) else self.default)
        return Reply(status, payload, delay_s=delay)


@pytest.fixture()
def service() -> Iterator[tuple[Service, str]]:
    with Service() as svc:
        yield svc, svc.url("/search")


def _hits(body: dict[str, Any]) -> tuple[int, Any, float]:
    # q "alpha": c=2.0, a=1.0, b=1.0 (tie: b before a), plus unknown id "zz".
    table = {"alpha": [["a", 1.0], ["c", 2.0], ["b", 1.0], ["zz", 0.5]], "beta gamma": [["e", 3], ["d", 4]],
             "delta": []}
    return 200, {"hits": [{"id": d, "score": s} for d, s in table[body["query"]]]}, 0.0


def test_jsonpath_subset() -> None:
    doc = {"hits": [{"id": "a", "s": 1}, {"id": "b", "s": 2}], "meta": {"x-y": [5, 6]}}
    assert select("$.hits[*].id", doc) == ["a", "b"]
    assert select("$.hits[1].s", doc) == [2]
    assert select("$.hits[-1]['id']", doc) == ["b"]
    assert select('$.meta["x-y"][*]', doc) == [5, 6]
    assert select("$.meta.*", doc) == [[5, 6]]
    assert select("$.hits[*].id", {"hits": []}) == []
    with pytest.raises(SelectorError, match="no member 'hits'"):
        select("$.hits[*].id", {"results": []})
    with pytest.raises(SelectorError, match="must start with"):
        select("hits", doc)


def test_fill_template_quotes_json() -> None:
    body = fill_template('{"q": {query}, "id": {qid}, "n": {k}}', query='say "hi"\n', qid="q1", k=7)
    assert json.loads(body) == {"q": 'say "hi"\n', "id": "q1", "n": 7}


def test_http_arm_ranks_with_tie_rule_and_caches(service: tuple[Service, str], cache: Any) -> None:
    svc, url = service
    svc.default = _hits
    arm = HttpArm(name="svc", url=url, scores="$.hits[*].score", headers={"Authorization": "Bearer s3cret"})
    ctx = Context(corpus=CORPUS, cache=cache, progress=False)
    run = ctx.search(arm, QUERIES, k=3)
    assert run["q1"] == (("c", 2.0), ("b", 1.0), ("a", 1.0))
    assert run["q2"] == (("d", 4.0), ("e", 3.0))
    assert run["q3"] == ()
    assert {r["query"] for r in svc.bodies} == {"alpha", "beta gamma", "delta"}
    assert all(r["k"] == 3 and r["_auth"] == "Bearer s3cret" for r in svc.bodies)
    assert "s3cret" not in json.dumps(arm.config())
    assert ctx.timings[arm.fingerprint()]["n_queries"] == 3
    # A second context reads the cached run: no new request.
    n = len(svc.bodies)
    run2 = Context(corpus=CORPUS, cache=cache, progress=False).search(arm, QUERIES, k=3)
    assert run2.ranked == run.ranked and len(svc.bodies) == n


def test_http_arm_without_scores_keeps_service_order(service: tuple[Service, str]) -> None:
    svc, url = service
    svc.default = lambda b: (200, {"result": {"docs": ["e", "a", "d"]}}, 0.0)
    arm = HttpArm(name="svc", url=url, ids="$.result.docs[*]")
    run = Context(corpus=CORPUS, progress=False).search(arm, QUERIES.subset(["q1"]), k=2)
    assert run["q1"] == (("e", 3.0), ("a", 2.0))


def test_http_arm_mask_drops_rows(service: tuple[Service, str]) -> None:
    import numpy as np

    svc, url = service
    svc.default = _hits
    arm = HttpArm(name="svc", url=url, scores="$.hits[*].score")
    mask = {"q1": np.array([True, True, False, True, True])}  # c is hidden
    run = Context(corpus=CORPUS, progress=False).search(arm, QUERIES.subset(["q1"]), k=2, mask=mask)
    assert run["q1"] == (("b", 1.0), ("a", 1.0))


def test_http_500_is_retried_then_succeeds(service: tuple[Service, str]) -> None:
    svc, url = service
    svc.script = [(500, {"error": "boom"}, 0.0), (503, "busy", 0.0)]
    svc.default = _hits
    arm = HttpArm(name="svc", url=url, scores="$.hits[*].score", concurrency=1, retries=2, backoff=0.01)
    run = Context(corpus=CORPUS, progress=False).search(arm, QUERIES.subset(["q1"]), k=3)
    assert run["q1"][0] == ("c", 2.0)
    assert len(svc.bodies) == 3


def test_http_500_forever_fails_after_bounded_retries_and_caches_nothing(service: tuple[Service, str], cache: Any) -> None:
    svc, url = service
    svc.default = (500, {"error": "boom"}, 0.0)
    arm = HttpArm(name="svc", url=url + "?api_key=hunter2", concurrency=1, retries=2, backoff=0.01)
    ctx = Context(corpus=CORPUS, cache=cache, progress=False)
    with pytest.raises(ExternalError) as err:
        ctx.search(arm, QUERIES.subset(["q1"]), k=3)
    msg = str(err.value)
    assert "query 'q1'" in msg and "gave up after 3 attempts; last error: HTTP 500: boom" in msg and "\n" not in msg
    assert "hunter2" not in msg and "api_key=***" in msg
    assert len(svc.bodies) == 3
    assert not list(cache.root.rglob("*.json")), "a failed call must not leave a cached run"


def test_http_timeout_is_retried_then_reported(service: tuple[Service, str], cache: Any) -> None:
    svc, url = service
    svc.default = (200, {"hits": []}, 0.6)
    arm = HttpArm(name="svc", url=url, concurrency=2, retries=1, backoff=0.0, timeout=0.2)
    ctx = Context(corpus=CORPUS, cache=cache, progress=False)
    t0 = time.perf_counter()
    with pytest.raises(ExternalError, match=r"gave up after 2 attempts; last error: timed out after 0.2 s"):
        ctx.search(arm, QUERIES.subset(["q1"]), k=3)
    assert time.perf_counter() - t0 < 3.0
    assert not list(cache.root.rglob("*.json"))


def test_http_4xx_fails_at_once(service: tuple[Service, str]) -> None:
    svc, url = service
    svc.default = (404, {"error": "no such index"}, 0.0)
    arm = HttpArm(name="svc", url=url, retries=5, backoff=0.01)
    with pytest.raises(ExternalError, match="HTTP 404"):
        Context(corpus=CORPUS, progress=False).search(arm, QUERIES.subset(["q1"]), k=3)
    assert len(svc.bodies) == 1


def test_http_bad_responses_are_clear(service: tuple[Service, str]) -> None:
    svc, url = service
    arm = HttpArm(name="svc", url=url, scores="$.hits[*].score", retries=0)
    svc.default = (200, "<html>oops</html>", 0.0)
    with pytest.raises(ExternalError, match="response is not JSON"):
        Context(corpus=CORPUS, progress=False).search(arm, QUERIES.subset(["q1"]), k=3)
    svc.default = (200, {"results": []}, 0.0)
    with pytest.raises(ExternalError, match=r"query 'q1': response has no member 'hits' at \$"):
        Context(corpus=CORPUS, progress=False).search(arm, QUERIES.subset(["q1"]), k=3)
    svc.default = (200, {"hits": [{"id": "a", "score": "high"}]}, 0.0)
    with pytest.raises(ExternalError, match="score 'high' is not a number"):
        Context(corpus=CORPUS, progress=False).search(arm, QUERIES.subset(["q1"]), k=3)


def test_http_unreachable_is_clear() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    arm = HttpArm(name="svc", url=f"http://127.0.0.1:{port}/x", retries=1, backoff=0.0)
    with pytest.raises(ExternalError, match=r"gave up after 2 attempts; last error: connection failed"):
        Context(corpus=CORPUS, progress=False).search(arm, QUERIES.subset(["q1"]), k=3)


def test_http_error_echoing_a_secret_header_is_scrubbed(service: tuple[Service, str]) -> None:
    svc, url = service
    svc.default = lambda body: (403, {"error": f"token {body['_auth']} is not allowed"}, 0.0)
    arm = HttpArm(name="svc", url=url, headers={"Authorization": "Bearer s3cret-token-123"}, retries=3)
    with pytest.raises(ExternalError) as err:
        Context(corpus=CORPUS, progress=False).search(arm, QUERIES.subset(["q1"]), k=3)
    msg = str(err.value)
    assert msg == f"http arm 'svc': query 'q1': HTTP 403: token Bearer *** is not allowed (POST {url})"
    assert len(svc.bodies) == 1 and svc.bodies[0]["_auth"] == "Bearer s3cret-token-123"


def test_http_arm_from_spec() -> None:
    (arm,) = build_arms([parse_arm_spec("svc=http:url=http://127.0.0.1:9/s,ids=$.hits[*].id,retries=1")])
    assert isinstance(arm, HttpArm) and arm.retries == 1 and arm.ids == "$.hits[*].id"


def test_redact_url() -> None:
    assert redact_url("postgresql://bob:hunter2@db:5432/x?sslmode=require") == "postgresql://bob:***@db:5432/x?sslmode=require"
    assert redact_url("https://h/s?api_key=abc&q=1") == "https://h/s?api_key=***&q=1"
    assert redact_url("host=db password=hunter2 user=bob") == "host=db password=*** user=bob"
    assert redact_url("http://h/s") == "http://h/s"


def test_secret_in_spec_text_does_not_reach_the_name() -> None:
    (arm,) = build_arms([parse_arm_spec("http:url=http://127.0.0.1:9/s?api_key=hunter2")])
    assert "hunter2" not in arm.name and "api_key=***" in arm.name


def test_http_get_with_url_placeholders(service: tuple[Service, str]) -> None:
    svc, url = service
    svc.default = _hits
    arm = HttpArm(name="svc", url=url + "?q={query}&n={k}", method="GET", scores="$.hits[*].score")
    run = Context(corpus=CORPUS, progress=False).search(arm, QUERIES.subset(["q2"]), k=1)
    assert run["q2"] == (("d", 4.0),) and svc.bodies[0] == {"query": "beta gamma", "k": 1}
