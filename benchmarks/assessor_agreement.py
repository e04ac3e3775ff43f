"""Agreement of the LLM assessor (``bakeoff assess``) with SciFact's human labels.

    python benchmarks/assessor_agreement.py [--scifact ../shared/data/scifact] [-n 100] [--llm local]
        [--methods umbrela,expected,yesno]

Pairs (seeded): ``n`` judged-relevant (query, document) pairs drawn from the test qrels, and
``n`` hard non-relevant pairs: for ``n`` drawn test queries, the highest BM25-ranked
document not judged relevant (SciFact judges only relevant documents, so "non-relevant"
here means "not labelled relevant", the usual reading for this check). Each pair is judged
by each method of :func:`bakeoff.truth.judging.assess.judge_pairs` (``umbrela``: the sampled JSON
grade; ``expected``: the expected grade from the first token's probabilities; ``yesno``:
P(yes)) or :func:`bakeoff.truth.judging.assess.judge_likelihood` (``likelihood``: query-likelihood PMI
against random documents, ``likelihood:none`` against the empty document; the model runs
in-process); a grade ``>= t`` counts as relevant, for ``t`` = 2 (the merge rule's default) and 1.
Printed per method: grade distribution per class, accuracy, Cohen's kappa
(``sklearn.metrics.cohen_kappa_score``), ROC AUC of the score (P(relevant) where the method
reads probabilities, the PMI for ``likelihood``, else the grade), failures, wall time per pair.
Answers are cached, so a re-run prints the same figures in seconds.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import numpy as np


def main() -> None:
    from sklearn.metrics import cohen_kappa_score, roc_auc_score

    from bakeoff.cache import Cache, default_cache_dir
    from bakeoff.data import load_beir
    from bakeoff.runner.config import build_arms, parse_arm_spec
    from bakeoff.runner.run import run_bakeoff
    from bakeoff.truth.judging.assess import AssessOptions, _by_likelihood, _doc_text, judge_pairs
    from bakeoff.truth.llm.open import open_llm

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scifact", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"))
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--llm", default="local")
    ap.add_argument("--max-doc-chars", type=int, default=1000)
    ap.add_argument("--methods", default="umbrela,expected,yesno")
    args = ap.parse_args()
    ds = load_beir(args.scifact, split="test")
    cache = Cache(default_cache_dir())
    rng = np.random.default_rng(args.seed)
    rel_pairs = sorted((q, d) for q in ds.qrels for d in ds.qrels.relevant(q) if d in ds.corpus and q in ds.queries)
    # a permutation, then its first n: a smaller n grades a prefix of the same pairs (cached answers reused)
    pos = [rel_pairs[int(i)] for i in rng.permutation(len(rel_pairs))[:args.n]]
    neg_order = rng.permutation(len(sorted(q for q in ds.qrels if q in ds.queries)))
    results = run_bakeoff(ds, build_arms([parse_arm_spec("bm25")]), k=10, depth=20, cache=cache, progress=False)
    run = results.arms[0].run
    qids = sorted(q for q in ds.qrels if q in ds.queries)
    neg = []
    for i in neg_order:
        q = qids[int(i)]
        top = next((d for d in run.doc_ids(q) if d not in ds.qrels.relevant(q)), None)
        if top is not None:
            neg.append((q, top))
        if len(neg) == args.n:
            break
    pairs = [p for pair in zip(pos, neg) for p in pair]
    labels = [1, 0] * min(len(pos), len(neg))
    texts = [(ds.queries[q].text, _doc_text(ds.corpus, d, args.max_doc_chars)) for q, d in pairs]
    methods = args.methods.split(",")
    chat_methods = [m for m in methods if not m.startswith("likelihood")]
    for method in (m for m in methods if m.startswith("likelihood")):
        baseline = method.partition(":")[2] or "random"
        t1 = time.perf_counter()
        judged, usage, config, _ = _by_likelihood(
            args.llm, texts, ds.corpus, cache=cache, progress=True,
            options=AssessOptions(max_doc_chars=args.max_doc_chars, method="likelihood", baseline=baseline,
                                  seed=args.seed))
        print(f"assessor {config['identity']} in-process")
        _print_method(method, judged, labels, time.perf_counter() - t1, usage, cohen_kappa_score, roc_auc_score)
    if not chat_methods:
        return
    t0 = time.perf_counter()
    with open_llm(args.llm, cache=cache) as client:
        started = time.perf_counter() - t0
        model = client.config.identity
        print(f"SciFact test: {len(pos)} relevant + {len(neg)} BM25-top non-relevant pairs (seed {args.seed}); "
              f"assessor {model}; server start-up {started:.1f} s")
        for method in chat_methods:
            before = client.usage.as_dict()
            t1 = time.perf_counter()
            judged = judge_pairs(client, texts, options=AssessOptions(max_doc_chars=args.max_doc_chars, method=method),
                                 progress=True)
            elapsed = time.perf_counter() - t1
            usage = {k: v - before[k] for k, v in client.usage.as_dict().items()}
            _print_method(method, judged, labels, elapsed, usage, cohen_kappa_score, roc_auc_score)


def _print_method(method, judged, labels, elapsed, usage, cohen_kappa_score, roc_auc_score) -> None:  # type: ignore[no-untyped-def]
    ok = [i for i, j in enumerate(judged) if j.ok]
    grades = np.array([judged[i].grade for i in ok])
    scores = np.array([judged[i].score if judged[i].score is not None else
                       judged[i].p_relevant if judged[i].p_relevant is not None else judged[i].grade for i in ok])
    y = np.array([labels[i] for i in ok])
    print(f"[{method}] {elapsed:.1f} s ({elapsed / max(1, len(judged)):.2f} s/pair); {usage['cache_hits']} cached; "
          f"{len(judged) - len(ok)} failures; {usage['prompt_tokens']} prompt + {usage['completion_tokens']} "
          f"completion tokens")
    for name, cls in (("relevant", 1), ("non-relevant", 0)):
        c = Counter(int(g) for g, t in zip(grades, y) if t == cls)
        mean = float(np.mean([g for g, t in zip(grades, y) if t == cls])) if c else float("nan")
        print(f"  grades of {name:>12} pairs: " + ", ".join(f"{g}: {c.get(g, 0)}" for g in range(4))
              + f"; mean {mean:.2f}")
    for t in (2, 1):
        pred = (grades >= t).astype(int)
        acc = float(np.mean(pred == y)) if len(y) else float("nan")
        kappa = float(cohen_kappa_score(y, pred)) if len(set(y)) > 1 else float("nan")
        print(f"  relevant iff grade >= {t}: accuracy {acc:.3f}, Cohen's kappa {kappa:.3f} "
              f"(predicted relevant {int(pred.sum())} of {len(pred)})")
    if len(set(y)) > 1:
        print(f"  ROC AUC of the score: {roc_auc_score(y, scores):.3f}")


if __name__ == "__main__":
    main()
