"""A full disk names the file it could not write, wherever bakeoff writes: the cache, an ingested corpus, an ingest's
resume state (SQLite), a generated ground-truth folder and the LLM cache; each case is one line with the path,
exit 2, no traceback, no temporary file left. Real writes on a small tmpfs, real commands in a subprocess.

Mounting needs root (CAP_SYS_ADMIN); where it is refused the tests skip and say so.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bakeoff import cli
from bakeoff._io import atomic_write_bytes, sqlite_connect, staged_as
from bakeoff.errors import describe_os_error
from tests.support.fake_openai_chat import FakeOpenAI, Reply
from tests.support.oyez_api import OyezServer, make_cases
from tests.support.tmpfs import mounted_tmpfs

pytestmark = pytest.mark.slow  # the command line in a subprocess on a full disk

FULL = "No space left on device (free some space, or write elsewhere, and run again)"


@pytest.fixture()
def disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of 64 KiB at ``tmp_path/disk``; unmounted after."""
    with mounted_tmpfs(tmp_path / "disk", "64k") as mnt:
        yield mnt


def _bakeoff(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "bakeoff", *args], capture_output=True, text=True, env=env,
                          timeout=600, check=False)


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith(("info: ", "warning: "))]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("error: ") and lines[0].endswith(FULL), lines
    return lines[0].removeprefix("error: ").removesuffix(": " + FULL)


def _no_temporaries(root: Path) -> None:
    assert [p for p in root.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".")] == []


def _words(n: int, seed: int) -> str:
    rng = random.Random(seed)
    vocab = ["river", "sediment", "spring", "autumn", "mountain", "valley", "delta", "flood", "rain", "slope", "basin",
             "estuary", "channel", "erosion"]
    return " ".join(rng.choice(vocab) for _ in range(n))


def _beir(root: Path, *, docs: int, queries: int) -> Path:
    root.mkdir(parents=True)
    with (root / "corpus.jsonl").open("w") as f:
        for i in range(docs):
            f.write(json.dumps({"_id": f"d{i}", "title": "", "text": _words(40, i)}) + "\n")
    with (root / "queries.jsonl").open("w") as f:
        for i in range(queries):
            f.write(json.dumps({"_id": f"q{i}", "text": _words(4, 10_000 + i)}) + "\n")
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" +
                                             "".join(f"q{i}\td{i}\t1\n" for i in range(queries)))
    return root


def test_the_cache_of_a_run(disk: Path, tmp_path: Path) -> None:
    data = _beir(tmp_path / "beir", docs=300, queries=60)   # a 100-deep run of 60 queries: ~200 KB of cache
    where = _one_line(_bakeoff("run", "--beir", str(data), "--arm", "bm25", "--depth", "100", "--latency-sample", "0",
                               "--no-progress", "--out", str(tmp_path / "out"), "--cache-dir", str(disk / "cache")))
    assert where.startswith(str(disk / "cache") + "/") and where.endswith(".json")
    _no_temporaries(disk)


def test_an_ingested_corpus(disk: Path, tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    for i in range(40):
        (files / f"f{i}.txt").write_text(_words(600, i))   # ~200 KB of text
    where = _one_line(_bakeoff("ingest", "files", str(files), "--out", str(disk / "corpus.jsonl"), "--no-progress"))
    assert where == str(disk / "corpus.jsonl")
    _no_temporaries(disk)


def test_an_ingests_resume_state(disk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = disk / "cases.jsonl"
    subprocess.run(["mount", "-o", "remount,size=2m", str(disk)], check=True)   # full in the middle of the crawl
    with OyezServer(make_cases(300)) as api:   # in process: the server is a thread of this test
        args = ["ingest", "api", api.base_url + "/cases", "--out", str(out), "--per-page", "10", "--start-page", "0",
                "--detail-field", "href", "--id", "ID", "--text", "facts_of_the_case", "--no-progress",
                "--timeout", "5", "--rate", "1000"]
        rc = cli.main(args)
        err = capsys.readouterr().err.splitlines()
        assert rc == 2 and err == [f"error: {out}.state.sqlite: {FULL}"]
        assert not out.exists()
        fetched = len(api.requests())
        # space freed: the ingest resumes from its state, asks only for what it did not commit, loses nothing
        subprocess.run(["mount", "-o", "remount,size=16m", str(disk)], check=True)
        assert cli.main(args) == 0
        again = len(api.requests()) - fetched
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert sorted(ids) == sorted(api.expected_ids()) and len(ids) == len(set(ids))
    # resumed: a whole crawl is 360 requests (robots.txt, 60 listing pages, 299 details); the second run asks for
    # what the first did not commit, the response the disk refused included (--concurrency 1: one in flight)
    assert fetched > 20 and fetched + again <= 360 + 2, (fetched, again)


def _corpus(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"_id": f"d{i}", "title": "", "text": _words(150, i)}) + "\n"
                            for i in range(n)))
    return path


def _generate(corpus: Path, out: Path, cache: Path, n: int) -> tuple[subprocess.CompletedProcess[str], int]:
    def answer(body: dict, i: int) -> Reply:
        return Reply(200, json.dumps({"query": f"which river number {i} carries sediment in spring"}))

    with FakeOpenAI(answer) as srv:
        proc = _bakeoff("generate", "describe", "--corpus", str(corpus), "--out", str(out), "-n", str(n), "--llm",
                        f"{srv.base_url}|fake", "--cache-dir", str(cache), "--no-progress")
        return proc, len(srv.requests)


