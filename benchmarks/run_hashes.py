"""sha256 of the TREC run file of every offline arm type on a BEIR dataset (default SciFact test).

Used to prove a refactor is behaviour-preserving: run it on two commits (each with a fresh cache) and
compare the tables; ``--compare BEFORE.json`` prints the verdict per arm.

    python benchmarks/run_hashes.py --save /tmp/before.json                  # on the old commit
    python benchmarks/run_hashes.py --compare /tmp/before.json               # on the new one

Each run uses its own empty cache folder (nothing is reused from earlier runs) and ``--latency-sample 0``.

``pgvector-hnsw`` is reported but not counted: pgvector draws each node's HNSW level from PostgreSQL's
global PRNG, which is seeded at random when a backend starts and cannot be seeded from SQL, so two builds
of the same index differ (four builds of unchanged code gave four hashes). Its run is cached like every
other, so a warm re-run is identical; its ``ann_recall@k`` in results.json says how close it is to exact.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Arms whose index build is randomised by the engine itself (see the module docstring).
NONDETERMINISTIC = frozenset({"pgvector-hnsw"})
ARMS = [
    "bm25",
    "bm25-stem=bm25:stemmer=english",
    "tfidf",
    "dense",
    "dense-ov=dense:backend=openvino",
    "rrf=rrf:arms=bm25+dense",
    "convex=convex:arms=bm25+dense,weight=0.3",
    "rerank=rerank:base=bm25,top=10",
    "ann-flat=ann:base=dense,index=flat",
    "ann-hnsw=ann:base=dense,index=hnsw",
    "pgfts=pgfts",
    "pgvector=pgvector:base=dense",
    "pgvector-hnsw=pgvector:base=dense,index=hnsw",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beir", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    ap.add_argument("--split", default="test")
    ap.add_argument("--arm", action="append", help="override the arm list (repeatable)")
    ap.add_argument("--save", type=Path, help="write {arm: sha256} here")
    ap.add_argument("--compare", type=Path, help="a JSON written by --save on another commit")
    args = ap.parse_args()
    arms = args.arm or ARMS
    with tempfile.TemporaryDirectory(prefix="bakeoff-hashes-") as tmp:
        out = Path(tmp) / "out"
        env = {**os.environ, "BAKEOFF_CACHE_DIR": str(Path(tmp) / "cache"), "HF_HUB_OFFLINE": "1",
               "BAKEOFF_PGDATA": str(Path(tmp) / "pg")}
        cmd = [sys.executable, "-m", "bakeoff", "run", "--beir", args.beir, "--split", args.split,
               "--latency-sample", "0", "--no-progress", "--out", str(out)]
        for a in arms:
            cmd += ["--arm", a]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        results = json.loads((out / "results.json").read_text())
        hashes = {a["name"]: hashlib.sha256((out / a["run_file"]).read_bytes()).hexdigest() for a in results["arms"]}
    before = json.loads(args.compare.read_text()) if args.compare else {}
    print(f"{'arm':<16} {'sha256 (first 16)':<18} {'vs before' if before else ''}")
    same = 0
    for name, h in hashes.items():
        verdict = ""
        if before:
            verdict = "identical" if before.get(name) == h else ("DIFFERENT" if name in before else "new")
            if verdict == "DIFFERENT" and name in NONDETERMINISTIC:
                verdict = "differs (randomised build, not counted)"
            same += verdict == "identical"
        print(f"{name:<16} {h[:16]:<18} {verdict}")
    counted = [n for n in hashes if n not in NONDETERMINISTIC]
    if before:
        same = sum(before.get(n) == hashes[n] for n in counted)
        print(f"{same} of {len(counted)} deterministic run files identical")
    print(f"wall time {wall:.1f} s (cold cache)")
    if args.save:
        args.save.write_text(json.dumps(hashes, indent=1))
    return 0 if not before or same == len(counted) else 1


if __name__ == "__main__":
    raise SystemExit(main())
