"""On a SciFact slice with the real MiniLM dense arm: pgvector exact and FAISS flat return the dense arm's
exact top-10 (same embeddings); HNSW indexes report their recall of it; pgfts runs beside BM25."""

from __future__ import annotations

from typing import Any

import pytest

from bakeoff.arms.ann import recall_of_exact
from bakeoff.data.model import Corpus, Dataset
from bakeoff.runner.config import build_arms, parse_arm_spec
from bakeoff.runner.run import run_bakeoff

pytestmark = pytest.mark.slow  # PostgreSQL, SciFact and a real model

pytest.importorskip("sentence_transformers", reason="the [dense] extra is not installed")
pytest.importorskip("faiss", reason="the [ann] extra is not installed")


def test_scifact_slice_pgvector_exact_equals_dense(scifact: Any, shared_cache: Any, pg_dsn: str) -> None:
    judged = sorted({d for q in scifact.qrels for d in scifact.qrels[q]})[:150]
    keep = sorted(set(judged) | set(scifact.corpus.ids[:250]))
    rows = [scifact.corpus.position[d] for d in keep]
    c = scifact.corpus
    corpus = Corpus(ids=tuple(c.ids[i] for i in rows), texts=tuple(c.texts[i] for i in rows),
                    titles=tuple(c.titles[i] for i in rows), metadata=tuple(c.metadata[i] for i in rows))
    qids = [q for q in scifact.queries.ids if any(d in corpus for d in scifact.qrels.get(q))][:40]
    ds = Dataset(corpus, scifact.queries.subset(qids), scifact.qrels, name="scifact-slice")
    specs = ["bm25", f"pgfts:dsn={pg_dsn}", f"fts-any=pgfts:dsn={pg_dsn},match=any", "dense", f"pgx=pgvector:base=dense,dsn={pg_dsn}",
             f"pgh=pgvector:base=dense,dsn={pg_dsn},index=hnsw", "flat=ann:base=dense,index=flat",
             "hnsw=ann:base=dense,index=hnsw,M=16,ef_search=32"]
    arms = build_arms([parse_arm_spec(s) for s in specs])
    res = run_bakeoff(ds, arms, k=10, depth=10, cache=shared_cache, progress=False)
    runs = {a.name: a.run for a in res.arms}
    dense = runs["dense"]
    for name in ("pgx", "flat"):
        for q in qids:
            assert runs[name].doc_ids(q, 10) == dense.doc_ids(q, 10), (name, q)
            assert [s for _, s in runs[name][q]] == pytest.approx([s for _, s in dense[q]], abs=1e-5)
    extra = {a.name: a.extra.get("extra_metrics", {}) for a in res.arms}
    assert extra["flat"]["ann_recall@10"] == 1.0
    assert extra["hnsw"]["ann_recall@10"] == pytest.approx(recall_of_exact(runs["hnsw"], dense, k=10, query_ids=qids))
    assert extra["hnsw"]["ann_recall@10"] >= 0.9
    assert extra["pgh"]["ann_recall@10"] == pytest.approx(recall_of_exact(runs["pgh"], dense, k=10, query_ids=qids))
    assert "ann_recall@10" not in extra["pgx"]
    metrics = {a.name: a.evaluation.means for a in res.arms}
    # web-search AND semantics finds little for claim-length queries; OR-ing the terms works like BM25.
    assert metrics[f"pgfts:dsn={pg_dsn}"]["ndcg@10"] < metrics["fts-any"]["ndcg@10"]
    assert 0.4 < metrics["fts-any"]["ndcg@10"] <= 1.0 and 0.4 < metrics["bm25"]["ndcg@10"] <= 1.0
