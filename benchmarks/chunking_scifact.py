"""Chunking on SciFact: the dense arm on whole documents vs MaxP (and FirstP) over 128-token passages.

Runs the real CLI in subprocesses, each result set in its own folder:

1. ``whole``:  ``bakeoff run --beir DATA --arm whole=dense``                               (fresh cache)
2. ``maxp``:   ``... --arm maxp=dense --chunk tokens=128,overlap=32 --aggregate maxp``    (fresh cache)
3. ``firstp``: ``... --arm firstp=dense --chunk tokens=128,overlap=32 --aggregate firstp`` (maxp's cache:
   the passage embeddings and passage run are reused, only the aggregation differs)

then ``bakeoff compare whole maxp`` and ``bakeoff compare whole firstp`` (paired randomization test and
t-test, Holm-corrected, bootstrap CI of the difference) and prints NDCG@10 / Recall@10 side by side with
the wall time and the arm's encode time (``index_s``). Tokens are those of the bundled all-MiniLM-L6-v2
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/chunk-bench"))
    ap.add_argument("--chunk", default="tokens=128,overlap=32")
    ap.add_argument("--arm", default="dense", help="arm type and options (default: the dense MiniLM arm)")
    ap.add_argument("--resamples", type=int, default=10000)
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
    if "whole" in wall and "maxp" in wall:
        print(f"\ntime cost: maxp / whole wall = {wall['maxp'] / wall['whole']:.2f}x "
              f"({wall['maxp']:.0f} s vs {wall['whole']:.0f} s, same machine, same run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
