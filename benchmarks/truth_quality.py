"""Does the specificity score tell a query's own document from a random one? (BEIR SciFact test)

For each query q with relevant document d (the first one in qrels/test.tsv) and a random
document r != d (seeded): score(q, d) and score(q, r) with :mod:`bakeoff.truth.specificity`
(the bundled Gemma 3 270M in-process unless ``--llm`` names a completions server), then

    ROC AUC = P(score(q, d) > score(q', r')) over own-document vs random-document pairs
              (sklearn.metrics.roc_auc_score; ties count 1/2)
    pairwise = share of queries with score(q, d) > score(q, r)

for two query sets: the human SciFact queries, and describe-mode queries written by the local
Gemma (``--generated N`` documents: the relevant documents of the first N test queries; leak
filter and specificity filter off, one generation each). Both score distributions are printed
side by side (quantiles), with the share of each set kept at several thresholds.

    python benchmarks/truth_quality.py [--data ../shared/data/scifact] [-n 300] [--generated 100]

Everything is cached (``$BAKEOFF_CACHE_DIR``), so a second run only prints.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from bakeoff.cache import Cache
from bakeoff.data import load_beir
from bakeoff.truth.specificity import SpecificityOptions, specificity_scores


def quantile_table(columns: dict[str, list[float]]) -> str:
    names = list(columns)
    lines = ["".ljust(8) + "".join(n.rjust(14) for n in names)]
    for label, fn in (("n", len), ("mean", np.mean), ("p10", lambda v: np.percentile(v, 10)),
                      ("p25", lambda v: np.percentile(v, 25)), ("median", np.median),
                      ("p75", lambda v: np.percentile(v, 75)), ("p90", lambda v: np.percentile(v, 90))):
        cells = []
        for n in names:
            v = columns[n]
            x = fn(v) if len(v) else float("nan")
            cells.append((f"{int(x)}" if label == "n" else f"{x:+.3f}").rjust(14))
        lines.append(label.ljust(8) + "".join(cells))
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        cells = [f"{np.mean(np.asarray(columns[n]) >= t):.0%}".rjust(14) for n in names]
        lines.append(f">= {t:.2f}".ljust(8) + "".join(cells))
    return "\n".join(lines)


def evaluate_set(name: str, queries: list[str], own: list[str], rnd: list[str], lm, cache: Cache,
                 opts: SpecificityOptions, others: list[str]) -> dict[str, list[float]]:
    t0 = time.perf_counter()
    stats: dict[str, int] = {}
    pos = specificity_scores(list(zip(queries, own, strict=True)), lm, options=opts, cache=cache, stats=stats,
                             others=others, progress=True)
    neg = specificity_scores(list(zip(queries, rnd, strict=True)), lm, options=opts, cache=cache, stats=stats,
                             others=others, progress=True)
    dt = time.perf_counter() - t0
    p, n = [s.score for s in pos], [s.score for s in neg]
    auc = roc_auc_score([1] * len(p) + [0] * len(n), p + n)
    pairwise = float(np.mean(np.asarray(p) > np.asarray(n)))
    lp_auc = roc_auc_score([1] * len(p) + [0] * len(n), [s.lp_doc for s in pos] + [s.lp_doc for s in neg])
    print(f"{name}: {len(p)} queries; ROC AUC {auc:.3f} (raw lp(q|d) without baseline: {lp_auc:.3f}); "
          f"own > random for {pairwise:.1%}; {stats['evaluated']} evaluations, {stats['cached']} cached, "
          f"{dt:.1f} s ({dt / max(1, stats['evaluated']):.2f} s per evaluation)")
    return {f"{name} own": p, f"{name} random": n}


def generated_queries(corpus, doc_ids: list[str], cache: Cache, seed: int) -> tuple[list[str], list[str]]:
    """One describe-mode query per document from the local Gemma (leak and specificity filters off)."""
    from bakeoff.data.model import Corpus
    from bakeoff.truth.llm import LLMClient
    from bakeoff.truth.local_llm import LocalLLMServer
    from bakeoff.truth.synthetic import DescribeOptions, describe_truth

    rows = [corpus.position[d] for d in doc_ids]
    sub = Corpus(tuple(doc_ids), tuple(corpus.texts[r] for r in rows), tuple(corpus.titles[r] for r in rows),
                 tuple({} for _ in rows))
    opts = DescribeOptions(n=len(sub), seed=seed, leak_threshold=1.0, max_regenerations=0, min_query_words=1,
                           min_doc_chars=0, specificity=None, test_fraction=1.0)
    t0 = time.perf_counter()
    with LocalLLMServer() as server, LLMClient(server.config(), cache=cache) as client:
        truth = describe_truth(sub, client, options=opts, progress=True)
    print(f"generated {len(truth.queries)} describe queries for {len(sub)} documents in "
          f"{time.perf_counter() - t0:.1f} s ({client.usage.summary()}); counts {truth.provenance['counts']}")
    src = [m["source_doc"] for m in truth.queries.metadata]
    return list(truth.queries.texts), src


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("BAKEOFF_SHARED_DATA", "../shared/data")) / "scifact")
    ap.add_argument("-n", type=int, default=300, help="human test queries scored")
    ap.add_argument("--generated", type=int, default=100, help="documents to generate describe queries for (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-doc-chars", type=int, default=1500)
    ap.add_argument("--baseline", choices=("none", "random"), default="none")
    ap.add_argument("--llm", default="local", help="local (in-process Gemma) or a completions server spec")
    ap.add_argument("--examples", type=Path, default=None, help="write the scored generated queries here (JSON)")
    args = ap.parse_args()

    from bakeoff.truth.specificity import open_likelihood

    ds = load_beir(args.data, split="test")
    corpus = ds.corpus
    rng = np.random.default_rng(args.seed)
    all_qids = [q for q in ds.queries.ids if q in ds.qrels and any(d in corpus for d in ds.qrels.relevant(q))]
    qids = all_qids[: args.n]
    qtext = dict(zip(ds.queries.ids, ds.queries.texts, strict=True))
    own_ids = [sorted(d for d in ds.qrels.relevant(q) if d in corpus)[0] for q in qids]

    def text(d: str) -> str:
        r = corpus.position[d]
        return f"{corpus.titles[r]} {corpus.texts[r]}".strip()

    def random_other(d: str, gen: np.random.Generator = rng) -> str:
        while True:
            x = corpus.ids[int(gen.integers(len(corpus)))]
            if x != d:
                return x

    cache = Cache()
    opts = SpecificityOptions(max_doc_chars=args.max_doc_chars, baseline=args.baseline, seed=args.seed)
    lm = open_likelihood(args.llm)
    print(f"SciFact test: {len(qids)} queries; scorer {lm.identity()}; baseline {args.baseline}; "
          f"documents cut to {args.max_doc_chars} chars")
    others = [text(d) for d in corpus.ids[:2000]] if args.baseline == "random" else []
    rnd_ids = [random_other(d) for d in own_ids]
    columns = {}
    t0 = time.perf_counter()
    human = [qtext[q] for q in qids]
    if human:
        columns.update(evaluate_set("human", human, [text(d) for d in own_ids], [text(d) for d in rnd_ids], lm, cache,
                                    opts, others))
    print(f"human set: {time.perf_counter() - t0:.1f} s")
    if args.generated:
        first_rel = [sorted(d for d in ds.qrels.relevant(q) if d in corpus)[0] for q in all_qids]
        gen_docs = list(dict.fromkeys(first_rel))[: args.generated]
        gq, src = generated_queries(corpus, gen_docs, cache, args.seed)
        rng_g = np.random.default_rng(args.seed + 1)  # its own stream: the same pairs whatever -n is
        g_rnd = [random_other(d, rng_g) for d in src]
        columns.update(evaluate_set("gemma", gq, [text(d) for d in src], [text(d) for d in g_rnd], lm, cache, opts,
                                    others))
        if args.examples:
            own = specificity_scores(list(zip(gq, [text(d) for d in src], strict=True)), lm, options=opts, cache=cache,
                                     others=others)
            args.examples.write_text(json.dumps([{"query": q, "doc": d, "doc_text": text(d)[:300], "score": s.score}
                                                 for q, d, s in zip(gq, src, own, strict=True)], indent=1))
    print()
    print("specificity score distributions (mean nats per query token; own document vs random document)")
    print(quantile_table(columns))


if __name__ == "__main__":
    main()
