"""stdout closed by its reader (``bakeoff run ... | head``): exit 141 (128 + SIGPIPE), nothing on stderr, and the
results folder of ``--out`` written all the same. Real processes whose stdout is a pipe closed before they write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.report_fixture import write_tiny_beir

pytestmark = pytest.mark.slow  # the command line in a subprocess or a served app


def _closed_stdout(*args: str, cache: Path) -> tuple[int, str]:
    """Run ``bakeoff ARGS`` with stdout a pipe whose read end is closed at once (the reader is gone before the
    command writes: it imports bakeoff first); its exit status and stderr but for the fixture's own warnings."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "BAKEOFF_CACHE_DIR": str(cache)}
    proc = subprocess.Popen([sys.executable, "-m", "bakeoff", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=300), "".join(line for line in err.splitlines(keepends=True)
                                           if not line.startswith("warning: "))


def test_run_into_a_closed_pipe_exits_141_quietly_and_still_writes_its_results(tmp_path: Path) -> None:
    data = write_tiny_beir(tmp_path / "tiny")
    out = tmp_path / "results"
    rc, err = _closed_stdout("run", "--beir", str(data), "--arm", "bm25", "--out", str(out), "--cache", "off",
                             "--no-progress", "--latency-sample", "0", cache=tmp_path / "cache")
    assert (rc, err) == (141, "")
    results = json.loads((out / "results.json").read_text())
    assert [a["name"] for a in results["arms"]] == ["bm25"]
    assert (out / "runs" / "bm25.trec").read_text().count("\n") > 0


def test_eval_lines_into_a_closed_pipe_exit_141_quietly(tmp_path: Path) -> None:
    """``bakeoff eval`` writes plain lines (no rich console): the same status."""
    data = write_tiny_beir(tmp_path / "tiny")
    qid, did = (data / "qrels" / "test.tsv").read_text().splitlines()[1].split("\t")[:2]
    run = tmp_path / "one.trec"
    run.write_text(f"{qid} Q0 {did} 1 1.0 x\n")
    rc, err = _closed_stdout("eval", str(data / "qrels" / "test.tsv"), str(run), "--per-query",
                             cache=tmp_path / "cache")
    assert (rc, err) == (141, "")

    done = subprocess.run([sys.executable, "-m", "bakeoff", "eval", str(data / "qrels" / "test.tsv"), str(run)],
                          capture_output=True, text=True, check=False, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0 and "queries\tall\t" in done.stdout  # the same command with a reader: exit 0
