"""Several one-slot llama.cpp servers in one process: the sequences of one context, their one-token
decodes batched, every answer the bits a one-slot server gives.

Why: decoding one token of Gemma 3 270M reads the whole model, ~60 % of it the 262,144-row output
layer, for one row of logits. One ``llama_decode`` of one token from each of ``k`` sequences reads the
weights once for all ``k``: measured on one thread (flash attention off, as the server runs), 41.4 ms per
step for one sequence, 75.7 ms for four (18.9 ms per token), 122.7 ms for six (20.5 ms per token: the
attention grows faster than the weights save, so 4 is the default).

Why the answers stay the same bits: the context is built with one KV *stream* per sequence
(``kv_unified = false``), so a sequence's cells sit where a one-sequence context puts them and its
attention runs over them alone, in the same order; llama.cpp computes every output row of a matrix
product alone (each its own dot products), whatever the other rows are. Measured in-process
(``n_threads 1``, no repacking, flash attention off as the server runs it): decodes of 1 to 6 one-token
sequences, in random subsets, prompts of 22 to 841 tokens (past the 512-position sliding window),
gave each sequence the logits it gets alone, bit for bit, at every step; a batch of 8 did not (other
kernels from 8 rows on), so :data:`MAX_SLOTS` is 6. A unified KV cache did not either (the cells of
the sequences interleave). Prompt pieces (more than one token) are decoded alone, exactly as a
one-slot server decodes them.

How: :class:`Slots` builds llama-cpp-python's own :class:`llama_cpp.Llama` with the server's settings
(``n_ctx`` per slot), then one slot per sequence (:func:`_slot_class`): a view of it with its own tokens, sampler
and seed, whose context is a :class:`_SlotContext` (sequence ``s``'s KV cache; its decodes go through
the :class:`_Baton`). So llama-cpp-python's completion code, and bakeoff's patches of it
(:mod:`~bakeoff.truth.json_stop`, :mod:`~bakeoff.truth.llama_snapshots`), run unchanged per slot. One
slot runs Python at a time (it holds the baton: it may touch the context); a slot that asks to decode
one token hands the baton on; when nobody wants it, the pending one-token decodes (at most
:data:`MAX_SLOTS`) run as one batch and their slots get the baton back in turn, each to sample its row
before anything else touches the context.

Each slot is served at ``/slot/<s>/v1/...`` (``/slot/<s>/extras/tokenize`` too) and answers one
request at a time, like a one-slot llama-cpp-python server: to :mod:`bakeoff.truth.replicas` each slot is
one more replica.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_SLOTS", "Slots", "build_app"]

#: At most this many one-token decodes per batch (measured bit-identical for 1-6; 8 was not).
MAX_SLOTS = 6


class _Baton:
    """Who may touch the llama.cpp context now: one slot at a time, or the batch decode."""

    def __init__(self, ctx: Any, *, max_batch: int) -> None:
        import llama_cpp

        self._ll = llama_cpp
        self._ctx = ctx
        self._cv = threading.Condition()
        self._owner: object | None = None
        self._ready: deque[object] = deque()
        self._pending: list[tuple[Any, int, int, int]] = []  # (slot, token, position, sequence)
        self._rows: dict[int, int] = {}
        self._errors: dict[int, str] = {}
        self.max_batch = max_batch
        self._batch = llama_cpp.llama_batch_init(max_batch, 0, 1)
        self.batches: list[int] = [0] * (max_batch + 1)  # how many batches of each size ran
        self.batch_s = 0.0  # seconds in batched one-token decodes
        self.piece_s, self.pieces = 0.0, 0  # prompt pieces decoded alone: seconds, count

    def stats(self) -> dict[str, Any]:
        """Batches of each size, seconds in them and in prompt pieces."""
        return {"batches": dict(enumerate(self.batches)), "batch_s": round(self.batch_s, 3),
                "pieces": self.pieces, "piece_s": round(self.piece_s, 3)}

    def acquire(self, who: object) -> None:
        with self._cv:
            self._ready.append(who)
            self._dispatch()
            while self._owner is not who:
                self._cv.wait()

    def release(self, who: object) -> None:
        with self._cv:
            if self._owner is who:
                self._owner = None
                self._dispatch()

    def step(self, who: object, token: int, pos: int, seq: int) -> int:
        """Decode one token of sequence ``seq`` (``who`` holds the baton) batched with the other slots';
        returns its row in the output (``who`` holds the baton again, nothing decoded since)."""
        with self._cv:
            if self._owner is not who:
                raise RuntimeError("a slot decoded without holding the baton")
            self._pending.append((who, token, pos, seq))
            self._owner = None
            self._dispatch()
            while self._owner is not who:
                self._cv.wait()
            err = self._errors.pop(id(who), None)
            if err is not None:
                raise RuntimeError(err)
            return self._rows.pop(id(who))

    def _dispatch(self) -> None:
        """With the lock held and no owner: hand the baton on, or decode the pending tokens."""
        while self._owner is None:
            if self._ready:
                self._owner = self._ready.popleft()
                self._cv.notify_all()
                return
            if not self._pending:
                return
            todo, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch:]
            self._owner = self  # the batch decode holds the context
            self._cv.release()
            try:
                err = self._decode(todo)
            except Exception as exc:  # noqa: BLE001 - handed to every slot of the batch, never a stuck baton
                err = f"llama_decode failed: {exc!r}"
            finally:
                self._cv.acquire()
            for row, (who, *_rest) in enumerate(todo):
                self._rows[id(who)] = row
                if err is not None:
                    self._errors[id(who)] = err
            # the decoded slots sample first, in row order, before anything else touches the context
            self._ready.extendleft(who for who, *_rest in reversed(todo))
            self._owner = None

    def _decode(self, todo: list[tuple[Any, int, int, int]]) -> str | None:
        b = self._batch
        for i, (_who, token, pos, seq) in enumerate(todo):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = token, pos, 1, True
            b.seq_id[i][0] = seq
        b.n_tokens = len(todo)
        t0 = time.perf_counter()
        rc = self._ll.llama_decode(self._ctx, b)
        self.batch_s += time.perf_counter() - t0
        self.batches[len(todo)] += 1
        return None if rc == 0 else f"llama_decode returned {rc}"


class _SlotContext:
    """Sequence ``seq`` of a shared :class:`llama_cpp._internals.LlamaContext`: its decodes go through the
    baton, ``kv_cache_seq_rm(-1, ...)`` removes from this sequence only, ``row`` is the output row this
    sequence's last logits are in (-1: the last row, after a prompt piece decoded alone)."""

    def __init__(self, inner: Any, *, seq: int, n_ctx: int, baton: _Baton, owner: object) -> None:
        self._inner, self.seq, self._n_ctx, self._baton, self._owner = inner, seq, n_ctx, baton, owner
        self.row = -1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def n_ctx(self) -> int:
        return self._n_ctx

    def kv_cache_seq_rm(self, seq_id: int, p0: int, p1: int) -> bool:
        return bool(self._inner.kv_cache_seq_rm(self.seq if seq_id == -1 else seq_id, p0, p1))

    def decode(self, batch: Any) -> None:
        b = batch.batch
        if b.n_tokens == 1:
            self.row = self._baton.step(self._owner, int(b.token[0]), int(b.pos[0]), self.seq)
            return
        for i in range(b.n_tokens):
            b.seq_id[i][0] = self.seq
        t0 = time.perf_counter()
        self._inner.decode(batch)  # a prompt piece: alone, as a one-slot server decodes it (we hold the baton)
        self._baton.piece_s += time.perf_counter() - t0
        self._baton.pieces += 1
        self.row = -1


