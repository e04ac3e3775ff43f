"""Failure handling of the LLM client against a protocol-faithful fake server on 127.0.0.1:
429 (with backoff and Retry-After), 500, timeouts, invalid JSON, schema violations; the
secret never reaching the cache; batch files; cost accounting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("httpx")
pytest.importorskip("pydantic")

from bakeoff.truth.generation.prompts import describe_schema
from bakeoff.truth.llm.client import ChatRequest, LLMClient, LLMConfig, Price, ingest_batch, write_batch
from tests.support.fake_openai_chat import FakeOpenAI, Reply

GOOD = json.dumps({"query": "how do I copy a folder"})


def _req(text: str = "doc", seed: int = 1) -> ChatRequest:
    return ChatRequest(({"role": "user", "content": text},), describe_schema(), {"temperature": 0.5, "seed": seed})


def _client(server: FakeOpenAI, cache=None, **kw) -> tuple[LLMClient, list[float]]:
    sleeps: list[float] = []
    cfg = LLMConfig(base_url=server.base_url, model="fake-model", **{"backoff_s": 0.5, "max_retries": 3, **kw})
    return LLMClient(cfg, cache=cache, sleep=sleeps.append), sleeps


def test_429_then_success_backs_off_exponentially() -> None:
    with FakeOpenAI([Reply(429), Reply(429), Reply(200, GOOD, prompt_tokens=100, completion_tokens=50)]) as srv:
        client, sleeps = _client(srv, price=Price(1.0, 2.0))
        g = client.generate(_req())
    assert g.ok and g.value.query == "how do I copy a folder"
    assert sleeps == [0.5, 1.0]                       # backoff_s * 2**attempt
    assert client.usage.transport_retries == 2 and client.usage.http_calls == 3
    assert client.usage.cost_usd == pytest.approx((100 * 1.0 + 50 * 2.0) / 1e6)


def test_retry_after_header_wins_and_is_capped() -> None:
    with FakeOpenAI([Reply(429, headers={"Retry-After": "7"}), Reply(429, headers={"Retry-After": "99"}),
                     Reply(200, GOOD)]) as srv:
        client, sleeps = _client(srv, backoff_max_s=30.0)
        assert client.generate(_req()).ok
    assert sleeps == [7.0, 30.0]


def test_persistent_500_is_a_counted_failure_not_a_crash() -> None:
    with FakeOpenAI([Reply(500)]) as srv:
        client, sleeps = _client(srv, max_retries=2)
        gens = client.generate_many([_req("a"), _req("b")], progress=False)
    assert [g.ok for g in gens] == [False, False]
    assert "HTTP 500" in gens[0].error and "3 attempts" in gens[0].error
    assert client.usage.failures == 2 and client.usage.http_calls == 6 and len(sleeps) == 4


def test_other_4xx_fails_without_retry() -> None:
    with FakeOpenAI([Reply(400)]) as srv:
        client, sleeps = _client(srv)
        g = client.generate(_req())
    assert not g.ok and "HTTP 400" in g.error and sleeps == [] and client.usage.http_calls == 1


def test_timeout_is_retried() -> None:
    with FakeOpenAI([Reply(200, GOOD, delay_s=1.5), Reply(200, GOOD)]) as srv:
        client, sleeps = _client(srv, timeout_s=0.3)
        g = client.generate(_req())
    assert g.ok and client.usage.transport_retries == 1 and sleeps == [0.5]


def test_body_that_is_not_json_is_retried() -> None:
    with FakeOpenAI([Reply(200, raw_body=b"<html>gateway</html>"), Reply(200, GOOD)]) as srv:
        client, _ = _client(srv)
        assert client.generate(_req()).ok
    assert client.usage.transport_retries == 1


def test_invalid_json_answer_is_reasked_with_a_new_seed_then_succeeds() -> None:
    with FakeOpenAI([Reply(200, '{"query": "unterminated'), Reply(200, GOOD)]) as srv:
        client, _ = _client(srv, schema_retries=2)
        g = client.generate(_req(seed=4))
        seeds = [r["body"]["seed"] for r in srv.requests]
    assert g.ok and g.attempts == 2 and client.usage.schema_retries == 1
    assert seeds == [4, 4 + 1_000_003]


def test_schema_violations_exhaust_retries_and_count_one_failure() -> None:
    too_long = json.dumps({"query": "x" * 500})                    # maxLength 160
    with FakeOpenAI([Reply(200, '{"text": "no query field"}'), Reply(200, too_long), Reply(200, "not json")]) as srv:
        client, _ = _client(srv, schema_retries=2)
        g = client.generate(_req())
    assert not g.ok and g.error == "invalid JSON: Expecting value" and g.attempts == 3
    assert client.usage.failures == 1 and client.usage.schema_retries == 2 and client.usage.http_calls == 3


def test_request_carries_schema_and_key_but_the_key_is_never_cached(monkeypatch, cache) -> None:
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-secret-123")
    with FakeOpenAI([Reply(200, GOOD)]) as srv:
        client, _ = _client(srv, cache=cache, api_key_env="FAKE_LLM_KEY")
        assert client.generate(_req()).ok
        again = client.generate(_req())
        req = srv.requests[0]
    assert again.cached and len(srv.requests) == 1
    assert req["path"] == "/v1/chat/completions" and req["headers"]["Authorization"] == "Bearer sk-secret-123"
    assert req["body"]["response_format"]["type"] == "json_schema"
    assert req["body"]["response_format"]["json_schema"]["schema"]["properties"]["query"]["maxLength"] == 160
    for f in Path(cache.root).rglob("*"):
        if f.is_file():
            assert b"sk-secret-123" not in f.read_bytes()
    assert "sk-secret" not in json.dumps(client.config.public())


def test_llama_cpp_response_format_and_completion_form() -> None:
    with FakeOpenAI([Reply(200, 'copy a folder"}')]) as srv:
        client, _ = _client(srv, response_format="json_object_schema")
        body = client.body(_req())
        g = client.generate(ChatRequest.completion("Document: x\nSearched for: ", describe_schema(), {"stop": ["\n"]},
                                                   prefill='{"query": "'))
        sent = srv.requests[0]
    assert body["response_format"] == {"type": "json_object", "schema": describe_schema().model_json_schema()}
    assert sent["path"] == "/v1/completions" and sent["body"]["prompt"].endswith('Searched for: {"query": "')
    assert g.ok and g.value.query == "copy a folder"


def test_missing_key_variable_is_a_config_error(monkeypatch) -> None:
    from bakeoff.errors import ConfigError

    monkeypatch.delenv("NOPE_KEY", raising=False)
    with FakeOpenAI([Reply(200, GOOD)]) as srv:
        client, _ = _client(srv, api_key_env="NOPE_KEY")
        with pytest.raises(ConfigError, match="NOPE_KEY"):
            client.generate(_req())


def test_batch_file_round_trip(tmp_path: Path, cache) -> None:
    client = LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="gpt-4o-mini"), cache=cache)
    reqs = [_req("a"), _req("b"), _req("c")]
    n = write_batch(client, reqs, tmp_path / "batch.jsonl")
    lines = [json.loads(x) for x in (tmp_path / "batch.jsonl").read_text().splitlines()]
    assert n == 3 and {x["url"] for x in lines} == {"/v1/chat/completions"}
    keys = [x["custom_id"] for x in lines]
    results = [
        {"custom_id": keys[0], "response": {"status_code": 200, "body": {
            "choices": [{"message": {"content": GOOD}}], "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}},
         "error": None},
        {"custom_id": keys[1], "response": {"status_code": 200, "body": {
            "choices": [{"message": {"content": "{}"}}], "usage": {}}}, "error": None},
        {"custom_id": "unknown", "response": {"status_code": 200, "body": {}}, "error": None},
    ]
    (tmp_path / "out.jsonl").write_text("\n".join(json.dumps(r) for r in results) + "\n")
    counts = ingest_batch(client, reqs, tmp_path / "out.jsonl")
    assert counts == {"ingested": 1, "invalid": 1, "unknown": 1}
    # gpt-4o-mini list price 0.15 / 0.60 per 1M, batch discount 0.5
    assert client.usage.cost_usd == pytest.approx((1000 * 0.15 + 100 * 0.60) / 1e6 * 0.5)
    g = client.generate(reqs[0])                          # served from the cache: no server at port 9
    assert g.ok and g.cached
    assert write_batch(client, reqs, tmp_path / "batch2.jsonl") == 2


def test_bad_batch_results_line_names_file_and_line(tmp_path: Path) -> None:
    from bakeoff.errors import InputError

    client = LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    (tmp_path / "r.jsonl").write_text('{"custom_id": "x"}\n{oops\n')
    with pytest.raises(InputError, match=r"r\.jsonl:2"):
        ingest_batch(client, [_req()], tmp_path / "r.jsonl")


@pytest.mark.slow  # waits by design
def test_concurrency_limit_is_respected_and_order_kept() -> None:
    import threading

    state = {"now": 0, "max": 0}
    lock = threading.Lock()

    def slow(body: dict, i: int) -> Reply:
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        import time

        time.sleep(0.2)
        with lock:
            state["now"] -= 1
        return Reply(200, json.dumps({"query": body["messages"][0]["content"]}))

    with FakeOpenAI(slow) as srv:
        client, _ = _client(srv, concurrency=2)
        gens = client.generate_many([_req(f"q{i}") for i in range(6)], progress=False)
    assert [g.value.query for g in gens] == [f"q{i}" for i in range(6)]
    assert state["max"] == 2
