"""bakeoff.net.HttpClient against a real http.server on 127.0.0.1 (no mocks of httpx): retries,
Retry-After, timeouts, non-JSON bodies, rate spacing measured by the server, key scrubbing, User-Agent."""

from __future__ import annotations

import email.utils
import itertools
import pickle
import threading
import time
from typing import Any

import pytest

from bakeoff.errors import ConfigError
from bakeoff.library_versions import bakeoff_version
from bakeoff.net import HttpClient, HttpError, retry_after_seconds
from tests.support.fake_http import FakeServer, Reply

KEY = "sk-live-0123456789abcdefghijKLMNOPQRSTUV"  # 38 characters


class Scripted(FakeServer):
    """Answers with ``script`` in order, then ``default``; a callable reply gets the request."""

    def __init__(self, *script: Reply | Any, default: Reply | Any = None) -> None:
        super().__init__()
        self.script = list(script)
        self.default = default or Reply(200, {"ok": True})

    def handle(self, request: dict[str, Any]) -> Reply:
        with self.lock:
            reply = self.script.pop(0) if self.script else self.default
        return reply(request) if callable(reply) else reply


def _client(**kw: Any) -> tuple[HttpClient, list[float]]:
    slept: list[float] = []
    return HttpClient(**{"backoff": 0.01, "retries": 3, "timeout": 5.0, "sleep": slept.append, **kw}), slept


def _http_date(seconds_ahead: float) -> str:
    return email.utils.formatdate(time.time() + seconds_ahead, usegmt=True)


# -- retries -------------------------------------------------------------------------------------

def test_429_retry_after_seconds_is_honoured_and_capped() -> None:
    with Scripted(Reply(429, {"error": "slow down"}, {"Retry-After": "2"}),
                  Reply(429, {"error": "slow down"}, {"Retry-After": "999"})) as srv:
        client, slept = _client(backoff_max=30.0)
        assert client.get_json(srv.url("/x")) == {"ok": True}
    assert slept == [2.0, 30.0] and len(srv.requests) == 3
    assert client.n_requests == 3 and client.n_retries == 2


def test_429_retry_after_http_date_is_honoured_and_capped() -> None:
    with Scripted(Reply(429, headers={"Retry-After": _http_date(10)}),
                  Reply(503, headers={"Retry-After": _http_date(600)})) as srv:
        client, slept = _client(backoff_max=60.0)
        assert client.get_json(srv.url("/x")) == {"ok": True}
    # an HTTP date has whole seconds: 10 s ahead reads as 9 < wait <= 10 (plus the time the test took)
    assert 8.0 < slept[0] <= 10.0 and slept[1] == 60.0


def test_retry_after_parsing() -> None:
    now = 1_700_000_000.0
    assert retry_after_seconds("3", now=lambda: now) == 3.0
    assert retry_after_seconds(email.utils.formatdate(now + 42, usegmt=True), now=lambda: now) == 42.0
    assert retry_after_seconds(email.utils.formatdate(now - 42, usegmt=True), now=lambda: now) == 0.0
    assert retry_after_seconds("soon", now=lambda: now) is None and retry_after_seconds(None) is None


def test_5xx_is_retried_with_exponential_backoff_then_one_line_error() -> None:
    with Scripted(default=Reply(503, {"error": {"message": "overloaded\nplease\tretry"}})) as srv:
        client, slept = _client(retries=2, backoff=0.5)
        with pytest.raises(HttpError) as err:
            client.post_json(srv.url("/v1/x"), {"a": 1})
    msg = str(err.value)
    assert msg == f"{srv.url('/v1/x')}: gave up after 3 attempts; last error: HTTP 503: overloaded please retry"
    assert "\n" not in msg and err.value.status == 503 and err.value.attempts == 3
    assert err.value.reason == "HTTP 503: overloaded please retry"
    assert slept == [0.5, 1.0] and len(srv.requests) == 3


def test_5xx_then_success() -> None:
    with Scripted(Reply(500, "boom"), Reply(502, "bad gateway")) as srv:
        client, slept = _client(backoff=0.25)
        assert client.get_json(srv.url("/x")) == {"ok": True}
    assert slept == [0.25, 0.5] and len(srv.requests) == 3


def test_backoff_is_capped() -> None:
    with Scripted(Reply(500), Reply(500), Reply(500)) as srv:
        client, slept = _client(backoff=1.0, backoff_max=1.5)
        client.get_json(srv.url("/x"))
    assert slept == [1.0, 1.5, 1.5]


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_4xx_fails_at_once(status: int) -> None:
    with Scripted(default=Reply(status, {"error": {"message": "no such thing"}})) as srv:
        client, slept = _client(retries=5)
        with pytest.raises(HttpError) as err:
            client.get_json(srv.url("/x"))
    assert str(err.value) == f"{srv.url('/x')}: HTTP {status}: no such thing"
    assert err.value.status == status and err.value.attempts == 1
    assert len(srv.requests) == 1 and slept == []