class Slots:
    """``count`` slots over one llama.cpp context built by ``make_llama(n_ctx)`` (llama-cpp-python's
    :class:`~llama_cpp.Llama` with the server's settings); ``n_ctx`` positions per slot."""

    def __init__(self, make_llama: Callable[[int], Any], *, count: int, n_ctx: int) -> None:
        if not 1 <= count <= MAX_SLOTS:
            raise ValueError(f"slots must be 1..{MAX_SLOTS}, got {count}")
        self.count, self.n_ctx = count, n_ctx
        self.base = _with_streams(count, lambda: make_llama(n_ctx * count))
        self.baton = _Baton(self.base._ctx.ctx, max_batch=count)
        self.slots = [_slot_class().view(self.base, seq=s, n_ctx=n_ctx, baton=self.baton) for s in range(count)]
        self._locks = [threading.Lock() for _ in range(count)]

    def run(self, s: int, fn: Callable[[Any], Any]) -> Any:
        """``fn(slot)`` on slot ``s``, one request at a time per slot, holding the baton while it runs."""
        slot = self.slots[s]
        with self._locks[s]:
            self.baton.acquire(slot)
            try:
                return fn(slot)
            finally:
                self.baton.release(slot)


def _with_streams(count: int, make: Callable[[], Any]) -> Any:
    """``make()`` with llama.cpp's context defaults set to ``count`` sequences, one KV stream each."""
    import llama_cpp.llama_cpp as low

    original = low.llama_context_default_params

    def streams():  # type: ignore[no-untyped-def]
        params = original()
        params.n_seq_max = count
        params.kv_unified = False
        return params

    low.llama_context_default_params = streams
    try:
        return make()
    finally:
        low.llama_context_default_params = original


