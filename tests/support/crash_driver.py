"""Crash test: SIGKILL a dense corpus encode at a random moment, re-run, compare with a clean run.

Usage::

    .venv/bin/python tests/support/crash_driver.py --repeat 10 [--docs 512] [--seed 0]

A driver process loads SciFact (the first ``--docs`` documents and
``--queries`` queries), embeds the
corpus with the dense MiniLM arm into a cache (checkpoints of
``--checkpoint-rows`` rows), searches those queries and writes the embeddings
and NDCG@10. The test first runs the driver once on an empty cache (the clean
reference, also timing it); then, per repeat, starts the driver on a new empty
cache, kills it with SIGKILL after ``u * clean_wall`` seconds with ``u`` drawn
from ``U(0.15, 0.95)`` by a seeded ``np.random.Generator``, counts the
checkpoints that survived, re-runs the driver to completion and checks the
embeddings are bit-for-bit equal and the run and NDCG@10 identical to the
clean run. Prints one line per repeat and a summary; exits 1 on any mismatch.
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
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"


def driver(args: argparse.Namespace) -> None:
    """Embed the corpus slice (cached, checkpointed), search, evaluate, write outputs."""
    from bakeoff.arms.dense import DenseArm
    from bakeoff.cache import Cache
    from bakeoff.data import load_beir
    from bakeoff.data.model import Corpus
    from bakeoff.metrics import score_run
    from bakeoff.runner.context import Context

    ds = load_beir(args.data, split="test")
    queries = ds.queries.subset(ds.queries.ids[: args.queries])
    c, n = ds.corpus, args.docs
    corpus = Corpus(ids=c.ids[:n], texts=c.texts[:n], titles=c.titles[:n], metadata=c.metadata[:n])
    arm = DenseArm(checkpoint_rows=args.checkpoint_rows, batch_size=args.batch_size)
    ctx = Context(corpus, cache=Cache(args.cache), progress=False)
    emb = arm.embed_corpus(corpus, ctx=ctx)
    run = ctx.search(arm, queries, k=10)
    ev = score_run(run, ds.qrels, ["ndcg@10"], query_ids=queries.ids)
    out = Path(args.out)
    np.save(out / "emb.npy", np.asarray(emb))
    (out / "result.json").write_text(json.dumps({"ndcg@10": ev.means["ndcg@10"],
                                                 "ranked": {q: list(map(list, run[q])) for q in run}}))


def _driver_cmd(args: argparse.Namespace, cache: Path, out: Path) -> list[str]:
    return [sys.executable, __file__, "--driver", "--data", str(args.data), "--docs", str(args.docs),
            "--queries", str(args.queries), "--checkpoint-rows", str(args.checkpoint_rows),
            "--batch-size", str(args.batch_size), "--cache", str(cache), "--out", str(out)]


def _run_driver(args: argparse.Namespace, cache: Path, out: Path) -> float:
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    subprocess.run(_driver_cmd(args, cache, out), check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _load(out: Path) -> tuple[np.ndarray, dict[str, Any]]:
    return np.load(out / "emb.npy"), json.loads((out / "result.json").read_text())


def crash_once(args: argparse.Namespace, *, delay: float, ref: tuple[np.ndarray, dict[str, Any]],
               work: Path) -> dict[str, Any]:
    """One kill-and-resume cycle; returns what happened and whether the result matched."""
    cache, out = work / "cache", work / "out"
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(_driver_cmd(args, cache, out), stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=delay)
        killed = False
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        killed = True
    parts = len(list(cache.rglob("*.parts/*.npy"))) if cache.exists() else 0
    finals = len(list((cache / "dense-doc").rglob("*.npy"))) if (cache / "dense-doc").exists() else 0
    shutil.rmtree(out)
    _run_driver(args, cache, out)
    emb, res = _load(out)
    same = (emb.dtype == ref[0].dtype and emb.shape == ref[0].shape and emb.tobytes() == ref[0].tobytes()
            and res == ref[1])
    return {"delay_s": delay, "killed": killed, "parts_at_kill": parts, "final_at_kill": finals > 0,
            "identical": same, "ndcg@10": res["ndcg@10"]}


def run_crash_test(args: argparse.Namespace) -> list[dict[str, Any]]:
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory(prefix="bakeoff-crash-") as tmp:
        clean = Path(tmp) / "clean"
        clean_wall = _run_driver(args, clean / "cache", clean / "out")
        ref = _load(clean / "out")
        print(f"clean run: {clean_wall:.1f} s, {args.docs} docs, checkpoints of {args.checkpoint_rows} rows, "
              f"NDCG@10 {ref[1]['ndcg@10']:.5f}", flush=True)
        results = []
        for i in range(args.repeat):
            delay = float(rng.uniform(0.15, 0.95)) * clean_wall
            r = crash_once(args, delay=delay, ref=ref, work=Path(tmp) / f"r{i}")
            results.append(r)
            print(f"repeat {i + 1:2d}: SIGKILL after {delay:6.1f} s  killed={r['killed']!s:5s} "
                  f"checkpoints on disk={r['parts_at_kill']:3d} final-at-kill={r['final_at_kill']!s:5s} "
                  f"-> resumed result identical={r['identical']}", flush=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--docs", type=int, default=512)
    ap.add_argument("--queries", type=int, default=50, help="first N test queries searched and evaluated")
    ap.add_argument("--checkpoint-rows", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.driver:
        return driver(args)
    results = run_crash_test(args)
    killed = sum(r["killed"] for r in results)
    mid = sum(r["killed"] and r["parts_at_kill"] > 0 for r in results)
    ok = sum(r["identical"] for r in results)
    print(f"summary: {len(results)} repeats, {killed} killed mid-run ({mid} with checkpoints already on disk), "
          f"{ok}/{len(results)} resumed results bit-identical to the clean run")
    raise SystemExit(0 if ok == len(results) else 1)


if __name__ == "__main__":
    main()
