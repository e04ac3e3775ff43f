"""The CPU capability in bf16/OpenVINO identities: torch's answer, remembered on disk so warm runs skip torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real model loads, the command line in a subprocess

torch = pytest.importorskip("torch")

_PROBE = """
import json, sys
from bakeoff.models.cpu import cpu_capability
value = cpu_capability()
print(json.dumps({"value": value, "torch_imported": "torch" in sys.modules}))
"""


def _probe(cache: Path, **env: str) -> dict:
    full = {**os.environ, "BAKEOFF_CACHE_DIR": str(cache), **env}
    out = subprocess.run([sys.executable, "-c", _PROBE], env=full, capture_output=True, text=True, check=True,
                         timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_capability_is_torchs_and_a_second_process_reads_it_without_torch(tmp_path: Path) -> None:
    amx = bool(getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)())
    want = str(torch.backends.cpu.get_cpu_capability()) + ("+AMX" if amx else "")
    first = _probe(tmp_path)
    assert first == {"value": want, "torch_imported": True}
    memo = list((tmp_path / "cpu-capability").glob("*.txt"))
    assert len(memo) == 1 and memo[0].read_text(encoding="utf-8") == want + "\n"
    second = _probe(tmp_path)
    assert second == {"value": want, "torch_imported": False}  # the warm path: no 0.8 s torch import
    # torch's override is part of the key: another file, torch asked again
    forced = _probe(tmp_path, ATEN_CPU_CAPABILITY="default")
    assert forced == {"value": "DEFAULT" + ("+AMX" if amx else ""), "torch_imported": True}
    assert len(list((tmp_path / "cpu-capability").glob("*.txt"))) == 2


def test_unwritable_cache_folder_still_answers(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    got = _probe(blocker)  # <cache>/cpu-capability cannot be made under a file
    assert got["value"] == str(torch.backends.cpu.get_cpu_capability()) + (
        "+AMX" if bool(getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)()) else "")
