"""SciFact side by side: a plain script without bakeoff vs ``bakeoff run`` (fp32 cold, fast cold, warm).

Usage (from the repository root, with the package installed as in the README)::

    python benchmarks/side_by_side.py [--data DIR] [--json OUT] [--lock /tmp/bakeoff-bench.lock]

In one invocation, each stage a fresh subprocess timed from start to exit (interpreter start,
imports, data loading, indexing, search and evaluation included):

1. ``harness``: ``benchmarks/side_by_side_harness.py``, the reference, written without bakeoff
   (bm25s BM25, bm25s + PyStemmer, sentence-transformers MiniLM fp32 with numpy top-k, two RRFs
   at k = 60, pytrec_eval; see its docstring for the exact definitions);
2. ``bakeoff fp32 cold``: ``bakeoff run`` with the same five arms (``bm25``, ``bm25-stem =
   bm25:stemmer=english``, ``dense``, ``rrf-bm25-dense = rrf:arms=bm25+dense``, ``rrf-stem-dense =
   rrf:arms=bm25-stem+dense``) and an empty cache folder;
3. ``bakeoff fast cold``: the same arms with the dense arm in the fast mode
   (``dense=dense:backend=openvino``; the RRFs then fuse it) and another empty cache folder
   (so the OpenVINO conversion is included);
4. ``bakeoff fp32 warm`` and ``bakeoff fast warm``: the same commands again on the filled caches.

``bakeoff run`` keeps its defaults (k = 10, depth 100, a 50-query latency sample per arm) and
is given ``--measure ndcg@10 --measure recall@100 --out``. The ratio of each stage is the
harness's wall time divided by the stage's (> 1: faster than the harness). Each stage takes the
benchmark lock (``flock`` on ``--lock``; ``--lock ''`` when the caller already holds it) only
while it runs (``--single-lock``: once for the whole invocation, so no other locked benchmark runs
between the stages) and records the 1-minute load average at its start and end. Besides bakeoff's
own metrics, every bakeoff run file is also scored with pytrec_eval here, so a difference
between the two sides can be told apart as a ranking difference or a metric difference.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ARMS = ["bm25", "bm25-stem=bm25:stemmer=english", "dense", "rrf-bm25-dense=rrf:arms=bm25+dense",
        "rrf-stem-dense=rrf:arms=bm25-stem+dense"]
FAST_DENSE = "dense=dense:backend=openvino"
NAMES = ["bm25", "bm25-stem", "dense", "rrf-bm25-dense", "rrf-stem-dense"]


@contextlib.contextmanager
def bench_lock(path: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (nothing when ``path`` is empty)."""
    if not path:
        yield
        return
    with open(path, "a") as fh:
        t0 = time.perf_counter()
        fcntl.flock(fh, fcntl.LOCK_EX)
        waited = time.perf_counter() - t0
        if waited > 1:
            print(f"# waited {waited:.0f} s for {path}", flush=True)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def timed(cmd: list[str], *, lock: str, env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmd`` under the lock; wall seconds, child CPU seconds, load averages."""
    with bench_lock(lock):
        load0 = os.getloadavg()
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out, _ = proc.communicate()
        wall = time.perf_counter() - t0
        load1 = os.getloadavg()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{out[-3000:]}")
    return {"wall_s": wall, "load_start": load0[0], "load_end": load1[0], "output": out}


def pytrec_scores(run_dir: Path, qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """NDCG@10 and Recall@100 of each ``runs/<arm>.trec`` by pytrec_eval (means over qrels' queries)."""
    import pytrec_eval

    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
    out = {}
    for f in sorted(run_dir.glob("*.trec")):
        run: dict[str, dict[str, float]] = {}
        for line in f.read_text().splitlines():
            qid, _, did, _, score, _ = line.split()
            run.setdefault(qid, {})[did] = float(score)
        per = ev.evaluate({q: run.get(q, {}) for q in qrels})
        n = len(qrels)  # a query with no ranking counts 0
        out[f.stem] = {"ndcg@10": sum(v["ndcg_cut_10"] for v in per.values()) / n,
                       "recall@100": sum(v["recall_100"] for v in per.values()) / n}
    return out


def read_qrels(data: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in (data / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, s = line.split("\t")
        qrels.setdefault(q, {})[d] = int(s)
    return qrels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=None, help="BEIR SciFact folder (default $BAKEOFF_SHARED_DATA/scifact)")
    ap.add_argument("--lock", default="/tmp/bakeoff-bench.lock", help="flock file held per stage ('' for none)")
    ap.add_argument("--single-lock", action="store_true",
                    help="hold the lock for the whole invocation (every stage under the same conditions; ~6-10 min)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    if args.single_lock:
        with bench_lock(args.lock):
            print(f"# {time.strftime('%H:%M:%S')} holding {args.lock} for all stages", flush=True)
            run_all(args, lock="")
    else:
        run_all(args, lock=args.lock)


def run_all(args: argparse.Namespace, *, lock: str) -> None:
    """Every stage, then the tables (see the module docstring)."""
    shared = os.environ.get("BAKEOFF_SHARED_DATA", str(HERE.parents[1] / "shared" / "data"))
    data = args.data or Path(shared) / "scifact"
    if not (data / "corpus.jsonl").exists():
        raise SystemExit(f"SciFact not found at {data}")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "BAKEOFF_SHARED_DATA": str(data.parent)}
    env.pop("BAKEOFF_CACHE_DIR", None)  # every bakeoff stage names its own cache folder
    qrels = read_qrels(data)
    stages: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bakeoff-sbs-") as tmp_s:
        tmp = Path(tmp_s)
        print(f"# {time.strftime('%H:%M:%S')} harness", flush=True)
        r = timed([sys.executable, str(HERE / "side_by_side_harness.py"), str(tmp / "harness.json")], lock=lock,
                  env=env)
        r.update(json.loads((tmp / "harness.json").read_text()))
        stages["harness"] = r
        print(r.pop("output"), end="", flush=True)

        for label, arms, cache in (("bakeoff fp32 cold", ARMS, "fp32"), ("bakeoff fast cold", [FAST_DENSE if a == "dense" else a for a in ARMS], "fast"),
                                   ("bakeoff fp32 warm", ARMS, "fp32"), ("bakeoff fast warm", [FAST_DENSE if a == "dense" else a for a in ARMS], "fast")):
            out = tmp / label.replace(" ", "-")
            cmd = [sys.executable, "-m", "bakeoff", "run", "--beir", str(data), "--cache-dir", str(tmp / f"cache-{cache}"),
                   "--out", str(out), "--measure", "ndcg@10", "--measure", "recall@100", "--no-progress"]
            for a in arms:
                cmd += ["--arm", a]
            print(f"# {time.strftime('%H:%M:%S')} {label}: {' '.join(cmd[1:])}", flush=True)
            r = timed(cmd, lock=lock, env=env)
            res = json.loads((out / "results.json").read_text())
            r["metrics"] = {a["name"]: {m: a["metrics"][m] for m in ("ndcg@10", "recall@100")} for a in res["arms"]}
            r["cached"] = {a["name"]: a["cached"] for a in res["arms"]}
            r["timing"] = {a["name"]: a["timing"] for a in res["arms"]}
            r["pytrec_eval"] = pytrec_scores(out / "runs", qrels)
            r.pop("output")
            stages[label] = r
            print(f"#   {r['wall_s']:.2f} s, load {r['load_start']:.2f} -> {r['load_end']:.2f}", flush=True)

    h = stages["harness"]
    print(f"\n{'setup':20s} {'wall s':>8s} {'vs harness':>10s} {'load1 start-end':>16s}")
    for label, r in stages.items():
        print(f"{label:20s} {r['wall_s']:8.2f} {h['wall_s'] / r['wall_s']:9.2f}x {r['load_start']:7.2f}-{r['load_end']:<7.2f}")
    print("(vs harness = harness wall / this wall; > 1 is faster than the plain script)")
    print("\nharness stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in h["stages_s"].items()))
    for label in ("bakeoff fp32 cold", "bakeoff fast cold"):
        t = stages[label]["timing"]
        print(f"{label} arm times (index_s / search_s): "
              + ", ".join(f"{n} {t[n].get('index_s', 0):.1f}/{t[n].get('search_s', 0):.1f}" for n in NAMES if n in t))

    cols = ["harness", "bakeoff fp32 cold", "bakeoff fast cold", "bakeoff fp32 warm"]
    for m in ("ndcg@10", "recall@100"):
        print(f"\n{m:16s} " + " ".join(f"{c:>18s}" for c in cols) + f" {'fp32 - harness':>15s} {'fp32 by pytrec':>15s}")
        for n in NAMES:
            vals = [stages[c]["metrics"][n][m] for c in cols]
            pt = stages["bakeoff fp32 cold"]["pytrec_eval"][n][m]
            print(f"{n:16s} " + " ".join(f"{v:18.5f}" for v in vals) + f" {vals[1] - vals[0]:+15.5f} {pt:15.5f}")
    for label in ("bakeoff fp32 warm", "bakeoff fast warm"):
        c = stages[label]["cached"]
        print(f"{label}: arms served from cache: {sum(c.values())}/{len(c)}")
    if args.json:
        args.json.write_text(json.dumps(stages, indent=1))


if __name__ == "__main__":
    main()
