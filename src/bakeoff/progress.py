"""Progress bars (tqdm) with counts, rate and ETA, written to stderr; off when disabled. When stderr is
not a terminal (a log file, a pipe, a CI job), a long step writes the same meter as a plain line at most
every ``$BAKEOFF_PROGRESS_INTERVAL`` seconds (default 30) instead of carriage-return redraws; a step
that ends sooner writes nothing.

Messages printed while bars are shown go through :func:`write_line` (a line of their own), and
:func:`close_bars` clears every bar before the command line's final error line."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Self, TypeVar

from .environment import PROGRESS_INTERVAL

__all__ = ["LineBar", "close_bars", "library_bars_off", "progress_bar", "ticking", "write_line"]

T = TypeVar("T")


def progress_bar(iterable: Iterable[T] | None = None, *, total: int | None = None, desc: str = "",
                 enabled: bool = True, unit: str = "it") -> Any:
    """A tqdm bar (``iterable`` wrapped, or a manual bar when ``None``) on a terminal; a
    :class:`LineBar` when stderr is not one; a no-op bar when disabled."""
    from tqdm.auto import tqdm

    on_terminal = bool(getattr(sys.stderr, "isatty", lambda: False)())
    if enabled and not on_terminal:
        return LineBar(iterable, total=total, desc=desc, unit=unit)
    return tqdm(iterable, total=total, desc=desc, disable=not enabled, unit=unit,
                dynamic_ncols=True, mininterval=0.5, leave=False)


def _interval() -> float:
    return PROGRESS_INTERVAL.get()


class LineBar:
    """The subset of tqdm's bar interface bakeoff uses, writing tqdm's meter (count, rate, ETA) as one
    plain line on stderr at most every ``interval`` seconds, and a last line at :meth:`close` when any
    was written."""

    def __init__(self, iterable: Iterable[Any] | None = None, *, total: int | None = None, desc: str = "",
                 unit: str = "it", interval: float | None = None) -> None:
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.iterable, self.total, self.desc, self.unit = iterable, total, desc, unit
        self.n = 0
        self.leave = False
        self.disable = False
        self.postfix = ""
        self.interval = _interval() if interval is None else interval
        self._start = self._last = time.monotonic()
        self._written = 0
        self._written_n: float = -1
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[Any]:
        for item in self.iterable or ():
            yield item
            self.update(1)
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def line(self) -> str:
        from tqdm import tqdm

        return str(tqdm.format_meter(self.n, self.total, time.monotonic() - self._start, prefix=self.desc,
                                     unit=self.unit, postfix=self.postfix or None))

    def _maybe_write(self, *, force: bool = False) -> None:
        with self._lock:
            now = time.monotonic()
            if not force and now - self._last < self.interval:
                return
            if force and self._written_n == self.n:
                return  # the closing line would repeat the last one
            self._last = now
            self._written += 1
            self._written_n = self.n
        write_line(self.line())

    def update(self, n: float = 1) -> None:
        self.n += n  # type: ignore[assignment]
        self._maybe_write()

    def refresh(self) -> None:
        self._maybe_write()

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = s

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc or ""

    def close(self) -> None:
        if self.disable:
            return
        self.disable = True
        if self._written:
            self._maybe_write(force=True)


@contextmanager
def library_bars_off(*, force: bool = False) -> Iterator[None]:
    """The libraries' own bars (huggingface_hub downloads, transformers' "Loading weights") off inside.

    A library imported later reads ``HF_HUB_DISABLE_PROGRESS_BARS`` (and tqdm, for the bars libraries
    draw with it directly, such as sentence-transformers' "Computing widget examples", ``TQDM_DISABLE``)
    when it is first imported, so the variables are set to ``1`` (kept when the caller set them, unless
    ``force``: ``--no-progress`` wins over the environment); a library imported already (an in-process
    caller loaded a model before) is switched off through its public switch and switched back on after
    (tqdm has none: its bars follow the variable only when it is imported after this point).
    """

    for name in ("HF_HUB_DISABLE_PROGRESS_BARS", "TQDM_DISABLE"):
        if force:
            os.environ[name] = "1"
        else:
            os.environ.setdefault(name, "1")
    restore: list[Callable[[], object]] = []
    if "huggingface_hub" in sys.modules:
        from huggingface_hub import utils as hub

        if not hub.are_progress_bars_disabled():
            hub.disable_progress_bars()
            restore.append(hub.enable_progress_bars)
    if "transformers" in sys.modules:
        from transformers.utils import logging as tf_logging

        if tf_logging.is_progress_bar_enabled():
            tf_logging.disable_progress_bar()
            restore.append(tf_logging.enable_progress_bar)
    try:
        yield
    finally:
        for on in restore:
            on()


def _open_bars() -> list[Any]:
    """The tqdm bars currently displayed (none when tqdm was never imported)."""
    if "tqdm" not in sys.modules:
        return []
    from tqdm import tqdm

    return [bar for bar in list(getattr(tqdm, "_instances", ())) if not getattr(bar, "disable", False)]


def write_line(text: str) -> None:
    """``text`` as one line on stderr, on a line of its own even while progress bars are shown."""
    if _open_bars():
        from tqdm import tqdm

        tqdm.write(text, file=sys.stderr)
    else:
        print(text, file=sys.stderr, flush=True)


def close_bars() -> None:
    """Close every open progress bar (bakeoff's and libraries'), clearing its line, so that the next
    message starts a fresh line."""
    for bar in _open_bars():
        try:
            bar.leave = False
            bar.close()
        except Exception:  # a bar in a broken state must not hide the error being reported  # noqa: BLE001, S110
            pass
    if "tqdm" in sys.modules:
        sys.stderr.flush()


@contextmanager
def ticking(bar: Any, *, phase: str | None = None, interval: float = 1.0) -> Iterator[Any]:
    """Keep ``bar``'s elapsed time moving through one long call that reports nothing.

    A daemon thread refreshes the bar every ``interval`` seconds while the ``with`` block
    runs (a FAISS ``add``/``train``, a ``CREATE INDEX``); ``phase`` is shown as the bar's
    postfix meanwhile. A disabled bar stays silent.
    """
    if phase is not None:
        bar.set_postfix_str(phase, refresh=True)
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(interval):
            bar.refresh()

    thread = threading.Thread(target=tick, name="bakeoff-ticking", daemon=True)
    thread.start()
    try:
        yield bar
    finally:
        stop.set()
        thread.join()
