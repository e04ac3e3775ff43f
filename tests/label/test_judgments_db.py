"""The judgments database as qrels: conflicts resolved by the documented rule, ``bakeoff run
--qrels DB`` (results.json says the judgments are human), ``bakeoff eval`` on it, export to
TREC/BEIR files that give the same numbers, pytrec_eval as the independent check."""

from __future__ import annotations

import json
import sqlite3

import pytest

from bakeoff.cli import main
from bakeoff.data.judgments import is_sqlite, read_judgments, resolve_grades
from bakeoff.data.loaders import read_qrels
from bakeoff.errors import InputError
from bakeoff.label.store import Store


def test_resolve_grades_rule():
    assert resolve_grades([2]) == (2, "single")
    assert resolve_grades([1, 1]) == (1, "agree")
    assert resolve_grades([3, 3, 0]) == (3, "majority")
    assert resolve_grades([3, 1]) == (1, "lower")
    assert resolve_grades([0, 2, 2, 3, 3]) == (2, "lower")  # tie between 2 and 3 -> 2
    with pytest.raises(ValueError):
        resolve_grades([])


def test_run_and_eval_take_the_database(tmp_path, tiny, make_db):
    db = make_db(overlap=1.0)
    assert is_sqlite(db)
    s = Store(db)
    v = s.view("alice")
    q, docs = v.qid, [it.doc_id for it in v.items]
    alice = dict(zip(docs, [2, 0, 3, 1, 0, 1][:len(docs)]))
    bob = dict(zip(docs, [1, 1, 1, 1, 0, 3][:len(docs)]))
    for d, g in alice.items():
        s.judge("alice", q, d, g)
    assert s.view("bob").qid == q  # routed to two annotators (overlap 1.0)
    for d, g in bob.items():
        s.judge("bob", q, d, g)
    s.close()
    want = {d: resolve_grades([alice[d], bob[d]])[0] for d in docs}
    human = read_judgments(db)
    assert dict(human.qrels[q]) == want
    c = human.provenance["counts"]
    n_conf = sum(1 for d in docs if alice[d] != bob[d])
    assert n_conf >= 2
    assert (c["pairs"], c["judgments"], c["conflicts"], c["pairs_judged_twice_or_more"]) == (
        len(docs), 2 * len(docs), n_conf, len(docs))
    assert c["resolved_by_lower_grade"] == n_conf  # two annotators: every conflict is a tie
    assert set(human.provenance["annotators"]) == {"alice", "bob"}
    assert human.provenance["pool"]["arms"] == ["bm25", "tfidf"] and human.provenance["pool"]["depth"] == 3
    assert dict(read_qrels(db)[q]) == want

    out = tmp_path / "res"
    assert main(["run", "--beir", str(tiny), "--qrels", str(db), "--arm", "bm25", "--out", str(out), "--cache", "off",
                 "--no-progress", "--k", "3", "--depth", "5", "--latency-sample", "0"]) == 0
    res = json.loads((out / "results.json").read_text())
    prov = res["dataset"]["provenance"]
    assert prov["label_kind"] == "human" and set(prov["annotators"]) == {"alice", "bob"}
    assert res["dataset"]["n_queries"] == 1 and res["dataset"]["source"]["qrels"] == str(db)

    # independent check: pytrec_eval on the written run file and the exported TREC qrels
    pytrec_eval = pytest.importorskip("pytrec_eval")
    exp = tmp_path / "export"
    assert main(["label", "export", "--db", str(db), "--out", str(exp)]) == 0
    qrels = {}
    for line in (exp / "qrels.trec").read_text().splitlines():
        qq, _, d, g = line.split()
        qrels.setdefault(qq, {})[d] = int(g)
    assert qrels == {q: want}
    arm = res["arms"][0]
    run = {}
    for line in (out / arm["run_file"]).read_text().splitlines():
        qq, _, d, _r, sc, _t = line.split()
        run.setdefault(qq, {})[d] = float(sc)
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.3", "recall.3"}).evaluate(run)
    assert arm["metrics"]["ndcg@3"] == pytest.approx(ev[q]["ndcg_cut_3"], abs=1e-9)
    assert arm["metrics"]["recall@3"] == pytest.approx(ev[q]["recall_3"], abs=1e-9)

    # the exported files evaluate to the same numbers (queries from the export)
    out2 = tmp_path / "res2"
    assert main(["run", "--beir", str(tiny), "--queries", str(exp / "queries.jsonl"), "--qrels",
                 str(exp / "qrels" / "test.tsv"), "--arm", "bm25", "--out", str(out2), "--cache", "off",
                 "--no-progress", "--k", "3", "--depth", "5", "--latency-sample", "0"]) == 0
    res2 = json.loads((out2 / "results.json").read_text())
    assert res2["arms"][0]["metrics"] == arm["metrics"]
    assert res2["dataset"]["fingerprints"]["qrels"] == res["dataset"]["fingerprints"]["qrels"]

    # bakeoff eval with the database as QRELS
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["eval", str(db), str(out / arm["run_file"]), "-m", "ndcg@3", "--json"]) == 0
    assert json.loads(buf.getvalue())["ndcg@3"] == pytest.approx(ev[q]["ndcg_cut_3"], abs=1e-9)


