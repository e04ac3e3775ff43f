"""What a client's requests cost and how fast they go: tokens and dollars charged to a
:class:`~bakeoff.truth.llm.client.Usage`, and the progress bar's tokens-per-second postfix.

Cost of a response: ``price.cost(prompt_tokens, completion_tokens) * discount`` (``discount`` is 1 for
answers asked now, :attr:`~bakeoff.truth.llm.client.LLMConfig.batch_discount` for batch results).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ._answers import token_counts

if TYPE_CHECKING:  # pragma: no cover
    from .client import Price, Usage


def charge(usage: Usage, resp: Any, price: Price, *, discount: float = 1.0) -> tuple[int, int]:
    """Add ``resp``'s tokens and their cost to ``usage``; returns ``(prompt_tokens, completion_tokens)``."""
    pt, ct = token_counts(resp)
    usage.add(prompt_tokens=pt, completion_tokens=ct, cost_usd=price.cost(pt, ct) * discount)
    return pt, ct


class TokenRate:
    """A progress bar whose postfix shows generated tokens per second since it opened (tqdm shows
    requests per second and the ETA)."""

    def __init__(self, bar: Any, usage: Usage) -> None:
        self.bar, self.usage = bar, usage
        self.t0, self.tokens0 = time.perf_counter(), usage.completion_tokens

    def update(self, n: int = 1) -> None:
        self.bar.update(n)
        dt = time.perf_counter() - self.t0
        if dt > 0:
            self.bar.set_postfix_str(f"{(self.usage.completion_tokens - self.tokens0) / dt:.1f} tok/s", refresh=False)

    def close(self) -> None:
        self.bar.close()
