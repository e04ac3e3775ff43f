"""OpenAI-compatible embeddings client against a real HTTP fake on 127.0.0.1."""

from __future__ import annotations

import numpy as np
import pytest

from bakeoff.data.model import Corpus, Document, Queries, Query
from bakeoff.data.ranking import rank
from bakeoff.errors import ConfigError
from bakeoff.models.encoders.base import l2_normalise
from bakeoff.models.encoders.openai import EmbeddingAPIError, OpenAIEncoder
from bakeoff.runner.context import Context
from tests.support.fake_openai import FakeOpenAI, fake_vector

KEY = "sk-test-123"
TEXTS = ["alpha beta", "gamma", "delta epsilon zeta", "eta", "theta iota", "kappa lambda mu nu", "xi", "omicron pi"]


@pytest.fixture()
def server():
    with FakeOpenAI(api_key=KEY) as s:
        yield s


@pytest.fixture()
def key_env(monkeypatch):
    monkeypatch.setenv("FAKE_EMBED_KEY", KEY)
    return "FAKE_EMBED_KEY"


def _client(server: FakeOpenAI, key_env: str, **kw) -> tuple[OpenAIEncoder, list[float]]:
    slept: list[float] = []
    opts = {"backoff": 0.01, "max_retries": 3, "timeout": 5.0, **kw}
    enc = OpenAIEncoder(model="fake-embed", base_url=server.base_url, api_key_env=key_env, sleep=slept.append, **opts)
    return enc, slept


def test_batches_order_tokens_and_auth(server, key_env) -> None:
    enc, slept = _client(server, key_env)
    got = enc.encode(TEXTS, kind="doc", batch_size=3)
    want = l2_normalise(np.array([fake_vector(t) for t in TEXTS]))
    np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    assert len(server.requests) == 3 and [len(r["body"]["input"]) for r in server.requests] == [3, 3, 2]
    assert all(r["auth"] == f"Bearer {KEY}" and r["body"]["model"] == "fake-embed" for r in server.requests)
    assert all(r["body"]["encoding_format"] == "float" for r in server.requests)
    # longest texts first (length-sorted, stable on ties: both have 18 characters)
    assert server.requests[0]["body"]["input"][:2] == ["delta epsilon zeta", "kappa lambda mu nu"]
    assert enc.tokens_used == sum(len(t.split()) for t in TEXTS) == 16
    assert slept == [] and enc.retries == 0


def test_prefix_sent_to_server(server, key_env) -> None:
    enc, _ = _client(server, key_env, prefix_query="query: ")
    enc.encode(["gamma"], kind="query")
    enc.encode(["gamma"], kind="doc")
    assert [r["body"]["input"] for r in server.requests] == [["query: gamma"], ["gamma"]]


def test_429_honours_retry_after_then_succeeds(server, key_env) -> None:
    server.script = ["429", "429"]
    enc, slept = _client(server, key_env)
    got = enc.encode(TEXTS[:2], kind="doc")
    np.testing.assert_allclose(got, l2_normalise(np.array([fake_vector(t) for t in TEXTS[:2]])), atol=1e-6)
    assert slept == [0.05, 0.05] and enc.retries == 2 and len(server.requests) == 3


def test_5xx_exponential_backoff_then_succeeds(server, key_env) -> None:
    server.script = ["500", "503", "500"]
    enc, slept = _client(server, key_env, backoff=0.01)
    enc.encode(TEXTS[:1], kind="doc")
    assert slept == [0.01, 0.02, 0.04] and len(server.requests) == 4


def test_backoff_is_bounded(server, key_env) -> None:
    server.script = ["500"] * 3
    enc, slept = _client(server, key_env, backoff=1.0, backoff_max=1.5)
    enc.encode(TEXTS[:1], kind="doc")
    assert slept == [1.0, 1.5, 1.5]


def test_gives_up_after_max_retries(server, key_env) -> None:
    server.script = ["503"] * 10
    enc, slept = _client(server, key_env, max_retries=2)
    with pytest.raises(EmbeddingAPIError, match=r"gave up after 3 attempts; last error: HTTP 503: The server had an error"):
        enc.encode(TEXTS[:1], kind="doc")
    assert len(server.requests) == 3 and len(slept) == 2


