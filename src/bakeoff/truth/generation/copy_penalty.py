"""A penalty, at decoding time, on repeating a run of the prompt's tokens: llama.cpp's DRY sampler.

The bundled small models answer "write the query someone would type" by pasting the document's first
sentence, and the ``copies_passage`` filter then throws the generation away. This penalty acts before the
filter, inside the sampler: llama.cpp's DRY ("Don't Repeat Yourself") sampler looks back over the whole
context — the instruction, the document and the answer so far — and for every candidate token ``t`` that would
extend a run of ``L`` tokens already found earlier in that context, with ``L >= allowed_length``, lowers its
logit by

    penalty(t) = multiplier * base ** (L - allowed_length)

(runs are cut at llama.cpp's default sequence breakers: newline, ``:``, ``"`` and ``*``). Single terms, a
name or a few words of the document stay free, so the query can still use the document's vocabulary (its
leak is not steered: that is the leak-matched verdict's job); a pasted sentence becomes expensive after
``allowed_length`` tokens and prohibitive a few tokens later. The penalty is a part of the request, so it is
in every cache key.

Only llama.cpp's ``llama-server`` takes these fields (:attr:`bakeoff.truth.llm.client.LLMConfig.llama_cpp_sampling`:
the bundled ``--llm local``); other servers get the request without them, and provenance says it was not
applied. The defaults were measured on the stdlib docstrings, SciFact and CISI with the bundled 0.5B (the
docs' benchmarks page, "A copy penalty at decoding"); the window covers a slot's whole context.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError

__all__ = ["CopyPenalty"]


@dataclass(frozen=True)
class CopyPenalty:
    """``multiplier`` and ``base`` of the penalty, ``allowed_length`` (tokens a repeated run may reach freely)
    and ``window`` (tokens of context looked back over; the slot's context by default)."""

    multiplier: float = 0.8
    base: float = 1.75
    allowed_length: int = 6
    window: int = 4096

    def __post_init__(self) -> None:
        if not (math.isfinite(self.multiplier) and self.multiplier > 0):
            raise ConfigError(f"the copy penalty's multiplier must be > 0, got {self.multiplier}")
        if not (math.isfinite(self.base) and self.base >= 1.0):
            raise ConfigError(f"the copy penalty's base must be >= 1, got {self.base}")
        if self.allowed_length < 1 or self.window < 1:
            raise ConfigError("the copy penalty's allowed length and window must be >= 1 token")

    def request_fields(self) -> dict[str, Any]:
        """The fields of a ``llama-server`` completion request that turn the penalty on."""
        return {"dry_multiplier": self.multiplier, "dry_base": self.base,
                "dry_allowed_length": self.allowed_length, "dry_penalty_last_n": self.window}
