"""Ground-truth generation speed: ``bakeoff demo`` of a base checkout vs this tree, in one run.

    git worktree add /tmp/base <base-commit>
    flock /tmp/bakeoff-bench.lock env HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/truth_speed.py \\
        --base /tmp/base --rounds 2

``--stage truth`` (default) runs the demo's truth stage alone, exactly as
:func:`bakeoff.demo.run_demo` calls it (100 stdlib documents, seed 0, the demo's options read
from each side's ``bakeoff.demo``, no cache: the local Gemma 3 270M writes every query);
``--stage demo`` runs the whole ``python -m bakeoff demo --cache off --no-progress`` (truth,
then the five demo arms). Either runs with
``PYTHONPATH`` pointing at ``<base>/src`` (before) and at this tree's ``src`` (after),
interleaved before/after/before/after (``--rounds`` pairs) so load drift on a shared
machine hits both sides alike. Each run writes to its own temporary folder and cache
(``--cache off``: nothing is reused between runs; the GGUF model file is assembled once
per machine and shared).

Prints, per run, the demo's own stage times (LLM start-up, truth stage, arms, total);
then the median truth-stage and total seconds of each side, their ratios
(before / after: > 1 means faster now) and whether the generated queries
(``truth/queries.jsonl``, ids and texts) and qrels are byte-identical between every run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
STAGES = re.compile(r"wall time per stage: (.*)")


TRUTH = r"""
import json, os, sys, time
from pathlib import Path
t0 = time.perf_counter()
from bakeoff import demo
from bakeoff.stdlib_corpus import stdlib_corpus
from bakeoff.truth.answerability import AnswerabilityOptions
from bakeoff.truth.generate import generate_truth
from bakeoff.truth.specificity import SpecificityOptions
from bakeoff.truth.synthetic import DescribeOptions
corpus = stdlib_corpus()
t1 = time.perf_counter()
opts = DescribeOptions(n=int(sys.argv[2]), seed=int(sys.argv[3]), max_regenerations=demo.DEMO_REGENERATIONS,
                       max_doc_chars=500, test_fraction=1.0, min_doc_chars=demo.MIN_DOC_CHARS,
                       leak_threshold=demo.DEMO_LEAK_THRESHOLD, prompt=demo.DEMO_PROMPT,
                       specificity=None if demo.DEMO_SPECIFICITY == "off" else SpecificityOptions(),
                       answerability=AnswerabilityOptions())  # exactly as bakeoff.demo.run_demo
done = generate_truth(corpus, options=opts, llm="local", out=Path(sys.argv[1]) / "truth",
                      source="python-stdlib-docstrings", cache=None, progress=False,
                      specificity=demo.DEMO_SPECIFICITY, answerability=demo.DEMO_ANSWERABILITY)
t2 = time.perf_counter()
print(json.dumps({"corpus": t1 - t0, "llm_startup": done.llm_startup_s, "truth": t2 - t1, "total": t2 - t0,
                  "usage": done.usage.as_dict()}))