@functools.cache
def _slot_class() -> type:
    """:class:`llama_cpp.Llama` subclassed for a slot (built on first use: llama_cpp is imported lazily)."""
    from llama_cpp import Llama

    class Slot(Llama):  # type: ignore[misc]
        """A view of a shared :class:`~llama_cpp.Llama` on one sequence (see the module docstring)."""

        @classmethod
        def view(cls, base: Any, *, seq: int, n_ctx: int, baton: _Baton) -> Any:
            import numpy as np

            obj = cls.__new__(cls)
            obj.__dict__.update(base.__dict__)
            obj._ctx = _SlotContext(base._ctx, seq=seq, n_ctx=n_ctx, baton=baton, owner=obj)
            obj._n_ctx = n_ctx
            obj.input_ids = np.zeros((n_ctx,), dtype=np.intc)
            obj.n_tokens = 0
            obj._requires_eval = True
            obj._sampler = None
            return obj

        def sample(self, *args: Any, idx: int | None = None, **kwargs: Any) -> Any:
            row = self._ctx.row
            if idx is not None and row >= 0:
                idx = self.n_tokens + row  # llama-cpp-python samples row idx - n_tokens: this sequence's row
            return super().sample(*args, idx=idx, **kwargs)

        def close(self) -> None:  # the model and context belong to the base
            pass

        def __del__(self) -> None:
            pass

    return Slot


def build_app(slots: Slots, *, model_alias: str) -> Any:
    """A Starlette app serving each slot at ``/slot/<s>/`` with llama-cpp-python's request types and
    argument mapping (``/v1/completions``, ``/v1/chat/completions``, ``/v1/models``, ``/extras/tokenize``);
    slot 0 also at ``/``."""
    from llama_cpp import LlamaGrammar
    from llama_cpp.server.types import CreateChatCompletionRequest, CreateCompletionRequest
    from pydantic import ValidationError
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def slot_of(request: Request) -> int | None:
        s = int(request.path_params.get("s", 0))
        return s if 0 <= s < slots.count else None

    def kwargs_of(body: Any, exclude: set[str]) -> dict[str, Any]:
        # llama_cpp.server.app.create_completion / prepare_request_resources, non-streaming
        if body.stream:
            raise ValueError("streaming is not supported by bakeoff's slot server")
        if body.logit_bias is not None and body.logit_bias_type == "tokens":
            raise ValueError("logit_bias_type 'tokens' is not supported by bakeoff's slot server")
        kwargs = body.model_dump(exclude=exclude)
        if body.grammar is not None:
            kwargs["grammar"] = LlamaGrammar.from_string(body.grammar)
        if body.min_tokens > 0:
            raise ValueError("min_tokens is not supported by bakeoff's slot server")
        return kwargs

    async def answer(request: Request, model: Any, exclude: set[str], call: str) -> JSONResponse:
        s = slot_of(request)
        if s is None:
            return JSONResponse({"error": {"message": "no such slot"}}, status_code=404)
        try:
            body = model.model_validate(await request.json())
            kwargs = kwargs_of(body, exclude)
        except (ValidationError, ValueError) as exc:
            return JSONResponse({"error": {"message": str(exc)}}, status_code=400)
        if isinstance(kwargs.get("prompt"), list):
            kwargs["prompt"] = kwargs["prompt"][0] if kwargs["prompt"] else ""
        try:
            result = await run_in_threadpool(slots.run, s, lambda slot: getattr(slot, call)(**kwargs))
        except ValueError as exc:  # llama-cpp-python's answer to a request it cannot serve (prompt too long, ...)
            return JSONResponse({"error": {"message": str(exc)}}, status_code=400)
        return JSONResponse(result)

    async def completions(request: Request) -> JSONResponse:
        return await answer(request, CreateCompletionRequest, {"n", "best_of", "logit_bias_type", "user", "min_tokens"},
                            "create_completion")

    async def chat(request: Request) -> JSONResponse:
        return await answer(request, CreateChatCompletionRequest, {"n", "logit_bias_type", "user", "min_tokens"},
                            "create_chat_completion")

    async def models(request: Request) -> JSONResponse:
        if slot_of(request) is None:
            return JSONResponse({"error": {"message": "no such slot"}}, status_code=404)
        return JSONResponse({"object": "list", "data": [{"id": model_alias, "object": "model",
                                                         "owned_by": "me", "permissions": []}]})

    async def tokenize(request: Request) -> JSONResponse:
        text = (await request.json()).get("input", "")
        return JSONResponse({"tokens": slots.base.tokenize(str(text).encode("utf-8"), special=True)})

    routes = []
    for prefix in ("", "/slot/{s:int}"):
        routes += [Route(prefix + "/v1/completions", completions, methods=["POST"]),
                   Route(prefix + "/v1/chat/completions", chat, methods=["POST"]),
                   Route(prefix + "/v1/models", models, methods=["GET"]),
                   Route(prefix + "/extras/tokenize", tokenize, methods=["POST"])]
    def write_stats() -> None:
        path = os.environ.get("BAKEOFF_LLAMA_STATS")
        if path:  # benchmarks and tests: one JSON line per server, appended when it stops
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"pid": os.getpid(), **slots.baton.stats()}) + "\n")

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):  # type: ignore[no-untyped-def]
        yield
        write_stats()

    return Starlette(routes=routes, lifespan=lifespan)
