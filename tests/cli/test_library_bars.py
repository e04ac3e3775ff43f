"""``--no-progress`` (and a stderr that is not a terminal) silences the libraries' bars too: a dense arm's model
load prints no transformers "Loading weights" bar into a log. A real CLI process with the real MiniLM."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.report_fixture import write_tiny_beir

pytest.importorskip("sentence_transformers")
pytestmark = pytest.mark.slow


def test_no_library_bar_reaches_a_log(tmp_path: Path) -> None:
    data = write_tiny_beir(tmp_path / "tiny")
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.run([sys.executable, "-m", "bakeoff", "run", "--beir", str(data), "--arm", "dense",
                           "--out", str(tmp_path / "r"), "--cache", "off", "--no-progress", "--k", "3"],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "r" / "results.json").exists()
    assert "Loading weights" not in proc.stderr and "it/s]" not in proc.stderr, proc.stderr[-2000:]
