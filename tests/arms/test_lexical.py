"""Lexical arms: golden scores computed independently, OOV, stemming, masks, the tie rule."""

import math

import numpy as np
import pytest

from bakeoff.arms import BM25Arm, TfidfArm
from bakeoff.data.model import Corpus, Document, Queries
from bakeoff.errors import ConfigError
from bakeoff.runner.context import Context

DOCS = [
    Document("d1", "the cat sat on the mat"),
    Document("d2", "dogs and cats are friends"),
    Document("d3", "a cat chased a cat"),
    Document("d4", "nothing here"),
]


def corpus():
    return Corpus.from_documents(DOCS)


def search(arm, texts, k=10, mask=None):
    c = corpus()
    ctx = Context(corpus=c, progress=False)
    arm.index(c, ctx=ctx)
    q = Queries.from_dict({f"q{i}": t for i, t in enumerate(texts)})
    return arm.search(q, k=k, ctx=ctx, mask=mask)


def test_bm25_lucene_scores_match_hand_computation():
    # tokens after English stopwords: d1 [cat, sat, mat], d2 [dogs, cats, friends], d3 [cat, chased, cat],
    # d4 [nothing, here] ("here" is not in bm25s' English list)
    lens = {"d1": 3, "d2": 3, "d3": 3, "d4": 2}
    avgdl = sum(lens.values()) / 4
    k1, b, n = 1.5, 0.75, 4
    idf = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))  # "cat" in d1, d3
    def score(tf, dl):
        return idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))  # Lucene drops the (k1 + 1) factor
    run = search(BM25Arm(), ["cat"])
    got = dict(run["q0"])
    assert set(got) == {"d1", "d3"}  # documents without the term are not ranked
    assert got["d1"] == pytest.approx(score(1, 3), rel=1e-6)
    assert got["d3"] == pytest.approx(score(2, 3), rel=1e-6)
    assert run.doc_ids("q0") == ["d3", "d1"]


def test_all_oov_query_returns_empty_ranking():
    run = search(BM25Arm(), ["zebra quokka", "the and a", ""])
    assert run["q0"] == () and run["q1"] == () and run["q2"] == ()
    run = search(TfidfArm(), ["zebra quokka"])
    assert run["q0"] == ()


def test_stemmer_applies_at_index_and_query_time():
    plain = search(BM25Arm(), ["cats"])
    stemmed = search(BM25Arm(stemmer="english"), ["cats"])
    assert plain.doc_ids("q0") == ["d2"]
    assert set(stemmed.doc_ids("q0")) == {"d1", "d2", "d3"}


def test_spanish_stemmer_and_stopwords():
    c = Corpus.from_documents([Document("a", "Los conductores conducían rápidamente"), Document("b", "el perro")])
    arm = BM25Arm(stemmer="spanish")
    assert arm.config()["stopwords"] == "spanish"
    ctx = Context(corpus=c, progress=False)
    arm.index(c, ctx=ctx)
    run = arm.search(Queries.from_dict({"q": "conductor conducir"}), k=5, ctx=ctx)
    assert run.doc_ids("q") == ["a"]
    with pytest.raises(ConfigError, match="unknown stemmer language 'klingon'"):
        BM25Arm(stemmer="klingon", stopwords="none")
    with pytest.raises(ConfigError, match="unknown stopword language 'klingon'"):
        BM25Arm(stopwords="klingon")


def test_mask_excludes_rows_per_query():
    mask = {"q0": np.array([True, False, False, True]), "q1": np.array([False, True, True, True])}
    run = search(BM25Arm(), ["cat", "cat"], mask=mask)
    assert run.doc_ids("q0") == ["d1"] and run.doc_ids("q1") == ["d3"]
    run = search(TfidfArm(), ["cat", "cat"], mask=mask)
    assert run.doc_ids("q0") == ["d1"] and run.doc_ids("q1") == ["d3"]


def test_ties_follow_the_package_rule():
    c = Corpus.from_documents([Document(i, "same words here") for i in ["a", "c", "b"]])
    for arm in (BM25Arm(), TfidfArm()):
        ctx = Context(corpus=c, progress=False)
        arm.index(c, ctx=ctx)
        assert arm.search(Queries.from_dict({"q": "words"}), k=2, ctx=ctx).doc_ids("q") == ["c", "b"]


def test_tfidf_cosine_matches_hand_computation():
    # sublinear tf, smooth idf, l2 norm; "cat" appears in d1 (tf 1) and d3 (tf 2)
    run = search(TfidfArm(), ["cat"])
    n = 4
    idf = {t: math.log((1 + n) / (1 + df)) + 1 for t, df in
           {"cat": 2, "sat": 1, "mat": 1, "chased": 1}.items()}
    d1 = np.array([idf["cat"], idf["sat"], idf["mat"]])
    d3 = np.array([(1 + math.log(2)) * idf["cat"], idf["chased"]])
    got = dict(run["q0"])
    assert got["d1"] == pytest.approx(d1[0] / np.linalg.norm(d1), rel=1e-9)
    assert got["d3"] == pytest.approx(d3[0] / np.linalg.norm(d3), rel=1e-9)


def test_config_feeds_fingerprint():
    assert BM25Arm().fingerprint() == BM25Arm(name="other").fingerprint()
    assert BM25Arm().fingerprint() != BM25Arm(k1=1.2).fingerprint()
    assert BM25Arm().fingerprint() != BM25Arm(stemmer="english").fingerprint()
    assert "bm25s" in BM25Arm().versions()
    with pytest.raises(ConfigError):
        BM25Arm(method="okapi-ish")


@pytest.mark.slow  # SciFact
def test_scifact_bm25_reproduces_published_tutorial(scifact):
    """bm25s default (lucene, k1=1.5, b=0.75, English stopwords), title + text, unstemmed and
    Snowball-stemmed: the tutorial's 0.6617/0.7739/0.6312 and 0.6863/0.8187/0.6492."""
    from bakeoff.runner.run import run_bakeoff

    res = run_bakeoff(scifact, [BM25Arm(name="bm25"), BM25Arm(name="stem", stemmer="english")], k=10,
                      progress=False)
    got = {a.name: a.evaluation.means for a in res.arms}
    assert res.n_evaluated == 300
    for name, (ndcg, recall, mrr) in {"bm25": (0.6617, 0.7739, 0.6312), "stem": (0.6863, 0.8187, 0.6492)}.items():
        assert got[name]["ndcg@10"] == pytest.approx(ndcg, abs=0.002)
        assert got[name]["recall@10"] == pytest.approx(recall, abs=0.002)
        assert got[name]["mrr@10"] == pytest.approx(mrr, abs=0.002)
    # cross-check the whole run with pytrec_eval
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run = {q: dict(v) for q, v in res.arms[0].run.ranked.items()}
    qrels = {q: dict(scifact.qrels[q]) for q in scifact.queries.ids}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    assert np.mean([ref[q]["ndcg_cut_10"] for q in qrels]) == pytest.approx(got["bm25"]["ndcg@10"], abs=1e-12)
