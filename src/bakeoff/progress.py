"""Progress bars (tqdm) with counts, rate and ETA, written to stderr; off when disabled."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["progress_bar", "ticking"]

T = TypeVar("T")


def progress_bar(iterable: Iterable[T] | None = None, *, total: int | None = None, desc: str = "",
                 enabled: bool = True, unit: str = "it") -> Any:
    """A tqdm bar (``iterable`` wrapped, or a manual bar when ``None``); a no-op bar when disabled."""
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, disable=not enabled, unit=unit, dynamic_ncols=True,
                mininterval=0.5, leave=False)


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