def test_export_files_and_provenance(tmp_path, make_db):
    from tests.label.fixtures import write_synthetic

    synth = write_synthetic(tmp_path / "synth")
    db = make_db("s.sqlite", dataset=synth, review=True, overlap=0.0)
    s = Store(db)
    s.review("rita", "describe-00000", "accept")
    s.review("rita", "describe-00001", "edit", "does coffee raise heart rate")
    s.review("rita", "describe-00002", "reject")
    # pools for the accepted ones (the app does this on accept; here by hand with fixed docs)
    from bakeoff.label.pool import PooledDoc

    assert s.add_pool("describe-00000", "why are my bones weak without sunshine vitamin", [PooledDoc("d1", {"bm25": 1}),
                                                                                          PooledDoc("d2", {"bm25": 2})])
    assert s.add_pool("describe-00001", "does coffee raise heart rate", [PooledDoc("d5", {"bm25": 1})])
    s.judge("alice", "describe-00000", "d1", 3, note="spot on")
    s.judge("alice", "describe-00000", "d2", 0)
    s.judge("alice", "describe-00001", "d5", 2)
    s.close()
    exp = tmp_path / "exp"
    assert main(["label", "export", "--db", str(db), "--out", str(exp)]) == 0
    assert (exp / "qrels.trec").read_text().splitlines() == [
        "describe-00000 0 d1 3", "describe-00000 0 d2 0", "describe-00001 0 d5 2"]
    assert (exp / "qrels" / "test.tsv").read_text().splitlines()[0] == "query-id\tcorpus-id\tscore"
    qs = [json.loads(x) for x in (exp / "queries.jsonl").read_text().splitlines()]
    assert [(q["_id"], q["text"]) for q in qs] == [("describe-00000", "why are my bones weak without sunshine vitamin"),
                                                  ("describe-00001", "does coffee raise heart rate")]
    assert qs[1]["metadata"]["original_text"] == "coffee makes heart beat faster"
    assert qs[1]["metadata"]["status"] == "edited" and qs[1]["metadata"]["reviewed_by"] == "rita"
    assert "original_text" not in qs[0]["metadata"]
    raw = [json.loads(x) for x in (exp / "judgments.jsonl").read_text().splitlines()]
    assert raw[0]["note"] == "spot on" and raw[0]["annotator"] == "alice"
    prov = json.loads((exp / "provenance.json").read_text())
    assert prov["label_kind"] == "human" and prov["source"]["kind"] == "synthetic"
    assert prov["conflict_rule"].startswith("a reviewer's grade")
    # a second export replaces the first; an unrelated non-empty folder is refused
    assert main(["label", "export", "--db", str(db), "--out", str(exp)]) == 0
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    assert main(["label", "export", "--db", str(db), "--out", str(other)]) == 2
    assert sorted(p.name for p in other.iterdir()) == ["keep.txt"]


