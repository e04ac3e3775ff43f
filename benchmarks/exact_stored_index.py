"""Small searches over a large corpus: the float32-screened exact search vs a stored exact index, in one run.

The dense arm builds its int8 exact index (:class:`~bakeoff.arms.exact_index.ExactIndex`) only for a search of at
least 1,000 queries, and stores it in the cache; a later search with fewer queries over at least 2^19 documents
loads that stored index (memory-mapped) instead of screening in float32. This script measures that choice:
``benchmarks/scaling.py``'s generated vectors (``<workdir>/<n>/doc_vecs.npy``, ``query_vecs.npy``; made here when
missing, by the same generator and seed as ``benchmarks/exact_search.py --sizes N``, so the two share them), the index
built once and stored in a temporary cache, loaded back, then for each query count both paths searched for the top
``--k`` in ``--repeat`` interleaved rounds (best kept), their outputs asserted identical (documents, order and
scores). The ratio is the screen's time over the stored index's (> 1: the stored index is faster).

    flock /tmp/bakeoff-bench.lock python benchmarks/exact_stored_index.py --n 1000000
    flock /tmp/bakeoff-bench.lock python benchmarks/exact_stored_index.py --n 100000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: Generated queries, as ``exact_search.py`` makes them at its default 100 queries (``max(200, queries)``).
N_QUERIES = 200


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
    if max(counts) > N_QUERIES:
        ap.error(f"--queries: at most {N_QUERIES} (the generated queries)")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scaling import generate

    t0 = time.perf_counter()
    made = not (folder / "done").exists()
    generate(folder, args.n, n_queries=N_QUERIES, dim=384, seed=0)  # a no-op when exact_search.py made them
    if made:
        print(f"n={args.n}: vectors generated in {time.perf_counter() - t0:.1f} s (untimed below)", flush=True)

    from bakeoff.arms.exact import exact_search
    from bakeoff.arms.exact_index import ExactIndex
    from bakeoff.cache import Cache

    docs = np.ascontiguousarray(np.load(folder / "doc_vecs.npy", mmap_mode="r"))
    qv = np.load(folder / "query_vecs.npy")
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
