"""Anchor: the dense MiniLM arm on BEIR SciFact reproduces the published MTEB figures.

MTEB (all-MiniLM-L6-v2, SciFact test): NDCG@10 0.64508, Recall@10 0.78333,
MRR@10 0.60472. Matching them within 5e-4 checks model loading, input
formatting (title + " " + text), normalisation, exact search, cutoffs and
metrics end to end. The corpus encode (~150 s on 2 cores) goes to the session
cache, so it runs once per CI run and later tests reuse it.
"""

from __future__ import annotations

import pytest

from bakeoff.arms.dense import DenseArm
from bakeoff.metrics import score_run
from bakeoff.runner.context import Context

pytestmark = pytest.mark.slow  # SciFact and a real model

MTEB = {"ndcg@10": 0.64508, "recall@10": 0.78333, "mrr@10": 0.60472}


def test_dense_minilm_reproduces_mteb_scifact(scifact, shared_cache) -> None:
    arm = DenseArm()  # no model= : the offline bundled MiniLM
    ctx = Context(scifact.corpus, cache=shared_cache, progress=False)
    run = ctx.search(arm, scifact.queries, k=100)
    ev = score_run(run, scifact.qrels, list(MTEB), query_ids=scifact.queries.ids)
    assert len(ev.query_ids) == 300
    print("dense MiniLM on SciFact test: " + ", ".join(f"{m} {ev.means[m]:.5f}" for m in MTEB))
    for measure, published in MTEB.items():
        assert ev.means[measure] == pytest.approx(published, abs=5e-4), (measure, ev.means[measure])
    # every SciFact test query has a relevant document and an answer: the three averaging rules agree
    for rule in ("trec_eval", "trec_eval-c"):
        other = score_run(run, scifact.qrels, list(MTEB), query_ids=scifact.queries.ids, averaging=rule)
        assert other.query_ids == tuple(sorted(ev.query_ids)) and other.means == pytest.approx(ev.means, abs=1e-12)
