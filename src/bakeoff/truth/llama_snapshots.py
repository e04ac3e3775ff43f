"""Prompt snapshots for the llama-cpp-python server: a prompt asked again (the next regeneration
round of a document) skips re-evaluating its long shared part, with bit-identical answers.

llama-cpp-python keeps only the previous request's tokens, so in describe mode (rounds over the
same documents) every request re-evaluates its document's ~250 prompt tokens. :func:`install`
(called by :mod:`bakeoff.truth.llama_server` in the server process when
``$BAKEOFF_LLAMA_SNAPSHOTS`` > 0) patches :class:`llama_cpp.Llama` so that

* every evaluation records which positions were evaluated in a *small piece* (fewer than
  :data:`~bakeoff.truth.replicas.MIN_PIECE` tokens: other kernel paths in llama.cpp, see
  :mod:`bakeoff.truth.replicas`);
* after each completion, the KV cache of sequence 0 (``llama_state_seq_get_data``) is kept under
  the prompt's tokens, with its first small-piece position (at most ``$BAKEOFF_LLAMA_SNAPSHOTS``
  prompts, least recently used dropped);
* before a completion whose prompt ``T`` the unpatched server would evaluate *cleanly* (reused
  prefix ``L`` free of small-piece positions, no prefix relation with the held tokens, only large
  pieces after it: :meth:`~bakeoff.truth.replicas.PrefixState.clean`), the snapshot sharing the
  longest prefix with ``T`` is restored when it saves at least :data:`MIN_GAIN` tokens, truncated
  to ``cut`` (before its first small-piece position, only large pieces after it). llama.cpp then
  evaluates ``T[cut:]`` in large pieces, which give the same bits as the unpatched ``T[L:]``
  (measured: splits into pieces of >= 8 tokens were bit-identical). A request the unpatched server
  would *not* evaluate cleanly (a schema retry: the same prompt again) is left alone, so its
  answer is the unpatched one too.

Restoring copies the KV bytes back (f16, bit-exact) into an emptied sequence, so the cells sit at
positions 0..cut-1 exactly as after a normal evaluation.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

__all__ = ["MIN_GAIN", "Snapshot", "install"]

#: A snapshot is restored only when it saves at least this many prompt tokens of evaluation.
MIN_GAIN = 16



@dataclass
class Snapshot:
    tokens: tuple[int, ...]
    first_small: int  # first position evaluated in a small piece (len(tokens) when none)
    data: bytes


def _lcp(a: Any, b: Any) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _prompt_tokens(llm: Any, prompt: str) -> list[int]:
    """The tokens ``Llama._create_completion`` evaluates for a text prompt without suffix."""
    bos = [llm.token_bos()] if llm._model.add_bos_token() and llm.token_bos() != -1 else []
    body = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True) if prompt else []
    return bos + body


def install(limit: int) -> None:
    """Patch :class:`llama_cpp.Llama` in this process (see the module docstring)."""
    import llama_cpp
    from llama_cpp import Llama

    from .replicas import MIN_PIECE, large_pieces

    original_eval = Llama.eval
    original_create = Llama.create_completion
    snaps: OrderedDict[tuple[int, ...], Snapshot] = OrderedDict()
    stats = {"restored": 0, "saved_tokens": 0}

    def eval_recording(self: Any, tokens: Any) -> None:
        start = self.n_tokens
        small = [p for p in getattr(self, "_bakeoff_small", []) if p < start]
        n = len(tokens)
        for i in range(0, n, self.n_batch):
            if min(n, i + self.n_batch) - i < MIN_PIECE:
                small.append(start + i)
        self._bakeoff_small = small
        original_eval(self, tokens)

    def prepare(self: Any, toks: list[int]) -> None:
        n = len(toks)
        held = self.input_ids[: self.n_tokens].tolist() if self.n_tokens else []
        if not held or n < 2:
            return
        lcp = _lcp(held, toks)
        small = min(getattr(self, "_bakeoff_small", []), default=len(held))
        if lcp >= len(held) or lcp >= n or small < lcp or not large_pieces(n - lcp, n_batch=self.n_batch):
            return  # the unpatched server would not evaluate this prompt cleanly: leave it so
        best, best_len = None, 0
        for snap in snaps.values():
            k = _lcp(snap.tokens, toks)
            if k > best_len:
                best, best_len = snap, k
        if best is None:
            return
        cut = min(best_len, n - MIN_PIECE, best.first_small)
        while cut > 0 and not large_pieces(n - cut, n_batch=self.n_batch):
            cut -= 1
        if cut < lcp + MIN_GAIN:
            return
        self._ctx.kv_cache_seq_rm(0, 0, -1)
        buf = (ctypes.c_uint8 * len(best.data)).from_buffer_copy(best.data)
        if llama_cpp.llama_state_seq_set_data(self._ctx.ctx, buf, len(best.data), 0) == 0:
            self.n_tokens = 0  # failed: start from nothing (clean: large_pieces(n - lcp) holds)
            self._bakeoff_small = []
            return
        self._ctx.kv_cache_seq_rm(0, cut, -1)
        self.input_ids[:cut] = toks[:cut]
        self.n_tokens = cut
        self._bakeoff_small = []
        snaps.move_to_end(best.tokens)
        stats["restored"] += 1
        stats["saved_tokens"] += cut - lcp
        print(f"bakeoff snapshot: restored {cut} of {n} prompt tokens (unpatched would reuse {lcp})",
              file=sys.stderr, flush=True)

    def save(self: Any, toks: list[int]) -> None:
        n = len(toks)
        if self.n_tokens < n or self.input_ids[:n].tolist() != toks:
            return
        size = llama_cpp.llama_state_seq_get_size(self._ctx.ctx, 0)
        buf = (ctypes.c_uint8 * size)()
        got = llama_cpp.llama_state_seq_get_data(self._ctx.ctx, buf, size, 0)
        if not got:
            return
        first = min((p for p in getattr(self, "_bakeoff_small", []) if p < n), default=n)
        snaps[tuple(toks)] = Snapshot(tuple(toks), first, bytes(buf)[:got])
        snaps.move_to_end(tuple(toks))
        while len(snaps) > limit:
            snaps.popitem(last=False)

    def create_completion(self: Any, prompt: Any, *args: Any, **kw: Any) -> Any:
        text = isinstance(prompt, str) and not kw.get("stream") and kw.get("suffix") is None and not args
        toks = _prompt_tokens(self, prompt) if text else None
        if toks is not None:
            prepare(self, toks)
        out = original_create(self, prompt, *args, **kw)
        if toks is not None:
            save(self, toks)
        return out

    Llama.eval = eval_recording  # type: ignore[method-assign]
    Llama.create_completion = create_completion  # type: ignore[method-assign]
    Llama.bakeoff_snapshot_stats = stats  # type: ignore[attr-defined]


def limit_from_env() -> int:
    """``$BAKEOFF_LLAMA_SNAPSHOTS`` as a non-negative integer (0: off)."""
    raw = os.environ.get("BAKEOFF_LLAMA_SNAPSHOTS", "0").strip() or "0"
    return int(raw) if raw.isdigit() else 0