def test_timeout_is_retried_then_reported() -> None:
    with Scripted(Reply(200, {"late": True}, delay_s=1.0)) as srv:
        client, slept = _client(timeout=0.2)
        assert client.get_json(srv.url("/x")) == {"ok": True}
        assert len(srv.requests) == 2 and slept == [0.01]
    with Scripted(default=Reply(200, {}, delay_s=1.0)) as srv:
        client, _ = _client(timeout=0.2, retries=1)
        t0 = time.perf_counter()
        with pytest.raises(HttpError, match=r"gave up after 2 attempts; last error: timed out after 0.2 s") as err:
            client.get_json(srv.url("/x"))
        assert err.value.status is None and time.perf_counter() - t0 < 3.0


def test_connection_refused_is_retried_then_reported() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    client, slept = _client(retries=1)
    with pytest.raises(HttpError, match="gave up after 2 attempts; last error: connection failed"):
        client.get_json(f"http://127.0.0.1:{port}/x")
    assert slept == [0.01]


def test_non_json_body_is_retried_for_request_json_only() -> None:
    html = Reply(200, "<html>gateway hiccup</html>", content_type="text/html")
    with Scripted(html, Reply(200, {"fine": 1})) as srv:
        client, _slept = _client()
        assert client.request_json("GET", srv.url("/x")) == {"fine": 1}
        assert len(srv.requests) == 2 and client.n_retries == 1
    with Scripted(html) as srv:
        client, _slept = _client()
        resp = client.request("GET", srv.url("/x"))  # a plain request takes any 2xx body
        assert resp.text == "<html>gateway hiccup</html>" and len(srv.requests) == 1
    with Scripted(default=html) as srv:
        client, _ = _client(retries=1)
        with pytest.raises(HttpError, match=r"last error: response is not JSON \(content-type text/html\): "
                                            r"<html>gateway hiccup</html>"):
            client.get_json(srv.url("/x"))


def test_hooks_see_every_attempt_and_retry() -> None:
    seen: list[Any] = []
    with Scripted(Reply(429, headers={"Retry-After": "0.5"}), Reply(500)) as srv:
        client, _slept = _client(on_request=lambda: seen.append("request"),
                                on_retry=lambda reason, delay: seen.append((reason, delay)))
        client.get_json(srv.url("/x"))
    assert seen == ["request", ("HTTP 429: Too Many Requests", 0.5), "request",
                    ("HTTP 500: Internal Server Error", 0.02), "request"]


# -- politeness ----------------------------------------------------------------------------------

