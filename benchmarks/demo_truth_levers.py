"""Measure the demo's truth levers: document floor, best-of-n, answerability threshold, prompt.

Runs describe mode over the Python stdlib corpus with the bundled Gemma 3 270M (as ``bakeoff demo`` does)
with the given settings, prints counts, stage time and load average, and writes every kept query with its
source document's text (for judging by hand) to ``--dump`` as JSONL. Generations and USE scores are cached
(``--cache-dir``), so settings that share requests reuse them.

    BAKEOFF_SHARED_DATA=... HF_HUB_OFFLINE=1 python benchmarks/demo_truth_levers.py --seed 7 --n 40 \\
        --floor 120 --candidates 3 --threshold 0.55 --dump /tmp/dev.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from bakeoff.cache import Cache
from bakeoff.demo import DEMO_PROMPT
from bakeoff.stdlib_corpus import stdlib_corpus
from bakeoff.truth.answerability import AnswerabilityOptions
from bakeoff.truth.generate import generate_truth
from bakeoff.truth.prompts import PromptControl
from bakeoff.truth.synthetic import DescribeOptions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--floor", type=int, default=60)
    ap.add_argument("--candidates", type=int, default=1)
    ap.add_argument("--regenerations", type=int, default=3)
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--prompt", choices=("default", "demo"), default="demo",
                    help="default: generate's built-in few-shot prompt; demo: the demo's (bakeoff.demo.DEMO_PROMPT)")
    ap.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "bakeoff-levers-cache")
    ap.add_argument("--dump", type=Path, default=None)
    ap.add_argument("--generations", type=Path, default=None, help="write every generation with its outcome (JSONL)")
    a = ap.parse_args()
    corpus = stdlib_corpus()
    opts = DescribeOptions(n=a.n, seed=a.seed, max_regenerations=a.regenerations, max_doc_chars=500, test_fraction=1.0,
                           min_doc_chars=a.floor, leak_threshold=1.0, specificity=None, candidates=a.candidates,
                           answerability=AnswerabilityOptions(threshold=a.threshold),
                           prompt=DEMO_PROMPT if a.prompt == "demo" else PromptControl())
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        done = generate_truth(corpus, options=opts, llm="local", out=Path(tmp) / "truth", cache=Cache(a.cache_dir),
                              progress=False, specificity="off", answerability="use")
    dt = time.perf_counter() - t0
    truth = done.truth
    assert truth is not None
    prov = truth.provenance
    row_of = {d: i for i, d in enumerate(corpus.ids)}
    print(f"settings: {vars(a)}")
    print(f"truth {dt:.1f} s (llm start {done.llm_startup_s:.1f} s), load average {os.getloadavg()}")
    print(f"documents {prov['documents']}; counts {prov['counts']}")
    print(f"rejections {prov['rejections']}; usage {done.usage.as_dict()}")
    rows = []
    for qid, q, meta in zip(truth.queries.ids, truth.queries.texts, truth.queries.metadata, strict=True):
        r = row_of[meta["source_doc"]]
        doc = " ".join(f"{corpus.titles[r]} {corpus.texts[r]}".split())
        rows.append({"qid": qid, "query": q, "doc_id": meta["source_doc"], "score": meta.get("answerability"),
                     "leak": meta["leak"], "attempt": meta["attempt"], "doc": doc[:400]})
    if a.dump:
        a.dump.write_text("".join(json.dumps(x) + "\n" for x in rows))
        print(f"wrote {len(rows)} kept queries to {a.dump}")
    if a.generations:
        a.generations.write_text("".join(json.dumps(g) + "\n" for g in prov["generations"]))


if __name__ == "__main__":
    main()
