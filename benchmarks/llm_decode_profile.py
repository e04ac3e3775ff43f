"""Where the local LLM's time goes: prompt evaluation, decoding and sampling, per token.

    flock /tmp/bakeoff-bench.lock env HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/llm_decode_profile.py \\
        --docs 40 --parallel 1,2

Builds the demo's first-round requests (the first ``--docs`` documents the demo samples, seed 0,
its few-shot completion prompt, temperature 0.8, ``max_tokens`` 64, stop at a newline, the
llama-cpp-python server's sampling defaults) and answers them in-process with the embedded
Gemma 3 270M as :mod:`bakeoff.truth.llama_server` runs it (one thread, no weight repacking,
``n_batch`` 512), timing ``Llama.eval`` (split into prompt pieces and one-token decode steps) and
the sampler. ``--parallel 2`` runs two such processes at once, as the two default servers do, so
the per-token figures show what the cores (and the memory they share) cost each other. Prints,
per process: wall time, prompt evaluation and decoding ms per token, sampling ms per token.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
import numpy as np
from bakeoff import demo
from bakeoff.stdlib_corpus import stdlib_corpus
from bakeoff.truth import llama_server
from bakeoff.truth.prompts import describe_completion
from bakeoff.truth.sampling import eligible_rows, sample_rows
from bakeoff.truth.synthetic import _doc_text
llama_server._patch_defaults()
import llama_cpp._internals as internals
from llama_cpp import Llama
from bakeoff.truth.local_llm import gemma_model_path

n_docs = int(sys.argv[1])
corpus = stdlib_corpus()
rows = sample_rows(corpus, 100, rng=np.random.default_rng(0),
                   eligible=eligible_rows(corpus, min_chars=demo.MIN_DOC_CHARS))[:n_docs]
prompts = []
for r in rows:
    p, prefill = describe_completion(_doc_text(corpus, int(r), 500), demo.DEMO_PROMPT)
    prompts.append(p + prefill)
llm = Llama(model_path=str(gemma_model_path()), n_ctx=4096, n_batch=512, n_threads=1, n_threads_batch=1,
            logits_all=False, verbose=False)
t = {"prompt_s": 0.0, "prompt_tokens": 0, "decode_s": 0.0, "decode_tokens": 0, "sample_s": 0.0, "samples": 0}
inner_eval, inner_sample = Llama.eval, internals.LlamaSampler.sample
def timed_eval(self, tokens):
    t0 = time.perf_counter(); inner_eval(self, tokens); dt = time.perf_counter() - t0
    kind = "decode" if len(tokens) == 1 else "prompt"
    t[kind + "_s"] += dt; t[kind + "_tokens"] += len(tokens)
def timed_sample(self, ctx, idx):
    t0 = time.perf_counter(); tok = inner_sample(self, ctx, idx)
    t["sample_s"] += time.perf_counter() - t0; t["samples"] += 1
    return tok
Llama.eval = timed_eval
internals.LlamaSampler.sample = timed_sample
t0 = time.perf_counter()
for i, prompt in enumerate(prompts):
    llm.create_completion(prompt, max_tokens=64, temperature=0.8, top_p=0.95, min_p=0.05, top_k=40,
                          repeat_penalty=1.1, seed=i, stop=["\n"])
t["wall_s"] = time.perf_counter() - t0
print(json.dumps(t))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=40, help="first-round demo requests to answer")
    ap.add_argument("--parallel", default="1,2", help="comma-separated process counts to run, one after another")
    args = ap.parse_args()
    for count in (int(x) for x in args.parallel.split(",")):
        procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(args.docs)], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True) for _ in range(count)]
        outs = [p.communicate()[0] for p in procs]
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        for k, (p, out) in enumerate(zip(procs, outs, strict=True)):
            if p.returncode != 0 or not out.strip():
                raise SystemExit(f"profile process failed (exit {p.returncode})")
            t = json.loads(out.strip().splitlines()[-1])
            print(f"{count} at once, process {k + 1} [load {load}]: wall {t['wall_s']:.1f} s; "
                  f"prompt {1000 * t['prompt_s'] / max(1, t['prompt_tokens']):.2f} ms/token ({t['prompt_tokens']} tokens); "
                  f"decode {1000 * t['decode_s'] / max(1, t['decode_tokens']):.1f} ms/token ({t['decode_tokens']} tokens); "
                  f"sampling {1000 * t['sample_s'] / max(1, t['samples']):.2f} ms/token", flush=True)
        time.sleep(1)


if __name__ == "__main__":
    main()
