"""Several identical one-slot llama.cpp servers answering a batch exactly as one server would.

A slot of bakeoff's slot server (:mod:`bakeoff.truth.llama_slots`: a sequence of a shared context) is
such a server: it holds its own tokens and evaluates exactly as llama-cpp-python's one-slot server.

Why the rule below is needed
----------------------------
llama-cpp-python's server keeps the tokens of its previous request (prompt + the generated
tokens it evaluated) and, for the next prompt ``T``, reuses the longest common prefix ``L``
with them, re-evaluating ``T[L:]`` in pieces of ``n_batch`` tokens (``L`` is capped at
``len(T) - 1``; with nothing to re-evaluate it samples straight from the last logits).
llama.cpp computes the tokens of a *small piece* on other kernel paths than those of a long
one: measured in-process on three demo prompts (1 thread, no repacking), a last piece of 1-7
tokens moved the last logits by up to 0.83 (which 1-7 differed depended on the prompt), while
every split into pieces of 8-64 tokens gave the bit-identical logits of the unsplit prompt;
:data:`MIN_PIECE` keeps a margin. So one server's answer to ``T`` depends on its *history* exactly
through this: whether some position of ``T`` is evaluated in a small piece (or the last one
not at all), which happens when the previous prompt equals ``T`` (a schema retry, or a
duplicate prompt), when one prompt is a prefix of the other or nearly so, or when the last
``n_batch`` piece is small.

Rule (what :class:`bakeoff.truth.llm.LLMClient` does with ``replicas``)
------------------------------------------------------------------------
* The server's state is simulated on the client (:class:`PrefixState`): the prompt tokens it
  holds and ``taint``, the first position that may have been computed in a small piece (the
  generated tokens after the prompt are unknown, so a prompt that extends the held one is never
  clean). A prompt ``T`` is **clean** in a state (:meth:`PrefixState.clean`) when the reused
  prefix ``L = LCP(held, T)`` is shorter than both, ends at or before ``taint``, and every piece
  of ``T[L:]`` is large (:func:`large_pieces`); a fresh server likewise with ``L = 0``.
  Clean means: the reused prefix was evaluated in large pieces and so is the rest, so the
  logits are the same bits whatever came before; and the state after a clean prompt has no
  taint. (A schema retry taints only the retried prompt's last position, which a later prompt
  can reuse only if it extends the retried one: never clean anyway.)
* The requests a serial run would send (cache misses, in input order; every schema retry
  stays right after its first attempt) are cut into **chains** (:func:`chains`): a new chain
  starts at each request that is clean in the serial state before it. Inside a chain the
  history matters, so a chain runs on one server, in order, with its retries.
* The first chain runs on the *home* server (the one that answered the serial run's previous
  request, so its state is the serial state); each other chain runs on any free server, after
  a cheap **reset** request (:func:`reset_prompt`: a one-token completion of a short text)
  when its first prompt is not clean in that server's state. Then each request meets
  the same numerics as in the serial run, so the answers are the same bytes; the home of the
  next batch is the server that ran the last chain.

Tokens come from the server's own tokenizer (``POST /extras/tokenize``, which llama-cpp-python
answers with the ids its completion endpoint evaluates: BOS + the text with special tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MIN_PIECE", "N_BATCH", "RESET_TEXTS", "PrefixState", "chains", "common_prefix", "large_pieces",
           "reset_prompt"]

#: llama-cpp-python's ``n_batch`` (the server's default, passed explicitly by
#: :class:`~bakeoff.truth.local_llm.LocalLLMServer`): prompt tokens per ``llama_decode``.
N_BATCH = 512

#: Short texts tried, in order, as reset prompts (the first one that leaves the next prompt clean).
RESET_TEXTS = ("\n", "0", "x", "#", "\n\n", "00")

#: Pieces of at least this many tokens give the same bits wherever they start (measured: 1-7 did
#: not always, 8-64 did); a margin above that.
MIN_PIECE = 16

Tokens = Sequence[int]


def large_pieces(count: int, *, n_batch: int = N_BATCH, min_piece: int = MIN_PIECE) -> bool:
    """Whether evaluating ``count`` tokens (in pieces of ``n_batch``, the rest last) uses only pieces of
    at least ``min_piece`` tokens."""
    rest = count % n_batch
    return count >= min_piece and (rest == 0 or rest >= min_piece)


def common_prefix(a: Tokens, b: Tokens) -> int:
    """Length of the longest common prefix of two token lists."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass(frozen=True)
