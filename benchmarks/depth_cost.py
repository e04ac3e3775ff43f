"""What retrieving 1,000 documents per query (the default depth) costs against 100, in one run.

For each arm the index is built once; then the same queries are searched at depth 100 and at depth 1000,
interleaved ``--repeat`` times (best wall time of each kept), the run written as a TREC file (bytes), and
evaluated on the default measures plus MAP, recall@1000 and bpref (wall time). Printed per arm: the
absolute times and sizes at both depths and their ratio 1000 / 100, and the measures that change with depth
(MAP, recall@1000, bpref are not comparable with BEIR's, TREC's and MTEB's figures below depth 1000).

Two corpora: BEIR SciFact (5,183 abstracts, 300 test queries; arms ``--arms``, default bm25, tfidf and the
bundled MiniLM dense arm, whose corpus embeddings come from the cache when present), and a generated corpus
of ``--big`` documents (default 1,000,000; 0 skips it) from the scaling benchmark's generator
(``benchmarks/scaling.py``: Zipf-Mandelbrot words, lognormal lengths, seeded) searched by BM25 with
``--big-queries`` queries, and exact dense search over its random unit vectors (384 dimensions).

    flock /tmp/bakeoff-bench.lock python benchmarks/depth_cost.py [--big 1000000] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DEPTHS = (100, 1000)


def _best(fn: Any, repeat: int) -> tuple[float, Any]:
    out, best = None, float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def measure(arm: Any, corpus: Any, queries: Any, qrels: Any | None, *, ctx: Any, repeat: int,
            tmp: Path) -> dict[str, Any]:
    """Index once, then search/write/evaluate at each depth (interleaved)."""
    from bakeoff.data.writers import write_trec_run
    from bakeoff.metrics import default_measures, score_run

    t0 = time.perf_counter()
    arm.index(corpus, ctx=ctx)
    index_s = time.perf_counter() - t0
    search = {d: float("inf") for d in DEPTHS}
    runs: dict[int, Any] = {}
    for _ in range(repeat):
        for d in DEPTHS:
            s, runs[d] = _best(lambda d=d: arm.search(queries, k=d, ctx=ctx), 1)
            search[d] = min(search[d], s)
    row: dict[str, Any] = {"arm": arm.name, "index_s": index_s, "n_queries": len(queries)}
    for d in DEPTHS:
        path = tmp / f"{arm.name}-{d}.trec"
        write_s, _ = _best(lambda d=d, path=path: write_trec_run(runs[d], path), 1)
        row[d] = {"search_s": search[d], "write_s": write_s, "trec_bytes": path.stat().st_size,
                  "docs_per_query": sum(len(runs[d].get(q)) for q in runs[d]) / max(1, len(runs[d]))}
        if qrels is not None:
            ms = [*(str(m) for m in default_measures(10, d)), "map", "recall@1000", "bpref"]
            ev_s, ev = _best(lambda d=d, ms=ms: score_run(runs[d], qrels, ms, query_ids=queries.ids), repeat)
            row[d]["evaluate_s"] = ev_s
            row[d]["means"] = {m: ev.means[m] for m in ("ndcg@10", "recall@100", "map", "recall@1000", "bpref")}
        path.unlink()
    return row


def print_rows(title: str, rows: list[dict[str, Any]]) -> None:
    print(title)
    print(f"{'arm':<8} {'what':<14} {'depth 100':>12} {'depth 1000':>12} {'ratio':>7}")
    for r in rows:
        a, b = r[100], r[1000]
        for key, label, fmt in (("search_s", "search s", "{:.3f}"), ("write_s", "write .trec s", "{:.3f}"),
                                ("evaluate_s", "evaluate s", "{:.3f}"), ("trec_bytes", ".trec MB", "{:.2f}")):
            if key not in a:
                continue
            x, y = a[key], b[key]
            if key == "trec_bytes":
                x, y = x / 2**20, y / 2**20
            print(f"{r['arm']:<8} {label:<14} {fmt.format(x):>12} {fmt.format(y):>12} {y / x if x else float('nan'):>6.1f}x")
        if "means" in a:
            changed = ", ".join(f"{m} {a['means'][m]:.4f} -> {b['means'][m]:.4f}" for m in ("map", "recall@1000", "bpref"))
            same = ", ".join(f"{m} {a['means'][m]:.4f}" for m in ("ndcg@10", "recall@100")
                             if abs(a["means"][m] - b["means"][m]) < 1e-12)
            print(f"{r['arm']:<8} measures       {changed}; unchanged: {same}")
    print()


def scifact(args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    from bakeoff.cache import Cache, default_cache_dir
    from bakeoff.data import load_beir
    from bakeoff.runner.config import build_arms, parse_arm_spec
    from bakeoff.runner.context import Context

    ds = load_beir(args.data, split="test")
    ctx = Context(corpus=ds.corpus, cache=Cache(default_cache_dir()), progress=False)
    rows = []
    for arm in build_arms([parse_arm_spec(a) for a in args.arms.split(",")]):
        rows.append(measure(arm, ds.corpus, ds.queries, ds.qrels, ctx=ctx, repeat=args.repeat, tmp=tmp))
    print_rows(f"SciFact: {len(ds.corpus)} documents, {len(ds.queries)} queries", rows)
    return rows


def big(args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    import numpy as np
    from scaling import _load, generate

    from bakeoff.arms.exact import exact_search
    from bakeoff.arms.lexical import BM25Arm
    from bakeoff.data.model import Run
    from bakeoff.runner.context import Context

    work = Path(args.workdir) / f"n{args.big}"
    t0 = time.perf_counter()
    generate(work, args.big, n_queries=args.big_queries, dim=384, seed=0)
    corpus, queries, dvec, qvec = _load(work)
    print(f"generated corpus: {len(corpus)} documents, {len(queries)} queries (data ready in "
          f"{time.perf_counter() - t0:.0f} s)")
    ctx = Context(corpus=corpus, cache=None, progress=False)
    rows = [measure(BM25Arm(name="bm25"), corpus, queries, None, ctx=ctx, repeat=args.repeat, tmp=tmp)]

    class Exact:  # exact dense search over the stored vectors, as the dense arm searches
        name = "dense"

        def index(self, corpus: Any, *, ctx: Any) -> None:
            pass

        def search(self, queries: Any, *, k: int, ctx: Any) -> Any:
            top = exact_search(np.asarray(qvec), dvec, corpus.ids, k=k)
            return Run.from_ranked("dense", dict(zip(queries.ids, top)))

    rows.append(measure(Exact(), corpus, queries, None, ctx=ctx, repeat=args.repeat, tmp=tmp))
    print_rows(f"generated: {len(corpus)} documents, {len(queries)} queries (peak RSS "
               f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)", rows)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get(
        "BAKEOFF_SHARED_DATA", HERE.parents[1] / "shared" / "data")) / "scifact")
    ap.add_argument("--arms", default="bm25,tfidf,dense")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big", type=int, default=1_000_000, help="documents of the generated corpus (0: skip)")
    ap.add_argument("--big-queries", type=int, default=100)
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "bakeoff-scaling"))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    print("ratio = depth 1000 / depth 100, same process, same index; times are the best of "
          f"{args.repeat} interleaved runs\n")
    with tempfile.TemporaryDirectory() as t:
        out = {"scifact": scifact(args, Path(t))}
        if args.big:
            out["generated"] = big(args, Path(t))
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
