"""``benchmarks/strict_reads.py``: a verdict belongs to one (document, query) pair and is found again in another
truth; unread pairs are appended with ``?``; a bad verdict stops with the file, line and field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a script in a subprocess

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "strict_reads.py"


def _folder(path: Path, queries: list[tuple[str, str]]) -> Path:
    path.mkdir()
    docs = {"d1": ("Paper Impermanence", "Acid paper decays; storage conditions matter."),
            "d2": ("Serial Literature Used by Geologists", "References are tabulated in Table I."),
            "d3": ("Organizations", "This book is about the theory of formal organizations.")}
    (path / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": t, "text": x}) + "\n"
                                               for k, (t, x) in docs.items()))
    (path / "queries.jsonl").write_text("".join(
        json.dumps({"_id": f"q{i}", "text": q, "metadata": {"source_doc": d, "leak": 0.5}}) + "\n"
        for i, (d, q) in enumerate(queries)))
    return path


def _run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], check=False, capture_output=True, text=True)


def test_verdicts_follow_the_pair_across_truths_and_unread_pairs_are_appended(tmp_path: Path) -> None:
    labels = tmp_path / "labels.tsv"
    labels.write_text("doc_id\tverdict\tquery\tnote\n"
                      "d1\tanswered\tWhat makes paper decay?\t\n"
                      "d2\tmiss\tWhat are the references tabulated in Table I?\tneeds the document\n")
    first = _folder(tmp_path / "a", [("d1", "What makes  paper decay?"), ("d2", "What are the references tabulated in Table I?"),
                                     ("d3", "What is the theory of formal organizations?")])
    out = _run(first, "--data", first, "--labels", labels, "-n", 3, "--append")
    assert out.returncode == 0, out.stderr
    assert "strict: 1 answered of 2 read (1 unread) of 3 sampled" in out.stdout
    assert "| needs the document |" in out.stdout
    rows = labels.read_text().splitlines()
    assert rows[-1] == "d3\t?\tWhat is the theory of formal organizations?\t" and len(rows) == 4
    # the same query over another document is another pair: unread
    second = _folder(tmp_path / "b", [("d3", "What makes paper decay?")])
    out = _run(second, "--data", second, "--labels", labels, "-n", 5)
    assert "strict: 0 answered of 0 read (1 unread) of 1 sampled" in out.stdout


def test_a_bad_verdict_names_the_file_and_line(tmp_path: Path) -> None:
    labels = tmp_path / "labels.tsv"
    labels.write_text("doc_id\tverdict\tquery\tnote\nd1\tyes\tWhat makes paper decay?\t\n")
    truth = _folder(tmp_path / "a", [("d1", "What makes paper decay?")])
    out = _run(truth, "--data", truth, "--labels", labels)
    assert out.returncode == 2
    assert f"{labels}:2: verdict 'yes' is not one of answered, miss, ?" in out.stderr


def test_a_missing_corpus_or_source_document_stops_with_one_line(tmp_path: Path) -> None:
    labels = tmp_path / "labels.tsv"
    truth = _folder(tmp_path / "a", [("d9", "What makes paper decay?")])
    out = _run(truth, "--data", tmp_path / "nowhere", "--labels", labels, "--append")
    assert out.returncode == 2 and out.stderr.strip() == f"{tmp_path / 'nowhere' / 'corpus.jsonl'}: no such file"
    out = _run(truth, "--data", truth, "--labels", labels, "--append")
    assert out.returncode == 2 and "metadata.source_doc 'd9' is not in" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not labels.exists()
