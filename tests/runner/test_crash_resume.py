"""Fast version of tests/support/crash_driver.py (its ``--repeat 10`` kills at random moments): one SIGKILL of a real encode process, then resume.

A driver process embeds a small SciFact slice with the dense MiniLM arm in
checkpoints of 4 rows; it is killed with SIGKILL once at least one checkpoint
is on disk, re-run to completion, and its embeddings, run and NDCG@10 must be
bit-for-bit those of a clean run.
"""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import time
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # SciFact

ROOT = Path(__file__).resolve().parents[2]


def _crash_module():
    spec = importlib.util.spec_from_file_location("crash_driver", ROOT / "tests" / "support" / "crash_driver.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sigkill_mid_encode_then_resume_is_bit_identical(scifact_path: Path, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    ct = _crash_module()
    args = Namespace(data=scifact_path, docs=24, queries=20, checkpoint_rows=4, batch_size=4)
    clean = tmp_path / "clean"
    ct._run_driver(args, clean / "cache", clean / "out")
    ref_emb, ref_res = ct._load(clean / "out")
    assert ref_emb.shape == (24, 384)

    cache, out = tmp_path / "crash" / "cache", tmp_path / "crash" / "out"
    out.mkdir(parents=True)
    proc = subprocess.Popen(ct._driver_cmd(args, cache, out), stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while not list(cache.rglob("*.parts/*.npy")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    parts = list(cache.rglob("*.parts/*.npy"))
    assert proc.returncode == -signal.SIGKILL and 1 <= len(parts) < 6  # killed mid-encode
    assert not list((cache / "dense-doc").rglob("*.npy")) if (cache / "dense-doc").exists() else True

    ct._run_driver(args, cache, out)
    emb, res = ct._load(out)
    assert emb.tobytes() == ref_emb.tobytes() and emb.dtype == np.float32
    assert res == ref_res  # same ranked lists (ids and scores) and NDCG@10