def test_database_for_another_corpus_is_refused_by_run(tmp_path, tiny, make_db):
    from tests.label.fixtures import DOCS, write_beir

    db = make_db()
    s = Store(db)
    v = s.view("alice")
    s.judge("alice", v.qid, v.doc_id, 1)
    s.close()
    other = write_beir(tmp_path / "other", docs=DOCS[:-1])
    with pytest.raises(InputError, match="not on this corpus"):
        from bakeoff.data.datasets import DatasetSpec, open_dataset

        open_dataset(DatasetSpec(beir=str(other), qrels=str(db)))
    assert main(["run", "--beir", str(other), "--qrels", str(db), "--arm", "bm25", "--cache", "off",
                 "--no-progress"]) == 2


def test_foreign_and_corrupt_sqlite_files(tmp_path):
    plain = tmp_path / "plain.sqlite"
    sqlite3.connect(plain).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(InputError, match="not one written by 'bakeoff label'"):
        read_judgments(plain)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"SQLite format 3\x00" + b"\x01" * 3000)
    with pytest.raises(InputError, match="corrupt"):
        read_judgments(junk)


def test_export_is_honest_about_coverage(tmp_path, make_db, capsys):
    db = make_db(overlap=1.0)
    s = Store(db)
    v = s.view("alice")
    q1, docs1 = v.qid, [it.doc_id for it in v.items]
    for d in docs1:  # q1 whole by alice, half by bob
        s.judge("alice", q1, d, 2)
    for d, g in zip(docs1[: len(docs1) // 2 + 1], [0, 1, 3, 3]):
        s.judge("bob", q1, d, g)
    s.move("alice", "next_query")
    v2 = s.view("alice")
    q2, docs2 = v2.qid, [it.doc_id for it in v2.items]
    assert q2 != q1 and len(docs2) >= 2
    s.judge("alice", q2, docs2[0], 1)  # q2 partly judged
    s.close()
    out = tmp_path / "exp"
    assert main(["label", "export", "--db", str(db), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"warning: 1 of 2 exported queries are only partly judged ({q2} 1/{len(docs2)} pooled pairs judged)" in err
    bob_n = len(docs1) // 2 + 1
    assert f"note: {len(docs1) - bob_n + 1} pair(s) routed to two annotators have one judgment so far" in err
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["coverage"]["partial"] == {q2: {"judged": 1, "pooled": len(docs2)}}
    assert prov["coverage"]["pairs_owed_second_judgment"] == (len(docs1) - bob_n) + 1
    assert set(read_qrels(out / "qrels" / "test.tsv")) == {q1, q2}
    # --complete-only: q2 left out of every file, counts of what is kept
    out2 = tmp_path / "exp2"
    assert main(["label", "export", "--db", str(db), "--out", str(out2), "--complete-only"]) == 0
    assert f"left out 1 partly judged query: {q2} 1/{len(docs2)}" in capsys.readouterr().err
    assert set(read_qrels(out2 / "qrels" / "test.tsv")) == {q1}
    assert {json.loads(x)["_id"] for x in (out2 / "queries.jsonl").read_text().splitlines()} == {q1}
    assert {json.loads(x)["query-id"] for x in (out2 / "judgments.jsonl").read_text().splitlines()} == {q1}
    prov2 = json.loads((out2 / "provenance.json").read_text())
    assert prov2["coverage"]["dropped"] == [q2]
    assert prov2["counts"]["queries"] == 1 and prov2["counts"]["judgments"] == len(docs1) + bob_n


def test_report_after_more_judging_says_to_export_a_snapshot(tmp_path, tiny, make_db):
    db = make_db()
    s = Store(db)
    v = s.view("alice")
    s.judge("alice", v.qid, v.items[0].doc_id, 2)
    out = tmp_path / "res"
    assert main(["run", "--beir", str(tiny), "--qrels", str(db), "--arm", "bm25", "--out", str(out), "--cache", "off",
                 "--no-progress", "--k", "3", "--depth", "5", "--latency-sample", "0"]) == 0
    v = s.view("alice")
    s.judge("alice", v.qid, v.doc_id, 1)  # more judging after the run
    s.close()
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["report", str(out), "--resamples", "10", "--no-html"])
    assert rc == 2
    msg = err.getvalue()
    assert "changed since the run" in msg and f"bakeoff label export --db {db}" in msg and "--qrels" in msg
