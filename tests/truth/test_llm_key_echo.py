"""The LLM client (chat protocol) against a fake server that echoes the API key in answers that fail:
the key reaches no error text, log record or cache file (tests/support/fake_openai_chat.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("httpx")
pytest.importorskip("pydantic")

from bakeoff.truth.generation.prompts import describe_schema
from bakeoff.truth.llm.client import ChatRequest, LLMClient, LLMConfig
from tests.support.fake_openai_chat import FakeOpenAI, Reply

KEY = "sk-proj-" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2H1g0"
ECHO = f"Authorization: Bearer {KEY}"


def _pieces(n: int = 8) -> list[str]:
    return [KEY[i:i + n] for i in range(len(KEY) - n + 1)]


def _assert_clean(text: str) -> None:
    leaked = [p for p in _pieces() if p in text]
    assert not leaked, f"key pieces leaked: {leaked[:3]} in {text[:300]!r}"


CASES = {
    # a 200 whose answer text quotes the key and is not the JSON the schema wants
    "answer-echo": [Reply(200, ECHO)],
    # a 200 whose body is not JSON, quoting the key (retried, then the excerpt is quoted)
    "body-not-json": [Reply(200, raw_body=f"proxy error: {ECHO}".encode())],
    # the same with the key placed across the 80-character excerpt boundary
    "body-cut": [Reply(200, raw_body=("x" * 58 + "Bearer " + KEY + " trailing").encode())],
    # a 200 JSON body of the wrong shape carrying the key
    "wrong-shape": [Reply(200, raw_body=json.dumps({"choices": ECHO}).encode())],
    # 401 echoing the key, as some servers do
    "401": [Reply(401, raw_body=json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}"}}).encode())],
}


@pytest.mark.parametrize("case", list(CASES))
def test_echoed_key_reaches_no_error_log_or_cache(case, monkeypatch, cache, caplog) -> None:
    monkeypatch.setenv("ECHO_LLM_KEY", KEY)
    caplog.set_level("DEBUG")
    req = ChatRequest(({"role": "user", "content": "doc"},), describe_schema(), {"temperature": 0.5, "seed": 1})
    with FakeOpenAI(CASES[case]) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake-model", api_key_env="ECHO_LLM_KEY",
                                     max_retries=1, backoff_s=0.0), cache=cache, sleep=lambda s: None)
        g = client.generate(req)
        assert srv.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert not g.ok and g.error
    _assert_clean(g.error)
    _assert_clean(caplog.text)
    _assert_clean(json.dumps(client.config.public()))
    for f in Path(cache.root).rglob("*"):
        if f.is_file():
            _assert_clean(f.read_bytes().decode("utf-8", "replace"))
