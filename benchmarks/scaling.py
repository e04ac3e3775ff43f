"""Scaling benchmark: index build time, peak memory and per-query latency vs corpus size.

Corpora are generated here, seeded: ``n`` documents of Zipf–Mandelbrot distributed words
(``p(r) ∝ 1/(r + 2.7)^1.07`` over a 50,000-word vocabulary of pronounceable made-up words;
lengths lognormal around 50 tokens, clipped to 5..400), queries of 3 words drawn from a random
document (excluding the 100 most frequent words), and random unit vectors (``dim`` 384) for
the dense part. ``dense-exact`` is :func:`bakeoff.arms.exact.exact_search`, ``dense-exact-f64`` the
float64 reference it reproduces bit for bit, ``dense-exact-index`` the prepared int8 index
(:class:`bakeoff.arms.exact_index.ExactIndex`; its quantisation is the build). Every (method, size) stage runs in its own subprocess, which loads the data,
builds the index (timed: ``build_s``), runs the queries (``ms/q`` = batch wall time / number of
queries, k = 10), records the 1-minute load average at its start and end (``load1``) and reports its peak resident memory (``ru_maxrss``, including the loaded data;
for PostgreSQL the server is another process, so its on-disk table + index size is shown
instead). Growth exponents are the least-squares slope of log(metric) on log(n).

    flock /tmp/bakeoff-bench.lock .venv/bin/python benchmarks/scaling.py --sizes 10000,100000,1000000 --pg-max 100000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

METHODS = ("bm25", "dense-exact", "dense-exact-f64", "dense-exact-index", "faiss-hnsw", "pgfts", "pgvector-hnsw", "pgvector-exact")
PG_METHODS = ("pgfts", "pgvector-hnsw", "pgvector-exact")


# --- data --------------------------------------------------------------------------------------
def make_vocabulary(rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` distinct made-up words of 2-4 consonant-vowel syllables."""
    cons, vows = list("bcdfghjklmnprstvz"), list("aeiou")
    words: dict[str, None] = {}
    while len(words) < size:
        n_syl = rng.integers(2, 5, size=4096)
        c = rng.integers(0, len(cons), size=(4096, 4))
        v = rng.integers(0, len(vows), size=(4096, 4))
        for i in range(4096):
            words.setdefault("".join(cons[c[i, j]] + vows[v[i, j]] for j in range(n_syl[i])), None)
    return np.array(list(words)[:size], dtype=object)


def generate(workdir: Path, n: int, *, n_queries: int, dim: int, seed: int) -> None:
    """Write ``docs.txt`` (one doc per line), ``queries.txt``, ``doc_vecs.npy``, ``query_vecs.npy``."""
    workdir.mkdir(parents=True, exist_ok=True)
    if (workdir / "done").exists():
        return
    rng = np.random.default_rng(seed)
    vocab = make_vocabulary(rng, 50_000)
    ranks = np.arange(len(vocab), dtype=np.float64)
    p = 1.0 / (ranks + 2.7) ** 1.07
    cdf = np.cumsum(p / p.sum())
    lengths = np.clip(np.round(rng.lognormal(np.log(50), 0.5, size=n)), 5, 400).astype(np.int64)
    qdocs = np.sort(rng.choice(n, size=n_queries, replace=False))
    queries: dict[int, str] = {}
    with open(workdir / "docs.txt", "w", encoding="utf-8") as fh:
        for s in range(0, n, 50_000):
            e = min(n, s + 50_000)
            ids = np.searchsorted(cdf, rng.random(int(lengths[s:e].sum())), side="right").clip(0, len(vocab) - 1)
            words = vocab[ids]
            offs = np.concatenate([[0], np.cumsum(lengths[s:e])])
            lines = [" ".join(words[offs[i] : offs[i + 1]]) for i in range(e - s)]
            fh.write("\n".join(lines) + "\n")
            for qd in qdocs[(qdocs >= s) & (qdocs < e)]:
                toks = [t for t in ids[offs[qd - s] : offs[qd - s + 1]] if t >= 100] or list(ids[offs[qd - s] : offs[qd - s + 1]])
                pick = rng.choice(len(toks), size=min(3, len(toks)), replace=False)
                queries[int(qd)] = " ".join(vocab[[toks[i] for i in sorted(pick)]])
    (workdir / "queries.txt").write_text("\n".join(queries[q] for q in qdocs) + "\n", encoding="utf-8")
    vecs = np.lib.format.open_memmap(workdir / "doc_vecs.npy", mode="w+", dtype=np.float32, shape=(n, dim))
    for s in range(0, n, 100_000):
        x = rng.standard_normal((min(n, s + 100_000) - s, dim)).astype(np.float32)
        vecs[s : s + len(x)] = x / np.linalg.norm(x, axis=1, keepdims=True)
    vecs.flush()
    del vecs
    q = rng.standard_normal((n_queries, dim)).astype(np.float32)
    np.save(workdir / "query_vecs.npy", q / np.linalg.norm(q, axis=1, keepdims=True))
    (workdir / "done").write_text("ok")


