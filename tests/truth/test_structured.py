"""Structured-output negotiation and refusals: the error bodies of real servers read field by field, and
the client's behaviour against a protocol-faithful fake on 127.0.0.1 that plays the servers which do not
run here (one that takes no ``response_format`` at all, one that refuses a sampling field the way OpenAI
does), with request counts taken server-side. The real llama-cpp-python and llama.cpp servers are in
``test_structured_llama_cpp_python.py`` and ``test_structured_llama_server.py``."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx")
pytest.importorskip("pydantic")

from bakeoff.truth.generation.prompts import describe_schema
from bakeoff.truth.llm.client import ChatRequest, LLMClient, LLMConfig
from bakeoff.truth.llm.structured import FORMS, RequestRefused, key_form, refusal
from tests.support.fake_openai_chat import FakeOpenAI, Reply

GOOD = json.dumps({"query": "how do I copy a folder"})

#: Error bodies as the servers send them (llama-cpp-python 0.3 and llama-server captured from the real servers here).
LLAMA_CPP_PYTHON_500 = json.dumps({"error": {"message": (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input "
    "should be 'text' or 'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}"
    "\n\n  File \"/venv/lib/python3.11/site-packages/llama_cpp/server/app.py\", line 376, in create_chat_completion"
    "\n    POST /v1/chat/completions"), "type": "internal_server_error", "param": None, "code": None}})
LLAMA_SERVER_TYPE_400 = json.dumps({"error": {"code": 400, "message": "response_format type must be one of \"text\" "
                                              "or \"json_object\", but got: bogus", "type": "invalid_request_error"}})
LLAMA_SERVER_SCHEMA_400 = json.dumps({"error": {"code": 400, "type": "invalid_request_error", "message": (
    "Unable to generate parser for this template. Automatic parser generation failed: JSON schema error at #: "
    "unrecognized type bogus")}})
LLAMA_SERVER_CONTEXT_400 = json.dumps({"error": {"code": 400, "message": "the request exceeds the available context "
                                                 "size, try increasing it", "type": "exceed_context_size_error"}})
OPENAI_TEMPERATURE_400 = json.dumps({"error": {"message": "Unsupported value: 'temperature' does not support 0.5 with "
                                               "this model. Only the default (1) value is supported.",
                                               "type": "invalid_request_error", "param": "temperature",
                                               "code": "unsupported_value"}})
OPENAI_CONTEXT_400 = json.dumps({"error": {"message": "This model's maximum context length is 128000 tokens.",
                                           "type": "invalid_request_error", "param": "messages",
                                           "code": "context_length_exceeded"}})
FASTAPI_422 = json.dumps({"detail": [{"type": "missing", "loc": ["body", "response_format", "json_schema"],
                                      "msg": "Field required", "input": None}]})


@pytest.mark.parametrize(("status", "body", "field", "words"), [
    (500, LLAMA_CPP_PYTHON_500, "response_format.type", "Input should be 'text' or 'json_object' (got 'json_schema')"),
    (400, LLAMA_SERVER_TYPE_400, "response_format", "response_format type must be one of"),
    (400, LLAMA_SERVER_SCHEMA_400, "response_format", "JSON schema error at #"),
    (400, OPENAI_TEMPERATURE_400, "temperature", "Unsupported value"),
    (422, FASTAPI_422, "response_format.json_schema", "Field required (got None)"),
    (400, json.dumps({"error": "1 validation error for Request"}), "request", "validation error"),
])
def test_a_refusal_names_its_field(status: int, body: str, field: str, words: str) -> None:
    r = refusal(status, body)
    assert r is not None and r.field == field and words in r.message
    assert "\n" not in r.message and "app.py" not in r.message   # the server's traceback is not repeated
    assert r.about_format == field.startswith("response_format")


@pytest.mark.parametrize(("status", "body"), [
    (400, LLAMA_SERVER_CONTEXT_400),                 # too long: that request's failure
    (400, OPENAI_CONTEXT_400),                       # a content field, even when named
    (500, json.dumps({"error": {"message": "status 500", "type": "fake"}})),   # an overloaded server: retried
    (503, LLAMA_CPP_PYTHON_500),                     # 503 is "not now", whatever the body says
    (500, "<html>Internal Server Error</html>"),
    (500, ""),
])
def test_not_a_refusal(status: int, body: str) -> None:
    assert refusal(status, body) is None


def test_the_two_constrained_forms_share_a_cache_key_plain_text_does_not() -> None:
    assert [key_form(f) for f in FORMS] == ["json_schema", "json_schema", "none"]
    keys = {}
    for form in (*FORMS, "auto"):
        client = LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", response_format=form))
        keys[form] = client.request_key(_req())
    assert keys["json_schema"] == keys["json_object_schema"] == keys["auto"] != keys["none"]


def _req(text: str = "doc", seed: int = 1) -> ChatRequest:
    return ChatRequest(({"role": "user", "content": text},), describe_schema(), {"temperature": 0.5, "seed": seed})


def _client(server: FakeOpenAI, cache: Any = None, **kw: Any) -> tuple[LLMClient, list[float]]:
    sleeps: list[float] = []
    cfg = LLMConfig(base_url=server.base_url, model="fake-model", **{"backoff_s": 0.5, "max_retries": 3, **kw})
    return LLMClient(cfg, cache=cache, sleep=sleeps.append), sleeps


def _format_refused(message: str) -> Reply:
    return Reply(500, raw_body=json.dumps({"error": {"message": message, "type": "internal_server_error"}}).encode())


def text_only(body: dict[str, Any], i: int) -> Reply:
    """A server that takes no response_format at all (answers 500 with a validation error naming it)."""
    if "response_format" in body:
        return _format_refused("1 validation error: {'type': 'extra_forbidden', 'loc': ('body', 'response_format'), "
                               "'msg': 'Extra inputs are not permitted', 'input': {}}")
    return Reply(200, GOOD)


def _forms(srv: FakeOpenAI) -> list[str]:
    return [(r["body"].get("response_format") or {}).get("type", "none") for r in srv.requests]


def test_auto_falls_back_to_plain_text_once_and_keeps_it(caplog: pytest.LogCaptureFixture, cache) -> None:
    with caplog.at_level(logging.WARNING, logger="bakeoff"), FakeOpenAI(text_only) as srv:
        client, sleeps = _client(srv, cache=cache, concurrency=4)
        gens = client.generate_many([_req(f"doc {i}") for i in range(6)], progress=False)
        forms = _forms(srv)
    assert all(g.ok for g in gens) and client.response_form == "none"
    assert client.public()["response_form"] == "none" and client.public()["response_format"] == "auto"
    assert forms == ["json_schema", "json_object", "none", "none", "none", "none", "none", "none"]  # server-side
    assert sleeps == [] and client.usage.failures == 0
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 1 and "refuses response_format json_schema" in notes[0]
    assert "json_object with a schema" in notes[0] and "plain text" in notes[0]
    # the answers are stored under the key of the form that produced them
    plain = LLMClient(LLMConfig(base_url=srv.base_url, model="fake-model", response_format="none"), cache=cache)
    assert all(plain.generate(_req(f"doc {i}")).cached for i in range(6))


def test_a_warm_cache_of_plain_text_answers_costs_one_request(cache) -> None:
    with FakeOpenAI(text_only) as srv:
        first, _ = _client(srv, cache=cache)
        assert all(g.ok for g in first.generate_many([_req("a"), _req("b")], progress=False))
        n = len(srv.requests)
        again, _ = _client(srv, cache=cache)
        gens = again.generate_many([_req("a"), _req("b")], progress=False)
        asked = _forms(srv)[n:]
    assert [g.cached for g in gens] == [True, True] and [g.raw for g in gens] == [GOOD, GOOD]
    assert asked == ["json_schema", "json_object", "none"]    # the negotiation of the first request, nothing else


def test_a_fixed_form_refused_is_one_line_and_one_request() -> None:
    with FakeOpenAI(text_only) as srv:
        client, sleeps = _client(srv, response_format="json_schema", concurrency=4)
        with pytest.raises(RequestRefused) as err:
            client.generate_many([_req(f"doc {i}") for i in range(6)], progress=False)
        n = len(srv.requests)
    assert n == 1 and sleeps == []   # no retry loop, and the other requests are not sent
    assert str(err.value).startswith(f"field 'response_format': {srv.base_url}/chat/completions refuses the request")
    assert "Extra inputs are not permitted" in str(err.value) and "(HTTP 500)" in str(err.value)


def test_a_refused_sampling_field_is_an_error_not_a_fallback() -> None:
    with FakeOpenAI([Reply(400, raw_body=OPENAI_TEMPERATURE_400.encode())]) as srv:
        client, sleeps = _client(srv)
        with pytest.raises(RequestRefused, match="field 'temperature': .* refuses the request: Unsupported value"):
            client.generate(_req())
        with pytest.raises(RequestRefused):
            client.generate(_req("another"))    # remembered: not asked again
        assert len(srv.requests) == 1 and sleeps == []


def test_a_too_long_request_fails_alone() -> None:
    def too_long(body: dict[str, Any], i: int) -> Reply:
        if "long" in body["messages"][0]["content"]:
            return Reply(400, raw_body=OPENAI_CONTEXT_400.encode())
        return Reply(200, GOOD)

    with FakeOpenAI(too_long) as srv:
        client, _ = _client(srv)
        gens = client.generate_many([_req("long doc"), _req("short")], progress=False)
    assert [g.ok for g in gens] == [False, True] and "maximum context length" in (gens[0].error or "")


def test_an_overloaded_500_is_still_retried() -> None:
    with FakeOpenAI([Reply(500), Reply(200, GOOD)]) as srv:
        client, sleeps = _client(srv)
        assert client.generate(_req()).ok and sleeps == [0.5] and len(srv.requests) == 2


@pytest.mark.slow  # the command line in a subprocess or a served app
def test_the_cli_stops_at_a_refusal_with_one_line_and_writes_nothing(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"d{i}", "title": "", "text": f"Document {i} says that the river "
                                          f"number {i} carries sediment to the sea every spring and autumn."}) + "\n"
                              for i in range(4)), encoding="utf-8")
    with FakeOpenAI([Reply(400, raw_body=OPENAI_TEMPERATURE_400.encode())]) as srv:
        proc = subprocess.run([sys.executable, "-m", "bakeoff", "generate", "describe", "--corpus", str(corpus),
                               "--out", str(tmp_path / "out"), "-n", "2", "--llm", f"{srv.base_url}|fake-model",
                               "--cache-dir", str(tmp_path / "cache"), "--no-progress"],
                              capture_output=True, text=True, timeout=300, check=False)
        n = len(srv.requests)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and n == 1, proc.stderr
    assert lines == [(f"error: field 'temperature': {srv.base_url}/chat/completions refuses the request: "
                      "Unsupported value: 'temperature' does not support 0.5 with this model. Only the default (1) "
                      "value is supported. (HTTP 400)")]
    assert not (tmp_path / "out").exists()
