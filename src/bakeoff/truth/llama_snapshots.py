"""Prompt snapshots for the llama-cpp-python server: a prompt asked again (the next regeneration
round of a document) skips re-evaluating its long shared part, with bit-identical answers.

llama-cpp-python keeps only the previous request's tokens, so in describe mode (rounds over the
same documents) every request re-evaluates its document's part of the prompt (~85 tokens in the
demo, ~150 for SciFact). :func:`install` (called by :mod:`bakeoff.truth.llama_server` in the server
process when ``$BAKEOFF_LLAMA_SNAPSHOTS`` > 0) patches :class:`llama_cpp.Llama` so that

* every evaluation records which positions were evaluated in a *small piece* (fewer than
  :data:`~bakeoff.truth.replicas.MIN_PIECE` tokens: other kernel paths in llama.cpp, see
  :mod:`bakeoff.truth.replicas`);
* while a completion's prompt ``T`` (``n`` tokens) is evaluated from ``L`` in large pieces: when
  ``n <= W - 1`` (``W`` the model's sliding window) the state after the whole prompt is kept, with the
  logits row of its last position (llama.cpp's state functions carry no logits; the row is copied out
  of, and later back into, llama.cpp's output buffer); otherwise the evaluation is split
  at ``s = min(n - MIN_PIECE, W - 1)``, ``W`` the model's sliding window (only when both parts and
  the unsplit ``T[L:]`` are evaluated in large pieces: then the split gives the bits of the unsplit
  evaluation) and the KV cache of sequence 0 (``llama_state_seq_get_data``) is kept under ``T[:s]``, with its first
  small-piece position (at most ``$BAKEOFF_LLAMA_SNAPSHOTS`` snapshots and :data:`MAX_BYTES`,
  least recently used dropped);
* before a completion whose prompt ``T`` the unpatched server would evaluate *cleanly* (reused
  prefix ``L`` free of small-piece positions, no prefix relation with the held tokens, only large
  pieces after it: :meth:`~bakeoff.truth.replicas.PrefixState.clean`), a whole-prompt snapshot of ``T``
  is restored with its logits, and llama-cpp-python samples the first answer token straight from them
  (nothing evaluated: those are the bits the clean evaluation of ``T`` gives, kept when it ran);
  otherwise the longest snapshot that is a
  prefix of ``T`` and saves at least :data:`MIN_GAIN` tokens is restored whole. llama.cpp then
  evaluates ``T[s:]`` in large pieces, which gives the same bits as the unpatched ``T[L:]``
  (measured: splits into pieces of >= 8 tokens are bit-identical). A request the unpatched server
  would *not* evaluate cleanly (a schema retry: the same prompt again) is left alone, so its answer
  is the unpatched one too.

Why the snapshot is taken at ``s`` and restored whole, and only below the sliding window (Gemma 3
attends over 512 positions in most layers; ``llama_model_n_swa``): llama.cpp keeps a sliding-window
cell only while a later position can see it and may reuse a masked cell's slot for a new token, so a
state holding positions at or past the window, or one cut back after it was saved, is not the state
the unpatched server computes with (cells missing, or the same cells in other slots: the attention
sums then run in another order). Measured on the demo's requests and on SciFact-length prompts: a
state saved at the end of a prompt whose prompt plus answer passed 512 positions and cut back, or a
state of 638 positions restored whole, gave other logits (and then other queries, also for the next
request on that server); a state of fewer than 512 positions restored whole gave the unpatched
logits for the restored request (prompts of 498 to 692 tokens; with the restored logits row, prompts
under 512 tokens whose answers pass 512) and for the requests after it. Restoring copies the KV bytes back
(f16) into an emptied sequence, so the cells sit at positions 0..s-1 exactly as after a normal
evaluation.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_BYTES", "MIN_GAIN", "Snapshot", "install", "limit_from_env"]

#: A snapshot is restored only when it saves at least this many prompt tokens of evaluation.
MIN_GAIN = 16

#: At most this many bytes of snapshots per server (Gemma 3 270M: ~18 KB per position, ~8 MB for
#: the demo's ~450-token prompts, + 1 MiB for a logits row of its 262,144-token vocabulary), least
#: recently used dropped first.
MAX_BYTES = 768 << 20


@dataclass
class Snapshot:
    """The KV state of sequence 0 right after evaluating ``tokens`` (and nothing beyond); with ``logits``,
    also the logits row of the last position (float32 bytes), which the first answer token is sampled from
    (llama.cpp's state functions do not carry logits)."""

    tokens: tuple[int, ...]
    first_small: int  # first position evaluated in a small piece (len(tokens) when none)
    data: bytes
    logits: bytes | None = None


def _prompt_tokens(llm: Any, prompt: str) -> list[int]:
    """The tokens ``Llama._create_completion`` evaluates for a text prompt without suffix."""
    bos = [llm.token_bos()] if llm._model.add_bos_token() and llm.token_bos() != -1 else []
    body = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True) if prompt else []
    return bos + body


