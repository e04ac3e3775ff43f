"""Training data, split hygiene and negative mining (no model needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bakeoff.arms.lexical import BM25Arm
from bakeoff.data.model import Queries
from bakeoff.runner.context import Context
from bakeoff.train.data import (
    load_training_data,
    mine_negatives,
    parse_dataset_spec,
    read_provenance_negatives,
    split_validation,
)
from bakeoff.train.hygiene import SplitLeakError, check_hygiene, find_leaks, normalise
from tests.support.finetune_fixtures import make_tiny_beir


def test_normalise_golden() -> None:
    assert normalise("  Does ACE2 bind\tSARS-CoV-2?  ") == "does ace2 bind sars cov 2"
    assert normalise("ＡＢＣ — déjà vu!") == "abc déjà vu"  # NFKC full-width letters, dash removed
    assert normalise("STRASSE") == normalise("straße")  # casefold, not lower
    assert normalise("?!...") == ""


def test_find_leaks_and_check() -> None:
    train = {"t1": "Obesity decreases life quality.", "t2": "ACE2 binds", "t3": "?"}
    test = {"x1": "obesity  decreases LIFE quality", "x2": "ACE2 binds SARS", "x3": "!"}
    assert find_leaks(train, test) == [("t1", "x1")]  # empty normalised texts never match
    with pytest.raises(SplitLeakError, match="training query 't1' ~ test query 'x1'"):
        check_hygiene(train, [("tiny:test", test)])
    n, found = check_hygiene(train, [("tiny:test", test)], drop=True)
    assert (n, found) == (3, [("t1", "tiny:test", "x1")])


def test_split_validation_seeded() -> None:
    ids = [f"q{i}" for i in range(20)]
    tr, va = split_validation(ids, fraction=0.25, max_queries=100, seed=3)
    assert len(va) == 5 and sorted(tr + va) == sorted(ids) and not set(tr) & set(va)
    assert split_validation(list(reversed(ids)), fraction=0.25, max_queries=100, seed=3) == (tr, va)
    assert split_validation(ids, fraction=0.25, max_queries=2, seed=3)[1].__len__() == 2
    assert split_validation(ids, fraction=0.0, max_queries=100, seed=3) == (sorted(ids), [])


def test_parse_dataset_spec(tmp_path: Path) -> None:
    assert parse_dataset_spec(f"{tmp_path}:dev", default_split="train") == (tmp_path, "dev")
    assert parse_dataset_spec(str(tmp_path), default_split="train") == (tmp_path, "train")


def test_mining_excludes_judged_documents(tmp_path: Path) -> None:
    folder = make_tiny_beir(tmp_path)
    data = load_training_data(folder, "train")
    qid = min(data.positives)
    pos = data.positives[qid]
    run = Context(corpus=data.corpus, progress=False).search(
        BM25Arm(), Queries.from_dict({qid: data.queries[qid]}), k=10)
    ranked = run.doc_ids(qid)
    assert ranked[0] in pos  # the positive is BM25's top hit, so exclusion is exercised
    mined = mine_negatives(data.corpus, {qid: data.queries[qid]}, {qid: pos}, depth=10, n=3)
    assert mined[qid] == tuple([d for d in ranked if d not in pos][:3])
    assert not set(mined[qid]) & set(pos)


def test_hard_negative_sources(tmp_path: Path) -> None:
    folder = make_tiny_beir(tmp_path)
    # grade-0 judgments become negatives for the queries that have them; others are mined
    with open(folder / "qrels" / "train.tsv", "a", encoding="utf-8") as fh:
        fh.write("trq0\td5\t0\n")
    data = load_training_data(folder, "train", hard_negatives="qrels", n_negatives=1)
    assert data.negatives["trq0"] == ("d5",)
    assert data.negatives_source["qrels"] == 1
    assert data.negatives_source["mined:bm25"] == len(data.positives) - 1
    for q, negs in data.negatives.items():
        assert not set(negs) & set(data.positives[q])
        assert not set(negs) & {d for d, g in data.positives.items()}  # never a query id by mistake


def test_provenance_negatives_read_leniently(tmp_path: Path) -> None:
    (tmp_path / "provenance.json").write_text(json.dumps({
        "generator": {"model": "gemma"},
        "queries": [{"query_id": "s1", "doc_id": "d1", "negatives": ["d2", {"doc_id": "d3"}]},
                    {"qid": 7, "hard_negatives": ["d4", "d4"]}],
        "extra": {"negatives": {"s9": ["d8"]}},
    }))
    assert read_provenance_negatives(tmp_path) == {"s1": ["d2", "d3"], "7": ["d4"], "s9": ["d8"]}
    (tmp_path / "provenance.json").write_text("{not json")
    assert read_provenance_negatives(tmp_path) == {}
    assert read_provenance_negatives(tmp_path / "missing") == {}


def test_training_data_fingerprint_stable(tmp_path: Path) -> None:
    folder = make_tiny_beir(tmp_path)
    a = load_training_data(folder, "train")
    b = load_training_data(folder, "train")
    assert a.fingerprint() == b.fingerprint()
    assert a.subset(sorted(a.positives)[1:]).fingerprint() != a.fingerprint()
    assert a.label == f"{folder.name}:train" and a.n_pairs == sum(len(p) for p in a.positives.values())


def test_split_union(tmp_path: Path) -> None:
    folder = make_tiny_beir(tmp_path)
    both = load_training_data(folder, "train+test")
    train = load_training_data(folder, "train")
    assert len(both.positives) == 30 and len(train.positives) == 24
    assert both.positives["teq24"] == ("d24",) and both.queries["teq24"].startswith("science facts: which")


def test_load_split_takes_the_corpus_from_elsewhere(tmp_path):
    """A synthetic-style folder without corpus.jsonl reads the corpus given by --corpus."""
    from bakeoff.train.data import load_split

    src = tmp_path / "corpus"
    src.mkdir()
    (src / "corpus.jsonl").write_text('{"_id": "d1", "text": "alpha"}\n{"_id": "d2", "text": "beta"}\n')
    syn = tmp_path / "syn"
    (syn / "qrels").mkdir(parents=True)
    (syn / "queries.jsonl").write_text('{"_id": "q1", "text": "what is alpha"}\n')
    (syn / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    ds = load_split(syn, "train", corpus=src)
    assert ds.corpus.ids == ("d1", "d2") and ds.queries.ids == ("q1",) and ds.qrels.relevant("q1") == {"d1"}


def test_random_order_ndcg_by_hand() -> None:
    import math

    from bakeoff.train.reranker import random_order_ndcg

    # 1 relevant of 2: rank 1 or 2 with prob 1/2 -> (1 + 1/log2 3) / 2
    assert math.isclose(random_order_ndcg([1], [2]), (1 + 1 / math.log2(3)) / 2)
    # all candidates relevant: any order is ideal
    assert math.isclose(random_order_ndcg([3], [3]), 1.0)
    # 1 relevant of 20, cut at 10: only ranks 1..10 count, each with prob 1/20
    exp = sum(1 / math.log2(r + 1) for r in range(1, 11)) / 20
    assert math.isclose(random_order_ndcg([1], [20]), exp)
    # mean over samples; empty samples skipped
    assert math.isclose(random_order_ndcg([1, 3, 0], [2, 3, 5]), ((1 + 1 / math.log2(3)) / 2 + 1.0) / 2)
    # brute force over all orders of 2 relevant among 4
    from itertools import permutations

    def ndcg(order):
        dcg = sum(1 / math.log2(i + 2) for i, rel in enumerate(order) if rel)
        return dcg / (1 + 1 / math.log2(3))

    orders = list(permutations([1, 1, 0, 0]))
    assert math.isclose(random_order_ndcg([2], [4]), sum(ndcg(o) for o in orders) / len(orders))


def test_held_out_policy_defaults_to_the_training_folders_test_split(tmp_path: Path) -> None:
    """No --test: the training folder's test split is checked; a leak refuses, or is dropped on request."""
    from bakeoff.train.hygiene import RULE, check_held_out, held_out_splits

    folder = make_tiny_beir(tmp_path)
    assert held_out_splits([], train_path=folder, corpus=None) == [(folder, "test")]
    assert held_out_splits([f"{folder}:train"], train_path=folder, corpus=None) == [(folder, "train")]
    data = load_training_data(folder, "train")
    rec, drop = check_held_out(dict(data.queries), train_path=folder, corpus=None, tests=[], drop=False)
    assert rec == {"checked_against": ["tiny:test"], "n_test_queries": 6, "dropped_leaks": [], "rule": RULE}
    assert drop == set()
    test_text = json.loads((folder / "queries.jsonl").read_text().splitlines()[24])
    leaky = {**data.queries, "copy": test_text["text"].upper() + "!"}
    with pytest.raises(SplitLeakError, match=f"training query 'copy' ~ test query '{test_text['_id']}'"):
        check_held_out(leaky, train_path=folder, corpus=None, tests=[], drop=False)
    rec, drop = check_held_out(leaky, train_path=folder, corpus=None, tests=[], drop=True)
    assert drop == {"copy"} and rec["dropped_leaks"] == [["copy", "tiny:test", test_text["_id"]]]


def test_no_held_out_split_warns(tmp_path: Path, caplog) -> None:
    from bakeoff.train.hygiene import check_held_out

    folder = make_tiny_beir(tmp_path)
    (folder / "qrels" / "test.tsv").unlink()
    with caplog.at_level("WARNING", logger="bakeoff"):
        rec, _ = check_held_out({"q": "anything"}, train_path=folder, corpus=None, tests=[], drop=False)
    assert rec["checked_against"] == [] and "no held-out split found" in caplog.text
