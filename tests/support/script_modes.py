"""Run one Python script in fresh processes, once per mode, and read each one's JSON answer."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any


def run_modes(script: str, modes: Sequence[str], payload: Any) -> dict[str, Any]:
    """``python -c script MODE`` for each mode (a fresh process each: a patch installed in one mode
    never reaches another), ``payload`` as JSON on stdin; the last stdout line of each, parsed as JSON."""
    got = {}
    for mode in modes:
        proc = subprocess.run([sys.executable, "-c", script, mode], input=json.dumps(payload),
                              capture_output=True, text=True, check=True)
        got[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
    return got
