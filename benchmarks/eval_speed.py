"""``bakeoff eval`` against pytrec_eval on a large run, in one run of this script.

Generates (seeded ``np.random.Generator``) a TREC run of ``--queries`` x ``--docs`` lines and
graded qrels (grades 0-3, about half the judged documents retrieved), then times, each in its own
subprocess (so peak memory is each tool's own):

* **pytrec_eval**: ``pytrec_eval.parse_run`` + ``parse_qrel`` (its own readers) and
  ``RelevanceEvaluator(qrels, {ndcg_cut.10, recall.100, recip_rank, map}).evaluate(run)``;
* **bakeoff**: :func:`bakeoff.metrics.evaluate_files` — exactly what ``bakeoff eval`` runs — for
  ndcg@10, recall@100, mrr@10 and map.

Both include file parsing. It prints absolute seconds, peak RSS, the ratio, and checks that the
per-query numbers agree (mrr@10 against trec_eval's uncut recip_rank: equal when the first
relevant document is within the top 10, else 0). pytrec_eval has no recip_rank cutoff, so it
does slightly less work than bakeoff here.

    python benchmarks/eval_speed.py                      # 10,000 queries x 1,000 documents
    python benchmarks/eval_speed.py --queries 1000       # quicker
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def generate(folder: Path, *, queries: int, docs: int, corpus: int, rng: np.random.Generator) -> tuple[Path, Path]:
    run_path, qrels_path = folder / "run.trec", folder / "qrels.txt"
    with open(run_path, "w") as run, open(qrels_path, "w") as qrels:
        for q in range(queries):
            qid = f"q{q:05d}"
            ids = rng.choice(corpus, size=docs, replace=False)
            scores = np.round(rng.normal(size=docs) * 5.0, 4)  # 4 decimals: some ties, as real runs have
            order = np.argsort(-scores, kind="stable")
            run.write("".join(f"{qid} Q0 d{ids[i]:07d} {r} {float(scores[i])!r} bench\n"
                              for r, i in enumerate(order.tolist(), start=1)))
            n = int(rng.integers(5, 40))
            judged = np.unique(np.concatenate([ids[rng.choice(docs, size=n // 2, replace=False)],
                                               rng.choice(corpus, size=n - n // 2, replace=False)]))
            grades = rng.integers(0, 4, size=judged.size)
            grades[0] = max(int(grades[0]), 1)  # every query has a relevant document (both rules then agree)
            qrels.write("".join(f"{qid} 0 d{d:07d} {g}\n" for d, g in zip(judged.tolist(), grades.tolist())))
    return run_path, qrels_path


def worker_pytrec(run_path: str, qrels_path: str) -> dict:
    import pytrec_eval

    t0 = time.perf_counter()
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    t1 = time.perf_counter()
    res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "recip_rank", "map"}).evaluate(run)
    t2 = time.perf_counter()
    per = {q: [v["ndcg_cut_10"], v["recall_100"], v["recip_rank"], v["map"]] for q, v in res.items()}
    return {"parse_s": t1 - t0, "eval_s": t2 - t1, "total_s": t2 - t0, "per_query": per}


def worker_bakeoff(run_path: str, qrels_path: str, *, line_reader: bool = False, profile: bool = False) -> dict:
    import bakeoff.data.trec
    from bakeoff.metrics import evaluate_files

    if line_reader:  # as without pyarrow: the line-by-line reader
        bakeoff.data.trec._run_fast = lambda data, name: None
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    t0 = time.perf_counter()
    done = evaluate_files(qrels_path, run_path, ["ndcg@10", "recall@100", "mrr@10", "map"])
    t1 = time.perf_counter()
    if prof is not None:
        import pstats

        prof.disable()
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(15)
    ev = done.evaluation
    per = {q: [ev.per_query[m][q] for m in ("ndcg@10", "recall@100", "mrr@10", "map")] for q in ev.query_ids}
    return {"total_s": t1 - t0, "per_query": per, "warnings": list(done.warnings)}


def run_worker(which: str, run_path: Path, qrels_path: Path, out: Path, *extra: str) -> dict:
    subprocess.run([sys.executable, __file__, "--worker", which, str(run_path), str(qrels_path), str(out), *extra],
                   check=True)
    return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--docs", type=int, default=1_000)
    ap.add_argument("--corpus", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--line-reader", action="store_true", help="bakeoff without the pyarrow reader (as without pyarrow)")
    ap.add_argument("--profile", action="store_true", help="cProfile bakeoff's evaluation (top 15 on stderr)")
    ap.add_argument("--worker", nargs=4, metavar=("WHICH", "RUN", "QRELS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        which, run_path, qrels_path, out = args.worker
        result = (worker_pytrec(run_path, qrels_path) if which == "pytrec_eval" else
                  worker_bakeoff(run_path, qrels_path, line_reader=args.line_reader, profile=args.profile))
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        Path(out).write_text(json.dumps(result))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        run_path, qrels_path = generate(folder, queries=args.queries, docs=args.docs, corpus=args.corpus,
                                        rng=np.random.default_rng(args.seed))
        size = run_path.stat().st_size / 1e6
        print(f"data: {args.queries:,} queries x {args.docs:,} documents = {args.queries * args.docs:,} run lines "
              f"({size:.0f} MB), generated in {time.perf_counter() - t:.1f} s")
        ref = run_worker("pytrec_eval", run_path, qrels_path, folder / "ref.json")
        flags = [f for f, on in (("--line-reader", args.line_reader), ("--profile", args.profile)) if on]
        ours = run_worker("bakeoff", run_path, qrels_path, folder / "ours.json", *flags)
    print(f"pytrec_eval {ref['total_s']:7.2f} s  (parse {ref['parse_s']:.2f} s + evaluate {ref['eval_s']:.2f} s)  "
          f"peak RSS {ref['peak_rss_mb']:,.0f} MB")
    how = "line reader" if args.line_reader else "bakeoff.metrics.evaluate_files = `bakeoff eval`"
    print(f"bakeoff     {ours['total_s']:7.2f} s  ({how})  "
          f"peak RSS {ours['peak_rss_mb']:,.0f} MB")
    print(f"ratio: bakeoff is {ref['total_s'] / ours['total_s']:.2f}x pytrec_eval's speed "
          f"({ours['total_s'] / ref['total_s']:.2f}x its time)")
    # identical numbers
    assert set(ref["per_query"]) == set(ours["per_query"]), "different query sets"
    worst = [0.0, 0.0, 0.0, 0.0]
    for q, (ndcg, rec, rr, ap_) in ref["per_query"].items():
        mrr10 = rr if rr > 0 and round(1 / rr) <= 10 else 0.0
        mine = ours["per_query"][q]
        for i, theirs in enumerate((ndcg, rec, mrr10, ap_)):
            worst[i] = max(worst[i], abs(mine[i] - theirs))
    names = ("ndcg@10", "recall@100", "mrr@10", "map")
    print("max |bakeoff - pytrec_eval| per query: " + ", ".join(f"{n} {w:.1e}" for n, w in zip(names, worst)))
    means_ref = [float(np.mean([v[i] if i != 2 else (v[2] if v[2] > 0 and round(1 / v[2]) <= 10 else 0.0)
                                for v in ref["per_query"].values()])) for i in range(4)]
    means_ours = [float(np.mean([v[i] for v in ours["per_query"].values()])) for i in range(4)]
    print("means (bakeoff / pytrec_eval): " + ", ".join(f"{n} {a:.6f}/{b:.6f}"
                                                       for n, a, b in zip(names, means_ours, means_ref)))
    if max(worst) > 1e-12:
        raise SystemExit("numbers differ")


if __name__ == "__main__":
    main()
