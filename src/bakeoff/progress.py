"""Progress bars (tqdm) with counts, rate and ETA, written to stderr; off when disabled."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

__all__ = ["progress_bar"]

T = TypeVar("T")


def progress_bar(iterable: Iterable[T] | None = None, *, total: int | None = None, desc: str = "",
                 enabled: bool = True, unit: str = "it") -> Any:
    """A tqdm bar (``iterable`` wrapped, or a manual bar when ``None``); a no-op bar when disabled."""
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, disable=not enabled, unit=unit, dynamic_ncols=True,
                mininterval=0.5, leave=False)
