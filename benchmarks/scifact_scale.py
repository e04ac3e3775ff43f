"""SciFact: PostgreSQL FTS beside BM25, pgvector exact/HNSW and FAISS HNSW/IVF-PQ beside exact dense.

Prints one table (quality, ANN recall of the exact top-k, latency) and checks that pgvector exact
returns exactly the built-in dense arm's top-10 (same embeddings). The cache (and with it the embedded
PostgreSQL server's data folder) is a fresh temporary folder unless ``--cache`` names one, so every index is
built and timed. Run under the bench lock::

    flock /tmp/bakeoff-bench.lock .venv/bin/python benchmarks/scifact_scale.py [--beir PATH] [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    from bakeoff.arms.ann import recall_of_exact
    from bakeoff.cache import Cache
    from bakeoff.data import load_beir
    from bakeoff.report.terminal import print_table
    from bakeoff.runner.config import build_arms, parse_arm_spec
    from bakeoff.runner.run import run_bakeoff

    ap = argparse.ArgumentParser()
    ap.add_argument("--beir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"))
    ap.add_argument("--cache", default=None, help="cache folder (default: a fresh temporary one)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    ds = load_beir(args.beir, split="test")
    specs = [
        "bm25", "pgfts", "pgfts-any=pgfts:match=any", "dense",
        "pgvector-exact=pgvector:base=dense",
        "pgvector-hnsw=pgvector:base=dense,index=hnsw,m=16,ef_construction=64,ef_search=40",
        "faiss-hnsw=ann:base=dense,index=hnsw,M=32,ef_construction=40,ef_search=64",
        "faiss-ivfpq=ann:base=dense,index=ivfpq,nlist=64,nprobe=8,m=48",
        "faiss-flat=ann:base=dense,index=flat",
    ]
    arms = build_arms([parse_arm_spec(s) for s in specs])
    with tempfile.TemporaryDirectory(prefix="bakeoff-scale-") as tmp:
        t0 = time.perf_counter()
        res = run_bakeoff(ds, arms, k=10, cache=Cache(Path(args.cache or tmp)), progress=False)
        wall = time.perf_counter() - t0
    d = res.stored()
    print_table(d)
    runs = {a.name: a.run for a in res.arms}
    dense = runs["dense"]
    qids = list(ds.queries.ids)
    for name in ("pgvector-exact", "pgvector-hnsw", "faiss-flat", "faiss-hnsw", "faiss-ivfpq"):
        same = sum(runs[name].doc_ids(q, 10) == dense.doc_ids(q, 10) for q in qids)
        rec = recall_of_exact(runs[name], dense, k=10, query_ids=qids)
        print(f"{name:15s} identical top-10 lists: {same}/{len(qids)}   recall of exact top-10: {rec:.4f}")
    print("\narm             index_s   ms/query  cached")
    for a in d.arms:
        t = a.timing
        print(f"{a.name:15s} {t.get('index_s', float('nan')):8.2f} {t.get('ms_per_query', float('nan')):9.2f}  "
              f"{'yes' if a.cached else ''}")
    print(f"wall {wall:.1f} s")
    if args.out:
        print("wrote", res.write(args.out))


if __name__ == "__main__":
    main()
