"""One client for OpenAI-compatible chat servers (OpenAI, ollama, vLLM, llama.cpp server).

Conventions
-----------
* **Secrets**: the API key is read from the environment variable *named* by
  :attr:`LLMConfig.api_key_env` at request time. Only the variable's name is
  ever stored (config, provenance); the key never reaches logs, caches or files.
* **Retries**: HTTP goes through :class:`bakeoff.net.HttpClient`: 429, 408,
  425, 500, 502, 503, 504, timeouts, connection errors and bodies that are not
  JSON are retried up to ``max_retries`` times with exponential backoff
  ``min(backoff_max_s, backoff_s * 2**attempt)`` (a ``Retry-After`` header,
  capped the same way, wins). Other 4xx answers fail at once, and so does a 500 whose body
  says the request itself is malformed (:func:`bakeoff.truth.llm.structured.refusal`).
* **Structured output**: every answer must parse as JSON and validate against a
  pydantic model. An invalid answer is re-asked ``schema_retries`` more times
  (with a different sampling seed), then the request counts as a *failure*;
  failures are returned as :class:`Generation` with ``error`` set — a run never
  crashes on a bad answer. The ``response_format`` form is negotiated with the
  server once (``auto``, the default) or fixed; a server that refuses the request
  itself (a field it names) ends the run with one line, not a retry loop
  (:mod:`bakeoff.truth.llm.structured`).
* **Caching**: a validated answer is cached under ``cache_key({model, messages,
  schema, params, response_format})`` (kind ``llm``; ``response_format`` is
  :func:`~bakeoff.truth.llm.structured.key_form` of the form that produced it), so a
  re-run costs nothing and a crashed run resumes where it stopped. Failures are not cached.
* **Reasoning models** (o-series, gpt-5 family; :func:`is_reasoning_model`): chat requests send
  ``max_completion_tokens`` instead of ``max_tokens``, no ``temperature``/``top_p``, and
  ``reasoning_effort`` when :attr:`LLMConfig.reasoning_effort` is set (see :meth:`LLMClient.body`).
* **Cost**: ``prompt_tokens * prompt_usd_per_1m / 1e6 + completion_tokens *
  completion_usd_per_1m / 1e6`` from a configurable :class:`Price` (batch results
  are multiplied by ``batch_discount``). Cache hits cost 0 in this run.
* **Batch files**: :func:`write_batch` writes OpenAI batch JSONL (one
  ``POST /v1/chat/completions`` per uncached request, ``custom_id`` = cache key);
  :func:`ingest_batch` validates a returned results JSONL and stores the answers
  in the cache, so the next normal run finds them all.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from ..._io import atomic_open
from ...cache import Cache
from ...errors import ConfigError, InputError
from ...net import HttpError
from . import _request
from ._accounting import TokenRate, charge
from ._answer_cache import cached_answer, cached_logprobs, store_answer, store_logprobs
from ._answers import answer_text, first_token_logprobs, validate
from ._negotiation import FormNegotiation
from ._transport import ServerPool, map_in_flight
from .structured import Form

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

__all__ = [
    "DEFAULT_PRICES",
    "REASONING_PREFIXES",
    "ChatRequest",
    "Generation",
    "LLMClient",
    "LLMConfig",
    "Price",
    "Usage",
    "ingest_batch",
    "is_reasoning_model",
    "write_batch",
]

log = logging.getLogger("bakeoff")

#: ``auto`` negotiates a :data:`~bakeoff.truth.llm.structured.FORMS` form with the server; the others fix it.
ResponseFormat = Literal["auto", "json_schema", "json_object_schema", "none"]


@dataclass(frozen=True)
class Price:
    """US dollars per million prompt / completion tokens."""

    prompt_usd_per_1m: float = 0.0
    completion_usd_per_1m: float = 0.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt_usd_per_1m + completion_tokens * self.completion_usd_per_1m) / 1e6


#: List prices (USD per 1M tokens) used when no price is configured; override with ``LLMConfig.price``.
#: gpt-5 family: OpenAI list prices (standard tier, per 1M tokens, input/output) as published on
#: openai.com/api/pricing for gpt-5 ($1.25/$10), gpt-5-mini ($0.25/$2) and gpt-5-nano ($0.05/$0.40);
#: reasoning tokens are billed as completion tokens (they are counted in ``completion_tokens``).
DEFAULT_PRICES: Mapping[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "o4-mini": Price(1.10, 4.40),
    "o3": Price(2.00, 8.00),
    "o3-mini": Price(1.10, 4.40),
}

#: Model-name prefixes of reasoning models, which refuse ``temperature`` (other than the default)
#: and ``max_tokens`` on chat completions: they take ``max_completion_tokens`` and ``reasoning_effort``.
REASONING_PREFIXES: tuple[str, ...] = ("o1", "o3", "o4", "gpt-5")


def is_reasoning_model(model: str) -> bool:
    """True for the o-series and the gpt-5 family (``gpt-5``, ``gpt-5-mini``, ``gpt-5-2025-08-07`` ...);
    a provider prefix such as ``openai/`` is ignored. ``gpt-5-chat-latest`` is a chat model (not reasoning)."""
    name = model.rsplit("/", 1)[-1].lower()
    if name.startswith("gpt-5") and "chat" in name:
        return False
    return any(name == p or name.startswith(p + "-") for p in REASONING_PREFIXES)


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to ask. ``model_id`` (default ``model``) is the cache identity of the model."""

    base_url: str
    model: str
    api_key_env: str | None = None
    timeout_s: float = 120.0
    max_retries: int = 5
    backoff_s: float = 1.0
    backoff_max_s: float = 30.0
    concurrency: int = 4
    schema_retries: int = 2
    response_format: ResponseFormat = "auto"
    #: ``chat`` (instruction models) or ``completion`` (few-shot base models such as the local Gemma).
    prompt_style: Literal["chat", "completion"] = "chat"
    price: Price | None = None
    batch_discount: float = 0.5
    model_id: str | None = None
    #: Reasoning models only (see :func:`is_reasoning_model`): ``minimal``, ``low``, ``medium`` or ``high``.
    reasoning_effort: str | None = None
    #: ``None``: decided by :func:`is_reasoning_model` from the model name; True/False force it.
    reasoning: bool | None = None
    #: Base URLs of more servers identical to ``base_url`` (same model and flags): each request goes to the
    #: one with the fewest requests in flight (the first on a tie). Not part of any cache key, not in
    #: :meth:`public` (the ports change every run).
    replicas: tuple[str, ...] = ()
    #: The server is llama.cpp's ``llama-server`` (the bundled ``--llm local``), which takes its own sampler
    #: fields in a request (e.g. the copy penalty, :mod:`bakeoff.truth.generation.copy_penalty`); other servers
    #: may refuse fields they do not know, so they are sent only when this is true.
    llama_cpp_sampling: bool = False

    @property
    def is_reasoning(self) -> bool:
        return is_reasoning_model(self.model) if self.reasoning is None else self.reasoning

    def resolved_price(self) -> Price:
        if self.price is not None:
            return self.price
        if self.model in DEFAULT_PRICES:
            return DEFAULT_PRICES[self.model]
        # dated snapshots (gpt-5-mini-2025-08-07) cost what their family costs
        for name in sorted(DEFAULT_PRICES, key=len, reverse=True):
            if self.model.startswith(name + "-2"):
                return DEFAULT_PRICES[name]
        return Price()

    @property
    def identity(self) -> str:
        return self.model_id or self.model

    def public(self) -> dict[str, Any]:
        """The configuration as stored in provenance: the key variable's *name* only."""
        d = asdict(self)
        d.pop("replicas")
        d["price"] = asdict(self.resolved_price())
        return d