"""


def run_truth(src: Path, *, n: int, seed: int, extra: dict[str, str] | None = None) -> dict[str, object]:
    """The demo's truth stage alone in a subprocess with ``src`` first on the path."""
    with tempfile.TemporaryDirectory(prefix="truth-speed-") as tmp:
        out = Path(tmp) / "demo"
        env = {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1", **(extra or {})}
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", TRUTH, str(out), str(n), str(seed)], env=env, cwd=tmp,
                              capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"truth stage failed with {src}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        stages = json.loads(proc.stdout.strip().splitlines()[-1])
        return {"stages": {**stages, "arms": 0.0}, "wall": wall, **_digests(out)}


def _digests(out: Path) -> dict[str, object]:
    queries = (out / "truth" / "queries.jsonl").read_bytes()
    qrels = b"".join(p.read_bytes() for p in sorted((out / "truth" / "qrels").glob("*.tsv")))
    texts = [json.loads(line)["text"] for line in queries.decode().splitlines() if line.strip()]
    return {"n_queries": len(texts), "queries_sha256": hashlib.sha256(queries).hexdigest(),
            "qrels_sha256": hashlib.sha256(qrels).hexdigest(), "texts": texts}


def run_demo(src: Path, *, n: int, seed: int, extra: dict[str, str] | None = None) -> dict[str, object]:
    """One ``bakeoff demo`` in a subprocess with ``src`` first on the path; stage times + output digests."""
    with tempfile.TemporaryDirectory(prefix="truth-speed-") as tmp:
        out = Path(tmp) / "demo"
        env = {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1", **(extra or {})}
        cmd = [sys.executable, "-m", "bakeoff", "demo", "--out", str(out), "-n", str(n), "--seed", str(seed),
               "--cache", "off", "--no-progress"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"demo failed with {src}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        found = STAGES.search(proc.stdout)
        if found is None:
            raise SystemExit(f"no stage times in the demo output of {src}:\n{proc.stdout[-2000:]}")
        stages = {k: float(v.split()[0]) for k, v in (part.rsplit(" ", 2)[0:2] for part in found.group(1).split(", "))}
        return {"stages": stages, "wall": wall, **_digests(out)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, required=True, help="a checkout of the commit to compare with")
    ap.add_argument("--rounds", type=int, default=2, help="before/after pairs, interleaved")
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stage", choices=("truth", "demo"), default="truth", help="the truth stage alone, or the whole demo")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="set in the 'after' runs only (e.g. BAKEOFF_LLM_SERVERS=1)")
    args = ap.parse_args()

    sides = {"before": args.base.resolve() / "src", "after": HERE / "src"}
    runs: dict[str, list[dict[str, object]]] = {"before": [], "after": []}
    for r in range(args.rounds):
        for side, src in sides.items():
            extra = dict(e.split("=", 1) for e in args.env) if side == "after" else {}
            res = (run_truth if args.stage == "truth" else run_demo)(src, n=args.n, seed=args.seed, extra=extra)
            runs[side].append(res)
            st = res["stages"]
            load = " ".join(f"{x:.2f}" for x in os.getloadavg())
            print(f"round {r + 1} {side:6s} [load {load}]: llm_startup {st.get('llm_startup', 0):6.1f} s  "
                  f"truth {st['truth']:7.1f} s  "
                  f"arms {st['arms']:6.1f} s  total {st['total']:7.1f} s  ({res['n_queries']} queries, "
                  f"sha256 {str(res['queries_sha256'])[:12]})", flush=True)

    def med(side: str, stage: str) -> float:
        return statistics.median(float(x["stages"][stage]) for x in runs[side])  # type: ignore[index]

    digests = {(x["queries_sha256"], x["qrels_sha256"]) for side in runs for x in runs[side]}
    identical = len(digests) == 1
    b_truth, a_truth, b_total, a_total = med("before", "truth"), med("after", "truth"), med("before", "total"), med("after", "total")
    print(f"\ntruth stage (median of {args.rounds}): before {b_truth:.1f} s, after {a_truth:.1f} s, "
          f"ratio {b_truth / a_truth:.2f}x faster")
    print(f"{'demo' if args.stage == 'demo' else 'process'} total (median of {args.rounds}): before {b_total:.1f} s, after {a_total:.1f} s, "
          f"ratio {b_total / a_total:.2f}x faster")
    print(f"generated queries and qrels identical in all {2 * args.rounds} runs: {'yes' if identical else 'NO'}")
    if not identical:
        before, after = runs["before"][0]["texts"], runs["after"][0]["texts"]
        same = sum(a == b for a, b in zip(before, after))  # type: ignore[arg-type]
        print(f"  first runs: {same} of {len(before)} query texts equal at the same position")  # type: ignore[arg-type]
    if args.json:
        slim = {side: [{k: v for k, v in x.items() if k != "texts"} for x in xs] for side, xs in runs.items()}
        args.json.write_text(json.dumps({"runs": slim, "identical": identical, "truth_ratio": b_truth / a_truth,
                                         "total_ratio": b_total / a_total}, indent=2))


if __name__ == "__main__":
    main()
