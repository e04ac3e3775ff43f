"""Ground-truth generation speed: ``bakeoff demo`` of a base checkout vs this tree, in one run.

    git worktree add /tmp/base <base-commit>
    flock /tmp/bakeoff-bench.lock env HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/truth_speed.py \\
        --base /tmp/base --rounds 2

Runs ``python -m bakeoff demo --cache off --no-progress`` (100 stdlib documents, seed 0:
the local Gemma 3 270M writes the queries, then the five demo arms run) with
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


def run_demo(src: Path, *, n: int, seed: int) -> dict[str, object]:
    """One ``bakeoff demo`` in a subprocess with ``src`` first on the path; stage times + output digests."""
    with tempfile.TemporaryDirectory(prefix="truth-speed-") as tmp:
        out = Path(tmp) / "demo"
        env = {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1"}
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
        queries = (out / "truth" / "queries.jsonl").read_bytes()
        qrels = b"".join(p.read_bytes() for p in sorted((out / "truth" / "qrels").glob("*.tsv")))
        texts = [json.loads(line)["text"] for line in queries.decode().splitlines() if line.strip()]
        return {"stages": stages, "wall": wall, "n_queries": len(texts),
                "queries_sha256": hashlib.sha256(queries).hexdigest(), "qrels_sha256": hashlib.sha256(qrels).hexdigest(),
                "texts": texts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, required=True, help="a checkout of the commit to compare with")
    ap.add_argument("--rounds", type=int, default=2, help="before/after pairs, interleaved")
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()

    sides = {"before": args.base.resolve() / "src", "after": HERE / "src"}
    runs: dict[str, list[dict[str, object]]] = {"before": [], "after": []}
    for r in range(args.rounds):
        for side, src in sides.items():
            res = run_demo(src, n=args.n, seed=args.seed)
            runs[side].append(res)
            st = res["stages"]
            print(f"round {r + 1} {side:6s}: llm_startup {st.get('llm_startup', 0):6.1f} s  truth {st['truth']:7.1f} s  "
                  f"arms {st['arms']:6.1f} s  total {st['total']:7.1f} s  ({res['n_queries']} queries, "
                  f"sha256 {str(res['queries_sha256'])[:12]})", flush=True)

    def med(side: str, stage: str) -> float:
        return statistics.median(float(x["stages"][stage]) for x in runs[side])  # type: ignore[index]

    digests = {(x["queries_sha256"], x["qrels_sha256"]) for side in runs for x in runs[side]}
    identical = len(digests) == 1
    b_truth, a_truth, b_total, a_total = med("before", "truth"), med("after", "truth"), med("before", "total"), med("after", "total")
    print(f"\ntruth stage (median of {args.rounds}): before {b_truth:.1f} s, after {a_truth:.1f} s, "
          f"ratio {b_truth / a_truth:.2f}x faster")
    print(f"demo total  (median of {args.rounds}): before {b_total:.1f} s, after {a_total:.1f} s, "
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
