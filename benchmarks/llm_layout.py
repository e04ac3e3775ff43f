"""Which llama-server layout generates fastest on this machine? (processes x slots x threads, prompt cache,
batch size)

    flock /tmp/bakeoff-bench.lock python benchmarks/llm_layout.py [--data ../shared/data/scifact] \
        [--llm-model qwen-coder-0.5b] [-r 16] [--json out.json]

The same ``-r`` describe requests (the documents ``bakeoff generate describe -n R --seed 0`` samples first,
the request ``bakeoff generate`` sends for each, no generation cache) are answered by each layout in turn:

* ``servers`` llama-server processes of ``slots`` parallel slots and ``threads`` threads each, the client
  keeping ``servers x slots`` requests in flight (bakeoff's own :class:`~bakeoff.truth.llm.local_server.LocalLLMServer`);
* ``cache_prompt`` off: llama.cpp's reuse of a slot's KV cache for a prompt's common prefix (the prompt
  template before the document) disabled per request;
* ``batch``: llama.cpp's logical and physical batch size (default 2048 / 512).

Printed per layout: wall time of the requests (start-up excluded), requests/s and its ratio against the
default layout (:func:`~bakeoff.truth.llm.local_server.default_servers` x ``DEFAULT_SLOTS`` x 1 thread), prompt and
completion tokens/s. The default layout runs first and last; both are printed, and the ratios use their mean,
so drift of the machine's speed during the run shows. The machine's usable cores and load are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BAKEOFF_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _layouts(cores: int, default: tuple[int, int, int]) -> list[dict]:
    """(servers, slots, threads[, cache_prompt, batch]) to try; the default first and last."""
    base = {"cache_prompt": True, "batch": None}
    shapes = [(1, 1, 1), (1, 1, cores), (1, 2, 1), (1, 4, 1), (cores, 1, 1), (cores, 4, 1), (1, 2, cores)]
    out = [{"servers": default[0], "slots": default[1], "threads": default[2], **base, "name": "default"}]
    for s, sl, t in shapes:
        if (s, sl, t) != default:
            out.append({"servers": s, "slots": sl, "threads": t, **base, "name": f"{s}x{sl}x{t}"})
    out.append({"servers": default[0], "slots": default[1], "threads": default[2], "cache_prompt": False,
                "batch": None, "name": "default, no prompt cache"})
    out.append({"servers": default[0], "slots": default[1], "threads": default[2], "cache_prompt": True,
                "batch": 128, "name": "default, batch 128"})
    out.append({**out[0], "name": "default (again)"})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA / "scifact")
    ap.add_argument("--llm-model", default="", help="bundled model name (default: the default of --llm local)")
    ap.add_argument("-r", "--requests", type=int, default=16)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from dataclasses import replace

    import numpy as np

    from bakeoff.data.loaders import open_corpus
    from bakeoff.models.gguf import resolve_local_model
    from bakeoff.truth.generation.describe import DescribeOptions, describe_request
    from bakeoff.truth.generation.sampling import eligible_rows, sample_rows
    from bakeoff.truth.llm.client import LLMClient
    from bakeoff.truth.llm.local_server import DEFAULT_SLOTS, LocalLLMServer, default_servers

    corpus = open_corpus(str(a.data))
    model = resolve_local_model(a.llm_model)
    opts = DescribeOptions(n=a.requests, seed=0, min_doc_chars=60)
    rows = [int(r) for r in sample_rows(corpus, a.requests, rng=np.random.default_rng(0),
                                        eligible=eligible_rows(corpus, min_chars=60))]
    cores = len(os.sched_getaffinity(0))
    default = (default_servers(), DEFAULT_SLOTS, 1)
    print(f"machine: {cores} usable cores, load {os.getloadavg()[0]:.2f}; model {model.name}; {len(rows)} describe "
          f"requests of {a.data.name}; default layout {default[0]} servers x {default[1]} slots x {default[2]} thread")
    rows_out = []
    for lay in _layouts(cores, default):
        with LocalLLMServer(model=model, servers=lay["servers"], slots=lay["slots"], n_threads=lay["threads"],
                            batch_size=lay["batch"]) as srv:
            client = LLMClient(srv.config(), cache=None)
            reqs = [describe_request(corpus, r, client, opts, attempt=0) for r in rows]
            if not lay["cache_prompt"]:
                reqs = [replace(q, params={**q.params, "cache_prompt": False}) for q in reqs]
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            gens = client.generate_many(reqs, progress=False, desc=lay["name"])
            wall = time.perf_counter() - t0
        u = client.usage
        rec = {**lay, "wall_s": round(wall, 2), "requests_per_s": round(len(reqs) / wall, 3),
               "prompt_tok_per_s": round(u.prompt_tokens / wall, 1), "completion_tok_per_s": round(u.completion_tokens / wall, 1),
               "ok": sum(1 for g in gens if g.ok), "load_before": round(load, 2)}
        rows_out.append(rec)
        print(f"  {lay['name']:<26} {wall:7.1f} s  {rec['requests_per_s']:.3f} req/s  prompt {rec['prompt_tok_per_s']:.0f} "
              f"tok/s  completion {rec['completion_tok_per_s']:.1f} tok/s  ({rec['ok']}/{len(reqs)} valid; load {load:.1f})",
              flush=True)
    ref = float(np.mean([r["requests_per_s"] for r in rows_out if r["name"].startswith("default") and
                         r["cache_prompt"] and r["batch"] is None]))
    print(f"\nratio of requests/s against the default layout (mean of its two runs, {ref:.3f} req/s):")
    for r in rows_out:
        r["ratio_vs_default"] = round(r["requests_per_s"] / ref, 3)
        print(f"  {r['name']:<26} {r['ratio_vs_default']:.2f}x")
    if a.json:
        a.json.write_text(json.dumps({"cores": cores, "model": model.name, "requests": len(rows),
                                      "layouts": rows_out}, indent=2))


if __name__ == "__main__":
    main()
