"""The one dataset opener: every source kind, split merging, search modes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bakeoff.data.datasets import DatasetSpec, open_dataset
from bakeoff.data.loaders import load_beir
from bakeoff.data.model import Dataset
from bakeoff.errors import ConfigError, InputError
from tests.data.test_loaders import beir_folder, write


def _same_data(a: Dataset, b: Dataset) -> bool:
    return (a.corpus.fingerprint(), a.queries.fingerprint(), a.qrels.fingerprint()) == (
        b.corpus.fingerprint(), b.queries.fingerprint(), b.qrels.fingerprint())


# datasets ---------------------------------------------------------------------------------------


def test_beir_spec_is_the_beir_loader(tmp_path):
    beir = beir_folder(tmp_path / "d")
    ds, masks = open_dataset(DatasetSpec(beir=str(beir)))
    assert masks is None and _same_data(ds, load_beir(beir)) and ds.name == "d" and ds.label_kind == "judged"
    named, _ = open_dataset(DatasetSpec(beir=str(beir), name="mine"))
    assert named.name == "mine" and _same_data(named, ds)


def test_files_spec_equals_the_folder(tmp_path):
    beir = beir_folder(tmp_path / "d")
    spec = DatasetSpec(corpus=str(beir / "corpus.jsonl"), queries=str(beir / "queries.jsonl"),
                       qrels=str(beir / "qrels" / "test.tsv"))
    ds, _ = open_dataset(spec)
    assert _same_data(ds, load_beir(beir)) and ds.name == "corpus"
    assert ds.info["qrels_path"] == str(beir / "qrels" / "test.tsv")


def test_beir_folder_with_a_corpus_from_elsewhere(tmp_path):
    src = beir_folder(tmp_path / "src")
    syn = tmp_path / "syn"
    write(syn / "queries.jsonl", '{"_id": "s1", "text": "alpha"}\n{"_id": "s2", "text": "gamma"}\n')
    write(syn / "qrels" / "train.tsv", "query-id\tcorpus-id\tscore\ns1\td1\t1\ns2\td2\t1\n")
    ds, _ = open_dataset(DatasetSpec(beir=str(syn), split="train", corpus=str(src)))
    assert ds.corpus.fingerprint() == load_beir(src).corpus.fingerprint()
    assert ds.queries.ids == ("s1", "s2") and ds.qrels.relevant("s2") == {"d2"} and ds.name == "syn"


def test_joined_splits_merge_judgments_keeping_the_higher_grade(tmp_path):
    beir = beir_folder(tmp_path / "d", qrels="query-id\tcorpus-id\tscore\nq2\td2\t1\nq2\td3\t0\n")
    write(beir / "qrels" / "dev.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\n")
    ds, _ = open_dataset(DatasetSpec(beir=str(beir), split="test+dev"))
    assert ds.split == "test+dev" and ds.queries.ids == ("q1", "q2")
    assert dict(ds.qrels["q2"]) == {"d2": 2, "d3": 0} and dict(ds.qrels["q1"]) == {"d1": 1}
    with pytest.raises(InputError, match=r"no qrels for split 'nope'"):
        open_dataset(DatasetSpec(beir=str(beir), split="test+nope"))


def test_a_spec_without_source_is_a_config_error():
    with pytest.raises(ConfigError, match="give beir=PATH, irds=NAME"):
        open_dataset(DatasetSpec(corpus="c.jsonl"))


def test_search_options_on_unversioned_data_are_refused(tmp_path):
    spec = DatasetSpec(beir=str(beir_folder(tmp_path / "d")))
    with pytest.raises(ConfigError, match="need a versioned corpus"):
        open_dataset(spec, as_of=False)
    with pytest.raises(ConfigError, match="apply to citation-mined folders"):
        open_dataset(spec, only_single=True)


def _versioned(root: Path) -> Path:
    docs = [("u1@2010-01-01", "u1", "2010-01-01", "2015-01-01", "old text"),
            ("u1@2015-01-01", "u1", "2015-01-01", None, "new text"),
            ("u2@2010-01-01", "u2", "2010-01-01", None, "other")]
    corpus = "".join(json.dumps({"_id": i, "text": t, "metadata": {"unit": u, "valid_from": f, "valid_to": e}}) + "\n"
                     for i, u, f, e, t in docs)
    queries = ('{"_id": "q1", "text": "old", "metadata": {"date": "2012-05-05"}}\n'
               '{"_id": "q2", "text": "new", "metadata": {"date": "2020-05-05"}}\n')
    return beir_folder(root, corpus=corpus, queries=queries,
                       qrels="query-id\tcorpus-id\tscore\nq1\tu1@2010-01-01\t1\nq2\tu2@2010-01-01\t1\n")


def test_versioned_corpus_as_of_latest_and_plain(tmp_path):
    spec = DatasetSpec(beir=str(_versioned(tmp_path / "v")))
    ds, masks = open_dataset(spec)
    assert ds.info["search_mode"] == "as_of" and ds.qrels.relevant("q1") == {"u1@2010-01-01"}
    assert masks["q1"].tolist() == [True, False, True] and masks["q2"].tolist() == [False, True, True]
    latest, lmasks = open_dataset(spec, as_of=False)
    assert latest.info["search_mode"] == "latest" and latest.qrels.relevant("q1") == {"u1@2015-01-01"}
    assert all(np.array_equal(m, [False, True, True]) for m in lmasks.values())
    plain, none = open_dataset(spec, plain=True)
    assert none is None and "search_mode" not in plain.info and _same_data(plain, load_beir(spec.beir))