# --- one stage, in a subprocess ----------------------------------------------------------------
def _load(workdir: Path) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    from bakeoff.data.model import Corpus, Queries

    with open(workdir / "docs.txt", encoding="utf-8") as fh:
        texts = fh.read().split("\n")[:-1]
    ids = [f"d{i}" for i in range(len(texts))]
    corpus = Corpus(ids=tuple(ids), texts=tuple(texts), titles=("",) * len(texts), metadata=({},) * len(texts))
    qtexts = (workdir / "queries.txt").read_text(encoding="utf-8").split("\n")[:-1]
    queries = Queries.from_dict({f"q{i}": t for i, t in enumerate(qtexts)})
    return corpus, queries, np.load(workdir / "doc_vecs.npy", mmap_mode="r"), np.load(workdir / "query_vecs.npy")


class _Precomputed:
    """Stands in for a dense arm: fixed (memory-mapped) embeddings."""

    def __new__(cls, docs: np.ndarray, queries: np.ndarray) -> Any:
        from bakeoff.arms.base import Arm

        class Precomputed(Arm):
            type = "precomputed"

            def config(self) -> dict[str, Any]:
                return {"n": int(docs.shape[0]), "dim": int(docs.shape[1])}

            def embed_corpus(self, corpus: Any, *, ctx: Any) -> np.ndarray:
                return docs

            def embed_queries(self, qs: Any, *, ctx: Any) -> np.ndarray:
                return queries

            def index(self, corpus: Any, *, ctx: Any) -> None:
                pass

            def search(self, *a: Any, **k: Any) -> Any:
                raise NotImplementedError

        return Precomputed(name="vectors")


def run_stage(method: str, workdir: Path, pgdata: Path) -> dict[str, Any]:
    from bakeoff.runner.context import Context

    if method in PG_METHODS and pgdata.exists():  # a cold build: a table left by an earlier run would be reused
        import shutil

        shutil.rmtree(pgdata)

    load_start = os.getloadavg()[0]
    corpus, queries, dvec, qvec = _load(workdir)
    rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ctx = Context(corpus=corpus, cache=None, progress=False)
    extra: dict[str, Any] = {}
    if method in ("dense-exact", "dense-exact-f64"):  # the dense arm's search; -f64: the float64 reference
        from bakeoff.arms.exact import exact_search, exact_search_reference

        build = 0.0
        ids = corpus.ids
        t0 = time.perf_counter()
        (exact_search if method == "dense-exact" else exact_search_reference)(qvec, dvec, ids, k=10)
        search = time.perf_counter() - t0
    elif method == "dense-exact-index":  # the prepared int8 index (arms/exact_index.py): build, then one search
        from bakeoff.arms.exact_index import ExactIndex

        t0 = time.perf_counter()
        index = ExactIndex.build(dvec)
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        index.search(qvec, corpus.ids, k=10)
        search = time.perf_counter() - t0
    else:
        if method == "bm25":
            from bakeoff.arms.lexical import BM25Arm

            arm: Any = BM25Arm(name="bm25")
        elif method == "faiss-hnsw":
            from bakeoff.arms.ann import AnnArm

            arm = AnnArm(name="hnsw", base=_Precomputed(dvec, qvec), index="hnsw", M=32, ef_construction=40,
                         ef_search=64, build_threads=2)
        elif method == "pgfts":
            from bakeoff.arms.external._pg import embedded_dsn
            from bakeoff.arms.external.postgres import PgFtsArm

            arm = PgFtsArm(name="pgfts", dsn=embedded_dsn(pgdata), language="simple")
        else:
            from bakeoff.arms.external._pg import embedded_dsn
            from bakeoff.arms.external.postgres import PgVectorArm

            arm = PgVectorArm(name=method, base=_Precomputed(dvec, qvec), dsn=embedded_dsn(pgdata),
                              index="hnsw" if method == "pgvector-hnsw" else "exact", m=16, ef_construction=64,
                              ef_search=40)
        t0 = time.perf_counter()
        arm.index(corpus, ctx=ctx)
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        arm.search(queries, k=10, ctx=ctx)
        search = time.perf_counter() - t0
        if method.startswith("pg"):
            conn = arm._open()
            size = conn.execute("SELECT pg_total_relation_size(%s)", (arm._table_name,)).fetchone()[0]
            extra["pg_table_index_mb"] = size / 2**20
            arm.close()
    return {"method": method, "n": len(corpus), "build_s": build, "ms_per_query": 1000 * search / len(queries),
            "rss_loaded_mb": rss_loaded, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "load1": [load_start, os.getloadavg()[0]], **extra}


