"""What a :class:`~bakeoff.truth.llm.client.ChatRequest` becomes on the wire, and its cache identity.

* :func:`endpoint`: ``completions`` for the completion form (``prompt`` set), else ``chat/completions``.
* :func:`request_body`: the JSON body; for a reasoning model on chat completions ``max_tokens`` becomes
  ``max_completion_tokens = max(max_tokens, REASONING_MIN_TOKENS)``, ``temperature``/``top_p`` are dropped
  and ``reasoning_effort`` is sent when configured.
* :func:`request_key`: ``cache_key({model identity, messages, prompt, prefill, schema, params,
  response_format: key_form(form), code_version})`` (plus ``reasoning_effort`` when configured), kind
  ``llm-chat``. The key is the cache's identity of an answer: any change here invalidates every cached answer.
* :func:`logprobs_body` / :func:`logprobs_key`: the one-token request of
  :meth:`~bakeoff.truth.llm.client.LLMClient.next_token_logprobs` and its key (kind ``llm-logprobs``: the
  body with ``model`` replaced by the model identity).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...cache import cache_key
from .structured import Form, key_form, response_format_body

if TYPE_CHECKING:  # pragma: no cover
    from .client import ChatRequest, LLMConfig

#: Lower bound of ``max_completion_tokens`` for reasoning models: the budget covers the hidden
#: reasoning tokens too, and a 64-token budget ends before any visible answer.
REASONING_MIN_TOKENS = 2048


def endpoint(req: ChatRequest) -> str:
    """The path, relative to the base URL, that ``req`` is posted to."""
    return "completions" if req.prompt is not None else "chat/completions"


def request_key(config: LLMConfig, req: ChatRequest, *, form: Form, code_version: str) -> str:
    """The cache key of ``req``'s answer when asked in ``form`` (module docstring)."""
    extra = {"reasoning_effort": config.reasoning_effort} if config.reasoning_effort else {}
    return cache_key({**extra,
        "kind": "llm-chat",
        "model": config.identity,
        "messages": [dict(m) for m in req.messages],
        "prompt": req.prompt,
        "prefill": req.prefill,
        "schema": req.json_schema(),
        "params": dict(req.params),
        "response_format": key_form(form),
        "code_version": code_version,
    })


def request_body(config: LLMConfig, req: ChatRequest, *, form: Form, seed_offset: int = 0) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions`` (or ``/completions``) for ``req``, its ``response_format``
    in ``form``; ``seed_offset`` is added to a ``seed`` parameter (a re-ask samples anew)."""
    params = dict(req.params)
    if seed_offset and "seed" in params:
        params["seed"] = int(params["seed"]) + seed_offset
    if config.is_reasoning and req.prompt is None:
        params.pop("temperature", None)
        params.pop("top_p", None)
        if "max_tokens" in params:
            params["max_completion_tokens"] = max(int(params.pop("max_tokens")), REASONING_MIN_TOKENS)
        if config.reasoning_effort:
            params["reasoning_effort"] = config.reasoning_effort
    if req.prompt is not None:
        return {"model": config.model, "prompt": req.prompt + req.prefill, **params}
    body: dict[str, Any] = {"model": config.model, "messages": [dict(m) for m in req.messages], **params}
    fmt = response_format_body(form, req.schema.__name__, req.json_schema())
    if fmt is not None:
        body["response_format"] = fmt
    return body


def logprobs_body(config: LLMConfig, req: ChatRequest, *, top: int) -> dict[str, Any]:
    """``req`` with ``max_tokens=1`` and log-probabilities of the ``top`` first tokens (chat:
    ``logprobs=true, top_logprobs=top``; completion: ``logprobs=top``), without a response format."""
    params = {**dict(req.params), "max_tokens": 1}
    params.update({"logprobs": True, "top_logprobs": top} if req.prompt is None else {"logprobs": top})
    if req.prompt is not None:
        return {"model": config.model, "prompt": req.prompt + req.prefill, **params}
    return {"model": config.model, "messages": [dict(m) for m in req.messages], **params}


def logprobs_key(config: LLMConfig, body: dict[str, Any], *, code_version: str) -> str:
    """The cache key of the answer to a :func:`logprobs_body`."""
    return cache_key({"kind": "llm-logprobs", "model": config.identity, "body": {**body, "model": None},
                      "code_version": code_version})
