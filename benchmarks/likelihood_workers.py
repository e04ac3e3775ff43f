"""Query likelihood scored in one process against one worker process per core (``bakeoff assess --method
likelihood``, ``calibrate --pool-depth``, the specificity filter).

Usage::

    flock /tmp/bakeoff-bench.lock .venv/bin/python benchmarks/likelihood_workers.py [--data ../shared/data/scifact]
        [-n 60] [--llm-model NAME] [--json FILE]

Scores ``n`` (claim, relevant abstract) pairs of the test split with the random-document baseline (three
reference documents plus a spare, so about five evaluations a pair), first in the calling process
(``workers=1``) and then with :func:`bakeoff.truth.filters.specificity.default_workers` worker processes, no cache,
the bundled model given (default: the default of ``--llm local``). Prints both wall times, the ratio (serial
is the reference, measured in the same run), the load average, and whether the scores are identical (they
must be: each run of one document goes whole to one worker).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BAKEOFF_SHARED_DATA", ROOT.parent / "shared" / "data"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA / "scifact")
    ap.add_argument("-n", type=int, default=60)
    ap.add_argument("--llm-model", default="", help="bundled model name (default: the default of --llm local)")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import numpy as np

    from bakeoff.calibration_pipeline import dataset_spec
    from bakeoff.data.datasets import open_dataset
    from bakeoff.models.gguf import resolve_local_model
    from bakeoff.truth.filters.specificity import (
        LlamaLikelihood,
        SpecificityOptions,
        default_workers,
        specificity_scores,
    )

    ds, _ = open_dataset(dataset_spec(str(a.data)))
    rows = {d: i for i, d in enumerate(ds.corpus.ids)}
    text = {qid: t for qid, t in zip(ds.queries.ids, ds.queries.texts, strict=True)}
    pairs = [(text[qid], f"{ds.corpus.titles[rows[d]]}\n{ds.corpus.texts[rows[d]]}")
             for qid, judged in ds.qrels.judgments.items() for d, g in judged.items() if g > 0 and d in rows and qid in text]
    rng = np.random.default_rng(0)
    pairs = [pairs[int(i)] for i in sorted(rng.choice(len(pairs), size=min(a.n, len(pairs)), replace=False))]
    others = [f"{ds.corpus.titles[int(i)]}\n{ds.corpus.texts[int(i)]}"
              for i in rng.choice(len(ds.corpus), size=12, replace=False)]
    opts = SpecificityOptions(max_doc_chars=1000)
    model = resolve_local_model(a.llm_model)
    workers = default_workers()
    print(f"{len(pairs)} pairs of {a.data.name}, random baseline ({opts.n_random} + 1 reference documents); model "
          f"{model.name}; {len(os.sched_getaffinity(0))} usable cores, {workers} workers", flush=True)
    runs = {}
    with LlamaLikelihood(model_path=model.path, n_ctx=4096) as lm:
        for name, w in (("one process", 1), (f"{workers} worker processes", workers)):
            stats: dict[str, int] = {}
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            scores = specificity_scores(pairs, lm, options=opts, others=others, workers=w, stats=stats)
            wall = time.perf_counter() - t0
            runs[name] = {"workers": w, "wall_s": round(wall, 2), "evaluations": stats["evaluated"],
                          "load_before": round(load, 2), "scores": [x.score for x in scores]}
            print(f"  {name:<22} {wall:7.1f} s  {stats['evaluated'] / wall:.2f} evaluations/s  (load {load:.1f})",
                  flush=True)
    serial, parallel = runs["one process"], runs[f"{workers} worker processes"]
    ratio = parallel["wall_s"] / serial["wall_s"]
    same = serial["scores"] == parallel["scores"]
    print(f"wall time with workers / in one process: {ratio:.2f} ({parallel['wall_s']:.1f} s vs {serial['wall_s']:.1f} s;"
          f" {1 / ratio:.2f}x faster); scores identical: {same}")
    if a.json:
        a.json.write_text(json.dumps({"pairs": len(pairs), "model": model.name, "workers": workers, "ratio": round(ratio, 3),
                                      "identical": same, "runs": {k: {x: y for x, y in v.items() if x != "scores"}
                                                                  for k, v in runs.items()}}, indent=2))


if __name__ == "__main__":
    main()