def test_a_generated_truth_folder(disk: Path, tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus.jsonl", 120)   # the folder holds a copy of the corpus: ~130 KB
    proc, _ = _generate(corpus, disk / "truth", tmp_path / "cache", 3)
    assert _one_line(proc) == str(disk / "truth" / "corpus.jsonl")   # its final name, not the staging folder's
    assert list(disk.iterdir()) == []


def test_the_llm_cache(disk: Path, tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus.jsonl", 60)
    proc, _ = _generate(corpus, tmp_path / "truth", disk / "cache", 30)   # a page per entry: 16 fill the disk
    where = _one_line(proc)   # an LLM answer's entry, or a filter's (answerability), whichever fills the disk
    assert where.startswith(str(disk / "cache") + "/") and where.endswith(".json")
    assert not (tmp_path / "truth").exists()
    _no_temporaries(disk)


def test_helpers_name_the_file(disk: Path) -> None:
    with pytest.raises(OSError) as err:
        atomic_write_bytes(disk / "big.bin", b"x" * 200_000)
    assert err.value.filename == str(disk / "big.bin") and err.value.strerror == "No space left on device"
    with pytest.raises(OSError) as err, staged_as(disk / ".stage", disk / "final"):
        atomic_write_bytes(disk / ".stage" / "sub" / "big.bin", b"x" * 200_000)
    assert err.value.filename == str(disk / "final" / "sub" / "big.bin")
    conn = sqlite_connect(disk / "db.sqlite", isolation_level=None)
    conn.execute("CREATE TABLE t (b BLOB)")
    with pytest.raises(OSError) as err:
        conn.execute("INSERT INTO t VALUES (?)", (b"x" * 200_000,))
    conn.close()
    assert err.value.filename == str(disk / "db.sqlite") and err.value.strerror == "No space left on device"


def test_a_database_opened_elsewhere_is_one_line_too(disk: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import typer

    def fill() -> None:   # a plain sqlite3 connection, as a module that does not use sqlite_connect would open it
        conn = sqlite3.connect(disk / "plain.sqlite", isolation_level=None)
        conn.execute("CREATE TABLE t (b BLOB)")
        conn.execute("INSERT INTO t VALUES (?)", (b"x" * 200_000,))

    app = typer.Typer(add_completion=False)
    app.command("boom")(fill)
    app.command("other")(lambda: None)
    monkeypatch.setattr(cli, "_command", lambda: typer.main.get_command(app))
    assert cli.main(["boom"]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: {FULL}"]


@pytest.mark.parametrize(("disk_size", "weights"), [("64k", 100_000), ("2m", 1_000_000)])
def test_a_model_a_library_writes(disk: Path, disk_size: str, weights: int) -> None:
    """OpenVINO writes its IR itself and words a failed write as ``basic_ios::clear: iostream error``; on the
    2 MiB disk it leaves the space free (its one large write fails whole), so the line says how much is free."""
    import numpy as np

    ov = pytest.importorskip("openvino")
    import openvino.opset13 as ops

    from bakeoff.models._openvino import _save

    subprocess.run(["mount", "-o", f"remount,size={disk_size}", str(disk)], check=True)
    x = ops.parameter([1, weights], ov.Type.f32, name="x")
    model = ov.Model([ops.add(x, ops.constant(np.ones((1, weights), np.float32)))], [x])   # 0.4 or 4 MB of weights
    folder = disk / "openvino" / "m"
    with pytest.raises(OSError) as err:
        _save(ov, model, folder)
    line = describe_os_error(err.value)
    if disk_size == "64k":
        assert line == f"{folder}: {FULL}"
    else:
        assert line == f"{folder}: could not be written (basic_ios::clear: iostream error; 2.0 MiB free there)"
    assert [p for p in disk.rglob("*") if p.is_file()] == []   # the staging folder is gone


def test_an_exported_onnx_model(disk: Path, tmp_path: Path) -> None:
    """The int8 cross-encoder is exported to ONNX into the cache by torch and onnxruntime (a real model load)."""
    pytest.importorskip("onnxruntime")
    from tests.support.report_fixture import write_tiny_beir

    subprocess.run(["mount", "-o", "remount,size=2m", str(disk)], check=True)
    data = write_tiny_beir(tmp_path / "tiny")
    proc = _bakeoff("run", "--beir", str(data), "--arm", "bm25", "--arm", "rerank:base=bm25,top=5,precision=int8",
                    "--out", str(tmp_path / "out"), "--cache-dir", str(disk / "c"), "--k", "3", "--no-progress")
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]   # (transformers reports the
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(errors) == 1, proc.stderr   # seeded head)
    assert errors[0].endswith(FULL)
    where = errors[0].removeprefix("error: ").removesuffix(": " + FULL)
    assert where.startswith(str(disk / "c" / "onnx") + "/") and where.endswith("/model_int8.onnx")
    _no_temporaries(disk)
    assert not (tmp_path / "out").exists()


def test_a_full_stdout_is_named_too(tmp_path: Path) -> None:
    """Output redirected to a full disk (``/dev/full`` answers every write with ENOSPC): the line names stdout."""
    from tests.support.report_fixture import write_tiny_beir

    data = write_tiny_beir(tmp_path / "tiny")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "bakeoff", "run", "--beir", str(data), "--arm", "bm25", "--out",
                               str(tmp_path / "out"), "--cache", "off", "--k", "3", "--no-progress"],
                              stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=300, check=False)
    errors = [ln for ln in proc.stderr.splitlines() if not ln.startswith("warning: ")]
    assert proc.returncode == 2 and errors == [f"error: <stdout>: {FULL}"], proc.stderr
