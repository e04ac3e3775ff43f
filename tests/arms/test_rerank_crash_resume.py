"""A cross-encoder rerank killed with SIGKILL mid-stage resumes from its checkpoints to the clean run's
result, bit for bit (the driver is tests/support/rerank_crash_driver.py; run it with ``--repeat 10``
for kills at random moments)."""

from __future__ import annotations

import importlib.util
import json
from argparse import Namespace
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # SciFact

ROOT = Path(__file__).resolve().parents[2]


def _driver():
    spec = importlib.util.spec_from_file_location("rerank_crash_driver",
                                                  ROOT / "tests" / "support" / "rerank_crash_driver.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sigkill_mid_rerank_then_resume_is_bit_identical(scifact_path: Path, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    drv = _driver()
    args = Namespace(data=str(scifact_path), queries=2, top=16, batch_size=4, chunk=4)
    ref = tmp_path / "ref"
    ref.mkdir()
    drv.run_driver(args, tmp_path / "ref-cache", ref)
    reference = (ref / "result.json").read_text()
    assert len(json.loads(reference)) == 32  # 2 queries x top 16, reranked

    cache, out = tmp_path / "cache", tmp_path / "out"
    out.mkdir()
    killed, _ = drv.run_driver(args, cache, out, kill_at=(1, 0.0))  # right after the first checkpoint
    parts = list(cache.rglob("*.parts/*.npy"))
    assert killed and 1 <= len(parts) < 8
    assert not (out / "result.json").exists()
    drv.run_driver(args, cache, out)
    assert (out / "result.json").read_text() == reference
