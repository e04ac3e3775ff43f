"""Run a function in a child forked from the test process and get its return value back."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable
from typing import Any

__all__ = ["call_in_fork"]


def _child(conn: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:  # pragma: no cover - in the child
    conn.send(fn(*args))
    conn.close()


def call_in_fork(fn: Callable[..., Any], *args: Any, timeout: float = 120.0) -> Any:
    """``fn(*args)`` computed in a child made with ``fork`` (so it inherits the parent's state, thread pools
    included); fails the test when the child does not answer within ``timeout`` seconds or exits non-zero."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_child, args=(child, fn, args))
    proc.start()
    try:
        assert parent.poll(timeout), f"the forked child did not answer within {timeout:g} s"
        out = parent.recv()
    finally:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    assert proc.exitcode == 0, f"the forked child exited with {proc.exitcode}"
    return out
