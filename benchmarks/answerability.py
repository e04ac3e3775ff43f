"""Does the answerability score tell an answering document from a random one? (SciFact test + judged demo queries)

Two measurements, for each scorer of :mod:`bakeoff.truth.answerability`:

1. **SciFact test** (BEIR, human claims): for each query q with relevant document d (the first in
   qrels/test.tsv) and a random document r != d (seeded ``np.random.default_rng(seed)``):

       ROC AUC = P(score(q, d) > score(q', r'))   (sklearn.metrics.roc_auc_score; ties count 1/2)
       pairwise = share of queries with score(q, d) > score(q, r)

2. **Judged demo queries** (``benchmarks/data/answerability_judged.jsonl``): 80 queries the bundled
   Gemma 3 270M wrote for Python stdlib docstrings in a ``bakeoff demo`` run (leak filter 0.35), each
   judged by hand "answerable by its source document" (yes/no). ROC AUC of the score for that label,
   and the answerable share of the queries kept at several thresholds.

Scorers: ``use`` (the multilingual Universal Sentence Encoder cosine, the default), ``minilm`` (the
bundled all-MiniLM-L6-v2 bi-encoder cosine: the dense arm's model) and
``bundled-cross-encoder`` (the same weights loaded as the rerank arm's default cross-encoder, whose
classification head is missing from the checkpoint and freshly seeded: what the rerank arm's default
scores with; the filter refuses it), plus ``--cross-encoder MODEL`` for a trained reranker where its
files exist. Scores are cached (``$BAKEOFF_CACHE_DIR``), so a second run only prints.

    python benchmarks/answerability.py [--data ../shared/data/scifact] [-n 300]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score

from bakeoff.cache import Cache
from bakeoff.data import load_beir
from bakeoff.truth.answerability import (
    AnswerabilityOptions,
    BiEncoderAnswerability,
    CrossEncoderAnswerability,
    answerability_scores,
)

JUDGED = Path(__file__).parent / "data" / "answerability_judged.jsonl"


class UntrainedCrossEncoder:
    """The rerank arm's default scorer (bundled MiniLM as a cross-encoder, seeded head), for measurement only."""

    kind = "cross-encoder"
    default_threshold = 0.0

    def __init__(self) -> None:
        from bakeoff.models.cross_encoders import CrossEncoderScorer

        self._scorer = CrossEncoderScorer()

    def identity(self) -> dict[str, Any]:
        return {"scorer": self.kind, **self._scorer.identity()}

    def score(self, pairs):  # type: ignore[no-untyped-def]
        return self._scorer.score(pairs)


def scifact(scorer, name: str, *, data: Path, n: int, seed: int, cache: Cache) -> None:  # type: ignore[no-untyped-def]
    ds = load_beir(data, split="test")
    corpus = ds.corpus
    qids = [q for q in ds.queries.ids if q in ds.qrels and any(d in corpus for d in ds.qrels.relevant(q))][:n]
    qtext = dict(zip(ds.queries.ids, ds.queries.texts, strict=True))
    own = [min(d for d in ds.qrels.relevant(q) if d in corpus) for q in qids]
    rng = np.random.default_rng(seed)

    def other(d: str) -> str:
        while True:
            x = corpus.ids[int(rng.integers(len(corpus)))]
            if x != d:
                return x

    rnd = [other(d) for d in own]

    def text(d: str) -> str:
        r = corpus.position[d]
        return f"{corpus.titles[r]}\n{corpus.texts[r]}"

    stats: dict[str, int] = {}
    t0 = time.perf_counter()
    pos = answerability_scores([(qtext[q], text(d)) for q, d in zip(qids, own, strict=True)], scorer,
                               options=AnswerabilityOptions(), cache=cache, stats=stats)
    neg = answerability_scores([(qtext[q], text(d)) for q, d in zip(qids, rnd, strict=True)], scorer,
                               options=AnswerabilityOptions(), cache=cache, stats=stats)
    dt = time.perf_counter() - t0
    auc = roc_auc_score([1] * len(pos) + [0] * len(neg), pos + neg)
    pw = float(np.mean(np.asarray(pos) > np.asarray(neg)))
    print(f"SciFact test, {name}: {len(qids)} queries; ROC AUC {auc:.3f}; own > random for {pw:.1%}; "
          f"median own {np.median(pos):+.3f} vs random {np.median(neg):+.3f}; {stats['evaluated']} scored, "
          f"{stats['cached']} cached, {dt:.1f} s")


def judged(scorer, name: str, *, cache: Cache, thresholds: list[float]) -> None:  # type: ignore[no-untyped-def]
    from bakeoff.stdlib_corpus import stdlib_corpus

    corpus = stdlib_corpus()
    rows = [json.loads(line) for line in JUDGED.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r["doc_id"] in corpus]
    pairs = []
    for r in rows:
        i = corpus.position[r["doc_id"]]
        pairs.append((r["query"], f"{corpus.titles[i]}\n{corpus.texts[i]}" if corpus.titles[i] else corpus.texts[i]))
    s = np.asarray(answerability_scores(pairs, scorer, options=AnswerabilityOptions(), cache=cache))
    y = np.asarray([bool(r["answerable"]) for r in rows])
    print(f"judged demo queries, {name}: {len(rows)} ({int(y.sum())} answerable); ROC AUC {roc_auc_score(y, s):.3f}")
    leak_ok = np.asarray([r["outcome_at_leak_0.35"] != "leak" for r in rows])
    print(f"  answerable among leak <= 0.35: {int(y[leak_ok].sum())}/{int(leak_ok.sum())}; among leak > 0.35: "
          f"{int(y[~leak_ok].sum())}/{int((~leak_ok).sum())}")
    for t in thresholds:
        k = s >= t
        share = f"{y[k].mean():.0%}" if k.any() else "-"
        print(f"  keep >= {t:+.2f}: {int(k.sum())} kept, {int(y[k].sum())} answerable ({share})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("BAKEOFF_SHARED_DATA", "../shared/data")) / "scifact")
    ap.add_argument("-n", type=int, default=300, help="SciFact test queries scored")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cross-encoder", default=None, help="also a trained cross-encoder (hub id or folder)")
    ap.add_argument("--no-untrained", action="store_true", help="skip the bundled (untrained-head) cross-encoder")
    args = ap.parse_args()
    cache = Cache()
    scorers: list[tuple[str, Any, list[float]]] = [
        ("use", BiEncoderAnswerability(model="use"), [0.4, 0.45, 0.5, 0.55, 0.6]),
        ("minilm", BiEncoderAnswerability(), [0.4, 0.5, 0.55, 0.6, 0.65, 0.7])]
    if not args.no_untrained:
        scorers.append(("bundled-cross-encoder (untrained head)", UntrainedCrossEncoder(), [-0.5, 0.0, 0.5]))
    if args.cross_encoder:
        scorers.append((args.cross_encoder, CrossEncoderAnswerability(model=args.cross_encoder), [-2.0, 0.0, 2.0]))
    for name, scorer, thresholds in scorers:
        if args.n and args.data.exists():
            scifact(scorer, name, data=args.data, n=args.n, seed=args.seed, cache=cache)
        judged(scorer, name, cache=cache, thresholds=thresholds)


if __name__ == "__main__":
    main()
