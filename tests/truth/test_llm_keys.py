"""The LLM client's cache keys and request bodies, pinned. The key is the cache's identity of an answer: a key that
changes silently invalidates every cached answer of every user. The literals were computed before the client was
split into its parts (issue 46); change them only with a cache break that is meant (and bump
``LLMClient.code_version``)."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic")
from pydantic import BaseModel, Field

from bakeoff.truth.llm.client import ChatRequest, LLMClient, LLMConfig

DEAD = "http://127.0.0.1:9/v1"  # nothing listens: a request fails at once


class Ans(BaseModel):
    query: str = Field(max_length=160)


def _chat() -> ChatRequest:
    return ChatRequest(({"role": "system", "content": "sys"}, {"role": "user", "content": "a"}), Ans,
                       {"temperature": 0.5, "top_p": 0.9, "max_tokens": 64, "seed": 1})


def _completion() -> ChatRequest:
    return ChatRequest.completion("Doc: x\nQ: ", Ans, {"stop": ["\n"], "max_tokens": 40, "seed": 3},
                                  prefill='{"query": "')


@pytest.mark.parametrize(("config", "chat", "completion"), [
    ({"model": "m"}, "fff420aabcb7f759bb284ea6263aba5d197d99d3ec839a4a14ddad43e2f439b9",
     "35b86d8bdd800e6643c8c57dd535dca853847042faad7ed9b4f44720dff4d5fe"),
    ({"model": "m", "response_format": "none"}, "241765388f1e6fe3fdd6f7a4da1b247a973380d6b57c783ee5900bc33416f12c",
     "7303b5e166699c1d8063017889886dc1d72faa8dce8678b13f5593868cf0bb6a"),
    ({"model": "gpt-5-mini", "reasoning_effort": "low"},
     "f0fa4d922c7bf2c173eea219fc2e39696e1dc764e303a2f582e65da92d616f05",
     "71fd6cc65fb248048d0768519d9055df70aa5139afeb4be5530978561ee9bfa7"),
])
def test_request_keys_are_pinned(config: dict, chat: str, completion: str) -> None:
    client = LLMClient(LLMConfig(base_url=DEAD, **config))
    assert client.request_key(_chat()) == chat
    assert client.request_key(_completion()) == completion


def test_logprobs_key_is_pinned() -> None:
    client = LLMClient(LLMConfig(base_url=DEAD, model="fake", max_retries=0))
    g = client.next_token_logprobs(_chat(), top=5)
    assert not g.ok and g.key == "c676a633f009ce06c06764c88af670c368adce76f555b292c7f1472cfd2edd92"


def test_request_bodies_are_pinned() -> None:
    schema = Ans.model_json_schema()
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "a"}]
    plain = LLMClient(LLMConfig(base_url=DEAD, model="m"))
    assert plain.body(_chat(), seed_offset=1_000_003) == {
        "model": "m", "messages": messages, "temperature": 0.5, "top_p": 0.9, "max_tokens": 64, "seed": 1_000_004,
        "response_format": {"type": "json_schema", "json_schema": {"name": "Ans", "schema": schema}}}
    assert plain.body(_completion()) == {"model": "m", "prompt": 'Doc: x\nQ: {"query": "', "stop": ["\n"],
                                         "max_tokens": 40, "seed": 3}
    reasoning = LLMClient(LLMConfig(base_url=DEAD, model="gpt-5-mini", reasoning_effort="low"))
    body = reasoning.body(_chat(), form="json_object_schema")
    assert body == {"model": "gpt-5-mini", "messages": messages, "seed": 1, "max_completion_tokens": 2048,
                    "reasoning_effort": "low", "response_format": {"type": "json_object", "schema": schema}}
    assert list(body) == ["model", "messages", "seed", "max_completion_tokens", "reasoning_effort", "response_format"]