@dataclass(frozen=True)
class ChatRequest:
    """One request asking for JSON that validates against ``schema``.

    Chat form (default): ``messages`` go to ``POST /chat/completions`` with the
    configured ``response_format``. Completion form (for base models): ``prompt``
    is set, ``messages`` empty; ``prompt + prefill`` goes to ``POST /completions``
    and the answer text is ``prefill + completion`` (``prefill`` opens the JSON,
    e.g. ``{"query": "``, so a few-shot base model only has to continue it).
    """

    messages: tuple[Mapping[str, str], ...]
    schema: type[BaseModel]
    params: Mapping[str, Any] = field(default_factory=dict)
    prompt: str | None = None
    prefill: str = ""

    @classmethod
    def completion(cls, prompt: str, schema: type[BaseModel], params: Mapping[str, Any], *,
                   prefill: str = "") -> ChatRequest:
        return cls((), schema, params, prompt=prompt, prefill=prefill)

    def json_schema(self) -> dict[str, Any]:
        return self.schema.model_json_schema()


@dataclass
class Generation:
    """The outcome of one request: ``value`` (validated) or ``error`` (a failure)."""

    value: Any  # the validated answer; None when the request failed (``ok`` is False)
    raw: str | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    attempts: int = 0
    key: str = ""
    pending: bool = False  # queued for a batch file instead of asked (see LLMClient.collect)

    @property
    def ok(self) -> bool:
        return self.value is not None


