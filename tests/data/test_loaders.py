"""Loaders and cleaning: every supported format, and every kind of bad input."""

import json
from pathlib import Path

import pytest

from bakeoff.data import (
    CleanOptions,
    FieldMap,
    load_beir,
    open_corpus,
    read_folder,
    read_qrels,
    read_records,
    read_trec_run,
    write_beir,
    write_trec_qrels,
    write_trec_run,
)
from bakeoff.data.clean import html_to_text, normalize_space
from bakeoff.data.loaders import LoadReport
from bakeoff.errors import InputError


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def beir_folder(root: Path, *, corpus=None, queries=None, qrels=None) -> Path:
    corpus = corpus if corpus is not None else (
        '{"_id": "d1", "title": "T1", "text": "alpha beta"}\n'
        '{"_id": "d2", "title": "", "text": "gamma delta"}\n'
        '{"_id": "d3", "title": "T3", "text": "epsilon"}\n')
    queries = queries if queries is not None else '{"_id": "q1", "text": "alpha"}\n{"_id": "q2", "text": "gamma"}\n{"_id": "q3", "text": "zeta"}\n'
    qrels = qrels if qrels is not None else "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\nq2\td3\t0\n"
    write(root / "corpus.jsonl", corpus)
    write(root / "queries.jsonl", queries)
    write(root / "qrels" / "test.tsv", qrels)
    return root


def test_beir_folder(tmp_path):
    ds = load_beir(beir_folder(tmp_path))
    assert ds.corpus.ids == ("d1", "d2", "d3") and ds.corpus["d1"].title == "T1"
    assert ds.queries.ids == ("q1", "q2")  # q3 has no judgments in this split
    assert dict(ds.qrels["q2"]) == {"d2": 2, "d3": 0}
    assert any("q3" not in n and "1 queries" in n for n in ds.info["notes"])


def test_note_says_which_split_judges_the_queries_left_out(tmp_path):
    """A generated truth puts half its queries in qrels/train.tsv: the note on the queries a test run leaves out
    says where they are; a broken file of another split does not stop the run."""
    root = beir_folder(tmp_path)
    write(root / "qrels" / "train.tsv", "query-id\tcorpus-id\tscore\nq3\td3\t1\n")
    write(root / "qrels" / "dev.tsv", "query-id\tcorpus-id\nbroken\n")
    ds = load_beir(root)
    assert ds.queries.ids == ("q1", "q2")
    assert ds.info["notes"] == [("1 queries in the queries file have no judgments in split 'test'; not evaluated "
                                 "(1 of them judged in split 'train'; --split chooses the split evaluated)")]
    assert load_beir(root, split="train").info["notes"][0].endswith(
        "not evaluated (2 of them judged in split 'test'; --split chooses the split evaluated)")


def test_beir_missing_split_lists_available(tmp_path):
    with pytest.raises(InputError, match=r"no qrels for split 'dev' \(have: test\)"):
        load_beir(beir_folder(tmp_path), split="dev")


@pytest.mark.parametrize(
    "corpus,match",
    [
        ('{"_id": "d1", "text": "x"}\n{"_id": "d2", "text": "y"\n', r"corpus\.jsonl:2: invalid JSON"),
        ('{"_id": "d1", "text": "x"}\n{"text": "y"}\n', r"corpus\.jsonl:2: field '_id': missing"),
        ('{"_id": "d1", "text": "x"}\n{"_id": "d1", "text": "y"}\n', r"corpus\.jsonl:2: field 'id': duplicate document id 'd1' \(first on line 1\)"),
        ("", r"corpus\.jsonl: the corpus is empty"),
        ('[1, 2]\n', r"corpus\.jsonl:1: expected a JSON object"),
    ],
)
def test_bad_corpus(tmp_path, corpus, match):
    with pytest.raises(InputError, match=match) as info:
        load_beir(beir_folder(tmp_path, corpus=corpus))
    assert "\n" not in str(info.value)


