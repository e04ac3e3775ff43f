"""A full disk: ``bakeoff run --out`` on a small tmpfs says one line, exits 2 and leaves nothing;
after space is freed the re-run writes exactly what a run on a roomy disk writes.

Mounting needs root (CAP_SYS_ADMIN); where it is refused the test skips and says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tmpfs import mounted_tmpfs

pytestmark = pytest.mark.slow  # SciFact

RUN = ["run", "--arm", "bm25", "--cache", "off", "--latency-sample", "0", "--no-progress"]


def _bakeoff(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    return subprocess.run([sys.executable, "-m", "bakeoff", *args], capture_output=True, text=True, env=env,
                          timeout=600, check=False)


@pytest.fixture()
def small_disk(tmp_path: Path):
    """A tmpfs of 600 KiB at ``tmp_path/disk`` (SciFact's BM25 run file alone is 1.2 MB); unmounted after."""
    with mounted_tmpfs(tmp_path / "disk", "600k") as mnt:
        yield mnt


def _remount(mnt: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(mnt)], check=True)


def _digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _stable(results: Path) -> dict:
    """results.json without what differs between two runs of the same bake-off (clock, timings, cost, memory)."""
    obj = json.loads(results.read_text())
    obj.pop("created")
    for arm in obj["arms"]:
        arm.pop("timing")
        arm.pop("cost", None)
        for measured in ("peak_rss_mb", "added_mb"):
            arm.get("footprint", {}).pop(measured, None)
    return obj


def test_full_disk_is_one_line_nothing_left_and_rerun_identical(small_disk: Path, scifact_path: Path,
                                                                 tmp_path: Path) -> None:
    beir = ["--beir", str(scifact_path)]
    # 1. the run file does not fit
    out = small_disk / "out"
    proc = _bakeoff(*RUN, *beir, "--out", str(out))
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("info: ")]
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and "No space left on device" in lines[0], lines
    assert str(out) in lines[0]
    assert list(small_disk.iterdir()) == []  # no empty out/ nor runs/ folder, no temporary files

    # 2. the run file fits, results.json does not (the disk holds 1240 KiB; the run file takes 1228)
    _remount(small_disk, "1240k")
    proc = _bakeoff(*RUN, *beir, "--out", str(out))
    assert proc.returncode == 2 and "No space left on device" in proc.stderr and "Traceback" not in proc.stderr
    assert list(small_disk.iterdir()) == []

    # 3. an existing folder keeps exactly what it held
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    proc = _bakeoff(*RUN, *beir, "--out", str(out))
    assert proc.returncode == 2 and "No space left on device" in proc.stderr
    assert sorted(p.name for p in out.rglob("*")) == ["notes.txt"]

    # 4. space freed: the re-run writes what a run on a roomy disk writes
    _remount(small_disk, "16m")
    proc = _bakeoff(*RUN, *beir, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    ref = tmp_path / "roomy"
    assert _bakeoff(*RUN, *beir, "--out", str(ref)).returncode == 0
    got, want = _digest(out), _digest(ref)
    assert got.pop("notes.txt")
    assert got.keys() == want.keys() == {"results.json", "runs/bm25.trec"}
    assert got["runs/bm25.trec"] == want["runs/bm25.trec"]
    assert _stable(out / "results.json") == _stable(ref / "results.json")
