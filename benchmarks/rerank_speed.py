"""Cross-encoder throughput, fp32 (sentence-transformers CrossEncoder on PyTorch) vs the
bf16 autocast fast mode, the int8 ONNX Runtime mode and the OpenVINO bf16 mode (when installed), on real SciFact (query,
BM25-candidate) pairs, plus how closely each fast mode agrees with fp32.

    flock /tmp/bakeoff-bench.lock env HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/rerank_speed.py \\
        --queries 10 --top 20

Prints pairs/second for each precision (pairs length-sorted and batched exactly as
the rerank arm does, after one untimed warm-up batch), the fast/fp32 speed ratios,
Pearson and Spearman correlation of the scores, and the mean per-query overlap of
the top 10 after reranking. The model is the bundled all-MiniLM-L6-v2 with a seeded,
untrained head (see ``bakeoff.models.cross_encoders``): agreement figures compare two
precisions of the same function, not ranking quality.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data" / "scifact"))
    ap.add_argument("--queries", type=int, default=10, help="first N test queries")
    ap.add_argument("--top", type=int, default=20, help="BM25 candidates per query")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from scipy.stats import spearmanr

    from bakeoff import load_beir
    from bakeoff.runner.context import Context
    from bakeoff.models.cross_encoders import CrossEncoderScorer
    from bakeoff.arms.lexical import BM25Arm
    from bakeoff.arms.rerank import pair_order

    ds = load_beir(args.data, split="test")
    queries = ds.queries.subset(ds.queries.ids[: args.queries])
    run = Context(corpus=ds.corpus, progress=False).search(BM25Arm(), queries, k=args.top)
    texts = ds.corpus.full_texts()
    owners, pairs = [], []
    for qi, qid in enumerate(queries.ids):
        for doc, _ in run[qid]:
            owners.append((qid, doc))
            pairs.append((queries.texts[qi], texts[ds.corpus.position[doc]]))
    order = pair_order(pairs)
    ordered = [pairs[i] for i in order]
    print(f"{len(pairs)} pairs ({len(queries)} queries x top {args.top}), batch {args.batch_size}, "
          f"max_length {args.max_length}, torch threads: default")

    figures: dict[str, dict[str, float]] = {}
    scores: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as onnx_dir:
        import importlib.util

        modes = [("fp32", "fp32", "torch"), ("bf16", "bf16", "torch"), ("int8", "int8", "torch")]
        if importlib.util.find_spec("openvino") is not None:
            modes.append(("openvino-bf16", "bf16", "openvino"))
        for label, precision, backend in modes:
            t0 = time.perf_counter()
            scorer = CrossEncoderScorer(precision=precision, max_length=args.max_length, onnx_dir=Path(onnx_dir),
                                        backend=backend)
            load_s = time.perf_counter() - t0
            scorer.score(ordered[: args.batch_size], batch_size=args.batch_size)  # warm-up
            t0 = time.perf_counter()
            s = scorer.score(ordered, batch_size=args.batch_size)
            dt = time.perf_counter() - t0
            out = np.empty(len(pairs), dtype=np.float64)
            out[order] = s
            scores[label] = out
            figures[label] = {"load_s": load_s, "score_s": dt, "pairs_per_s": len(pairs) / dt}
            print(f"{label}: load/export {load_s:6.1f} s   score {dt:7.1f} s   {len(pairs) / dt:7.1f} pairs/s")
    ratios: dict[str, float] = {}
    agreements: dict[str, dict[str, float]] = {}
    a = scores["fp32"]
    for fast in [m for m in scores if m != "fp32"]:
        b = scores[fast]
        overlap = []
        for qid in queries.ids:
            idx = [i for i, (q, _) in enumerate(owners) if q == qid]
            top_a = {owners[i][1] for i in sorted(idx, key=lambda i: -a[i])[:10]}
            top_b = {owners[i][1] for i in sorted(idx, key=lambda i: -b[i])[:10]}
            overlap.append(len(top_a & top_b) / max(1, min(10, len(idx))))
        agreements[fast] = {"pearson": float(np.corrcoef(a, b)[0, 1]), "spearman": float(spearmanr(a, b).statistic),
                            "top10_overlap": float(np.mean(overlap)), "max_abs_diff": float(np.abs(a - b).max())}
        ratios[fast] = figures[fast]["pairs_per_s"] / figures["fp32"]["pairs_per_s"]
        print(f"{fast}/fp32 speed ratio: {ratios[fast]:.2f}x;  agreement with fp32: "
              + ", ".join(f"{k} {v:.4f}" for k, v in agreements[fast].items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"figures": figures, "ratios": ratios, "agreement": agreements,
                                               "n_pairs": len(pairs)}, indent=1))


if __name__ == "__main__":
    main()