def test_non_utf8_names_line(tmp_path):
    bad = b'{"_id": "d1", "text": "ok"}\n{"_id": "d2", "text": "caf\xe9"}\n'
    with pytest.raises(InputError, match=r"corpus\.jsonl:2: not valid UTF-8"):
        load_beir(beir_folder(tmp_path, corpus=bad))  # type: ignore[arg-type]


def test_qrels_row_missing_column(tmp_path):
    p = write(tmp_path / "q.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\n")
    with pytest.raises(InputError, match=r"q\.tsv:3: field 'score': expected 3 columns"):
        read_qrels(p)
    p = write(tmp_path / "t.qrels", "q1 0 d1 1\nq1 0 d2 x\n")
    with pytest.raises(InputError, match=r"t\.qrels:2: field 'grade': grade must be an integer"):
        read_qrels(p)


def test_qrels_doc_absent_from_corpus_is_counted(tmp_path):
    ds = load_beir(beir_folder(tmp_path, qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\tnope\t1\n"))
    assert ds.info["load_report"]["qrels_docs_missing"] == 1
    assert any("absent from the corpus" in w and "'nope'" in w for w in ds.info["warnings"])
    assert ds.qrels.relevant("q1") == {"d1", "nope"}  # stays relevant: recall counts it


def test_dedupe_and_min_chars_report_counts(tmp_path):
    corpus = ('{"_id": "d1", "text": "long enough text"}\n{"_id": "d1", "text": "dup"}\n'
              '{"_id": "d2", "text": "tiny"}\n{"_id": "d3", "text": "also long enough"}\n')
    report = LoadReport()
    ds = load_beir(beir_folder(tmp_path, corpus=corpus, qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\n"),
                   clean=CleanOptions(dedupe=True, min_chars=10), report=report)
    assert ds.corpus.ids == ("d1", "d3")
    assert (report.duplicate_ids, report.short_dropped) == (1, 1)
    assert ds.corpus["d1"].text == "long enough text"  # first kept


def test_trec_run_and_qrels_roundtrip(tmp_path):
    from bakeoff.data.model import Qrels, Run

    run = Run.from_scores("my run", {"q1": {"a": 0.1 + 0.2, "b": 1.0, "c": 1.0}, "q2": {"x": -2.5}})
    write_trec_run(run, tmp_path / "r.trec")
    lines = (tmp_path / "r.trec").read_text().splitlines()
    assert lines[0] == "q1 Q0 c 1 1.0 my_run"
    back = read_trec_run(tmp_path / "r.trec")
    assert back.ranked == run.ranked  # repr precision survives
    qrels = Qrels({"q1": {"a": 2, "b": 0}})
    write_trec_qrels(qrels, tmp_path / "q.qrels")
    assert read_qrels(tmp_path / "q.qrels").fingerprint() == qrels.fingerprint()


def test_trec_run_ignores_file_ranks_and_reports_bad_lines(tmp_path):
    p = write(tmp_path / "r", "q Q0 a 1 1.0 t\nq Q0 b 2 2.0 t\n")
    assert read_trec_run(p).doc_ids("q") == ["b", "a"]
    p = write(tmp_path / "bad", "q Q0 a 1 1.0 t\nq Q0 b 2 t\n")
    with pytest.raises(InputError, match=r"bad:2: .*expected 6 columns"):
        read_trec_run(p)
    p = write(tmp_path / "bad2", "q Q0 a 1 high t\n")
    with pytest.raises(InputError, match=r"bad2:1: field 'score'"):
        read_trec_run(p)


def test_records_jsonl_multi_field_documents(tmp_path):
    p = write(tmp_path / "cases.jsonl", "\n".join(json.dumps(r) for r in [
        {"case": "c1", "facts": "the car", "conclusion": "guilty", "court": "A"},
        {"case": "c2", "facts": "the bike", "conclusion": "", "court": "B"},
    ]) + "\n")
    c = read_records(p, fields=FieldMap(id="case", text=("facts", "conclusion"), title=None))
    assert c.ids == ("c1_facts", "c1_conclusion", "c2_facts")
    assert c["c1_conclusion"].metadata == {"court": "A", "field": "conclusion"}


def test_records_csv_and_parquet(tmp_path):
    p = write(tmp_path / "docs.csv", 'id,title,text\n1,One,"hello, world"\n2,Two,bye\n')
    c = read_records(p)
    assert c.ids == ("1", "2") and c["1"].text == "hello, world" and c["2"].title == "Two"
    p = write(tmp_path / "docs2.csv", "id,text\n1,a\n2,b,extra\n")
    with pytest.raises(InputError, match=r"docs2\.csv:3: more columns"):
        read_records(p)
    p = write(tmp_path / "nofield.csv", "ident,text\n1,a\n")
    with pytest.raises(InputError, match=r"nofield\.csv:2: field 'id': missing"):
        read_records(p)
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": ["x", "y"], "text": ["t1", "t2"], "lang": ["en", "es"]}), tmp_path / "d.parquet")
    c = read_records(tmp_path / "d.parquet")
    assert c.ids == ("x", "y") and c["y"].metadata == {"lang": "es"}


def test_folder_of_files(tmp_path):
    write(tmp_path / "docs" / "a.txt", "plain text")
    write(tmp_path / "docs" / "sub" / "b.md", "# Heading\n\nbody")
    write(tmp_path / "docs" / "c.html", "<html><head><title>Page</title><script>x()</script></head>"
                                        "<body><p>Hello&nbsp;<b>you</b></p></body></html>")
    write(tmp_path / "docs" / "skip.bin", "x")
    report = LoadReport()
    c = read_folder(tmp_path / "docs", report=report)
    assert c.ids == ("a.txt", "c.html", "sub/b.md")  # the ids `bakeoff ingest files` gives (bakeoff.data.ids)
    assert c["c.html"].title == "Page" and c["c.html"].text == "Hello you"
    assert c["sub/b.md"].title == "Heading" and c["sub/b.md"].text == "Heading\n\nbody"  # Markdown rendered
    assert c["sub/b.md"].metadata == {"path": "sub/b.md", "format": "markdown", "pages": None}
    assert report.other_files == ["skip.bin"]
    assert report.warnings() == [("1 files of other types skipped (e.g. skip.bin); documents are .docx, .htm, .html, "
                                  ".markdown, .md, .pdf, .rst, .txt")]


def test_cleaning_functions():
    assert html_to_text("<p>a&amp;b</p><p>c</p><style>x{}</style>") == "a&b\n\nc"
    assert normalize_space("a\u00a0\u00a0b\r\n\r\n\r\nc  ") == "a b\n\nc"


def test_write_beir_roundtrip(tmp_path):
    ds = load_beir(beir_folder(tmp_path / "src"))
    write_beir(tmp_path / "out", corpus=ds.corpus, queries=ds.queries, qrels={"test": ds.qrels})
    back = load_beir(tmp_path / "out")
    assert back.corpus.fingerprint() == ds.corpus.fingerprint()
    assert back.qrels.fingerprint() == ds.qrels.fingerprint()


def test_ir_datasets_offline_gives_clear_error():
    pytest.importorskip("ir_datasets")
    from bakeoff.data import load_ir_datasets

    with pytest.raises(InputError, match=r"irds:nonexistent/dataset: unknown ir_datasets id"):
        load_ir_datasets("nonexistent/dataset")


def test_atomic_writes_get_the_usual_file_mode(tmp_path):
    import os
    import stat

    from bakeoff._io import atomic_write_text

    atomic_write_text(tmp_path / "f.txt", "x")
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE((tmp_path / "f.txt").stat().st_mode) == 0o666 & ~mask
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]  # no temporary left behind


def test_folder_skips_and_names_unreadable_files(tmp_path) -> None:
    """A file of the folder that cannot be decoded is skipped, named with its reason in the load report (the corpus
    is the readable rest), as `bakeoff ingest files` does."""
    from bakeoff.data.loaders import LoadReport, read_folder

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("alpha beta", encoding="utf-8")
    (docs / "b.txt").write_bytes(b"caf\xe9 gamma")
    report = LoadReport()
    corpus = read_folder(docs, report=report)
    assert list(corpus.ids) == ["a.txt"]
    assert len(report.unreadable_files) == 1 and report.unreadable_files[0].startswith(f"{docs / 'b.txt'}: ")


def test_open_corpus_sniffs_every_form(tmp_path):
    beir = beir_folder(tmp_path / "beir")
    ref = load_beir(beir).corpus
    assert open_corpus(beir).fingerprint() == ref.fingerprint()                       # BEIR folder
    assert open_corpus(beir / "corpus.jsonl").fingerprint() == ref.fingerprint()      # BEIR corpus.jsonl
    assert open_corpus(beir / "corpus.jsonl").metadata[0] == {}                       # BEIR reader, not records
    recs = write(tmp_path / "recs.jsonl", '{"id": "a", "text": "x", "lang": "en"}\n{"id": "b", "text": "y"}\n')
    c = open_corpus(recs)
    assert c.ids == ("a", "b") and c.metadata[0] == {"lang": "en"}                    # records, field map
    texts = tmp_path / "notes"
    write(texts / "one.md", "# Title one\nbody")
    write(texts / "sub" / "two.txt", "plain")
    c = open_corpus(texts)
    assert c.ids == ("one.md", "sub/two.txt") and c.titles[0] == "Title one"          # a folder of files


def test_open_corpus_explicit_field_map_wins_over_sniffing(tmp_path):
    # a record file with both "_id" and "id": the field map's id field decides
    both = write(tmp_path / "both.jsonl", '{"_id": "x1", "id": "r1", "text": "t"}\n')
    assert open_corpus(both).ids == ("r1",)
    assert open_corpus(both, fields=FieldMap(id="_id")).ids == ("x1",)


def test_open_corpus_missing_path_names_it(tmp_path):
    with pytest.raises(InputError, match=r"missing\.jsonl: no such file or folder"):
        open_corpus(tmp_path / "missing.jsonl")

def test_open_corpus_reads_a_file_once_in_one_pass(tmp_path, monkeypatch):
    # the format is decided from the first record, in the pass that reads the file: no second opening
    from bakeoff.data import loaders

    opened: list[Path] = []
    lines = loaders.text_lines

    def counting(path):
        opened.append(path)
        return lines(path)

    monkeypatch.setattr(loaders, "text_lines", counting)
    beir = beir_folder(tmp_path / "beir")
    assert open_corpus(beir / "corpus.jsonl").ids == ("d1", "d2", "d3")
    recs = write(tmp_path / "recs.jsonl", '{"id": "a", "text": "x"}\n')
    assert open_corpus(recs).ids == ("a",)
    assert opened == [beir / "corpus.jsonl", recs]


@pytest.mark.parametrize(("name", "text", "match"), [
    ("c.jsonl", '{"_id": "d1", "text": "x"}\n{"_id": "d2"}\n', r"c\.jsonl:2: field 'text': missing"),
    ("c.jsonl", '{"id": "a", "text": "x"}\n{"id": "b", "body": "y"}\n', r"c\.jsonl:2: field 'text': missing"),
    ("c.jsonl", '{"id": "a", "text": "x"}\nnot json\n', r"c\.jsonl:2: invalid JSON"),
    ("c.jsonl", '[1, 2]\n', r"c\.jsonl:1: expected a JSON object"),
    ("c.jsonl", "", r"c\.jsonl: the corpus is empty"),
    ("c.csv", "id,text\na,x\n,y\n", r"c\.csv:3: field 'id': "),
    ("c.txt", "plain", r"c\.txt: unknown record format"),
])
def test_open_corpus_errors_name_file_line_and_field(tmp_path, name, text, match):
    with pytest.raises(InputError, match=match):
        open_corpus(write(tmp_path / name, text))
