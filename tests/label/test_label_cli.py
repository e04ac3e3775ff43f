"""``bakeoff label`` on bad input: a database from another dataset, a corrupt database, an
unknown pool arm, a port in use, a bad query log, other settings -> one line, exit 2, and the
database byte-for-byte untouched (same bytes, same mtime)."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import pytest

from bakeoff.cli import main
from bakeoff.label.store import Store
from tests.label.fixtures import DOCS, write_beir


def snapshot(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns, st.st_size


def run_label(args, capsys) -> tuple[int, str]:
    rc = main(["label", *args, "--port", "0", "--cache", "off", "--no-progress"] if "--port" not in args
              else ["label", *args, "--cache", "off", "--no-progress"])
    err = capsys.readouterr().err
    return rc, err


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture()
def judged_db(make_db):
    db = make_db()
    s = Store(db)
    v = s.view("alice")
    s.judge("alice", v.qid, v.doc_id, 2)
    s.close()
    return db


def test_database_from_another_dataset(tmp_path, judged_db, capsys):
    other = write_beir(tmp_path / "other", docs=[*DOCS[:-1], ("d12", "Salt", "Changed text.")])
    before = snapshot(judged_db)
    rc, err = run_label([str(other), "--db", str(judged_db)], capsys)
    assert rc == 2
    line = one_error_line(err)
    assert str(judged_db) in line and "field 'dataset'" in line and "fingerprint" in line
    assert snapshot(judged_db) == before


@pytest.mark.parametrize("kind", ["garbage", "truncated", "not-sqlite", "foreign-sqlite"])
def test_corrupt_database(tmp_path, tiny, judged_db, capsys, kind):
    bad = tmp_path / "bad.sqlite"
    if kind == "garbage":
        bad.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 40)
    elif kind == "truncated":
        data = judged_db.read_bytes()
        bad.write_bytes(data[: len(data) // 3])
    elif kind == "not-sqlite":
        bad.write_text("query-id\tcorpus-id\tscore\n")
    else:
        import sqlite3

        conn = sqlite3.connect(bad)
        conn.execute("CREATE TABLE judgments (x)")
        conn.commit()
        conn.close()
    before = snapshot(bad)
    rc, err = run_label([str(tiny), "--db", str(bad), "--pool", "bm25"], capsys)
    assert rc == 2
    line = one_error_line(err)
    assert str(bad) in line
    assert snapshot(bad) == before


def test_unknown_pool_arm(tmp_path, tiny, judged_db, capsys):
    fresh = tmp_path / "fresh.sqlite"
    rc, err = run_label([str(tiny), "--db", str(fresh), "--pool", "bm25", "--pool", "bm99"], capsys)
    assert rc == 2 and "unknown arm type 'bm99'" in one_error_line(err)
    assert not fresh.exists() and not list(tmp_path.glob(".fresh.sqlite*"))
    before = snapshot(judged_db)
    rc, err = run_label([str(tiny), "--db", str(judged_db), "--pool", "bm25", "--pool", "bm99"], capsys)
    assert rc == 2 and "--pool" in one_error_line(err)
    assert snapshot(judged_db) == before


def test_port_in_use(tiny, judged_db, capsys):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        before = snapshot(judged_db)
        rc, err = run_label([str(tiny), "--db", str(judged_db), "--port", str(port)], capsys)
        assert rc == 2
        assert f"127.0.0.1:{port} is already in use" in one_error_line(err)
        assert snapshot(judged_db) == before
    finally:
        holder.close()


def test_other_settings_and_bad_log(tmp_path, tiny, judged_db, capsys):
    before = snapshot(judged_db)
    rc, err = run_label([str(tiny), "--db", str(judged_db), "--depth", "7"], capsys)
    assert rc == 2 and "--depth 3" in one_error_line(err)
    rc, err = run_label([str(tiny), "--db", str(judged_db), "--review"], capsys)
    assert rc == 2 and "query source" in one_error_line(err)
    assert snapshot(judged_db) == before
    log = tmp_path / "log.jsonl"
    log.write_text('{"query": "a"}\n{"query": "b", "count": -1}\n')
    fresh = tmp_path / "fresh.sqlite"
    rc, err = run_label([str(tiny), "--db", str(fresh), "--pool", "bm25", "--log", str(log)], capsys)
    assert rc == 2 and one_error_line(err) == f"error: {log}:2: field 'count': must be a positive integer, got -1"
    assert not fresh.exists()
    rc, err = run_label([str(tiny), "--db", str(fresh)], capsys)
    assert rc == 2 and "at least one --pool" in one_error_line(err)
    rc, err = run_label([str(tiny), "--db", str(fresh), "--pool", "bm25", "--annotator", "a b"], capsys)
    assert rc == 2 and "--annotator" in one_error_line(err)
    assert not fresh.exists()


def test_agreement_and_export_on_corrupt_database(tmp_path, capsys):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    assert main(["label", "agreement", "--db", str(bad)]) == 2
    assert main(["label", "export", "--db", str(bad), "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
    err = capsys.readouterr().err
    assert err.count("error:") == 2


def test_log_source_creates_counted_sampled_queries(tmp_path, tiny, make_db):
    import json

    log = tmp_path / "log.txt"
    log.write_text("caffeine heart rate\nCaffeine, heart-rate!\nsalt intake\nsalt intake\nsalt intake\nrunning\n")
    db = make_db("log.sqlite", log=log, sample=2, weighted=True, seed=1)
    import sqlite3

    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT text, count, source FROM queries ORDER BY position").fetchall()
    src = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'source'").fetchone()[0])
    assert len(rows) == 2 and all(r[2] == "log" for r in rows)
    assert src["counts"]["unique_after_normalisation"] == 3 and src["counts"]["sampled"] == 2
    assert src["sampling"] == "frequency-weighted"
    assert conn.execute("SELECT count(*) FROM pool").fetchone()[0] > 0
