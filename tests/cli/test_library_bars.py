"""``--no-progress`` (and a stderr that is not a terminal) silences the libraries' bars too: a dense arm's model
load prints no transformers "Loading weights" bar into a log. A real CLI process with the real MiniLM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.report_fixture import write_tiny_beir

pytest.importorskip("sentence_transformers")
pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("flag", "variable"), [(["--no-progress"], None), ([], None), (["--no-progress"], "0")],
                         ids=["no-progress", "stderr-not-a-terminal", "no-progress-over-the-environment"])
def test_no_library_bar_reaches_a_log(tmp_path: Path, flag: list[str], variable: str | None) -> None:
    data = write_tiny_beir(tmp_path / "tiny")
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    env["HF_HUB_OFFLINE"] = "1"
    if variable is not None:
        env["HF_HUB_DISABLE_PROGRESS_BARS"] = variable   # a user who wants bars elsewhere: the flag wins here
    proc = subprocess.run([sys.executable, "-m", "bakeoff", "run", "--beir", str(data), "--arm", "dense",
                           "--out", str(tmp_path / "r"), "--cache", "off", *flag, "--k", "3"],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "r" / "results.json").exists()
    assert "Loading weights" not in proc.stderr and "it/s]" not in proc.stderr, proc.stderr[-2000:]


def test_no_bar_when_the_libraries_were_imported_first(tmp_path: Path) -> None:
    """An in-process caller that loaded transformers before calling the CLI: the variable is read too late,
    so the libraries' public switches turn the bars off for the call, and back on after."""
    script = f"""
import sys
import sentence_transformers
from transformers.utils import logging
from bakeoff.cli import main
from tests.support.report_fixture import write_tiny_beir
data = write_tiny_beir(__import__("pathlib").Path({str(tmp_path / "tiny")!r}))
rc = main(["run", "--beir", str(data), "--arm", "dense", "--out", {str(tmp_path / "r")!r}, "--cache", "off",
           "--no-progress", "--k", "3"])
print(rc, logging.is_progress_bar_enabled())
"""
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    env.update(HF_HUB_OFFLINE="1", PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src"),
                                                               str(Path(__file__).resolve().parents[2])]))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600,
                          check=False)
    assert proc.stdout.splitlines()[-1] == "0 True", proc.stderr[-2000:]   # ran, and the switch is back on
    assert "Loading weights" not in proc.stderr and "it/s]" not in proc.stderr, proc.stderr[-2000:]


@pytest.mark.parametrize("flag", [["--no-progress"], []], ids=["no-progress", "stderr-not-a-terminal"])
def test_finetune_draws_no_bar_and_prints_only_its_record(tmp_path: Path, flag: list[str]) -> None:
    """The HF trainer's bars, sentence-transformers' "Computing widget examples" and the trainer's per-step log
    dicts (printed to stdout when its bars are off) stay out of a log; stdout holds the record and where it went."""
    from tests.support.finetune_fixtures import make_tiny_beir

    tiny = make_tiny_beir(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_DISABLE_PROGRESS_BARS", "TQDM_DISABLE")}
    env["HF_HUB_OFFLINE"] = "1"
    out = tmp_path / "model"
    proc = subprocess.run([sys.executable, "-m", "bakeoff", "finetune", "embedder", "--train", f"{tiny}:train",
                           "--out", str(out), "--max-steps", "2", "--evals", "0", *flag],
                          capture_output=True, text=True, env=env, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["steps"] == 2 and lines[1].startswith(f"wrote {out}"), lines
    assert proc.stderr.splitlines() == [ln for ln in proc.stderr.splitlines() if ln.startswith("info: ")], proc.stderr