class PrefixState:
    """What a one-slot llama-cpp-python server holds: the last prompt's tokens (``None``: fresh
    server) and ``taint``, the first position that may have been evaluated alone."""

    tokens: tuple[int, ...] | None = None
    taint: int = 0

    @classmethod
    def unknown(cls) -> PrefixState:
        """A server that was asked something whose tokens are not known (a chat request): nothing is
        clean in it; once asked a prompt, only its first position (BOS, never evaluated alone: no
        request is one token long) is trusted."""
        return cls(None, -1)

    def clean(self, tokens: Tokens, *, n_batch: int = N_BATCH, min_piece: int = MIN_PIECE) -> bool:
        """Whether ``tokens`` is evaluated in this state exactly as in any other clean state."""
        if self.taint < 0:
            return False
        if not self.tokens:
            return large_pieces(len(tokens), n_batch=n_batch, min_piece=min_piece)
        lcp = common_prefix(self.tokens, tokens)
        if lcp >= len(self.tokens) or lcp >= len(tokens) or lcp > self.taint:
            return False
        return large_pieces(len(tokens) - lcp, n_batch=n_batch, min_piece=min_piece)

    def after(self, tokens: Tokens, *, n_batch: int = N_BATCH, min_piece: int = MIN_PIECE) -> PrefixState:
        """The state once ``tokens`` was asked in this one (a schema retry is the same prompt again).

        llama-cpp-python reuses ``L = min(LCP, len(tokens) - 1)`` and evaluates the rest in pieces of
        ``n_batch``, the rest last (a small piece when under :data:`MIN_PIECE`); taints before ``L``
        stay. When the held prompt is a prefix of ``tokens``, ``L`` may reach into the generated
        tokens (each evaluated alone), so the taint is at most ``len(held)``."""
        n = len(tokens)
        if self.taint < 0:
            return PrefixState(tuple(tokens), 1)
        held = self.tokens or ()
        lcp = common_prefix(held, tokens)
        extends = bool(held) and lcp == len(held) < n  # may reuse generated tokens: L unknown
        reuse = len(held) if extends else min(lcp, n - 1) if held else 0
        taint = self.taint if held and self.taint < reuse else n
        if extends:
            taint = min(taint, len(held))
        else:
            count = n - reuse
            if count < min_piece:
                taint = min(taint, reuse)
            elif 0 < count % n_batch < min_piece:
                taint = min(taint, n - count % n_batch)
        return PrefixState(tuple(tokens), taint)


def chains(state: PrefixState, tokens: Sequence[Tokens], *, n_batch: int = N_BATCH,
           min_piece: int = MIN_PIECE) -> list[list[int]]:
    """Cut the serial sequence of prompts ``tokens``, asked from ``state``, into chains of positions:
    position ``i > 0`` starts a new chain when it is clean in the serial state before it."""
    out: list[list[int]] = []
    for i, t in enumerate(tokens):
        if i == 0 or state.clean(t, n_batch=n_batch, min_piece=min_piece):
            out.append([i])
        else:
            out[-1].append(i)
        state = state.after(t, n_batch=n_batch, min_piece=min_piece)
    return out


def reset_prompt(state: PrefixState, candidates: Sequence[tuple[str, Tokens]], tokens: Tokens, *,
                 n_batch: int = N_BATCH, min_piece: int = MIN_PIECE) -> tuple[str, PrefixState]:
    """The first candidate text (given with its tokens) that, asked in ``state``, leaves ``tokens``
    clean; with the state it leaves."""
    for text, toks in candidates:
        after = state.after(toks, n_batch=n_batch, min_piece=min_piece)
        if after.clean(tokens, n_batch=n_batch, min_piece=min_piece):
            return text, after
    raise ValueError("no reset text leaves this prompt clean")
