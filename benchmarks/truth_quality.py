"""Synthetic vs human ground truth on SciFact, through the command line only.

    flock /tmp/bakeoff-bench.lock python benchmarks/truth_quality.py [--data ../shared/data/scifact] [-n 50] \
        [--llm local] [--arm bm25 --arm ...]

Does ground truth written by an LLM rank the arms as human judgments do? Four commands, each timed:

1. ``bakeoff generate describe --corpus DATA/corpus.jsonl --llm LLM -n N --seed SEED --out W/truth`` (the
   generation time is the truth stage's speed; ``--llm local`` is the bundled Gemma 3 270M, offline);
2. ``bakeoff run --beir W/truth --arm ...`` (the arms on the synthetic queries, same corpus);
3. ``bakeoff run --beir DATA --split test --arm ...`` (the same arms on SciFact's 300 human test queries);
4. ``bakeoff compare W/synthetic W/human``: both rankings of the arms, Kendall's tau between them with a
   bootstrap CI over queries (the synthetic-vs-real agreement of ``bakeoff compare``).

Prints each command, its wall time and its output. Generations are cached (``--cache-dir``, default a folder
under the system's temporary directory), so a re-run with the same settings reuses them.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("BAKEOFF_SHARED_DATA", ROOT.parent / "shared" / "data")) / "scifact"
DEFAULT_ARMS = ["bm25", "stem=bm25:stemmer=english", "tfidf", "dense"]


def bakeoff(*args: str) -> float:
    """Run ``bakeoff ARGS`` (this interpreter's package), echo the command and its output; the wall time."""
    print(f"$ bakeoff {' '.join(shlex.quote(a) for a in args)}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "bakeoff", *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "120"})
    wall = time.perf_counter() - t0
    print(proc.stdout.rstrip())
    if proc.returncode != 0:
        print(proc.stderr.rstrip()[-2000:], file=sys.stderr)
        raise SystemExit(f"bakeoff {args[0]} failed with exit code {proc.returncode}")
    print(f"# {wall:.1f} s\n", flush=True)
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("-n", type=int, default=50, help="synthetic queries wanted")
    ap.add_argument("--llm", default="local")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arm", action="append", default=None, help=f"arms (default: {' '.join(DEFAULT_ARMS)})")
    ap.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "bakeoff-bench-truth-cache")
    args = ap.parse_args()
    arms = [a for spec in (args.arm or DEFAULT_ARMS) for a in ("--arm", spec)]
    cache = ["--cache-dir", str(args.cache_dir)]
    with tempfile.TemporaryDirectory(prefix="bakeoff-bench-truth-") as tmp:
        work = Path(tmp)
        gen = bakeoff("generate", "describe", "--corpus", str(args.data / "corpus.jsonl"), "--llm", args.llm,
                      "-n", str(args.n), "--seed", str(args.seed), "--out", str(work / "truth"), *cache,
                      "--no-progress")
        bakeoff("run", "--beir", str(work / "truth"), *arms, "--out", str(work / "synthetic"), *cache,
                "--latency-sample", "0", "--no-progress")
        bakeoff("run", "--beir", str(args.data), "--split", "test", *arms, "--out", str(work / "human"), *cache,
                "--latency-sample", "0", "--no-progress")
        bakeoff("compare", str(work / "synthetic"), str(work / "human"), "--no-progress")
    print(f"truth stage: {args.n} queries asked of {args.llm} in {gen:.1f} s ({gen / max(args.n, 1):.2f} s/query)")


if __name__ == "__main__":
    main()
