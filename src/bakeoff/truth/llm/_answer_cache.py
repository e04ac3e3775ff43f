"""The LLM client's cache entries (kind ``llm``), under the keys of :mod:`._request`.

* an answer: ``{"raw", "model", "prompt_tokens", "completion_tokens", "source"}`` (``source``: ``chat`` when
  asked, ``batch`` when ingested from a batch results file); a hit counts only when ``raw`` still validates
  against the request's schema;
* first-token log-probabilities: ``{"logprobs", "raw", "model", "prompt_tokens"}``.

Failures are never stored. ``cache`` may be ``None`` (no cache): nothing is found, nothing is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._answers import validate

if TYPE_CHECKING:  # pragma: no cover
    from ...cache import Cache
    from .client import ChatRequest, Generation

KIND = "llm"


def cached_answer(cache: Cache | None, req: ChatRequest, key: str) -> Generation | None:
    """The stored answer to ``req`` under ``key`` when there is one and it validates."""
    from .client import Generation

    if cache is None:
        return None
    hit = cache.get_json(KIND, key)
    if hit is None:
        return None
    try:
        value = validate(req, hit["raw"])
    except ValueError:
        return None
    return Generation(value=value, raw=hit["raw"], prompt_tokens=hit.get("prompt_tokens", 0),
                      completion_tokens=hit.get("completion_tokens", 0), cached=True, key=key)


def store_answer(cache: Cache | None, key: str, *, raw: str, model: str, prompt_tokens: int,
                 completion_tokens: int, source: str) -> None:
    """Keep a validated answer under ``key``."""
    if cache is not None:
        cache.put_json(KIND, key, {"raw": raw, "model": model, "prompt_tokens": prompt_tokens,
                                   "completion_tokens": completion_tokens, "source": source})


def cached_logprobs(cache: Cache | None, key: str) -> Generation | None:
    """The stored first-token log-probabilities under ``key``, if any."""
    from .client import Generation

    if cache is None:
        return None
    hit = cache.get_json(KIND, key)
    if hit is None:
        return None
    return Generation(value=dict(hit["logprobs"]), raw=hit["raw"], cached=True, key=key,
                      prompt_tokens=hit.get("prompt_tokens", 0))


def store_logprobs(cache: Cache | None, key: str, *, logprobs: dict[str, float], raw: str, model: str,
                   prompt_tokens: int) -> None:
    """Keep first-token log-probabilities under ``key``."""
    if cache is not None:
        cache.put_json(KIND, key, {"logprobs": logprobs, "raw": raw, "model": model, "prompt_tokens": prompt_tokens})
