"""Loading the bundled bi-encoder as a cross-encoder (a seeded head): bakeoff's one warning line on stderr,
not transformers' "LOAD REPORT" table nor sentence-transformers' "Converting ..." line; the libraries' log
levels are the caller's again afterwards."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.report_fixture import write_tiny_beir

pytestmark = pytest.mark.slow  # the command line in a subprocess or a served app


def test_rerank_arm_with_the_seeded_head_prints_only_its_own_warning(tmp_path: Path) -> None:
    data = write_tiny_beir(tmp_path / "tiny")
    proc = subprocess.run(
        [sys.executable, "-m", "bakeoff", "run", "--beir", str(data), "--arm", "bm25", "--arm", "rr=rerank:base=bm25",
         "--cache", "off", "--no-progress", "--latency-sample", "0"],
        capture_output=True, text=True, check=False, timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "BAKEOFF_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    head = [line for line in lines if "no trained relevance head" in line]
    assert len(head) == 1 and head[0].startswith("warning: rerank: ")
    assert "classifier.weight, classifier.bias seeded at random, seed 0" in head[0]
    assert [line for line in lines if not line.startswith("warning: ")] == []  # no LOAD REPORT table, no "Converting"
    assert "rr" in proc.stdout


def test_loading_restores_the_callers_library_log_levels(capfd) -> None:
    from transformers.utils import logging as tf_logging

    from bakeoff.models.cross_encoders import CrossEncoderScorer

    st_logger = logging.getLogger("sentence_transformers")
    verbosity, st_level = tf_logging.get_verbosity(), st_logger.level
    tf_logging.set_verbosity_info()
    st_logger.setLevel(logging.DEBUG)
    try:
        scorer = CrossEncoderScorer(seed=0)
        assert scorer.fresh_parameters == ["classifier.weight", "classifier.bias"]
        assert tf_logging.get_verbosity() == logging.INFO and st_logger.level == logging.DEBUG
    finally:
        tf_logging.set_verbosity(verbosity)
        st_logger.setLevel(st_level)
    err = capfd.readouterr().err
    assert "LOAD REPORT" not in err and "MISSING" not in err