def install(limit: int) -> None:
    """Patch :class:`llama_cpp.Llama` in this process (see the module docstring)."""
    import llama_cpp
    from llama_cpp import Llama

    from .replicas import MIN_PIECE, common_prefix, large_pieces

    original_eval = Llama.eval
    original_create = Llama.create_completion
    snaps: OrderedDict[tuple[int, ...], Snapshot] = OrderedDict()
    stats = {"restored": 0, "whole": 0, "saved_tokens": 0, "kept": 0}

    def record(self: Any, start: int, n: int) -> None:
        small = [p for p in getattr(self, "_bakeoff_small", []) if p < start]
        for i in range(0, n, self.n_batch):
            if min(n, i + self.n_batch) - i < MIN_PIECE:
                small.append(start + i)
        self._bakeoff_small = small

    def keep(self: Any, toks: list[int], *, logits: bool = False) -> None:
        """Keep the KV state of sequence 0, which holds exactly ``toks`` (and the last logits row)."""
        ctx, seq = self._ctx.ctx, _seq(self)
        size = llama_cpp.llama_state_seq_get_size(ctx, seq)
        buf = (ctypes.c_uint8 * size)()
        got = llama_cpp.llama_state_seq_get_data(ctx, buf, size, seq)
        if not got:
            return
        row = None
        if logits:
            out = llama_cpp.llama_get_logits_ith(ctx, getattr(self._ctx, "row", -1))
            if not out:  # no output row (never after a prompt evaluation): keep nothing rather than guess
                return
            row = ctypes.string_at(out, 4 * self.n_vocab())
        first = min((p for p in getattr(self, "_bakeoff_small", []) if p < len(toks)), default=len(toks))
        key = tuple(toks)
        snaps[key] = Snapshot(key, first, ctypes.string_at(buf, got), row)  # one copy of the state, not two
        snaps.move_to_end(key)
        stats["kept"] += 1
        while len(snaps) > limit or sum(len(x.data) + len(x.logits or b"") for x in snaps.values()) > MAX_BYTES:
            snaps.popitem(last=False)

    def window(self: Any) -> int:
        """Positions a restored state may hold: below the sliding window, when the model has one."""
        n_swa = int(llama_cpp.llama_model_n_swa(self._model.model))
        return n_swa - 1 if n_swa > 0 else 1 << 30

    def eval_recording(self: Any, tokens: Any) -> None:
        start, tokens = self.n_tokens, list(tokens)
        prompt = getattr(self, "_bakeoff_prompt", None)
        n = len(prompt) if prompt is not None else -1
        split = min(n - MIN_PIECE, window(self)) if prompt is not None else -1
        whole = (prompt is not None and start + len(tokens) == n and n <= window(self)
                 and large_pieces(len(tokens), n_batch=self.n_batch) and tuple(prompt) not in snaps
                 and tokens == prompt[start:] and self.input_ids[:start].tolist() == prompt[:start])
        if whole:  # below the window: keep the state after the whole prompt, its last logits included
            record(self, start, len(tokens))
            original_eval(self, tokens)
            keep(self, prompt, logits=True)
            return
        if (prompt is not None and start + len(tokens) == n and start < split
                and large_pieces(len(tokens), n_batch=self.n_batch)  # unsplit: large pieces only, too
                and large_pieces(split - start, n_batch=self.n_batch)
                and large_pieces(n - split, n_batch=self.n_batch)
                and tuple(prompt[:split]) not in snaps and tokens == prompt[start:]
                and self.input_ids[:start].tolist() == prompt[:start]):
            record(self, start, split - start)  # both parts are large pieces: the bits of one piece
            original_eval(self, tokens[: split - start])
            keep(self, prompt[:split])
            start, tokens = split, tokens[split - start:]
        record(self, start, len(tokens))
        original_eval(self, tokens)

    def prepare(self: Any, toks: list[int]) -> None:
        n = len(toks)
        held = self.input_ids[: self.n_tokens].tolist() if self.n_tokens else []
        if not held or n < 2:
            return
        lcp = common_prefix(held, toks)
        small = min(getattr(self, "_bakeoff_small", []), default=len(held))
        if lcp >= len(held) or lcp >= n or small < lcp or not large_pieces(n - lcp, n_batch=self.n_batch):
            return  # the unpatched server would not evaluate this prompt cleanly: leave it so
        whole = snaps.get(tuple(toks))
        if whole is not None and whole.logits is not None and whole.first_small >= n:
            if restore(self, whole, toks, lcp):
                self._requires_eval = False  # llama-cpp-python samples from the restored logits, evaluating nothing
            return
        best: Snapshot | None = None
        for snap in snaps.values():
            cut = len(snap.tokens)
            if (snap.logits is None and cut >= lcp + MIN_GAIN and snap.first_small >= cut and cut < n and cut <= window(self)
                    and large_pieces(n - cut, n_batch=self.n_batch) and snap.tokens == tuple(toks[:cut])
                    and (best is None or cut > len(best.tokens))):
                best = snap
        if best is not None:
            restore(self, best, toks, lcp)

    def restore(self: Any, snap: Snapshot, toks: list[int], lcp: int) -> bool:
        """Restore ``snap`` (a prefix of ``toks``, or all of it) whole; False when it cannot be (the server then holds
        nothing, or, with no output row for the logits, what it held)."""
        cut, n = len(snap.tokens), len(toks)
        ctx, seq = self._ctx.ctx, _seq(self)
        # the output row of the last decode (every decode here outputs its last token) takes the kept logits
        row = llama_cpp.llama_get_logits_ith(ctx, -1) if snap.logits is not None else None
        if snap.logits is not None and not row:
            return False  # no output row to write (nothing decoded yet): leave the server as it is
        self._ctx.kv_cache_seq_rm(seq, 0, -1)
        # llama.cpp only reads the state: hand it the stored bytes in place (no 9 MB copy per restore)
        src = ctypes.cast(ctypes.c_char_p(snap.data), ctypes.POINTER(ctypes.c_uint8))
        if llama_cpp.llama_state_seq_set_data(ctx, src, len(snap.data), seq) == 0:
            self._ctx.kv_cache_seq_rm(seq, 0, -1)
            self.n_tokens = 0  # failed: start from nothing (clean: large_pieces(n - lcp) holds)
            self._bakeoff_small = []
            return False
        if row:
            ctypes.memmove(row, snap.logits, len(snap.logits))  # type: ignore[arg-type]
            if hasattr(self._ctx, "row"):
                self._ctx.row = -1  # a slot (bakeoff.truth.llama_slots) samples from the row just written
        self.input_ids[:cut] = toks[:cut]
        self.n_tokens = cut
        self._bakeoff_small = []
        snaps.move_to_end(snap.tokens)
        stats["restored"] += 1
        stats["whole"] += snap.logits is not None
        stats["saved_tokens"] += cut - lcp
        print(f"bakeoff snapshot: restored {cut} of {n} prompt tokens{' and its logits' if snap.logits is not None else ''} "
              f"(unpatched would reuse {lcp})", file=sys.stderr, flush=True)
        return True

    def create_completion(self: Any, prompt: Any, *args: Any, **kw: Any) -> Any:
        text = isinstance(prompt, str) and not kw.get("stream") and kw.get("suffix") is None and not args
        toks = _prompt_tokens(self, prompt) if text else None
        if toks is not None:
            prepare(self, toks)
        self._bakeoff_prompt = toks
        try:
            return original_create(self, prompt, *args, **kw)
        finally:
            self._bakeoff_prompt = None

    Llama.eval = eval_recording  # type: ignore[method-assign]
    Llama.create_completion = create_completion  # type: ignore[method-assign]
    Llama.bakeoff_snapshot_stats = stats  # type: ignore[attr-defined]


def _seq(llm: Any) -> int:
    """The llama.cpp sequence ``llm`` evaluates in: 0, or its slot's (:mod:`bakeoff.truth.llama_slots`)."""
    return int(getattr(llm._ctx, "seq", 0))


def limit_from_env() -> int:
    """``$BAKEOFF_LLAMA_SNAPSHOTS`` as a non-negative integer (0: off)."""
    raw = os.environ.get("BAKEOFF_LLAMA_SNAPSHOTS", "0").strip() or "0"
    return int(raw) if raw.isdigit() else 0
