"""Chunking on SciFact: the dense arm on whole documents vs MaxP (and FirstP) over 128-token passages.

Runs the real CLI in subprocesses, each result set in its own folder:

1. ``whole``:  ``bakeoff run --beir DATA --arm whole=dense``                               (fresh cache)
2. ``maxp``:   ``... --arm maxp=dense --chunk tokens=128,overlap=32 --aggregate maxp``    (fresh cache)
3. ``firstp``: ``... --arm firstp=dense --chunk tokens=128,overlap=32 --aggregate firstp`` (maxp's cache:
   the passage embeddings and passage run are reused, only the aggregation differs)

then ``bakeoff compare whole maxp`` and ``bakeoff compare whole firstp`` (paired randomization test and
t-test, Holm-corrected, bootstrap CI of the difference) and prints NDCG@10 / Recall@10 side by side with
the wall time and the arm's encode time (``index_s``). The sequential runs are exposed to the machine's
drift, so a probe also times, in one process, the encode of ``--probe-docs`` sampled documents whole
and as passages, alternating (ABABAB), and reports the median ratio. Tokens are those of the bundled all-MiniLM-L6-v2
tokenizer (the dense model's own), the title is kept on every passage.

    python benchmarks/chunking_scifact.py [--data ../shared/data/scifact] [--out /tmp/chunk-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return time.perf_counter() - t0


def probe(data: str, chunk: str, n: int, rounds: int = 3) -> None:
    """Encode ``n`` sampled documents whole and as passages, alternating, in this process."""
    sys.path.insert(0, str(ROOT / "src"))
    import numpy as np

    from bakeoff.data.loaders import read_beir_corpus
    from bakeoff.data.model import Corpus
    from bakeoff.ingest.chunking import ChunkSpec, chunk_corpus
    from bakeoff.models.encoders import make_encoder

    corpus = read_beir_corpus(Path(data) / "corpus.jsonl")
    rows = sorted(np.random.default_rng(0).choice(len(corpus), size=min(n, len(corpus)), replace=False).tolist())
    sub = Corpus(tuple(corpus.ids[i] for i in rows), tuple(corpus.texts[i] for i in rows),
                 tuple(corpus.titles[i] for i in rows), tuple({} for _ in rows))
    passages = chunk_corpus(sub, ChunkSpec.parse(chunk)).passages
    enc = make_encoder(None)
    texts = {"whole": sub.full_texts(), "passages": passages.full_texts()}
    enc.encode(texts["whole"][:32], kind="doc", batch_size=32)  # warm-up
    times: dict[str, list[float]] = {"whole": [], "passages": []}
    for _ in range(rounds):
        for name in ("whole", "passages"):
            t0 = time.perf_counter()
            enc.encode(texts[name], kind="doc", batch_size=32)
            times[name].append(time.perf_counter() - t0)
    med = {k: float(np.median(v)) for k, v in times.items()}
    print(f"\nencode probe ({len(sub)} documents -> {len(passages)} passages, {rounds} alternating rounds): "
          f"whole {med['whole']:.1f} s, passages {med['passages']:.1f} s, ratio {med['passages'] / med['whole']:.2f}x "
          f"(rounds: whole {[round(t, 1) for t in times['whole']]}, passages {[round(t, 1) for t in times['passages']]})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/chunk-bench"))
    ap.add_argument("--chunk", default="tokens=128,overlap=32")
    ap.add_argument("--arm", default="dense", help="arm type and options (default: the dense MiniLM arm)")
    ap.add_argument("--resamples", type=int, default=10000)
    ap.add_argument("--probe-docs", type=int, default=100, help="documents in the encode-time probe (0: skip)")
    args = ap.parse_args()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    bakeoff = [sys.executable, "-m", "bakeoff"]
    base = ["run", "--beir", args.data, "--no-progress", "--latency-sample", "20"]
    out = args.out
    runs = {
        "whole": ([f"whole={args.arm}"], [], out / "cache-whole"),
        "maxp": ([f"maxp={args.arm}"], ["--chunk", args.chunk, "--aggregate", "maxp"], out / "cache-chunk"),
        "firstp": ([f"firstp={args.arm}"], ["--chunk", args.chunk, "--aggregate", "firstp"], out / "cache-chunk"),
    }
    wall: dict[str, float] = {}
    for name, (arm, extra, cache) in runs.items():
        if (out / name / "results.json").exists():
            print(f"{name}: reusing {out / name}")
            continue
        cmd = [*bakeoff, *base, *[x for a in arm for x in ("--arm", a)], *extra, "--cache-dir", str(cache),
               "--out", str(out / name)]
        wall[name] = _run(cmd, env)
        print(f"{name}: {wall[name]:.1f} s wall ({' '.join(cmd[2:])})", flush=True)
    for other in ("maxp", "firstp"):
        _run([*bakeoff, "compare", str(out / "whole"), str(out / other), "--out", str(out / f"compare-{other}"),
              "--no-html", "--resamples", str(args.resamples), "--no-progress"], env)

    res = {n: json.loads((out / n / "results.json").read_text()) for n in runs}
    chunk = res["maxp"]["dataset"]["chunk"]
    print(f"\nSciFact test, {res['whole']['queries']['evaluated']} queries, {res['whole']['dataset']['n_docs']} "
          f"documents -> {chunk['n_passages']} passages ({chunk['passages_per_document']:.2f} per document; "
          f"{chunk['unit']}={chunk['size']}, overlap {chunk['overlap']}, {chunk.get('tokenizer_identity', '')[:60]})")
    print(f"{'arm':8} {'NDCG@10':>8} {'Recall@10':>9} {'index_s':>8} {'wall_s':>7} {'passage k':>9}")
    for n, r in res.items():
        a = r["arms"][0]
        print(f"{n:8} {a['metrics']['ndcg@10']:8.4f} {a['metrics']['recall@10']:9.4f} "
              f"{a['timing'].get('index_s', float('nan')):8.1f} {wall.get(n, float('nan')):7.1f} "
              f"{a.get('passage_depth', '-')!s:>9}")
    print("\npaired tests vs whole documents (two-sided; p after Holm over the pairs of each measure):")
    for other in ("maxp", "firstp"):
        rep = json.loads((out / f"compare-{other}" / "report.json").read_text())
        for p in rep["stats"]["pairs"]:
            if p["measure"] in ("ndcg@10", "recall@10") and {p["a"], p["b"]} == {"whole", other}:
                sign = 1 if p["a"] == other else -1
                print(f"  {other} - whole {p['measure']:9}: {sign * p['diff']:+.4f} "
                      f"[{min(sign * p['diff_ci_low'], sign * p['diff_ci_high']):+.4f}, "
                      f"{max(sign * p['diff_ci_low'], sign * p['diff_ci_high']):+.4f}]  "
                      f"p_perm {p['p_perm']:.4g}  p_ttest {p['p_ttest']:.4g}  significant {p['significant']}")
    if args.probe_docs:
        probe(args.data, args.chunk, args.probe_docs)
    if "whole" in wall and "maxp" in wall:
        print(f"\ntime cost: maxp / whole wall = {wall['maxp'] / wall['whole']:.2f}x "
              f"({wall['maxp']:.0f} s vs {wall['whole']:.0f} s, same machine, same run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