@dataclass
class Usage:
    """Counts for one client over its lifetime (thread-safe updates through :meth:`add`)."""

    requests: int = 0
    cache_hits: int = 0
    http_calls: int = 0
    transport_retries: int = 0
    schema_retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: float) -> None:
        with self._lock:
            for k, v in counts.items():
                setattr(self, k, getattr(self, k) + v)

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}

    def summary(self) -> str:
        return (f"{self.requests} requests ({self.cache_hits} cached, {self.failures} failed), "
                f"{self.prompt_tokens} prompt + {self.completion_tokens} completion tokens, "
                f"${self.cost_usd:.4f}")


class LLMClient:
    """Chat client with retries, structured output, caching and accounting, composed of the servers
    (:mod:`._transport`), the structured-output form (:mod:`._negotiation`), the request's wire shape and key
    (:mod:`._request`), the answer's validation (:mod:`._answers`), its cache entries (:mod:`._answer_cache`)
    and the costs (:mod:`._accounting`).

    ``sleep`` is injectable so tests can observe backoff without waiting.
    """
    code_version = "1"  # bump when parsing/validation of answers changes (part of request_key)

    def __init__(self, config: LLMConfig, *, cache: Cache | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if config.concurrency < 1:
            raise ConfigError("LLM concurrency must be >= 1")
        self.config = config
        self.cache = cache
        self.usage = Usage()
        self._servers = ServerPool(config, usage=self.usage, sleep=sleep)
        self._forms = FormNegotiation(config.response_format, url=config.base_url)
        #: When a list, cache misses are appended here (for :func:`write_batch`) instead of being asked,
        #: and answered with a ``pending`` Generation.
        self.collect: list[ChatRequest] | None = None

    # -- identity ------------------------------------------------------------
    @property
    def sent(self) -> list[int]:
        """Requests sent to each server (``base_url`` first, then the ``replicas``)."""
        return self._servers.sent

    @property
    def response_form(self) -> Form | None:
        """The structured-output form the server took (``None`` until the first chat request is answered)."""
        return self._forms.taken

    def public(self) -> dict[str, Any]:
        """What provenance records: :meth:`LLMConfig.public` and ``response_form``, the structured-output
        form the server took (``None`` when no chat request was sent, e.g. all answers were cached)."""
        return {**self.config.public(), "response_form": self._forms.taken}

    def request_key(self, req: ChatRequest) -> str:
        """The cache key of ``req``'s answer in the form in use (:func:`._request.request_key`)."""
        return _request.request_key(self.config, req, form=self._forms.in_use, code_version=self.code_version)

    @staticmethod
    def endpoint(req: ChatRequest) -> str:
        return _request.endpoint(req)

    def body(self, req: ChatRequest, *, seed_offset: int = 0, form: Form | None = None) -> dict[str, Any]:
        """The JSON body of ``POST /chat/completions`` (or ``/completions``) for ``req``, its
        ``response_format`` in ``form`` (default: the form in use, else the first to try).

        For a reasoning model (:attr:`LLMConfig.is_reasoning`) on chat completions: ``max_tokens``
        becomes ``max_completion_tokens`` (which also bounds the hidden reasoning tokens, so it is
        raised to at least ``REASONING_MIN_TOKENS``), ``temperature`` and ``top_p`` are dropped (those
        models refuse any value but the default), and ``reasoning_effort`` is sent when configured."""
        return _request.request_body(self.config, req, form=form or self._forms.in_use, seed_offset=seed_offset)

    # -- HTTP ------------------------------------------------------------------
    def close(self) -> None:
        """Close the pooled connections (the client stays usable: they reopen on demand)."""
        self._servers.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ask(self, req: ChatRequest, seed_offset: int) -> Any:
        """The server's answer to ``req`` in the form in use (``None``: it waited for the form to be
        settled; look in the cache again, then ask again)."""
        def send(form: Form) -> Any:
            return self._servers.post_or_refuse(self.body(req, seed_offset=seed_offset, form=form), self.endpoint(req))

        return self._forms.ask(req, send)

    # -- one request ---------------------------------------------------------
    def validate(self, req: ChatRequest, text: str) -> Any:
        """Parse and validate ``text`` against ``req.schema`` (raises ValueError on failure)."""
        return validate(req, text)

    def _rekey(self, req: ChatRequest, key: str) -> tuple[str, Generation | None]:
        """``req``'s key in the form in use, and its cached answer when that key is not ``key``."""
        now = self.request_key(req)
        if now == key:
            return key, None
        hit = cached_answer(self.cache, req, now)
        if hit is not None:
            self.usage.add(cache_hits=1)
        return now, hit

    def generate(self, req: ChatRequest) -> Generation:
        """Answer ``req`` (from the cache when possible). Never raises for server or answer errors, except
        :class:`~bakeoff.truth.llm.structured.RequestRefused` when the server refuses the request itself."""
        key = self.request_key(req)
        self.usage.add(requests=1)
        hit = cached_answer(self.cache, req, key)
        if hit is not None:
            self.usage.add(cache_hits=1)
            return hit
        if self.collect is not None:
            self.collect.append(req)
            return Generation(value=None, error="queued for a batch file", key=key, pending=True)
        return self._answer(req, key)

    def _answer(self, req: ChatRequest, key: str) -> Generation:
        """Ask the server for ``req`` (not in the cache under ``key``), re-asking an invalid answer with another
        seed up to ``schema_retries`` times; the valid answer is cached."""
        price = self.config.resolved_price()
        pt_total = ct_total = 0
        last_error = "no attempt"
        raw: str | None = None
        for attempt in range(self.config.schema_retries + 1):
            if attempt:
                self.usage.add(schema_retries=1)
            try:
                resp = self._ask(req, attempt * 1_000_003)
                while resp is None:  # waited for the form: the answer may be cached under its key
                    key, hit = self._rekey(req, key)
                    if hit is not None:
                        return hit
                    resp = self._ask(req, attempt * 1_000_003)
            except HttpError as exc:
                last_error = exc.detail
                break  # transport retries already exhausted
            pt, ct = charge(self.usage, resp, price)
            pt_total += pt
            ct_total += ct
            key, hit = self._rekey(req, key)  # this request settled a form with another key: a cached answer wins
            if hit is not None:
                return hit
            if not isinstance(resp, dict):
                last_error = "malformed completion (not a JSON object)"
                continue
            try:
                raw = answer_text(req, resp)
            except (KeyError, IndexError, TypeError):
                last_error = "malformed completion (no choices[0] text)"
                continue
            try:
                value = validate(req, raw)
            except ValueError as exc:
                last_error = str(exc)
                continue
            store_answer(self.cache, key, raw=raw, model=self.config.identity, prompt_tokens=pt,
                         completion_tokens=ct, source="chat")
            return Generation(value=value, raw=raw, prompt_tokens=pt_total, completion_tokens=ct_total,
                              attempts=attempt + 1, key=key)
        self.usage.add(failures=1)
        log.debug("llm: request %s failed: %s", key[:12], last_error)
        return Generation(value=None, raw=raw, error=last_error, prompt_tokens=pt_total,
                          completion_tokens=ct_total, attempts=self.config.schema_retries + 1, key=key)

    def generate_many(self, reqs: Sequence[ChatRequest], *, progress: bool = True, desc: str = "llm") -> list[Generation]:
        """Answer ``reqs`` with at most ``concurrency`` requests in flight; results in input order."""
        return self._many(self.generate, reqs, progress=progress, desc=desc)

    def next_token_logprobs(self, req: ChatRequest, *, top: int = 20) -> Generation:
        """The ``top`` most likely first tokens of the answer to ``req`` and their log-probabilities.

        One request with ``max_tokens=1`` and ``logprobs`` (chat: ``logprobs=true, top_logprobs=top``;
        completion: ``logprobs=top``) and no response format: ``value`` is ``{token: logprob}`` as the
        server reports it (llama.cpp: the model's distribution before any sampling rule). Cached like
        answers, under their own key; a server without logprobs gives a failed Generation.
        """
        body = _request.logprobs_body(self.config, req, top=top)
        key = _request.logprobs_key(self.config, body, code_version=self.code_version)
        self.usage.add(requests=1)
        hit = cached_logprobs(self.cache, key)
        if hit is not None:
            self.usage.add(cache_hits=1)
            return hit
        try:
            resp = self._servers.post(body, self.endpoint(req))
        except HttpError as exc:
            self.usage.add(failures=1)
            return Generation(value=None, error=exc.detail, attempts=1, key=key)
        pt, ct = charge(self.usage, resp, self.config.resolved_price())
        try:
            logprobs = first_token_logprobs(resp)
            raw = answer_text(req, resp)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            self.usage.add(failures=1)
            return Generation(value=None, error="no logprobs in the answer (the server may not support them)",
                              attempts=1, key=key)
        store_logprobs(self.cache, key, logprobs=logprobs, raw=raw, model=self.config.identity, prompt_tokens=pt)
        return Generation(value=logprobs, raw=raw, prompt_tokens=pt, completion_tokens=ct, attempts=1, key=key)

    def logprobs_many(self, reqs: Sequence[ChatRequest], *, top: int = 20, progress: bool = True,
                      desc: str = "llm") -> list[Generation]:
        """:meth:`next_token_logprobs` for each request, ``concurrency`` in flight; results in input order."""
        return self._many(lambda r: self.next_token_logprobs(r, top=top), reqs, progress=progress, desc=desc)

    def _many(self, fn: Callable[[ChatRequest], Generation], reqs: Sequence[ChatRequest], *, progress: bool,
              desc: str) -> list[Generation]:
        from ...progress import progress_bar

        bar = TokenRate(progress_bar(total=len(reqs), desc=desc, enabled=progress, unit="req"), self.usage)
        out = map_in_flight(fn, reqs, concurrency=self.config.concurrency, done=bar.update)
        bar.close()
        return out


# -- batch files ----------------------------------------------------------------

def write_batch(client: LLMClient, reqs: Sequence[ChatRequest], path: str | os.PathLike[str]) -> int:
    """Write the uncached requests of ``reqs`` as an OpenAI batch JSONL file; returns how many.

    Each line: ``{"custom_id": <cache key>, "method": "POST", "url": "/v1/chat/completions", "body": ...}``.
    """
    seen: set[str] = set()
    n = 0
    with atomic_open(path, "w") as fh:
        for req in reqs:
            key = client.request_key(req)
            if key in seen or cached_answer(client.cache, req, key) is not None:
                continue
            seen.add(key)
            line = {"custom_id": key, "method": "POST", "url": "/v1/" + client.endpoint(req), "body": client.body(req)}
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            n += 1
    return n


def ingest_batch(client: LLMClient, reqs: Sequence[ChatRequest], path: str | os.PathLike[str]) -> dict[str, int]:
    """Validate an OpenAI batch *results* JSONL and cache each valid answer under its request.

    Result lines look like ``{"custom_id": ..., "response": {"status_code": 200, "body": <chat
    completion>}, "error": null}``. Returns counts ``ingested``, ``invalid`` (failed schema or
    non-200), ``unknown`` (custom_id not among ``reqs``). Costs are added with ``batch_discount``.
    """
    by_key = {client.request_key(r): r for r in reqs}
    price = client.config.resolved_price()
    counts = {"ingested": 0, "invalid": 0, "unknown": 0}
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read batch results: {exc.strerror}", path=p) from None
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON ({exc.msg})", path=p, line=lineno) from None
        if not isinstance(rec, dict) or "custom_id" not in rec:
            raise InputError("missing field", path=p, line=lineno, field="custom_id")
        req = by_key.get(rec["custom_id"])
        if req is None:
            counts["unknown"] += 1
            continue
        resp = rec.get("response") or {}
        body = resp.get("body") or {}
        if resp.get("status_code") != 200 or rec.get("error"):
            counts["invalid"] += 1
            continue
        try:
            raw = answer_text(req, body)
            validate(req, raw)
        except (KeyError, IndexError, TypeError, ValueError):
            counts["invalid"] += 1
            continue
        pt, ct = charge(client.usage, body, price, discount=client.config.batch_discount)
        store_answer(client.cache, rec["custom_id"], raw=raw, model=client.config.identity, prompt_tokens=pt,
                     completion_tokens=ct, source="batch")
        counts["ingested"] += 1
    return counts
