"""TREC run and qrels readers (bakeoff.data.trec): trec_eval's rules, one line naming file, line and field
for every bad input, the fast (pyarrow) reader equal to the line reader, and NaN / inf / ties against
pytrec_eval."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bakeoff.data.ids import id_problem
from bakeoff.data.model import Qrels, Run
from bakeoff.data.trec import (
    TrecReadReport,
    hash_strings,
    read_qrels,
    read_run_table,
    read_trec_run,
)
from bakeoff.errors import InputError
from bakeoff.metrics import evaluate_files, score_run


@pytest.fixture(autouse=True, scope="module")
def fast_reader_on_small_files():
    """The pyarrow reader only takes runs of 2 MB and more; here it must read the small test files too."""
    import bakeoff.data.trec

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bakeoff.data.trec, "_FAST_MIN_BYTES", 0)
        yield


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


# ---- qrels ------------------------------------------------------------------------------------------------------

def test_comment_first_line_does_not_make_trec_qrels_look_like_beir(tmp_path):
    p = write(tmp_path / "q.txt", "# comment here\n301 0 d1 1\n\n  # indented comment\n301 0 d2 0\n302 0 d#3 2\n")
    report = TrecReadReport()
    qrels = read_qrels(p, report=report)
    assert dict(qrels["301"]) == {"d1": 1, "d2": 0} and dict(qrels["302"]) == {"d#3": 2}  # '#' inside an id is data
    assert report.comment_lines == 2 and report.blank_lines == 1


def test_beir_qrels_with_header_and_comments(tmp_path):
    p = write(tmp_path / "q.tsv", "# made by hand\nquery-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\n")
    assert dict(read_qrels(p)["q1"]) == {"d1": 1, "d2": 0}


def test_duplicate_judgment_names_both_lines_or_last_wins_counted(tmp_path):
    p = write(tmp_path / "q.txt", "q1 0 a 1\nq1 0 b 0\nq1 0 a 2\n")
    with pytest.raises(InputError, match=r"q\.txt:3: field 'doc id': query 'q1', document 'a' is judged twice "
                                         r"\(lines 1 and 3\)"):
        read_qrels(p)
    report = TrecReadReport()
    assert dict(read_qrels(p, allow_duplicates=True, report=report)["q1"]) == {"a": 2, "b": 0}
    assert report.duplicate_judgments == 1
    assert report.warnings("q.txt") == ["q.txt: 1 repeated judgments overridden (the last one wins)"]


@pytest.mark.parametrize("text,match", [
    ("q1 0 d1 x\n", r":1: field 'grade': grade must be an integer, got 'x'"),
    ("q1 0 d1 1.5\n", r":1: field 'grade': grade must be an integer"),
    ("q1 0 d1 1\nq1 0 d2\n", r":2: field 'grade': expected 4 columns"),
    ("q1 0 d\x001 1\n", r":1: field 'doc id': contains a control character \(U\+0000\)"),
    ("q\x07 0 d1 1\n", r":1: field 'query id': contains a control character \(U\+0007\)"),
    ("q1 0 d\u00a01 1\n", r":1: field 'doc id': contains whitespace \(U\+00A0\)"),
    ("query-id\tcorpus-id\tscore\nq1\td 1\t1\n", r":2: field 'doc id': contains whitespace \(U\+0020\)"),
    ("query-id\tcorpus-id\tscore\nq1\t\t1\n", r":2: field 'doc id': is empty"),
    (b"q1 0 d\xff 1\n", r":1: field 'doc id': not valid UTF-8"),
    ("# only a comment\n\n", r"no judgments"),
])
def test_bad_qrels_one_line(tmp_path, text, match):
    p = write(tmp_path / "q.txt", text)
    with pytest.raises(InputError, match=match) as info:
        read_qrels(p)
    assert "\n" not in str(info.value) and str(p) in str(info.value)


def test_negative_and_float_integer_grades(tmp_path):
    assert dict(read_qrels(write(tmp_path / "q", "q 0 a -1\nq 0 b 2.0\n"))["q"]) == {"a": -1, "b": 2}


# ---- runs -------------------------------------------------------------------------------------------------------

def test_run_comments_blank_lines_and_extra_columns(tmp_path):
    p = write(tmp_path / "r.trec", "# run header\n\nq1 Q0 a 1 2.0 tag extra1 extra2\n   \nq1 Q0 b 2 1.0 tag\n")
    table = read_run_table(p)
    assert table.report.comment_lines == 1 and table.report.blank_lines == 2 and table.report.extra_columns == 1
    assert table.to_run().doc_ids("q1") == ["a", "b"]
    assert any("1 lines have columns after the sixth" in w for w in table.report.warnings("r.trec"))


@pytest.mark.parametrize("score", ["nan", "NaN", "-nan", "+NAN"])
def test_nan_score_names_file_and_line(tmp_path, score):
    p = write(tmp_path / "r.trec", f"q1 Q0 a 1 2.0 t\nq1 Q0 b 2 {score} t\n")
    for fast in (True, False):
        with pytest.raises(InputError, match=r"r\.trec:2: field 'score': score is NaN"):
            read_run_table(p, fast=fast)


@pytest.mark.parametrize("text,match", [
    ("q1 Q0 a 1 2.0\n", r":1: field 'tag': expected 6 columns \(qid Q0 docid rank score tag\), got 5"),
    ("q1 Q0 a 1 high t\n", r":1: field 'score': score must be a number, got 'high'"),
    ("q1 Q0 a 1 1_0 t\n", r":1: field 'score': score must be a number"),
    ("q1 Q0 a 1 2 t\nq1 Q0 a 2 1 t\n", (r":2: field 'doc id': document 'a' appears twice for query 'q1' "
                                        r"\(lines 1 and 2\)")),
    ("q1 Q0 a\x00b 1 2 t\n", r":1: field 'doc id': contains a control character \(U\+0000\)"),
    ("q\x001 Q0 a 1 2 t\n", r":1: field 'query id': contains a control character"),
    ("q1 Q0 a\u2028b 1 2 t\n", r":1: field 'doc id': contains whitespace \(U\+2028\)"),
])
def test_bad_run_one_line(tmp_path, text, match):
    p = write(tmp_path / "r.trec", text)
    with pytest.raises(InputError, match=match) as info:
        read_trec_run(p)
    assert "\n" not in str(info.value)


def test_inf_scores_are_numbers(tmp_path):
    p = write(tmp_path / "r.trec", "q Q0 a 1 0.5 t\nq Q0 big 2 inf t\nq Q0 small 3 -inf t\nq Q0 b 4 1e308 t\n")
    assert read_trec_run(p).doc_ids("q") == ["big", "b", "a", "small"]
    # the shape: the documents scored ±inf are the relevant ones; inf must rank first (NDCG@10 0.8772,
    # as pytrec_eval computes it), not last
    qrels = Qrels({"q": {"big": 1, "small": 1}})
    ev = score_run(read_trec_run(p), qrels, ["ndcg@10"])
    assert ev.means["ndcg@10"] == pytest.approx((1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3)))  # 0.8772
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ref = pytrec_eval.RelevanceEvaluator({"q": {"big": 1, "small": 1}}, {"ndcg_cut.10"}).evaluate(
        {"q": {"a": 0.5, "big": float("inf"), "small": float("-inf"), "b": 1e308}})
    assert ev.means["ndcg@10"] == pytest.approx(ref["q"]["ndcg_cut_10"], abs=1e-12)


def test_reversed_lines_give_the_same_evaluation(tmp_path):
    lines = ["q Q0 a 1 0.1 t", "q Q0 b 2 0.9 t", "q Q0 c 3 0.5 t", "q Q0 d 4 0.7 t", "q Q0 e 5 0.5 t"]
    qrels = Qrels({"q": {"a": 1, "c": 2, "e": 1}})
    one = score_run(read_trec_run(write(tmp_path / "a", "\n".join(lines) + "\n")), qrels, ["ndcg@10", "map"])
    two = score_run(read_trec_run(write(tmp_path / "b", "\n".join(lines[::-1]) + "\n")), qrels, ["ndcg@10", "map"])
    assert one.means == two.means


def test_empty_run_and_missing_queries_warn_with_counts(tmp_path):
    q = write(tmp_path / "q.txt", "q1 0 a 1\nq2 0 b 1\nq3 0 c 0\n")
    empty = write(tmp_path / "empty.trec", "# nothing\n")
    done = evaluate_files(q, empty, ["ndcg@10"])
    assert done.evaluation.means["ndcg@10"] == 0.0
    assert any("the run is empty (no result lines): every judged query scores 0" in w for w in done.warnings)
    r = write(tmp_path / "r.trec", "q1 Q0 a 1 1.0 t\nqx Q0 a 1 1.0 t\n")
    done = evaluate_files(q, r, ["ndcg@10"])
    w = " | ".join(done.warnings)
    assert "1 of 3 judged queries have no results in the run (scored 0; e.g. 'q2')" in w
    assert "1 run queries have no judgments" in w and "1 judged queries have no relevant document" in w
    done = evaluate_files(q, r, ["ndcg@10"], trec_eval=True)
    assert "2 of 3 judged queries have no results in the run (skipped, as trec_eval does without -c" \
        in " | ".join(done.warnings)
    assert done.evaluation.query_ids == ("q1",)
    with pytest.raises(InputError, match="no query has both results and judgments"):
        evaluate_files(q, empty, ["ndcg@10"], trec_eval=True)


def test_id_problem():
    assert id_problem("doc-1#2") is None and id_problem("café") is None
    assert id_problem("") == "is empty"
    assert "U+0009" in id_problem("a\tb") and "U+0085" in id_problem("a\x85b")


def test_hash_strings_is_fnv1a():
    def fnv(b: bytes) -> int:
        x = 0xCBF29CE484222325
        for c in b:
            x = ((x ^ c) * 0x100000001B3) % 2**64
        return x

    for ids in (["d0000001", "d0000002"], ["a", "", "abc", "é" * 5, "x" * 40]):
        enc = [s.encode() for s in ids]
        off = np.cumsum([0] + [len(e) for e in enc])
        got = hash_strings(off, np.frombuffer(b"".join(enc), dtype=np.uint8))
        assert [int(v) for v in got] == [fnv(e) for e in enc]


# ---- the fast reader is the line reader -------------------------------------------------------------------------

ids = st.text(alphabet="abcXYZ09-_#.", min_size=1, max_size=6)
scores = st.one_of(st.sampled_from(["1", "0", "-0", "2.5", "inf", "-inf", "1e308", "-3", "0.5"]),
                   st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2", "10"]), ids, scores), max_size=40),
       st.sampled_from([" ", "\t"]), st.booleans())
def test_fast_reader_equals_line_reader(tmp_path_factory, rows, sep, shuffle):
    rows = list({(q, d): (q, d, s) for q, d, s in rows}.values())
    if shuffle:
        rows = rows[::-1]
    text = "".join(sep.join([q, "Q0", d, str(i), s, "run"]) + "\n" for i, (q, d, s) in enumerate(rows))
    p = write(tmp_path_factory.mktemp("r") / "r.trec", text)
    if not rows:
        assert read_trec_run(p).ranked == {}
        return
    fast, slow = read_run_table(p), read_run_table(p, fast=False)
    assert not isinstance(fast.docs, list)  # the pyarrow reader did read it
    assert fast.to_run().ranked == slow.to_run().ranked
    qrels = Qrels({"q1": {d: 1 for _, d, _ in rows[::2]}, "q2": {rows[0][1]: 2}})
    ms = ["ndcg@3", "map", "mrr", "precision@2", "bpref", "rprec"]
    assert score_run(fast, qrels, ms).per_query == score_run(slow.to_run(), qrels, ms).per_query


# ---- NaN / inf / ties: NDCG equals pytrec_eval -------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(alphabet="abcdef", min_size=1, max_size=3),
                       st.one_of(st.sampled_from([0.0, 1.0, float("inf"), float("-inf")]),
                                 # pytrec_eval hands scores to trec_eval with limited precision (-2e-213 ties
                                 # with 0 there): quarter steps are exact in every form
                                 st.integers(-400, 400).map(lambda i: i / 4)), min_size=1, max_size=25),
       st.dictionaries(st.text(alphabet="abcdef", min_size=1, max_size=3), st.integers(0, 3), min_size=1,
                       max_size=10))
def test_ndcg_with_inf_and_ties_equals_pytrec_eval(run, judged):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    if not any(g > 0 for g in judged.values()):
        judged = {**judged, next(iter(judged)): 1}
    ref = pytrec_eval.RelevanceEvaluator({"q": judged}, {"ndcg_cut.3", "ndcg_cut.10", "ndcg", "map", "P.5"})
    want = ref.evaluate({"q": run})["q"]
    ev = score_run(Run.from_scores("r", {"q": run}), Qrels({"q": judged}), ["ndcg@3", "ndcg@10", "ndcg", "map",
                                                                           "precision@5"]).per_query
    for mine, theirs in (("ndcg@3", "ndcg_cut_3"), ("ndcg@10", "ndcg_cut_10"), ("ndcg", "ndcg"), ("map", "map"),
                         ("precision@5", "P_5")):
        assert ev[mine]["q"] == pytest.approx(want[theirs], abs=1e-12)


@pytest.mark.parametrize("text", [
    "q1  Q0 d1 1 2.0\n",               # doubled separator hiding a missing column: d1 must not become 'Q0'
    " q1 Q0 d1 1 2.0 run\n",           # leading separator
    "q1 Q0 d1 1 2.0 run \n",           # trailing separator
    "q1\tQ0\td1\t1\t  2.0\trun\n",     # tabs and spaces (trec_eval's own results.test)
    "q1 Q0 d1 1 2.0 run\r\nq1 Q0 d2 2 1.0 run\r\n",  # CRLF
    "q1 Q0 d1 1 2.0 run\n\nq1 Q0 d2 2 1.0 run",     # blank line, no final newline
    "# c\nq1 Q0 d1 1 2.0 run\n",
    "q1 Q0 d1 1 2.0 run x y\n",
])
def test_irregular_whitespace_reads_as_trec_eval_reads_it(tmp_path, text):
    p = write(tmp_path / "r.trec", text)
    try:
        want = read_run_table(p, fast=False).to_run().ranked
    except InputError as exc:
        with pytest.raises(InputError, match=re.escape(str(exc))):
            read_run_table(p)
        assert "q1  Q0" in text  # the only bad one: 5 fields
        return
    assert read_run_table(p).to_run().ranked == want and want["q1"][0][0] == "d1"
