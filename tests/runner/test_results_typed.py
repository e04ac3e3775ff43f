"""results.json typed both ways: Results written, StoredResults read back, the file format unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bakeoff.arms.fusion import RRFArm
from bakeoff.arms.lexical import BM25Arm, TfidfArm
from bakeoff.errors import InputError
from bakeoff.runner.results import StoredArm, StoredResults, read_results
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
    assert stored == raw and json.loads(json.dumps(stored)) == raw and stored.to_dict() == raw
    assert type(stored.to_dict()) is dict and type(stored.to_dict()["arms"][0]) is dict
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
    assert s.source == {} and s.fingerprints == {} and s.query_ids == ["q"] and s.to_dict() == old


@pytest.mark.parametrize("body,field", [('[1, 2]', "schema"), ('{"schema": "other"}', "schema"),
                                        ('{"schema": "bakeoff.results", "schema_version": 9}', "schema_version"),
                                        ('{"schema": "bakeoff.results", "schema_version": 1, "k": 1, "arms": [3]}',
                                         "arms")])
def test_bad_results_files_are_input_errors(tmp_path: Path, body: str, field: str):
    (tmp_path / "results.json").write_text(body)
    with pytest.raises(InputError, match=f"field '{field}'"):
        read_results(tmp_path)
