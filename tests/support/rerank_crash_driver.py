"""Crash test for the rerank stage: SIGKILL a cross-encoder rerank at a random moment,
re-run, and check the result equals a clean run bit for bit.

    .venv/bin/python tests/support/rerank_crash_driver.py --repeat 10 [--queries 3] [--top 16] [--seed 0]

A driver process reranks BM25's top ``--top`` for the first ``--queries`` SciFact test
queries with the default cross-encoder (bundled all-MiniLM-L6-v2, seeded head), checkpointing
every ``--chunk`` pairs into a cache, and writes the reranked run and the raw score array.
The test runs the driver once on an empty cache (the clean reference, timed); then per
repeat starts it on a new empty cache and kills it with SIGKILL at a random point *inside
the rerank stage*: once ``j`` checkpoints exist (``j`` uniform over ``0 .. n_chunks - 1``)
plus a random extra delay of up to half a chunk's time (a seeded ``np.random.Generator``
draws both; polling the checkpoint folder makes the kill independent of machine load).
It then counts the checkpoint files that survived, re-runs the driver to completion and
compares. Prints
one line per repeat and a summary; exits 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def driver(args: argparse.Namespace) -> None:
    from bakeoff.arms.lexical import BM25Arm
    from bakeoff.arms.rerank import RerankArm
    from bakeoff.cache import Cache
    from bakeoff.data import load_beir
    from bakeoff.runner.context import Context

    ds = load_beir(args.data, split="test")
    queries = ds.queries.subset(ds.queries.ids[: args.queries])
    cache = Cache(args.cache)
    arm = RerankArm(base=BM25Arm(), top=args.top, batch_size=args.batch_size, chunk=args.chunk)
    run = Context(ds.corpus, cache=cache, progress=False).search(arm, queries, k=args.top)
    scores = [[d, s] for q in queries.ids for d, s in run[q]]
    Path(args.out, "result.json").write_text(json.dumps(scores))


def run_driver(args: argparse.Namespace, cache: Path, out: Path, *, kill_after: float | None = None,
               kill_at: tuple[int, float] | None = None) -> tuple[bool, float]:
    cmd = [sys.executable, __file__, "--driver", "--data", args.data, "--cache", str(cache), "--out", str(out),
           "--queries", str(args.queries), "--top", str(args.top), "--batch-size", str(args.batch_size),
           "--chunk", str(args.chunk)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if kill_at is not None:
        target, extra = kill_at
        while proc.poll() is None:
            if cache.exists() and len(list(cache.rglob("*.parts/*.npy"))) >= target:
                time.sleep(extra)
                break
            time.sleep(0.05)
        if proc.poll() is not None:
            return False, time.perf_counter() - t0
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True, time.perf_counter() - t0
    if kill_after is None:
        code = proc.wait()
        if code != 0:
            raise SystemExit(f"driver failed with exit code {code}")
        return False, time.perf_counter() - t0
    try:
        proc.wait(timeout=kill_after)
        return False, time.perf_counter() - t0  # finished before the kill
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--queries", type=int, default=3)
    ap.add_argument("--top", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--chunk", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.driver:
        driver(args)
        return
    rng = np.random.default_rng(args.seed)
    work = Path(tempfile.mkdtemp(prefix="bakeoff-rerank-crash-"))
    try:
        ref_out = work / "ref"
        ref_out.mkdir()
        _, clean_wall = run_driver(args, work / "ref-cache", ref_out, kill_after=None)
        reference = (ref_out / "result.json").read_text()
        n_pairs = len(json.loads(reference))
        n_chunks = -(-n_pairs // args.chunk)
        print(f"clean run: {n_pairs} pairs in {n_chunks} checkpoints, {clean_wall:.1f} s")
        failures = 0
        for i in range(args.repeat):
            cache, out = work / f"cache-{i}", work / f"out-{i}"
            out.mkdir()
            target = int(rng.integers(0, n_chunks))
            extra = float(rng.uniform(0.0, 0.5)) * args.chunk / 4.0  # ~half a chunk at ~4 pairs/s
            killed, _ = run_driver(args, cache, out, kill_at=(target, extra))
            parts = len(list(cache.rglob("*.parts/*.npy"))) if cache.exists() else 0
            _, resume_wall = run_driver(args, cache, out, kill_after=None)
            same = (out / "result.json").read_text() == reference
            failures += not same
            print(f"repeat {i + 1:2d}: kill after checkpoint {target} + {extra:.2f} s "
                  f"({'killed' if killed else 'finished first'}), "
                  f"{parts} checkpoints survived, resume {resume_wall:.1f} s, identical: {same}")
        print(f"{args.repeat - failures}/{args.repeat} identical to the clean run")
        if failures:
            raise SystemExit(1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
