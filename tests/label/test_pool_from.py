"""``bakeoff label --from``: pooling a bake-off's stored runs, or the ``holes.tsv`` of its
report, without the pairs the dataset's qrels already judge — checked against the run files
and the holes file read independently here."""

from __future__ import annotations

import contextlib
import io
import sqlite3
from pathlib import Path

import pytest

from bakeoff.cli import main
from bakeoff.label.session import LabelOptions, open_session
from tests.label.fixtures import QRELS


def _pool(db: Path) -> set[tuple[str, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return set(conn.execute("SELECT qid, doc_id FROM pool"))
    finally:
        conn.close()


def _top(run_file: Path, k: int) -> set[tuple[str, str]]:
    """The top ``k`` of a TREC run file by its rank column."""
    rows = [line.split() for line in run_file.read_text().splitlines() if line.strip()]
    return {(r[0], r[2]) for r in rows if int(r[3]) <= k}


@pytest.fixture()
def results(tmp_path, tiny) -> Path:
    out = tmp_path / "res"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["run", "--beir", str(tiny), "--arm", "bm25", "--arm", "tfidf", "--out", str(out), "--cache",
                     "off", "--no-progress", "--k", "5", "--depth", "5", "--latency-sample", "0"]) == 0
    return out


def _open(**kw) -> None:
    with open_session(LabelOptions(port=0, cache="off", progress=False, **kw)):
        pass


def test_from_results_pools_the_stored_runs_without_judged_pairs(tmp_path, tiny, results):
    db = tmp_path / "j.sqlite"
    _open(dataset=None, db=db, from_results=results, depth=3)
    want = (_top(results / "runs" / "bm25.trec", 3) | _top(results / "runs" / "tfidf.trec", 3)) - {
        (q, d) for q, d, _ in QRELS}
    assert want and _pool(db) == want
    conn = sqlite3.connect(db)
    import json

    meta = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    pooled_queries = {q for (q,) in conn.execute("SELECT qid FROM queries")}
    conn.close()
    union = _top(results / "runs" / "bm25.trec", 3) | _top(results / "runs" / "tfidf.trec", 3)
    assert meta["pool"]["from"]["kind"] == "runs" and meta["pool"]["arms"] == ["bm25", "tfidf"]
    assert meta["pool"]["from"]["already_judged"] == len(union) - len(want) > 0
    assert meta["dataset"]["path"] == str(tiny.resolve())
    assert pooled_queries == {q for q, _ in want}
    # a restart needs neither the dataset nor --from: the database records them
    _open(dataset=None, db=db)
    assert _pool(db) == want


def test_from_holes_file(tmp_path, tiny, results):
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(results), "--resamples", "10", "--no-html", "--no-progress"]) == 0
    holes = results / "holes.tsv"
    rows = [line.split("\t") for line in holes.read_text().splitlines()[1:] if line]
    assert rows
    # one already judged pair added by hand: left out
    q, d, _ = QRELS[0]
    holes.write_text(holes.read_text() + f"{q}\t{d}\t1\t1\tyes\tbm25\tquery\ttitle\n")
    db = tmp_path / "h.sqlite"
    _open(dataset=None, db=db, from_results=holes)
    assert _pool(db) == {(r[0], r[1]) for r in rows}
    # with the dataset named, no results.json is needed
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "holes.tsv").write_text(holes.read_text())
    db2 = tmp_path / "h2.sqlite"
    _open(dataset=tiny, db=db2, from_results=lone / "holes.tsv")
    assert _pool(db2) == _pool(db)


def test_from_refuses_bad_input(tmp_path, tiny, results, capsys):
    def run(args):
        rc = main(["label", *args, "--port", "0", "--cache", "off", "--no-progress"])
        return rc, capsys.readouterr().err

    rc, err = run(["--from", str(results), "--pool", "bm25", "--db", str(tmp_path / "a.sqlite")])
    assert rc == 2 and "--from" in err and "--pool" in err
    rc, err = run(["--from", str(tmp_path / "nope"), "--db", str(tmp_path / "a.sqlite")])
    assert rc == 2 and "no such results folder" in err
    bad = tmp_path / "holes.tsv"
    bad.write_text("query_id\tdoc_id\tbest_rank\tn_arms\tdisputed\tarms\n q1\td1\tfirst\t1\tno\tbm25\n")
    rc, err = run([str(tiny), "--from", str(bad), "--db", str(tmp_path / "a.sqlite")])
    assert rc == 2 and f"{bad}:2: field 'best_rank'" in err
    assert not (tmp_path / "a.sqlite").exists()


def test_dataset_folder_of_a_demo_results_file(tmp_path):
    from bakeoff.label.pool import _dataset_folder
    from bakeoff.runner.results import StoredResults

    def results(dataset: dict) -> StoredResults:
        return StoredResults.from_dict({"dataset": dataset, "k": 1, "measures": ["m"],
                                        "arms": [{"name": "a", "metrics": {}, "per_query": {"m": {}}}]})

    (tmp_path / "truth").mkdir()
    demo = results({"source": "bakeoff demo", "truth": "/elsewhere/truth"})  # as bakeoff demo writes it
    assert _dataset_folder(demo, tmp_path / "results.json") == tmp_path / "truth"  # moved with its folder
    assert _dataset_folder(results({"source": {"beir": "/data/x"}}), tmp_path / "r.json") == Path("/data/x")


def test_known_answers_mixed_in_and_compared(tmp_path, tiny, capsys):
    import json

    from bakeoff.label.store import Store

    db = tmp_path / "g.sqlite"
    _open(dataset=tiny, db=db, pool=("bm25",), depth=2, gold=1)
    conn = sqlite3.connect(db)
    rows = [(q, d, json.loads(a)) for q, d, a in conn.execute("SELECT qid, doc_id, arms FROM pool")]
    conn.close()
    known = {(q, d): g for q, d, g in QRELS}
    gold = {(q, d): r["gold"] for q, d, r in rows if "gold" in r}
    assert gold == {k: v for k, v in known.items() if k[0] in {q for q, _, _ in rows}}  # every known pair pooled
    for q, d, r in rows:
        assert ("gold" in r) == ((q, d) in known) and (("bm25" in r) or "gold" in r)
    s = Store(db)
    for _ in range(40):
        v = s.view("ann")
        if v.done:
            break
        g = known.get((v.qid, v.doc_id))
        s.judge("ann", v.qid, v.doc_id, 0 if g is None else (2 if v.qid != "q1" else 0))  # q1's known answer missed
    s.close()
    from bakeoff.label.agreement import agreement_of_db

    [f] = agreement_of_db(db).per_annotator
    n_gold = len(gold)
    assert f.gold_items == n_gold and f.gold_relevance == pytest.approx((n_gold - 1) / n_gold)
    assert f.gold_exact == 0.0  # known grades are 1; ann gave 2 or 0
    assert main(["label", "agreement", "--db", str(db)]) == 0
    assert f"known answers: {n_gold}, same relevance {(n_gold - 1) / n_gold:.3f}" in capsys.readouterr().out
