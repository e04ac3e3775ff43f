"""``--leak-target FOLDER``: the shares of a judged BEIR folder's real (query, relevant document) pairs (it used
to pass the folder's path where open_dataset takes a DatasetSpec, and fail)."""

from __future__ import annotations

from pathlib import Path

from bakeoff.truth.generation.leak_target import leak_target_shares
from tests.support.report_fixture import write_tiny_beir


def test_a_judged_folder_gives_five_shares(tmp_path: Path) -> None:
    shares = leak_target_shares(str(write_tiny_beir(tmp_path / "tiny")))
    assert len(shares) == 5 and abs(sum(shares) - 1.0) < 1e-9 and all(s >= 0 for s in shares)
