"""A small tmpfs mounted for a test (a disk that fills up); skips where mounting is not allowed."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def mounted_tmpfs(mnt: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (e.g. ``"64k"``) at ``mnt`` (created); lazily unmounted after."""
    mnt.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip() or 'mount refused'}); needs root")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
