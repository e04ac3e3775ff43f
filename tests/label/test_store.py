"""The store's labelling logic on a hand-made database: moving on, undo (multi-level, restoring
overwritten grades), skip, cursors that survive a reopen, claims that keep two annotators on
different queries, routing to a second annotator, and the review of synthetic queries."""

from __future__ import annotations

import sqlite3

import pytest

from bakeoff.label.pool import PooledDoc
from bakeoff.label.sources import SourceQuery
from bakeoff.label.store import Refused, Store


def make_db(path, *, n_queries=3, n_docs=4, required=None, synthetic=0):
    qs = [SourceQuery(f"q{i}", f"query {i}", "dataset") for i in range(n_queries)]
    qs += [SourceQuery(f"s{i}", f"synthetic {i}", "synthetic", status="pending",
                       metadata={"written_from": [f"d{i}"]}) for i in range(synthetic)]
    pools = {q.qid: [PooledDoc(f"{q.qid}-d{j}", {"bm25": j + 1}) for j in range(n_docs)]
             for q in qs if q.status == "ready"}
    Store.create(path, meta={"dataset": {"name": "t"}}, queries=qs, required=required or {}, pools=pools)
    return Store(path)


def test_judging_moves_on_and_counts(tmp_path):
    s = make_db(tmp_path / "j.sqlite")
    v = s.view("alice")
    assert (v.qid, v.doc_id, v.query_index, v.n_queries, v.pairs_total) == ("q0", "q0-d0", 1, 3, 12)
    for expect in ["q0-d1", "q0-d2", "q0-d3", "q1-d0"]:
        s.judge("alice", v.qid, v.doc_id, 2, note="n")
        v = s.view("alice")
        assert v.doc_id == expect
    assert (v.my_judged, v.pairs_judged, v.remaining, v.query_judged) == (4, 4, 8, 0)
    # going back to change a grade, then moving on lands on the next unjudged item
    s.move("alice", "prev_query")
    v = s.view("alice")
    assert (v.qid, v.doc_id) == ("q0", "q0-d0")  # a complete query: its first document
    s.move("alice", "next_doc")
    s.judge("alice", "q0", "q0-d1", 0)
    v = s.view("alice")
    assert (v.qid, v.doc_id) == ("q1", "q1-d0") and v.my_judged == 4
    with pytest.raises(Refused):
        s.judge("alice", "q0", "nope", 1)
    with pytest.raises(Refused):
        s.judge("alice", "q0", "q0-d0", 4)


def test_undo_is_multilevel_and_restores_overwritten_grades(tmp_path):
    s = make_db(tmp_path / "j.sqlite")
    s.judge("alice", "q0", "q0-d0", 1, note="first")
    s.judge("alice", "q0", "q0-d1", 3)
    s.move("alice", "goto", qid="q0", doc="q0-d0")
    s.judge("alice", "q0", "q0-d0", 2, note="second")  # overwrite
    assert "restored grade 1" in s.undo("alice")
    v = s.view("alice")
    assert (v.doc_id, v.grade, v.note) == ("q0-d0", 1, "first")
    assert "removed grade 3" in s.undo("alice")
    v = s.view("alice")
    assert v.doc_id == "q0-d1" and v.grade is None
    s.undo("alice")
    assert s.undo("alice") == "nothing to undo"
    assert s.view("alice").my_judged == 0
    rows = s._conn.execute("SELECT kind, undone FROM events ORDER BY id").fetchall()
    assert rows == [("judge", 1), ("judge", 1), ("judge", 1), ("undo", 0), ("undo", 0), ("undo", 0)]


def test_skip_comes_back_last(tmp_path):
    s = make_db(tmp_path / "j.sqlite", n_queries=1, n_docs=3)
    s.skip("alice", "q0", "q0-d0")
    v = s.view("alice")
    assert v.doc_id == "q0-d1" and v.items[0].skipped and v.skipped_left == 1
    s.judge("alice", "q0", "q0-d1", 1)
    s.judge("alice", "q0", "q0-d2", 1)
    assert s.view("alice").doc_id == "q0-d0"  # only the skipped one is left
    s.judge("alice", "q0", "q0-d0", 0)
    v = s.view("alice")
    assert v.done and v.skipped_left == 0 and v.my_judged == 3


