"""Reading a server's answer: its text, its token counts, its first-token log-probabilities, and the
validation of the text against the request's schema (JSON, tolerating a fenced block or prose around one
object)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .client import ChatRequest


def extract_json(text: str) -> Any:
    """Parse ``text`` as JSON; tolerate a fenced block or prose around one JSON object."""
    s = text.strip()
    if s.startswith("```"):
        s = s.strip("`")
        s = s[s.find("\n") + 1:] if "\n" in s else s
    try:
        return json.loads(s)
    except json.JSONDecodeError:
        start, end = s.find("{"), s.rfind("}")
        if start >= 0 and end > start:
            return json.loads(s[start:end + 1])
        raise


def validate(req: ChatRequest, text: str) -> Any:
    """Parse and validate ``text`` against ``req.schema`` (raises ValueError on failure)."""
    from pydantic import ValidationError

    try:
        obj = extract_json(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg}") from None
    try:
        return req.schema.model_validate(obj)
    except ValidationError as exc:
        raise ValueError(f"schema violation: {exc.error_count()} errors") from None


def answer_text(req: ChatRequest, resp: Mapping[str, Any]) -> str:
    """The answer's text: ``prefill + choices[0].text`` (completion form) or ``choices[0].message.content``."""
    choice = resp["choices"][0]
    if req.prompt is not None:
        return req.prefill + (choice["text"] or "")
    return choice["message"]["content"] or ""


def token_counts(resp: Any) -> tuple[int, int]:
    """``(prompt_tokens, completion_tokens)`` of a response's ``usage`` (0 when missing)."""
    usage = (resp.get("usage") or {}) if isinstance(resp, dict) else {}
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


def first_token_logprobs(resp: Mapping[str, Any]) -> dict[str, float]:
    """``{token: logprob}`` of the answer's first position: the chat form (``logprobs.content[0].top_logprobs``,
    a list of ``{"token", "logprob"}``) or the legacy completions form (``logprobs.top_logprobs[0]``, a mapping)."""
    lp = resp["choices"][0]["logprobs"]
    if lp.get("content"):
        return {str(t["token"]): float(t["logprob"]) for t in lp["content"][0]["top_logprobs"]}
    return {str(t): float(v) for t, v in lp["top_logprobs"][0].items()}
