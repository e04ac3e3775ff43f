"""Queries/second of bakeoff's BM25 arm vs raw bm25s on BEIR SciFact, same process, same data.

Both sides tokenize the 300 test queries and retrieve the top 10 from the same
index settings (lucene, k1=1.5, b=0.75, English stopwords, optional stemmer).
Raw bm25s uses ``BM25.retrieve`` (its own batched path); the arm uses
``get_scores`` per query plus the package tie rule. Index build time is
reported separately. Each figure is the best CPU time of ``--repeat`` interleaved runs.

    python benchmarks/bm25_scifact.py [--data ../shared/data/scifact] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import bm25s
import Stemmer

from bakeoff.arms import BM25Arm
from bakeoff.data import load_beir
from bakeoff.metrics import score_run
from bakeoff.runner.context import Context


def best(fn, repeat: int) -> float:
    """Best-of-``repeat`` CPU time of this process (robust to other load on the machine;
    both sides are single-threaded, so CPU time equals wall time on an idle machine)."""
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    ds = load_beir(args.data, split="test")
    texts = ds.corpus.full_texts()
    queries = list(ds.queries.texts)
    nq = len(queries)
    print(f"SciFact: {len(texts)} docs, {nq} queries, bm25s {bm25s.__version__}")
    print(f"{'variant':<10} {'raw build s':>11} {'arm build s':>11} {'raw q/s':>9} {'arm q/s':>9} {'ratio':>6} {'arm ndcg@10':>11}")
    for label, stem in (("plain", None), ("stemmed", "english")):
        stemmer = Stemmer.Stemmer(stem) if stem else None

        raw = bm25s.BM25()
        t0 = time.perf_counter()
        raw.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
        raw_build = time.perf_counter() - t0

        def raw_search(raw: bm25s.BM25 = raw, stemmer: Stemmer.Stemmer | None = stemmer) -> None:
            q = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
            raw.retrieve(q, k=10, show_progress=False, n_threads=1)

        arm = BM25Arm(stemmer=stem)
        ctx = Context(corpus=ds.corpus, progress=False)
        t0 = time.perf_counter()
        arm.index(ds.corpus, ctx=ctx)
        arm_build = time.perf_counter() - t0
        run = None

        def arm_search(arm: BM25Arm = arm, ctx: Context = ctx) -> None:
            nonlocal run
            run = arm.search(ds.queries, k=10, ctx=ctx)

        raw_s, arm_s = float("inf"), float("inf")
        for _ in range(args.repeat):  # interleave so drifting machine load hits both sides alike
            raw_s = min(raw_s, best(raw_search, 1))
            arm_s = min(arm_s, best(arm_search, 1))
        assert run is not None
        ndcg = score_run(run, ds.qrels, ["ndcg@10"], query_ids=ds.queries.ids).means["ndcg@10"]
        print(f"{label:<10} {raw_build:>11.2f} {arm_build:>11.2f} {nq / raw_s:>9.0f} {nq / arm_s:>9.0f} "
              f"{raw_s / arm_s:>6.2f} {ndcg:>11.4f}")
    print("ratio = arm q/s / raw bm25s q/s")


if __name__ == "__main__":
    main()