def test_cursor_survives_reopen(tmp_path):
    path = tmp_path / "j.sqlite"
    s = make_db(path)
    for d in range(3):
        s.judge("alice", "q0", f"q0-d{d}", 1)
    s.undo("alice")
    s.close()  # (a kill is tested with a real process in the browser test)
    s2 = Store(path)
    v = s2.view("alice")
    assert (v.qid, v.doc_id, v.my_judged) == ("q0", "q0-d2", 2)


def test_two_annotators_get_different_queries_and_routed_ones_twice(tmp_path):
    s = make_db(tmp_path / "j.sqlite", n_queries=3, n_docs=2, required={"q1": 2})
    assert s.view("alice").qid == "q0"
    assert s.view("bob").qid == "q1"  # q0 is claimed by alice
    s.judge("bob", "q1", "q1-d0", 1)
    s.judge("bob", "q1", "q1-d1", 1)
    assert s.view("bob").qid == "q2"  # q0 still alice's
    s.judge("alice", "q0", "q0-d0", 3)
    s.judge("alice", "q0", "q0-d1", 3)
    v = s.view("alice")
    assert v.qid == "q1" and v.others == ("bob",)  # routed to two annotators: alice judges it too
    s.judge("alice", "q1", "q1-d0", 2)
    s.judge("alice", "q1", "q1-d1", 1)
    v = s.view("alice")
    assert v.done  # q2 is bob's
    with pytest.raises(Refused, match="not open"):
        s.judge("alice", "q2", "q2-d0", 1)
    n = s._conn.execute("SELECT count(*), count(DISTINCT qid || '/' || doc_id || '/' || annotator) FROM judgments")
    assert n.fetchone() == (6, 6)


def test_review_accept_edit_reject_and_refusals(tmp_path):
    s = make_db(tmp_path / "j.sqlite", n_queries=1, synthetic=3)
    r = s.review_view("rita")
    assert (r.qid, r.status, r.pending, r.total, r.written_from) == ("s0", "pending", 3, 3, ("d0",))
    assert s.review("rita", "s0", "accept") == "synthetic 0"  # needs a pool
    r = s.review_view("rita")
    assert r.qid == "s1"
    assert s.review("rita", "s1", "edit", "  fixed   text ") == "fixed text"
    assert s.review("rita", "s2", "reject") is None
    rows = {q: (t, o, st) for q, t, o, st in s._conn.execute(
        "SELECT qid, text, original_text, status FROM queries WHERE source = 'synthetic'")}
    assert rows == {"s0": ("synthetic 0", "synthetic 0", "accepted"), "s1": ("fixed text", "synthetic 1", "edited"),
                    "s2": ("synthetic 2", "synthetic 2", "rejected")}
    assert s.review_undo("rita") == "undo: query s2 is pending again"
    assert s._conn.execute("SELECT status FROM queries WHERE qid = 's2'").fetchone()[0] == "pending"
    # pooled and judged: its text can no longer change
    assert s.add_pool("s0", "synthetic 0", [PooledDoc("x", {"bm25": 1})])
    assert not s.add_pool("s0", "synthetic 0", [PooledDoc("y", {"bm25": 1})])  # already pooled
    assert not s.add_pool("s1", "synthetic 1", [PooledDoc("y", {"bm25": 1})])  # text changed meanwhile
    s.judge("alice", "s0", "x", 2)
    with pytest.raises(Refused, match="already has 1 judgment"):
        s.review("rita", "s0", "edit", "other")
    with pytest.raises(Refused, match="empty"):
        s.review("rita", "s1", "edit", "   ")


def test_create_is_atomic(tmp_path):
    path = tmp_path / "j.sqlite"
    make_db(path).close()
    with pytest.raises(FileExistsError):
        make_db(path)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
