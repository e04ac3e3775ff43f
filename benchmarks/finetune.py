"""Training throughput (pairs/second) and peak memory of `bakeoff finetune` on SciFact train.

Fine-tunes the bundled MiniLM on the first ``--queries`` SciFact training queries
(sorted ids; no validation slice, so only training is timed), for each trainer and
each ``--precision`` (fp32, and bf16 mixed precision = ``--bf16``) in its own child
process, and prints one line per run:

    embedder  fp32  pairs=N  batch=B  steps=S  train_s=T  pairs_per_s=P  peak_rss_mib=M
    reranker  bf16  ...

then, per trainer, each precision's pairs/s over fp32's in the same run (``embedder  bf16 vs fp32: 1.15x``).

``pairs`` = training rows (embedder: (query, positive) rows with in-batch negatives;
reranker: positive and mined-negative (query, document) rows); ``pairs_per_s`` = rows
consumed / wall time of ``trainer.train()``. ``peak_rss_mib`` is the child's peak
resident set size (``getrusage``), which includes the loaded model and the corpus.
Run it under the shared lock so other jobs do not pollute the timing::

    flock /tmp/bakeoff-bench.lock .venv/bin/python benchmarks/finetune.py
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data" / "scifact"))
    ap.add_argument("--queries", type=int, default=96, help="training queries used")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-seq-length", type=int, default=256)
    ap.add_argument("--which", choices=["embedder", "reranker", "both"], default="both")
    ap.add_argument("--precision", default="fp32,bf16", help="comma-separated: fp32, bf16")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is None:  # one child per (trainer, precision): separate peak-memory figures
        import subprocess

        whichs = ["embedder", "reranker"] if args.which == "both" else [args.which]
        rates: dict[tuple[str, str], float] = {}
        for which in whichs:
            for prec in args.precision.split(","):
                cmd = [sys.executable, __file__, "--data", args.data, "--queries", str(args.queries),
                       "--batch-size", str(args.batch_size), "--max-seq-length", str(args.max_seq_length),
                       "--which", which, "--child", prec]
                proc = subprocess.run(cmd, check=False, stdout=subprocess.PIPE, text=True)
                print(proc.stdout, end="", flush=True)
                if proc.returncode != 0:
                    return 1
                rate = [f for f in proc.stdout.split() if f.startswith("pairs_per_s=")]
                rates[which, prec] = float(rate[-1].split("=")[1])
        for which in whichs:  # the speed-up against fp32 measured in this run (> 1: faster than fp32)
            for prec in args.precision.split(","):
                if prec != "fp32" and (which, "fp32") in rates:
                    print(f"{which}  {prec} vs fp32: {rates[which, prec] / rates[which, 'fp32']:.2f}x pairs/s")
        return 0
    bf16 = args.child == "bf16"

    from bakeoff.train.data import load_training_data
    from bakeoff.train.embedder import EmbedderParams, finetune_embedder
    from bakeoff.train.reranker import RerankerParams, finetune_reranker

    data_path = Path(args.data)
    if not (data_path / "corpus.jsonl").exists():
        print(f"SciFact not found at {data_path}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        if args.which in ("embedder", "both"):
            data = load_training_data(data_path, "train")
            data = data.subset(sorted(data.positives)[: args.queries])
            rec = finetune_embedder(data, base="minilm", out=Path(tmp) / "emb", progress=False,
                                    params=EmbedderParams(batch_size=args.batch_size, val_fraction=0.0,
                                                          max_seq_length=args.max_seq_length, bf16=bf16))
            print(f"embedder  {args.child}  pairs={rec['n_pairs']}  batch={args.batch_size}  steps={rec['steps']}  "
                  f"train_s={rec['train_time_s']:.1f}  pairs_per_s={rec['n_pairs'] / rec['train_time_s']:.2f}  "
                  f"peak_rss_mib={_peak_mib():.0f}", flush=True)
        if args.which in ("reranker", "both"):
            data = load_training_data(data_path, "train", hard_negatives="bm25", n_negatives=3)
            data = data.subset(sorted(data.positives)[: args.queries])
            rec = finetune_reranker(data, base="minilm", out=Path(tmp) / "rr", progress=False,
                                    params=RerankerParams(batch_size=args.batch_size, val_fraction=0.0,
                                                          max_length=args.max_seq_length, bf16=bf16))
            print(f"reranker  {args.child}  pairs={rec['n_pairs']}  batch={args.batch_size}  steps={rec['steps']}  "
                  f"train_s={rec['train_time_s']:.1f}  pairs_per_s={rec['n_pairs'] / rec['train_time_s']:.2f}  "
                  f"peak_rss_mib={_peak_mib():.0f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
