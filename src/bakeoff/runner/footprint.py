"""An arm's footprint: the size of its model files and the peak memory of its index and search.

**Model size** (:func:`model_bytes`): the bytes on disk of the model files an arm and its
inputs load, each model counted once: an arm's own ``model_bytes()`` when it defines one
(the dense arm: the ONNX graph it actually runs for ``precision=int8``), else every
``model`` named in the configuration of each arm of the subtree, resolved by
:func:`bakeoff.models.resolve.resolve_model` and measured over
:func:`bakeoff.models.resolve.model_files` (weights, configs, tokenizer). Arms without a
model (BM25, TF-IDF, a command) count 0; ``None`` when a model is named but its files are
not on this machine (an API model, a hub model not downloaded).

**Peak memory** (:class:`PeakMemory`): the peak resident set size of this process while an
arm indexed and searched. On Linux the kernel's high-water mark ``VmHWM``
(``/proc/self/status``) is reset at the start of each measurement by writing ``5`` to
``/proc/self/clear_refs``, so the peak is the arm's own, not the process lifetime's.
Measurements nest (a fused arm searches its inputs inside its own measurement): before a
nested reset the enclosing frame folds the high-water mark reached so far into its running
maximum, and a nested frame's peak is folded into its parent's when it ends. Recorded per
arm fingerprint as ``timing["memory"] = {"peak_rss_mb", "start_rss_mb", "added_mb", "method"}``
with ``added_mb = peak_rss_mb - start_rss_mb`` (MiB = 2**20 bytes): the memory the arm's
index, model and search added on top of what the process held when it started. An arm's
reported ``added_mb`` (``footprint`` in results) is at least the size of its model files:
a model already resident when the arm's window opened (loaded by an earlier arm or step of
the same process) still counts for every arm that needs it (``memory_method`` says so). Garbage
left by earlier work must not be freed *inside* an arm's window (a collection that happens to
run there lowers the resident size under the arm and hides its memory: a CI run measured
7.75 MiB for an arm holding 40), so each measurement starts with :func:`gc.freeze` (every
object tracked so far is set aside from collection; O(1)) and the outermost one ends with
:func:`gc.unfreeze` (they go back to the oldest generation and are collected as usual). A full
:func:`gc.collect` per arm would do the same but costs ~0.1-1 s on a large heap, per arm. Elsewhere
(no ``clear_refs``) the method is ``ru_maxrss``: the process's lifetime peak from
:func:`resource.getrusage`, an upper bound that is not specific to the arm. Memory held by
other processes (a Ray cluster, a database server, a ``command`` arm's child process) is
not counted.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..arms.base import Arm, subtree

__all__ = ["MIB", "PeakMemory", "model_bytes"]

MIB = float(1 << 20)
_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kb(field: str) -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_hwm() -> bool:
    try:
        with open(_CLEAR_REFS, "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class PeakMemory:
    """Nested peak-RSS measurements of this process (see module docstring)."""

    def __init__(self) -> None:
        self._stack: list[int] = []  # running peak (bytes) of each open frame
        self.exact = _status_kb("VmHWM") is not None and _reset_hwm()

    @contextlib.contextmanager
    def frame(self) -> Iterator[dict[str, Any]]:
        """Measure the peak RSS of the ``with`` body; the yielded dict is filled on exit."""
        out: dict[str, Any] = {}
        if not self.exact:
            yield out
            import resource

            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0  # KiB on Linux
            out.update(peak_rss_mb=peak / MIB, method="ru_maxrss")
            return
        if self._stack:  # the enclosing frame keeps the high-water mark reached before this reset
            self._stack[-1] = max(self._stack[-1], (_status_kb("VmHWM") or 0) * 1024)
        gc.freeze()  # earlier garbage is not freed inside the window (module docstring)
        _reset_hwm()
        start = (_status_kb("VmRSS") or 0) * 1024
        self._stack.append(start)
        try:
            yield out
        finally:
            peak = max(self._stack.pop(), (_status_kb("VmHWM") or 0) * 1024)
            if self._stack:
                self._stack[-1] = max(self._stack[-1], peak)
            else:
                gc.unfreeze()
            out.update(peak_rss_mb=peak / MIB, start_rss_mb=start / MIB, added_mb=(peak - start) / MIB,
                       method="VmHWM reset per arm")


def _folder_bytes(name: str) -> int | None:
    from ..models.resolve import model_files, resolve_model

    if ":" in name and not Path(name).exists():  # openai:..., hub revisions: no local files
        return None
    _, folder = resolve_model(name)
    if folder is None:
        return None
    return sum(p.stat().st_size for p in model_files(folder))


def _models(config: Any) -> list[str]:
    """Every string under a ``model`` key of a configuration tree."""
    found: list[str] = []
    if isinstance(config, Mapping):
        for key, value in config.items():
            if key == "model" and isinstance(value, str) and value:
                found.append(value)
            else:
                found.extend(_models(value))
    elif isinstance(config, (list, tuple)):
        for value in config:
            found.extend(_models(value))
    return found


def model_bytes(arm: Arm) -> int | None:
    """Bytes of the model files ``arm`` and its inputs load (module docstring); ``None`` if unknown.

    An arm may define ``model_files() -> {key: bytes or None}`` (the dense arm does); each key
    (a model folder or file) is counted once over the subtree.
    """
    sizes: dict[str, int | None] = {}
    for node in subtree(arm):
        own = getattr(node, "model_files", None)
        if callable(own):
            sizes.update(own())
            continue
        for name in _models(node.config()):
            if name not in sizes:
                sizes[name] = _folder_bytes(name)
    if any(v is None for v in sizes.values()):
        return None
    return sum(int(v) for v in sizes.values() if v is not None)
