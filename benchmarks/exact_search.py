"""Exact dense search: the float64 reference vs the float32-screened exact search, in one run.

Vectors: ``benchmarks/scaling.py``'s generated corpora (seeded random unit vectors, dim 384,
``<workdir>/<n>/doc_vecs.npy`` memory-mapped, ``query_vecs.npy``); made here if missing.
For each size, each method runs in its own subprocess (so ``peak RSS`` = that process's
``ru_maxrss``, data included), searches ``--queries`` queries for the top ``--k``, writes a
TREC run file and prints its sha256: equal hashes = bit-identical rankings and scores.
Methods: ``old`` = :func:`exact_search_reference` (the float64 definition), ``new`` =
:func:`exact_search` of this tree, ``index`` = :class:`~bakeoff.arms.exact_index.ExactIndex` of this tree
(its build is timed apart: ``build_s``; ``ms/query`` is the first search after it, ``warm`` a second one in the
same process), ``index1`` = the same index with its screen on one thread (the path before the screen was split
between threads), ``before`` = :func:`exact_search` of another source tree
(``--before-src``, e.g. ``git archive <commit> src | tar -x -C /tmp/before``), so a change is
measured against its predecessor and the reference in one run. ``ratio`` = old / method, of
the medians over ``--repeat`` cold runs (``--old-repeat`` for the reference), repeats interleaved;
the range is printed beside (a ~1 s run is a snapshot of a shared machine's load; the
reference's minute averages it).

    nice python benchmarks/exact_search.py --sizes 100000,1000000 --queries 100 --k 100 \
        --before-src /tmp/before/src --repeat 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def run_one(method: str, workdir: Path, *, n_queries: int, k: int, out: Path) -> dict[str, Any]:
    from bakeoff.arms.exact import exact_search, exact_search_reference, gemv_model
    from bakeoff.data.model import Run
    from bakeoff.data.writers import write_trec_run

    docs = np.load(workdir / "doc_vecs.npy", mmap_mode="r")
    q = np.load(workdir / "query_vecs.npy")[:n_queries]
    ids = [f"d{i}" for i in range(docs.shape[0])]
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    build_s, warm_s = 0.0, float("nan")
    if method in ("index", "index1"):  # the prepared int8 index: built first (timed apart), then searched cold and warm
        from bakeoff.arms import exact_index
        from bakeoff.arms.exact_index import ExactIndex

        if method == "index1":  # the screen on one thread (main before the split between threads)
            exact_index._WORKERS = 1

        t0 = time.perf_counter()
        index = ExactIndex.build(docs)
        build_s = time.perf_counter() - t0
        fn: Any = lambda q, docs, ids, k: index.search(q, ids, k=k)
    else:
        fn = exact_search_reference if method == "old" else exact_search
    ru0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    ranked = fn(q, docs, ids, k=k)
    wall, ru1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    if method != "old":  # a second search in the same process: ONNX Runtime loaded, pages mapped
        t1 = time.perf_counter()
        again = fn(q, docs, ids, k=k)
        warm_s = time.perf_counter() - t1
        assert again == ranked
    run = Run.from_ranked(method, {f"q{i}": r for i, r in enumerate(ranked)})
    write_trec_run(run, out, tag="exact")
    return {"method": method, "n": int(docs.shape[0]), "queries": int(q.shape[0]), "k": k,
            "ms_per_query": 1000 * wall / q.shape[0], "wall_s": wall, "rss_before_mb": rss0,
            "build_s": build_s, "warm_ms_per_query": 1000 * warm_s / q.shape[0], "load1": os.getloadavg()[0],
            "user_s": ru1.ru_utime - ru0.ru_utime, "sys_s": ru1.ru_stime - ru0.ru_stime,  # CPU time of the search
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "sha256": hashlib.sha256(out.read_bytes()).hexdigest(), "blas": str(gemv_model()),
            "module": str(Path(sys.modules[exact_search.__module__].__file__ or "").resolve())}


def _stage(method: str, n: int, args: argparse.Namespace, root: Path) -> dict[str, Any] | None:
    """One cold process searching with ``method``; its JSON row (printed to stderr as it comes)."""
    env = dict(os.environ)
    if method == "before":  # the other tree's package first on the path
        env["PYTHONPATH"] = os.pathsep.join([str(Path(args.before_src).resolve()), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, __file__, "--stage", method, "--n", str(n), "--workdir", str(root),
                           "--queries", str(args.queries), "--k", str(args.k)], check=False, capture_output=True,
                          text=True, env=env)
    if proc.returncode != 0:
        print(f"# {method} n={n} failed: {proc.stderr.strip()[-2000:]}", file=sys.stderr)
        return None
    row: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"# {json.dumps(row)}", file=sys.stderr, flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--workdir", default="/tmp/bakeoff-scaling")
    ap.add_argument("--methods", default=None,
                    help="default: old,new,index (old,before,new,index with --before-src); index1 = the index "
                         "screening on one thread")
    ap.add_argument("--before-src", default=None, help="a source tree whose exact_search is the 'before' method")
    ap.add_argument("--repeat", type=int, default=1, help="cold runs of each fast method (median reported)")
    ap.add_argument("--old-repeat", type=int, default=1, help="cold runs of the float64 reference")
    ap.add_argument("--json", default=None)
    ap.add_argument("--stage", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    root = Path(args.workdir)
    methods = (args.methods or ("old,before,new,index" if args.before_src else "old,new,index")).split(",")
    if "before" in methods and not args.before_src:
        ap.error("method 'before' needs --before-src")
    if args.stage:
        res = run_one(args.stage, root / str(args.n), n_queries=args.queries, k=args.k,
                      out=root / f"exact-{args.stage}-{args.n}.run")
        print(json.dumps(res))
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from scaling import generate

    rows: list[dict[str, Any]] = []
    for n in [int(s) for s in args.sizes.split(",")]:
        generate(root / str(n), n, n_queries=max(200, args.queries), dim=384, seed=0)
        for rep in range(max(args.repeat, args.old_repeat)):  # repeats interleaved: load drifts over minutes
            for method in methods:
                if rep >= (args.old_repeat if method == "old" else args.repeat):
                    continue
                row = _stage(method, n, args, root)
                if row is not None:
                    rows.append(row)
    print(f"\n{'n':>9s} {'method':6s} {'runs':>4s} {'wall_s':>8s} {'user_s':>7s} {'sys_s':>6s} {'ms/query':>10s}"
          f" {'min-max ms/q':>15s} {'ratio':>7s} {'warm':>7s} {'build_s':>7s} {'load1':>5s} {'peak_MB':>8s}"
          "  sha256 of the run file")
    table: dict[tuple[int, str], float] = {}
    for n in sorted({r["n"] for r in rows}):
        for method in methods:
            rs = [r for r in rows if r["n"] == n and r["method"] == method]
            if rs:
                table[n, method] = float(np.median([r["ms_per_query"] for r in rs]))
        for method in methods:
            rs = [r for r in rows if r["n"] == n and r["method"] == method]
            if not rs:
                continue
            med = table[n, method]
            ratio = f"{table[n, 'old'] / med:7.1f}" if (n, "old") in table else f"{'':7s}"
            ms = [r["ms_per_query"] for r in rs]
            shas = sorted({r["sha256"] for r in rs})
            cpu = {m: float(np.median([r.get(m, np.nan) for r in rs])) for m in ("user_s", "sys_s")}
            print(f"{n:9d} {method:6s} {len(rs):4d} {float(np.median([r['wall_s'] for r in rs])):8.2f}"
                  f" {cpu['user_s']:7.2f} {cpu['sys_s']:6.2f} {med:10.2f}"
                  f" {min(ms):7.2f}-{max(ms):<7.2f} {ratio}"
                  f" {float(np.median([r.get('warm_ms_per_query', np.nan) for r in rs])):7.2f}"
                  f" {float(np.median([r.get('build_s', 0.0) for r in rs])):7.2f}"
                  f" {float(np.median([r.get('load1', np.nan) for r in rs])):5.1f}"
                  f" {max(r['peak_rss_mb'] for r in rs):8.0f}  {' '.join(shas)}")
        hs = {r["sha256"] for r in rows if r["n"] == n}
        vs = "".join(f"; {m} {table[n, 'before'] / table[n, m]:.2f}x faster than before"
                     for m in ("new", "index") if (n, "before") in table and (n, m) in table)
        if (n, "index1") in table and (n, "index") in table:
            vs += f"; index {table[n, 'index1'] / table[n, 'index']:.2f}x faster than index1 (one thread)"
        print(f"n={n}: run files {'IDENTICAL' if len(hs) == 1 else 'DIFFER'} ({sum(r['n'] == n for r in rows)} runs){vs}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
