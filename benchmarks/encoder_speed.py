"""Encoder speed: raw sentence-transformers fp32 vs the OpenVINO fast mode, in one run, on SciFact.

    flock /tmp/bakeoff-bench.lock env HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/encoder_speed.py \\
        --rounds 2 --pairs-queries 20

1. **Bi-encoder** (the bundled all-MiniLM-L6-v2): the SciFact corpus (or its first ``--docs``)
   encoded by ``SentenceTransformer.encode`` (fp32 PyTorch, batch 32, as a user would) and by
   ``dense:backend=openvino`` (bf16 OpenVINO, length-sorted batches of 32), interleaved
   fp32/fast/fp32/fast over ``--rounds`` so load drift hits both (1 s pause before each timed
   run); docs/s of each (best round, and every round's seconds) and the fast/fp32 time ratio. With the whole corpus, NDCG@10 of both dense arms on the
   test queries (queries fp32 on both sides, exact dot-product top 10,
   :func:`bakeoff.metrics.score_run`).
2. **Cross-encoder**: (query, BM25 top-``--pairs-top``) pairs of the first ``--pairs-queries``
   test queries, scored by the fp32 PyTorch CrossEncoder and by ``backend=openvino`` (bf16);
   pairs/s and the speed-up.
3. **Cross-process cache**: a fresh process building the fast encoder's compiled model with an
   empty OpenVINO cache folder (trace + compile) vs a second fresh process with that folder
   filled (read IR + cached compile): seconds and the conversions each made.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BUILD = r"""
import json, time
t0 = time.perf_counter()
from bakeoff.models import _openvino
from bakeoff.models.encoders import make_encoder
enc = make_encoder(None, backend="openvino")
enc._st._load()
t1 = time.perf_counter()
enc._compile()
print(json.dumps({"compile_s": time.perf_counter() - t1, "conversions": _openvino.conversions()}))
"""


def cache_hit(cache: Path) -> dict[str, float]:
    env = {**os.environ, "BAKEOFF_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", BUILD], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.environ.get("BAKEOFF_SHARED_DATA", str(Path(__file__).resolve().parents[2]
                                                                               / "shared" / "data")) + "/scifact")
    ap.add_argument("--docs", type=int, default=0, help="first N corpus documents (0 = all, and NDCG@10)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--pairs-queries", type=int, default=20)
    ap.add_argument("--pairs-top", type=int, default=20)
    ap.add_argument("--skip", default="", help="comma list of parts to skip: encoder, cross, cache")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from bakeoff import load_beir
    from bakeoff.data.model import Run
    from bakeoff.metrics import score_run
    from bakeoff.models.encoders import make_encoder

    ds = load_beir(args.data, split="test")
    texts = ds.corpus.full_texts()
    ids = list(ds.corpus.ids)
    if args.docs:
        texts, ids = texts[: args.docs], ids[: args.docs]
    if "encoder" not in skip:
        fp32 = make_encoder(None)
        st = fp32._load()
        fast = make_encoder(None, backend="openvino")
        fast.encode(texts[:8], kind="doc")  # compile + warm up, untimed
        st.encode(texts[:8], batch_size=args.batch_size)
        times: dict[str, list[float]] = {"fp32": [], "fast": []}
        vecs: dict[str, np.ndarray] = {}
        for r in range(args.rounds):
            for name in ("fp32", "fast"):
                time.sleep(1.0)  # PyTorch's OpenMP threads spin for a moment after a run: not the next one's time
                t0 = time.perf_counter()
                if name == "fp32":
                    v = st.encode(texts, batch_size=args.batch_size, normalize_embeddings=True, convert_to_numpy=True)
                else:
                    v = fast.encode(texts, kind="doc", batch_size=args.batch_size)
                times[name].append(time.perf_counter() - t0)
                vecs[name] = np.asarray(v, dtype=np.float32)
                print(f"round {r + 1} {name}: {times[name][-1]:.1f} s", flush=True)
        best = {k: min(v) for k, v in times.items()}
        print(f"\nbi-encoder, {len(texts)} documents: fp32 {best['fp32']:.1f} s ({len(texts) / best['fp32']:.1f} docs/s), "
              f"fast {best['fast']:.1f} s ({len(texts) / best['fast']:.1f} docs/s); "
              f"fast/fp32 time ratio {best['fast'] / best['fp32']:.3f} (target <= 0.25)")
        cos = np.sum(vecs["fp32"] * vecs["fast"], axis=1)
        print(f"cosine(fast, fp32) per document: min {cos.min():.6f}, mean {cos.mean():.6f}")
        if not args.docs:
            q = fp32.encode(list(ds.queries.texts), kind="query")
            for name in ("fp32", "fast"):
                scores = q @ vecs[name].T
                top = np.argsort(-scores, axis=1, kind="stable")[:, :10]
                run = Run.from_scores(name, {qid: {ids[j]: float(scores[i, j]) for j in top[i]}
                                             for i, qid in enumerate(ds.queries.ids)})
                print(f"NDCG@10 {name}: {score_run(run, ds.qrels, ['ndcg@10']).means['ndcg@10']:.4f}")
    if "cross" not in skip:
        from bakeoff.arms.lexical import BM25Arm
        from bakeoff.arms.rerank import pair_order
        from bakeoff.models.cross_encoders import CrossEncoderScorer
        from bakeoff.runner.context import Context

        queries = ds.queries.subset(ds.queries.ids[: args.pairs_queries])
        run = Context(corpus=ds.corpus, progress=False).search(BM25Arm(), queries, k=args.pairs_top)
        full = ds.corpus.full_texts()
        pairs = [(queries.texts[i], full[ds.corpus.position[d]]) for i, qid in enumerate(queries.ids) for d, _ in run[qid]]
        pairs = [pairs[i] for i in pair_order(pairs)]
        scorers = {"fp32": CrossEncoderScorer(seed=0), "fast": CrossEncoderScorer(seed=0, backend="openvino", precision="bf16")}
        for s in scorers.values():
            s.score(pairs[: args.batch_size], batch_size=args.batch_size)
        ptimes: dict[str, list[float]] = {"fp32": [], "fast": []}
        for _ in range(args.rounds):
            for name, s in scorers.items():
                time.sleep(1.0)
                t0 = time.perf_counter()
                s.score(pairs, batch_size=args.batch_size)
                ptimes[name].append(time.perf_counter() - t0)
        pb = {k: len(pairs) / min(v) for k, v in ptimes.items()}
        print("cross-encoder seconds per round: " + ", ".join(f"{k} {[round(x, 2) for x in v]}" for k, v in ptimes.items()))
        print(f"\ncross-encoder, {len(pairs)} pairs: fp32 {pb['fp32']:.1f} pairs/s, fast {pb['fast']:.1f} pairs/s, "
              f"{pb['fast'] / pb['fp32']:.2f}x (target >= 5x)")
    if "cache" not in skip:
        with tempfile.TemporaryDirectory(prefix="ov-cache-") as tmp:
            cold, warm = cache_hit(Path(tmp)), cache_hit(Path(tmp))
        print(f"\nfast encoder build in a fresh process: empty cache {cold['compile_s']:.2f} s "
              f"({cold['conversions']} conversion), filled cache {warm['compile_s']:.2f} s "
              f"({warm['conversions']} conversions)")


if __name__ == "__main__":
    main()
