"""Runs, judgments and results to and from pandas DataFrames: PyTerrier's and ranx's column names, the tie
rule on the way in, errors naming the row and column, and ranx reading what bakeoff writes."""

from __future__ import annotations

import pytest

import bakeoff
from bakeoff.data.model import Qrels, Run
from bakeoff.errors import InputError

pd = pytest.importorskip("pandas")


def test_run_from_pyterrier_and_ranx_frames_in_tie_rule_order() -> None:
    pt = pd.DataFrame({"qid": ["q1", "q1", "q1", "q2"], "docno": ["a", "b", "c", "a"], "score": [1.0, 2.0, 2.0, 5.0],
                       "rank": [0, 1, 2, 0]})  # the rank column is ignored
    run = Run.from_df(pt, name="bm25")
    assert run.name == "bm25" and run["q1"] == (("c", 2.0), ("b", 2.0), ("a", 1.0))  # tie: doc id descending
    rx = pt.rename(columns={"qid": "q_id", "docno": "doc_id"}).drop(columns="rank")
    assert Run.from_df(rx).ranked == run.ranked
    out = run.to_df()
    assert list(out.columns) == ["qid", "docno", "score", "rank"]
    assert out.values.tolist() == [["q1", "c", 2.0, 0], ["q1", "b", 2.0, 1], ["q1", "a", 1.0, 2], ["q2", "a", 5.0, 0]]
    assert Run.from_df(out, name="bm25").ranked == run.ranked  # round trip


def test_qrels_round_trip_and_numeric_ids() -> None:
    df = pd.DataFrame({"qid": [1, 1, 2], "docno": [10, 11, 10], "label": [2, 0, 1]})
    q = Qrels.from_df(df)
    assert dict(q["1"]) == {"10": 2, "11": 0} and dict(q["2"]) == {"10": 1}
    assert Qrels.from_df(q.to_df()).judgments == q.judgments
    rx = pd.DataFrame({"q_id": ["a"], "doc_id": ["x"], "score": [3]})  # ranx's names: score is the grade
    assert dict(Qrels.from_df(rx)["a"]) == {"x": 3}


@pytest.mark.parametrize("frame,kw,match", [
    ({"qid": ["q"], "docno": ["d"], "score": ["high"]}, {}, "row 0: score 'high' is not a number"),
    ({"qid": ["q"], "docno": ["d"], "score": [float("nan")]}, {}, "row 0: score is NaN"),
    ({"qid": ["q", "q"], "docno": ["d", "d"], "score": [1, 2]}, {}, "row 1: document 'd' appears twice"),
    ({"qid": [None], "docno": ["d"], "score": [1]}, {}, "field 'qid': row 0: empty id"),
    ({"query": ["q"], "docno": ["d"], "score": [1]}, {}, "no query column"),
    ({"qid": ["q"], "docno": ["d"], "score": [1]}, {"score_col": "s"}, "no column 's'"),
])
def test_bad_run_frames(frame, kw, match) -> None:
    with pytest.raises(InputError, match=match):
        Run.from_df(pd.DataFrame(frame), **kw)


def test_bad_grade() -> None:
    with pytest.raises(InputError, match="row 0: grade 1.5 is not an integer"):
        Qrels.from_df(pd.DataFrame({"qid": ["q"], "docno": ["d"], "label": [1.5]}))


def test_evaluation_report_and_results_frames() -> None:
    qrels = Qrels({"q1": {"a": 1}, "q2": {"b": 1}})
    r1 = Run.from_scores("one", {"q1": {"a": 2.0, "b": 1.0}, "q2": {"a": 2.0, "b": 1.0}})
    r2 = Run.from_scores("two", {"q1": {"b": 2.0, "a": 1.0}, "q2": {"b": 2.0, "a": 1.0}})
    ev = bakeoff.evaluate(qrels, r1, ["mrr", "P@1"])
    df = ev.to_df()
    assert df.index.name == "qid" and df.loc["q1", "mrr"] == 1.0 and df.loc["q2", "mrr"] == 0.5
    assert ev.to_df(per_query=False).loc["all", "precision@1"] == 0.5
    rep = bakeoff.compare(qrels, [r1, r2], ["mrr"], n_resamples=100)
    rdf = rep.to_df()
    assert rdf[["run", "measure", "mean"]].values.tolist() == [["one", "mrr", 0.75], ["two", "mrr", 0.75]]
    assert rep.to_dataframe().equals(rdf)


def test_ranx_reads_what_bakeoff_writes() -> None:
    ranx = pytest.importorskip("ranx")
    run = Run.from_scores("r", {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 0.5}})
    qrels = Qrels({"q1": {"a": 1}, "q2": {"c": 1}})
    rr = ranx.Run.from_df(run.to_df(), q_id_col="qid", doc_id_col="docno", score_col="score")
    rq = ranx.Qrels.from_df(qrels.to_df(), q_id_col="qid", doc_id_col="docno", score_col="label")
    assert ranx.evaluate(rq, rr, "mrr") == pytest.approx(bakeoff.evaluate(qrels, run, "mrr").means["mrr"])