def test_timeout_is_retried(key_env) -> None:
    with FakeOpenAI(api_key=KEY, timeout_sleep=1.0) as server:
        server.script = ["timeout"]
        enc, slept = _client(server, key_env, timeout=0.2)
        got = enc.encode(["gamma"], kind="doc")
        assert len(server.requests) == 2 and slept == [0.01]
        np.testing.assert_allclose(got[0], l2_normalise(np.array([fake_vector("gamma")]))[0], atol=1e-6)
        server.script = ["timeout"] * 5
        enc, _ = _client(server, key_env, timeout=0.2, max_retries=1)
        with pytest.raises(EmbeddingAPIError, match="timed out after 0.2 s"):
            enc.encode(["gamma"], kind="doc")


def test_401_fails_at_once_and_never_shows_the_key(server, key_env) -> None:
    server.script = ["401"]
    enc, slept = _client(server, key_env)
    with pytest.raises(EmbeddingAPIError) as err:
        enc.encode(TEXTS[:1], kind="doc")
    assert "HTTP 401" in str(err.value) and KEY not in str(err.value) and "***" in str(err.value)
    assert len(server.requests) == 1 and slept == []


def test_missing_key_env_and_bad_urls(server, monkeypatch) -> None:
    monkeypatch.delenv("NOT_SET_KEY", raising=False)
    enc = OpenAIEncoder(model="m", base_url=server.base_url, api_key_env="NOT_SET_KEY")
    with pytest.raises(ConfigError, match="NOT_SET_KEY"):
        enc.encode(["x"], kind="doc")
    assert server.requests == []
    with pytest.raises(ConfigError):
        OpenAIEncoder(model="m", base_url="ftp://example")
    with pytest.raises(ConfigError, match="credentials"):
        OpenAIEncoder(model="m", base_url="http://user:pw@127.0.0.1:1/v1")
    refused = OpenAIEncoder(model="m", base_url="http://127.0.0.1:9/v1", max_retries=1, backoff=0.0)
    with pytest.raises(EmbeddingAPIError, match="connection failed"):
        refused.encode(["x"], kind="doc")


@pytest.mark.slow  # a real model
def test_dense_arm_over_the_api_records_tokens_cost_and_keeps_key_secret(server, key_env, cache) -> None:
    from bakeoff.runner.config import build_arms, parse_arm_spec

    docs = [Document(f"d{i}", t) for i, t in enumerate(TEXTS)]
    corpus = Corpus.from_documents(docs)
    queries = Queries.from_queries([Query("q1", "theta iota"), Query("q2", "kappa mu")])
    spec = (f"api=dense:model=openai:fake-embed,base_url={server.base_url},api_key_env={key_env},"
            "price_per_1k_tokens=0.02,batch_size=4")
    (arm,) = build_arms([parse_arm_spec(spec)])
    ctx = Context(corpus, cache=cache, progress=False)
    run = ctx.search(arm, queries, k=3)
    d = l2_normalise(np.array([fake_vector(t) for t in TEXTS], dtype=np.float64)).astype(np.float64)
    for qid, text in (("q1", "theta iota"), ("q2", "kappa mu")):
        q = l2_normalise(np.array([fake_vector(text)]))[0].astype(np.float64)
        want = rank(zip(corpus.ids, (d @ q).tolist()))[:3]
        assert [x for x, _ in run[qid]] == [x for x, _ in want]
    stats = ctx.timings[arm.fingerprint()]
    assert stats["doc_api_tokens"] == 16 and stats["query_api_tokens"] == 4
    assert stats["doc_api_cost_usd"] == pytest.approx(16 / 1000 * 0.02)
    # the key is nowhere: not in the arm identity nor in any cache file
    assert KEY not in repr(arm.config()) and KEY not in arm.describe()
    for f in cache.root.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes()
    # a warm context serves everything from cache: no new request
    n = len(server.requests)
    (arm2,) = build_arms([parse_arm_spec(spec)])
    ctx2 = Context(corpus, cache=cache, progress=False)
    assert arm2.embed_corpus(corpus, ctx=ctx2).shape == (8, 16)
    assert ctx2.search(arm2, queries, k=3).ranked == run.ranked and len(server.requests) == n


# ---- the key never leaks: servers that echo the Authorization header in answers that fail to parse ----------

LONG_KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"


def _pieces(key: str, n: int = 8) -> list[str]:
    """Every piece of ``key`` of ``n`` characters: none may appear anywhere."""
    return [key[i:i + n] for i in range(len(key) - n + 1)]


def _assert_clean(text: str, key: str = LONG_KEY) -> None:
    leaked = [p for p in _pieces(key) if p in text]
    assert not leaked, f"key pieces leaked: {leaked[:3]} in {text[:300]!r}"


