"""The command line's one error boundary (:func:`bakeoff.cli.main`), the schema helpers behind every
message (:mod:`bakeoff.validation`), and the loader behaviours that are not errors (long CSV fields,
empty-document warnings)."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
import typer

from bakeoff import cli
from bakeoff.data.ids import id_problem
from bakeoff.data.loaders import LoadReport, read_beir_corpus, read_records
from bakeoff.errors import InputError, describe_os_error
from bakeoff.progress import progress_bar
from bakeoff.validation import closest, toml_key_line


def _app(fn) -> typer.Typer:  # one command whose body is ``fn``: the boundary around it is under test
    app = typer.Typer(add_completion=False)
    app.command("boom")(fn)
    app.command("other")(lambda: None)
    return app


@pytest.fixture()
def boundary(monkeypatch: pytest.MonkeyPatch):
    def run(fn) -> int:
        monkeypatch.setattr(cli, "_command", lambda: typer.main.get_command(_app(fn)))
        return cli.main(["boom"])

    return run


def test_disk_full_is_one_line_naming_the_file(boundary, capsys: pytest.CaptureFixture[str]) -> None:
    def fn() -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "/mnt/out/runs/bm25.trec")

    assert boundary(fn) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: /mnt/out/runs/bm25.trec: No space left on device (free some space, or write elsewhere, and run again)"]


@pytest.mark.parametrize("exc, words", [
    (PermissionError(errno.EACCES, "Permission denied", "/data/x"), "check the permissions"),
    (IsADirectoryError(errno.EISDIR, "Is a directory", "/data/x"), "a folder is where a file is expected"),
    (OSError(errno.ELOOP, "Too many levels of symbolic links", "/data/loop"), "points (through others) back"),
    (RecursionError("maximum recursion depth exceeded"), "nested too deeply"),
])
def test_expected_failures_are_one_line(boundary, capsys: pytest.CaptureFixture[str], exc: BaseException,
                                        words: str) -> None:
    def fn() -> None:
        raise exc

    assert boundary(fn) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and words in err[0]


def test_a_bug_gives_the_traceback_and_asks_for_a_report(boundary, capsys: pytest.CaptureFixture[str]) -> None:
    def fn() -> None:
        {}["missing"]  # a genuine bug

    assert boundary(fn) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "KeyError: 'missing'" in err
    assert err.rstrip().splitlines()[-1] == cli.BUG_REPORT


def test_error_during_a_progress_bar_is_on_its_own_line(boundary, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A bar drawn on a terminal is closed (its line cleared) before the error line is printed."""
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)

    def fn() -> None:
        bar = progress_bar(total=10, desc="search bm25", enabled=True)
        bar.update(3)
        bar.refresh()
        raise InputError("bad line", path="x.jsonl", line=3, field="_id")

    assert boundary(fn) == 2
    err = capsys.readouterr().err
    last = err.split("\r")[-1]  # what a terminal shows on the last line after the carriage returns
    assert err.endswith("\n") and last.strip() == "error: x.jsonl:3: field '_id': bad line"
    assert not [b for b in __import__("tqdm").tqdm._instances if not b.disable]


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--k", "0", "--arm", "bm25"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [("error: bakeoff run: Invalid value for '--k': Input should be greater than or equal to 1 "
                    "(got '0') (see 'bakeoff run --help')")]
    assert cli.main(["--help"]) == 0


def test_describe_os_error_without_a_file() -> None:
    assert describe_os_error(OSError(errno.ENOSPC, "No space left on device")) == (
        "No space left on device (free some space, or write elsewhere, and run again)")


def test_toml_key_line() -> None:
    text = ('# bake-off\n[dataset]\nbeir = "x"\n[dataset.clean]\nmin_chars = 3\n[run]\nk = 5\n'
            '[[arms]]\ntype = "bm25"\n[[arms]]\ntype = "bm25"\n"k1" = 2\n')
    assert toml_key_line(text, ("dataset", "beir")) == 3
    assert toml_key_line(text, ("dataset", "clean", "min_chars")) == 5
    assert toml_key_line(text, ("run", "k")) == 7
    assert toml_key_line(text, ("arms", 1, "k1")) == 12
    assert toml_key_line(text, ("arms", 1, "b")) == 10  # not written: the table's line
    assert toml_key_line(text, ("arms", 0)) == 8
    assert toml_key_line(text, ("engine", "ray")) is None


def test_closest_names() -> None:
    assert closest("k2", ["k1", "b", "delta"]) == "k1"
    assert closest("runn", ["run", "dataset", "arms"]) == "run"
    assert closest("zzz", ["run", "dataset"]) is None


@pytest.mark.parametrize("value, ok", [("d1", True), ("doc-1/part_2.x", True), ("ünï", True), ("", False),
                                       ("a b", False), ("a\tb", False), ("a\x00", False), ("a\u2028b", False),
                                       ("a\u00a0b", False), ("\x7f", False)])
def test_ids_trec_can_carry(value: str, ok: bool) -> None:
    assert (id_problem(value) is None) is ok


def test_csv_field_longer_than_pythons_default_limit_is_read(tmp_path: Path) -> None:
    import csv

    path = tmp_path / "docs.csv"
    path.write_text("id,text\nd1," + "x" * 300_000 + "\nd2,\"two\nlines\"\n", encoding="utf-8")
    limit = csv.field_size_limit()
    corpus = read_records(path)
    assert corpus.ids == ("d1", "d2") and len(corpus.texts[0]) == 300_000 and corpus.texts[1] == "two\nlines"
    assert csv.field_size_limit() == limit  # the process-wide limit is restored


def test_unclosed_quote_names_the_line_where_it_opens(tmp_path: Path) -> None:
    path = tmp_path / "docs.csv"
    path.write_text('id,text\nd1,"fine\nstill fine"\nd2,"never closed\nd3,swallowed\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"docs\.csv:4: malformed CSV: a quoted field opened on this line is never"):
        read_records(path)


def test_empty_documents_are_counted_and_warned(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    rows = [{"_id": "d1", "text": "alpha"}, {"_id": "d2", "text": ""}, {"_id": "d3", "title": " ", "text": "\n"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = LoadReport()
    assert len(read_beir_corpus(path, report=report)) == 3
    assert report.empty_documents == 2
    assert report.warnings() == ["2 documents have no text nor title (e.g. 'd2'); text arms can never retrieve them"]
