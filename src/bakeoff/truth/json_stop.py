"""End a completion as soon as its JSON answer is complete (bakeoff's llama.cpp server only).

A completion request of :mod:`bakeoff.truth.llm` ends its prompt with a *prefill* that opens the
answer's JSON value (``{"query": "``). The model writes the rest, closes the object (``"}``, one
token for Gemma 3) and then ends the line: llama-cpp-python stops at the ``"\\n"`` stop sequence or
the end-of-generation token. Finding either costs one more *decode* of the whole model: the closing
token is evaluated only to sample what follows it. On the demo's describe requests that is one
decode of about 12 per answer, each a full pass over the 262k-row output layer.

The client (with :attr:`~bakeoff.truth.llm.LLMConfig.json_stop`, set for the bundled server) adds
:func:`marker` ``(n)`` to the request's ``stop`` list: "the last ``n`` characters of the prompt open a
JSON value". :func:`install` patches :class:`llama_cpp.Llama` in the server process so that such a
request ends right after the token that completes the value: once ``prompt[-n:] + text`` parses
as JSON (:func:`complete`), the next token handed to llama-cpp-python is the end-of-generation
token, without evaluating the closing token. The answer text is the same up to the closing
``}`` (inclusive); the usage counts one token less (the ``"\\n"`` that was sampled and cut before).

Convention (answers): the answer ends where its JSON value is complete. Text the model would have
added after it *on the same line* is not generated. Before, such text was read with the answer and
a ``}`` in it made the answer invalid (a schema retry); now the complete value is the answer. With
a grammar (assessment requests) nothing can follow the value, so nothing changes there. An escaped
quote (``\\"}``) is not a close: the value is complete only when it parses.

The marker is an ordinary stop string to any other server (and matches nothing a model writes),
so the client sends it only with ``json_stop``. Requests without it are untouched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["complete", "install", "marker", "split_stop"]

_MARK = re.compile(r"<bakeoff:json-stop:(\d+)>")


def marker(n: int) -> str:
    """The stop string meaning "the last ``n`` characters of the prompt open a JSON value"."""
    return f"<bakeoff:json-stop:{int(n)}>"


def split_stop(stop: str | Sequence[str] | None) -> tuple[str | list[str] | None, int | None]:
    """``(stop without markers, n of the last marker or None)``."""
    if stop is None or isinstance(stop, str):
        m = _MARK.fullmatch(stop) if isinstance(stop, str) else None
        return (None, int(m[1])) if m else (stop, None)
    keep, n = [], None
    for s in stop:
        m = _MARK.fullmatch(s)
        if m:
            n = int(m[1])
        else:
            keep.append(s)
    return keep, n


def complete(text: str) -> bool:
    """Whether ``text`` is one complete JSON value (``json.loads`` accepts it)."""
    try:
        json.loads(text)
    except ValueError:  # JSONDecodeError, and RecursionError never for these sizes
        return False
    return True


def install() -> None:
    """Patch :class:`llama_cpp.Llama` in this process (see the module docstring): ``create_completion``
    takes the marker out of ``stop`` and ``generate`` ends the token stream once the value is complete."""
    from llama_cpp import Llama

    if getattr(Llama, "bakeoff_json_stop", False):
        return
    original_create = Llama.create_completion
    original_generate = Llama.generate

    def create_completion(self: Any, prompt: Any, *args: Any, **kwargs: Any) -> Any:
        stop, n = split_stop(kwargs.get("stop"))
        if n is None:
            return original_create(self, prompt, *args, **kwargs)
        kwargs["stop"] = stop
        self._bakeoff_json_open = prompt[-n:] if isinstance(prompt, str) and n > 0 else None
        try:
            return original_create(self, prompt, *args, **kwargs)
        finally:
            self._bakeoff_json_open = None

    def generate(self: Any, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Iterator[int]:
        opener = getattr(self, "_bakeoff_json_open", None)
        inner = original_generate(self, tokens, *args, **kwargs)
        if opener is None:
            return inner
        return _until_complete(self, inner, list(tokens), opener)

    Llama.create_completion = create_completion  # type: ignore[method-assign]
    Llama.generate = generate  # type: ignore[method-assign]
    Llama.bakeoff_json_stop = True  # type: ignore[attr-defined]


def _until_complete(llm: Any, inner: Iterator[int], prompt: list[int], opener: str) -> Iterator[int]:
    """``inner``'s tokens until ``opener`` + their text is complete JSON, then the end-of-generation
    token instead of resuming ``inner`` (which would evaluate the last token first)."""
    sampled: list[int] = []
    try:
        for token in inner:
            yield token
            sampled.append(token)
            try:
                text = llm.detokenize(sampled, prev_tokens=prompt).decode("utf-8")
            except UnicodeDecodeError:  # a character cut between tokens: not complete yet
                continue
            if complete(opener + text):
                yield llm.token_eos()
                return
    finally:
        inner.close()  # type: ignore[attr-defined]