def test_no_retry_makes_a_retried_status_final_with_its_body(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NET_KEY", KEY)
    seen: list[tuple[int, str]] = []

    def malformed(status: int, body: str) -> bool:
        seen.append((status, body))
        return "validation error" in body

    bad = {"error": {"message": f"1 validation error: field 'x' (key {KEY})"}}
    with Scripted(Reply(503, {"error": "loading"}), Reply(500, bad)) as srv:
        client, slept = _client(no_retry=malformed, auth_env="NET_KEY")
        with pytest.raises(HttpError) as err:
            client.get_json(srv.url("/x"))
    assert len(srv.requests) == 2 and slept == [0.01]   # the 503 retried, the malformed 500 not
    assert [s for s, _ in seen] == [503, 500] and "validation error" in seen[1][1] and KEY not in seen[1][1]
    assert err.value.status == 500 and err.value.attempts == 1
    assert '"1 validation error' in err.value.body and KEY not in err.value.body and KEY not in str(err.value)


@pytest.mark.slow  # waits by design
def test_min_interval_spaces_request_starts_across_threads() -> None:
    interval = 0.3
    with Scripted() as srv:
        client = HttpClient(min_interval=interval, timeout=5.0)
        threads = [threading.Thread(target=client.get_json, args=(srv.url(f"/x{i}"),)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        client.get_json(srv.url("/last"))
        arrivals = sorted(r["t"] for r in srv.requests)
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert len(arrivals) == 5
    # without spacing the four threads arrive within milliseconds; allow 0.1 s of scheduling jitter per gap
    # (the machine is shared) and check the whole span, where only the two ends jitter
    assert min(gaps) >= interval - 0.1, gaps
    assert arrivals[-1] - arrivals[0] >= 4 * interval - 0.05, gaps


def test_user_agent_names_bakeoff_and_its_version() -> None:
    with Scripted() as srv:
        HttpClient().get_json(srv.url("/x"))
        HttpClient(user_agent="my-tool/1.0 (ops@example.org)").get_json(srv.url("/y"))
        agents = [r["headers"]["User-Agent"] for r in srv.requests]
    assert agents[0].startswith(f"bakeoff/{bakeoff_version()} (+https://pypi.org/project/bakeoff/")
    assert agents[1] == "my-tool/1.0 (ops@example.org)"


# -- secrets -------------------------------------------------------------------------------------

def _echo_auth(prefix_len: int = 0, cut: slice = slice(None), suffix: str = "") -> Any:
    def reply(request: dict[str, Any]) -> Reply:
        auth = request["headers"].get("Authorization", "")
        return Reply(401, {"error": {"message": "x" * prefix_len + f"invalid key {auth[cut]}{suffix}"}})
    return reply


def _no_part_of(secret: str, text: str) -> bool:
    """No 6 consecutive characters of ``secret`` are in ``text``."""
    return not any(secret[i : i + 6] in text for i in range(len(secret) - 5))


def _echoed_error(monkeypatch: pytest.MonkeyPatch, **echo: Any) -> tuple[str, dict[str, Any]]:
    """The HttpError text of a 401 whose body echoes (part of) the Authorization header; the request."""
    monkeypatch.setenv("TEST_NET_KEY", KEY)
    with Scripted(default=_echo_auth(**echo)) as srv:
        client, _ = _client(auth_env="TEST_NET_KEY")
        with pytest.raises(HttpError) as err:
            client.get_json(srv.url("/x"))
    return str(err.value), srv.requests[0]


def test_key_is_sent_and_scrubbed_from_an_echoed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    msg, request = _echoed_error(monkeypatch)
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    assert msg.endswith("HTTP 401: invalid key Bearer ***") and _no_part_of(KEY, msg)


@pytest.mark.parametrize("pad", [150, 160, 170, 175])
def test_key_cut_at_the_truncation_boundary_does_not_leak(monkeypatch: pytest.MonkeyPatch, pad: int) -> None:
    # "invalid key Bearer " is 19 characters: in the server's text the key starts at pad + 19 and the
    # 200-character excerpt ends inside it, so cutting before scrubbing would leak its first 180 - pad
    # characters; scrubbed first, the cut falls in the text after it
    msg, _ = _echoed_error(monkeypatch, prefix_len=pad, suffix=" " + "y" * 100)
    assert msg.endswith("y…") and "Bearer ***" in msg and "\n" not in msg and _no_part_of(KEY, msg)


@pytest.mark.parametrize("cut", [slice(0, 7 + 12), slice(0, 7 + 6), slice(-8, None), slice(7 + 3, 7 + 30)])
def test_key_cut_by_the_server_does_not_leak(monkeypatch: pytest.MonkeyPatch, cut: slice) -> None:
    # the server echoes only part of "Bearer <key>" ("Bearer " is 7 characters): a prefix, a suffix, a middle
    msg, _ = _echoed_error(monkeypatch, cut=cut)
    shown = f"Bearer {KEY}"[cut].removeprefix("Bearer ")
    assert msg.endswith("invalid key " + ("Bearer ***" if cut.start in (0, None) else "***"))
    assert not any(shown[i : i + 6] in msg for i in range(len(shown) - 5))


def test_secret_headers_and_url_parameters_are_scrubbed_and_redacted() -> None:
    secret = "hdr-secret-value-42"
    token = "url-token-hunter22"

    def echo(request: dict[str, Any]) -> Reply:
        return Reply(500, {"error": f"saw {request['headers'].get('X-Api-Key')} for {request['path']}"})

    with Scripted(default=echo) as srv:
        client, _ = _client(headers={"X-Api-Key": secret}, retries=0)
        with pytest.raises(HttpError) as err:
            client.get_json(srv.url(f"/search?api_key={token}&q=1"))
        assert srv.requests[0]["headers"]["X-Api-Key"] == secret
    msg = str(err.value)
    assert secret not in msg and token not in msg and "api_key=***" in msg and "q=1" in msg
    assert _no_part_of(secret, msg) and _no_part_of(token, msg)


def test_missing_key_variable_is_a_config_error_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_NET_NO_KEY", raising=False)
    with Scripted() as srv:
        client, _ = _client(auth_env="TEST_NET_NO_KEY")
        with pytest.raises(ConfigError, match="TEST_NET_NO_KEY"):
            client.get_json(srv.url("/x"))
        assert srv.requests == []


def test_client_pickles_without_its_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_NET_KEY", KEY)
    with Scripted() as srv:
        client = HttpClient(base_url=srv.url("/v1"), auth_env="TEST_NET_KEY")
        client.get_json("a")
        clone = pickle.loads(pickle.dumps(client))
        assert KEY.encode() not in pickle.dumps(client)
        assert clone.get_json("b") == {"ok": True}
        assert [r["path"] for r in srv.requests] == ["/v1/a", "/v1/b"]
