"""results.json typed both ways: Results written, StoredResults read back (or made in memory), the file format
unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bakeoff.arms.fusion import RRFArm
from bakeoff.arms.lexical import BM25Arm, TfidfArm
from bakeoff.errors import InputError
from bakeoff.runner.results import StoredArm, StoredResults, read_results, safe_filename
from bakeoff.runner.run import run_bakeoff
from tests.runner.test_run_policy import _dataset


def test_written_then_read_is_the_same_json_with_typed_accessors(tmp_path: Path):
    bm25, tfidf = BM25Arm(), TfidfArm()
    res = run_bakeoff(_dataset(), [bm25, tfidf, RRFArm(name="hyb", arms=[bm25, tfidf])], k=2, depth=3,
                      progress=False, latency_sample=0)
    path = res.write(tmp_path / "out")
    raw = json.loads(path.read_text())
    stored = read_results(tmp_path / "out")
    assert isinstance(stored, StoredResults) and all(isinstance(a, StoredArm) for a in stored.arms)
    assert stored.to_dict() == raw and json.dumps(stored.to_dict()) == json.dumps(raw)  # keys in the file's order
    assert type(stored.to_dict()) is dict and type(stored.to_dict()["arms"][0]) is dict
    # in memory: the same content as the file (but the time it was made)
    run_files = {a.name: f"runs/{safe_filename(a.name)}.trec" for a in res.arms}
    assert {**res.stored(run_files=run_files).to_dict(), "created": None} == {**raw, "created": None}
    # the typed view reads the same values as the Results object that wrote them
    assert (stored.k, stored.depth, stored.measures) == (res.k, res.depth, tuple(res.measures))
    assert stored.n_evaluated == 2 and stored.query_ids == ["q1", "q2"] and stored.label_kind == "judged"
    assert stored.fingerprints == dict(res.dataset["fingerprints"]) and stored.schema_version == 1
    assert stored.arm_names == ["bm25", "tfidf", "hyb"]
    hyb = stored.arm("hyb")
    assert hyb.type == "rrf" and hyb.children == ("bm25", "tfidf") and hyb.run_file == "runs/hyb.trec"
    assert hyb.metrics == dict(res.arms[2].evaluation.means)
    assert hyb.per_query["mrr@2"] == dict(res.arms[2].evaluation.per_query["mrr@2"])
    assert hyb.fine_tuned is None and hyb.cost is not None and not hyb.cached
    with pytest.raises(KeyError):
        stored.arm("nope")


def test_a_minimal_schema_1_file_reads(tmp_path: Path):
    """An older results.json (no cost, latency, children, run files) still reads; absent keys are empty."""
    old = {"schema": "bakeoff.results", "schema_version": 1, "dataset": {"name": "x", "split": "test"}, "k": 10,
           "depth": 100, "measures": ["ndcg@10"], "queries": {"evaluated": 1, "excluded": {}},
           "arms": [{"name": "bm25", "type": "bm25", "config": {}, "fingerprint": "f", "cached": False,
                     "metrics": {"ndcg@10": 0.5}, "per_query": {"ndcg@10": {"q": 0.5}},
                     "timing": {"index_s": 0.1}}]}
    (tmp_path / "results.json").write_text(json.dumps(old))
    s = read_results(tmp_path)
    a = s.arms[0]
    assert (a.cost, a.run_file, a.children, a.fine_tuned, a.extra_metrics) == (None, None, (), None, {})
    assert (a.empty, a.judged, a.footprint, a.broken) == (None, None, None, False)
    assert s.source == {} and s.fingerprints == {} and s.query_ids == ["q"] and s.to_dict() == old
    assert s.averaging == "bakeoff" and s.relevance_level == 1 and s.schema_version == 1
    del old["depth"]  # older still: the depth is k
    (tmp_path / "results.json").write_text(json.dumps(old))
    s = read_results(tmp_path)
    assert s.depth == s.k == 10 and s.to_dict() == old


def test_frozen_and_unknown_keys_kept(tmp_path: Path):
    """The model is frozen; keys this bakeoff does not know are kept (readers ignore them) and written back."""
    obj = {"schema": "bakeoff.results", "schema_version": 1, "dataset": {"name": "x", "later": [1]}, "k": 5,
           "measures": ["ndcg@5"], "future": {"a": 1},
           "arms": [{"name": "a", "metrics": {"ndcg@5": None}, "per_query": {"ndcg@5": {"q": float("nan")}},
                     "novel": True}]}
    s = StoredResults.from_dict(obj)
    assert s.to_dict()["future"] == {"a": 1} and s.dataset.to_dict()["later"] == [1]
    assert s.arms[0].to_dict()["novel"] is True and s.arms[0].metrics == {"ndcg@5": None}
    with pytest.raises(ValueError):
        s.k = 3
    other = s.with_arms([s.arms[0].model_copy(update={"name": "b"})])
    assert other.arm_names == ["b"] and s.arm_names == ["a"] and list(other.to_dict()) == list(obj)


@pytest.mark.parametrize("body,field", [('[1, 2]', "schema"), ('{"schema": "other"}', "schema"),
                                        ('{"schema": "bakeoff.results", "schema_version": 9}', "schema_version"),
                                        ('{"schema": "bakeoff.results", "schema_version": 1, "k": 1, "arms": [3]}',
                                         "arms")])
def test_bad_results_files_are_input_errors(tmp_path: Path, body: str, field: str):
    (tmp_path / "results.json").write_text(body)
    with pytest.raises(InputError, match=f"field '{field}'"):
        read_results(tmp_path)