@pytest.mark.parametrize("action,expect", [
    ("echo-float", r"malformed response"),
    ("echo-text", r"response is not JSON"),
    ("echo-cut", r"response is not JSON"),
    ("401", r"HTTP 401"),
])
def test_echoed_key_is_scrubbed_from_every_error(action, expect, monkeypatch, caplog) -> None:
    monkeypatch.setenv("ECHO_KEY", LONG_KEY)
    caplog.set_level("DEBUG")
    with FakeOpenAI(api_key=LONG_KEY) as srv:
        srv.script = [action] * 10
        enc = OpenAIEncoder(model="m", base_url=srv.base_url, api_key_env="ECHO_KEY", max_retries=1, backoff=0.0,
                            sleep=lambda s: None)
        with pytest.raises(EmbeddingAPIError, match=expect) as err:
            enc.encode(["x"], kind="doc")
        assert srv.requests[0]["auth"] == f"Bearer {LONG_KEY}"  # the server did receive (and echo) the key
    msg = str(err.value)
    assert "\n" not in msg and "***" in msg
    _assert_clean(msg)
    _assert_clean(repr(err.value.__dict__))
    _assert_clean(caplog.text)


def test_echo_cut_at_the_excerpt_boundary_is_scrubbed_before_cutting(monkeypatch) -> None:
    """The echoed key starts 14 characters before the 80-character cut: a scrub after cutting would see only
    the partial key ('sk-proj-A1b2C3'); scrubbing first removes it, and a partial prefix is scrubbed too."""
    from bakeoff.net import excerpt

    monkeypatch.setenv("ECHO_KEY", LONG_KEY)
    body = "x" * 58 + "Bearer " + LONG_KEY + " trailing"
    cut_late = excerpt(body, [], limit=80)  # what a scrub-after-cut would have to deal with
    assert LONG_KEY[:14] in cut_late and LONG_KEY[:15] not in cut_late
    assert "***" in excerpt(body, [LONG_KEY], limit=80)
    _assert_clean(excerpt(body, [LONG_KEY], limit=80))
    from bakeoff.redact import scrub
    _assert_clean(scrub(cut_late, [LONG_KEY]))  # even a partial prefix left by a cut is removed


def test_malformed_data_is_one_line_not_an_attribute_error(monkeypatch) -> None:
    monkeypatch.setenv("ECHO_KEY", LONG_KEY)
    with FakeOpenAI(api_key=LONG_KEY) as srv:
        srv.script = ["data-string"]
        enc = OpenAIEncoder(model="m", base_url=srv.base_url, api_key_env="ECHO_KEY", max_retries=0)
        with pytest.raises(EmbeddingAPIError) as err:
            enc.encode(["x"], kind="doc")
    msg = str(err.value)
    assert "\n" not in msg and "AttributeError" not in msg
    assert "malformed response: 'data' is a str, expected a list of {index, embedding}" in msg


@pytest.mark.slow  # a real model
def test_bakeoff_run_with_an_echoing_server_leaks_the_key_nowhere(tmp_path) -> None:
    """The whole command: one error line, exit 2, and no piece of the key in stderr, stdout, the output folder
    or the cache."""
    import os
    import subprocess
    import sys

    from tests.data.test_loaders import beir_folder

    data = beir_folder(tmp_path / "data")
    env = {**os.environ, "ECHO_KEY": LONG_KEY}
    for action in ("echo-float", "echo-cut"):
        with FakeOpenAI(api_key=LONG_KEY) as srv:
            srv.script = [action] * 50
            spec = (f"api=dense:model=openai:fake-embed,base_url={srv.base_url},api_key_env=ECHO_KEY,"
                    "max_retries=1")
            out, cache_dir = tmp_path / f"out-{action}", tmp_path / f"cache-{action}"
            proc = subprocess.run([sys.executable, "-m", "bakeoff", "run", "--beir", str(data), "--arm", spec,
                                   "--out", str(out), "--cache-dir", str(cache_dir), "--no-progress"],
                                  capture_output=True, text=True, timeout=300, env=env, check=False)
            assert srv.requests, "the server was not called"
        assert proc.returncode == 2, proc.stderr
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "Traceback" not in proc.stderr
        _assert_clean(proc.stderr + proc.stdout)
        for root in (out, cache_dir):
            for f in root.rglob("*") if root.exists() else []:
                if f.is_file():
                    _assert_clean(f.read_bytes().decode("utf-8", "replace"))