# --- driver ------------------------------------------------------------------------------------
def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) on log(x) (nan with fewer than two points)."""
    pts = [(x, y) for x, y in zip(xs, ys) if y and y > 0]
    if len(pts) < 2:
        return float("nan")
    return float(np.polyfit(np.log([p[0] for p in pts]), np.log([p[1] for p in pts]), 1)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--pg-max", type=int, default=100_000, help="largest size for the PostgreSQL methods")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", default="/tmp/bakeoff-scaling")
    ap.add_argument("--json", default=None, help="also write the rows here")
    ap.add_argument("--from-json", default=None, help="comma-separated --json files to tabulate (no runs)")
    ap.add_argument("--stage", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    root = Path(args.workdir)
    if args.stage:
        print(json.dumps(run_stage(args.stage, root / str(args.n), root / f"pg-{args.n}-{args.stage}")))
        return
    rows: list[dict[str, Any]] = []
    if args.from_json:  # print the table and exponents of earlier runs together
        for f in args.from_json.split(","):
            rows.extend(json.loads(Path(f).read_text()))
        rows.sort(key=lambda r: (r["n"], METHODS.index(r["method"])))
    sizes = [] if args.from_json else [int(s) for s in args.sizes.split(",")]
    for n in sizes:
        t0 = time.perf_counter()
        generate(root / str(n), n, n_queries=args.queries, dim=args.dim, seed=args.seed)
        print(f"# generated n={n} in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        for method in args.methods.split(","):
            if method in PG_METHODS and n > args.pg_max:
                continue
            proc = subprocess.run([sys.executable, __file__, "--stage", method, "--n", str(n), "--workdir", str(root)],
                                  check=False, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
            if proc.returncode != 0:
                print(f"# {method} n={n} failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                continue
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(f"# {json.dumps(row)}", file=sys.stderr, flush=True)
    print(f"\n{'method':16s} {'n':>9s} {'build_s':>9s} {'ms/query':>9s} {'peak_MB':>9s} {'data_MB':>9s} {'pg_MB':>8s} {'load1':>11s}")
    for r in rows:
        pg = f"{r['pg_table_index_mb']:8.1f}" if "pg_table_index_mb" in r else f"{'':8s}"
        load = "{:.1f}-{:.1f}".format(*r["load1"]) if "load1" in r else ""
        print(f"{r['method']:16s} {r['n']:9d} {r['build_s']:9.2f} {r['ms_per_query']:9.3f} {r['peak_rss_mb']:9.0f} "
              f"{r['rss_loaded_mb']:9.0f} {pg} {load:>11s}")
    print(f"\ngrowth exponents (slope of log metric on log n)\n{'method':16s} {'build':>7s} {'query':>7s} {'memory':>7s}")
    for method in METHODS:
        rs = [r for r in rows if r["method"] == method]
        if len(rs) < 2:
            continue
        ns = [r["n"] for r in rs]
        print(f"{method:16s} {slope(ns, [r['build_s'] for r in rs]):7.2f} {slope(ns, [r['ms_per_query'] for r in rs]):7.2f} "
              f"{slope(ns, [r['peak_rss_mb'] for r in rs]):7.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
