"""Data model: immutability, id keys, fingerprints."""

import dataclasses

import pytest

from bakeoff.data.model import Corpus, Document, Qrels, Queries, Query, Run


def corpus(*docs):
    return Corpus.from_documents([Document(i, t, title) for i, t, title in docs])


def test_corpus_is_immutable_and_id_keyed():
    c = corpus(("a", "alpha", "A"), ("b", "beta", ""))
    assert c["b"].text == "beta" and c[0].title == "A" and "a" in c and len(c) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.ids = ()  # type: ignore[misc]
    with pytest.raises(ValueError, match="unique"):
        corpus(("a", "x", ""), ("a", "y", ""))
    assert c.full_texts() == ["A alpha", "beta"]


def test_fingerprints_are_stable_and_content_sensitive():
    base = corpus(("a", "alpha", "A"), ("b", "beta", ""))
    assert base.fingerprint() == corpus(("a", "alpha", "A"), ("b", "beta", "")).fingerprint()
    variants = [
        corpus(("a", "alpha", "A"), ("b", "betA", "")),
        corpus(("a", "alpha", ""), ("b", "beta", "")),
        corpus(("b", "beta", ""), ("a", "alpha", "A")),  # order is content
        corpus(("a", "alpha", "A"), ("c", "beta", "")),
        # framing: moving text between fields must change the hash
        corpus(("a", "lpha", "A a"), ("b", "beta", "")),
    ]
    assert len({v.fingerprint() for v in variants} | {base.fingerprint()}) == len(variants) + 1
    assert len(base.fingerprint()) == 64


def test_queries_qrels_run_fingerprints():
    q1 = Queries.from_queries([Query("1", "x"), Query("2", "y")])
    assert q1.fingerprint() == Queries.from_dict({"1": "x", "2": "y"}).fingerprint()
    assert q1.fingerprint() != Queries.from_dict({"1": "x", "2": "z"}).fingerprint()
    assert q1.subset({"2"}).ids == ("2",)
    a = Qrels({"q": {"d1": 1, "d2": 0}})
    assert a.fingerprint() == Qrels({"q": {"d2": 0, "d1": 1}}).fingerprint()  # judgments are a set
    assert a.fingerprint() != Qrels({"q": {"d1": 2, "d2": 0}}).fingerprint()
    assert a.relevant("q") == {"d1"} and a.relevant("zz") == frozenset()
    r1 = Run.from_scores("x", {"q": {"a": 1.0, "b": 2.0}})
    assert r1.fingerprint() == Run.from_scores("y", {"q": [("b", 2.0), ("a", 1.0)]}).fingerprint()
    assert r1.fingerprint() != Run.from_scores("x", {"q": {"a": 1.0, "b": 2.5}}).fingerprint()


def test_qrels_are_read_only():
    q = Qrels({"q": {"d": 1}})
    with pytest.raises(TypeError):
        q.judgments["q"]["d"] = 2  # type: ignore[index]
