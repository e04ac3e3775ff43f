"""Small searches over a large corpus: the float32-screened exact search vs a stored exact index, in one run.

The dense arm builds its int8 exact index (:class:`~bakeoff.arms.exact_index.ExactIndex`) only for a search of at
least 1,000 queries, and stores it in the cache; a later search with fewer queries over at least 2^19 documents
loads that stored index (memory-mapped) instead of screening in float32. This script measures that choice:
``benchmarks/scaling.py``'s generated vectors (``<workdir>/<n>/doc_vecs.npy``, ``query_vecs.npy``; make them with
``benchmarks/exact_search.py --sizes N``), the index built once and stored in a temporary cache, loaded back, then
for each query count both paths searched for the top ``--k`` in ``--repeat`` interleaved rounds (best kept), their
outputs asserted identical (documents, order and scores).

    flock /tmp/bakeoff-bench.lock python benchmarks/exact_stored_index.py --n 1000000
    flock /tmp/bakeoff-bench.lock python benchmarks/exact_stored_index.py --n 100000

2026-12-02 (Intel AVX-512 + AMX, 2 cores), k = 100, ms per query, screen / stored index: 1M: 1 query 249.6 /
105.9 (2.36x), 10: 33.5 / 12.6 (2.65x), 100: 6.59 / 3.67 (1.80x); 100k: 1: 21.8 / 13.9 (1.57x), 10: 4.27 / 2.64
(1.62x), 100: 0.90 / 1.39 (0.65x) -- hence the 2^19-document threshold.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="corpus size (a folder of --workdir)")
    ap.add_argument("--queries", default="1,10,100", help="query counts searched")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/bakeoff-scaling")
    args = ap.parse_args()
    counts = [int(x) for x in args.queries.split(",")]
    folder = Path(args.workdir) / str(args.n)
    if not (folder / "doc_vecs.npy").exists():
        ap.error(f"{folder / 'doc_vecs.npy'}: no such file (make it: python benchmarks/exact_search.py --sizes {args.n})")

    from bakeoff.arms.exact import exact_search
    from bakeoff.arms.exact_index import ExactIndex
    from bakeoff.cache import Cache

    docs = np.ascontiguousarray(np.load(folder / "doc_vecs.npy", mmap_mode="r"))
    qv = np.load(folder / "query_vecs.npy")
    if max(counts) > len(qv):
        ap.error(f"--queries: at most {len(qv)} (the generated queries)")
    ids = [f"d{i}" for i in range(args.n)]
    with tempfile.TemporaryDirectory() as tmp:
        cache = Cache(Path(tmp) / "cache")
        t0 = time.perf_counter()
        ExactIndex.build(docs).to_cache(cache, "bench")
        print(f"n={args.n}: index built and stored in {time.perf_counter() - t0:.2f} s", flush=True)
        index = ExactIndex.from_cache(cache, "bench", docs)
        assert index is not None
        for nq in counts:
            q = qv[:nq]
            best = {"screen": float("inf"), "stored": float("inf")}
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                a = exact_search(q, docs, ids, k=args.k)
                best["screen"] = min(best["screen"], time.perf_counter() - t0)
                t0 = time.perf_counter()
                b = index.search(q, ids, k=args.k)
                best["stored"] = min(best["stored"], time.perf_counter() - t0)
                if a != b:
                    raise SystemExit(f"n={args.n} queries={nq}: the stored index's output differs from the screen's")
            print(f"n={args.n} queries={nq:5d}: screen {1000 * best['screen'] / nq:8.2f} ms/query, stored index "
                  f"{1000 * best['stored'] / nq:8.2f} ms/query, {best['screen'] / best['stored']:.2f}x, identical",
                  flush=True)


if __name__ == "__main__":
    main()
