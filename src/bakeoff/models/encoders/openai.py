"""Client for OpenAI-compatible ``POST {base_url}/embeddings`` endpoints.

Speaks the OpenAI wire format, which OpenAI, ollama (``/v1``), vLLM and the
llama.cpp server share: request ``{"model", "input": [..], "encoding_format":
"float"[, "dimensions"]}``; response ``{"data": [{"index", "embedding"}],
"usage": {"prompt_tokens", "total_tokens"}}``. Uses only the standard library.

- **Secret**: the API key is read at request time from the environment
  variable whose *name* is ``api_key_env`` and sent as ``Authorization:
  Bearer``; it is never stored on the object, in :meth:`identity`, in
  errors, logs, caches or results.
- **Batching**: ``batch_size`` inputs per request, in descending length order.
- **Retries**: HTTP 429, 5xx, timeouts and connection errors are retried up
  to ``max_retries`` times, waiting ``min(backoff_max, backoff * 2**attempt)``
  seconds (or the server's ``Retry-After`` when given, capped the same way);
  other 4xx fail at once.
- **Cost**: ``usage.total_tokens`` (else ``prompt_tokens``) accumulates in
  :attr:`tokens_used`; with ``price_per_1k_tokens`` the dense arm records
  ``tokens / 1000 * price`` in US dollars.
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import BakeoffError, ConfigError
from .base import TextKind, apply_prefix, l2_normalise, length_order

__all__ = ["EmbeddingAPIError", "OpenAIEncoder"]

_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class EmbeddingAPIError(BakeoffError):
    """The embeddings endpoint failed (after retries, or with a non-retryable status)."""


class OpenAIEncoder:
    """Embeddings from an OpenAI-compatible HTTP endpoint (see module docstring)."""
    code_version = "1"  # bump when this encoder's vectors change (part of identity(), so of cache keys)

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str | None = None,
        prefix_query: str = "",
        prefix_doc: str = "",
        dimensions: int | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        backoff_max: float = 30.0,
        price_per_1k_tokens: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model:
            raise ConfigError("openai dense model: give model=openai:<model name>")
        if not str(base_url).startswith(("http://", "https://")):
            raise ConfigError(f"dense base_url must start with http:// or https://, got {base_url!r}")
        if "@" in str(base_url).split("//", 1)[1].split("/", 1)[0]:
            raise ConfigError("dense base_url must not carry credentials; use api_key_env=")
        self.model = str(model)
        self.base_url = str(base_url).rstrip("/")
        self.api_key_env = api_key_env or None
        self.prefix_query, self.prefix_doc = prefix_query or "", prefix_doc or ""
        self.dimensions = None if dimensions is None else int(dimensions)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff, self.backoff_max = float(backoff), float(backoff_max)
        self.price_per_1k_tokens = None if price_per_1k_tokens is None else float(price_per_1k_tokens)
        self.tokens_used = 0
        self.requests = 0
        self.retries = 0
        self._sleep = sleep

    def identity(self, *, kind: TextKind | None = None) -> dict[str, Any]:
        ident: dict[str, Any] = {"encoder": "openai-compatible", "base_url": self.base_url, "model": self.model,
                                 "dimensions": self.dimensions, "normalize": True, "code_version": self.code_version}
        if kind in (None, "query"):
            ident["prefix_query"] = self.prefix_query
        if kind in (None, "doc"):
            ident["prefix_doc"] = self.prefix_doc
        return ident

    # HTTP -------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ConfigError(f"environment variable {self.api_key_env} (api_key_env) is not set")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(self.backoff_max, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return min(self.backoff_max, self.backoff * (2.0**attempt))

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(payload).encode("utf-8")
        url = f"{self.base_url}/embeddings"
        last = ""
        for attempt in range(self.max_retries + 1):
            req = urllib.request.Request(url, data=body, headers=self._headers(), method="POST")
            retry_after = None
            self.requests += 1
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return json.loads(resp.read().decode("utf-8"))
            except urllib.error.HTTPError as exc:
                detail = self._scrub(_error_message(exc))
                if exc.code not in _RETRY_STATUS and exc.code < 500:
                    raise EmbeddingAPIError(f"{url}: HTTP {exc.code}: {detail}") from None
                last, retry_after = f"HTTP {exc.code}: {detail}", exc.headers.get("Retry-After")
            except TimeoutError:
                last = f"timed out after {self.timeout:g} s"
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                    last = f"timed out after {self.timeout:g} s"
                else:
                    last = f"connection failed: {exc.reason}"
            except (ConnectionError, json.JSONDecodeError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            if attempt < self.max_retries:
                self.retries += 1
                self._sleep(self._delay(attempt, retry_after))
        raise EmbeddingAPIError(f"{url}: gave up after {self.max_retries + 1} attempts; last error: {last}")

    def _scrub(self, text: str) -> str:
        """``text`` with the API key (should a server echo it) replaced by ``***``."""
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return text.replace(key, "***") if key else text

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        payload: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions is not None:
            payload["dimensions"] = self.dimensions
        obj = self._post(payload)
        try:
            data = sorted(obj["data"], key=lambda d: int(d.get("index", 0)))
            vecs = np.asarray([d["embedding"] for d in data], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingAPIError(f"{self.base_url}/embeddings: malformed response ({exc})") from None
        if vecs.ndim != 2 or vecs.shape[0] != len(texts):
            raise EmbeddingAPIError(
                f"{self.base_url}/embeddings: expected {len(texts)} embeddings, got {vecs.shape[0] if vecs.ndim else 0}")
        usage = obj.get("usage") or {}
        self.tokens_used += int(usage.get("total_tokens") or usage.get("prompt_tokens") or 0)
        return l2_normalise(vecs)

    def encode(self, texts: Sequence[str], *, kind: TextKind, batch_size: int = 32) -> np.ndarray:
        if kind not in ("query", "doc"):
            raise ValueError(f"kind must be 'query' or 'doc', got {kind!r}")
        prefixed = apply_prefix(texts, self.prefix_query if kind == "query" else self.prefix_doc)
        order = length_order(prefixed)
        out: np.ndarray | None = None
        for s in range(0, len(order), batch_size):
            rows = order[s : s + batch_size]
            vecs = self._embed_batch([prefixed[i] for i in rows])
            if out is None:
                out = np.zeros((len(prefixed), vecs.shape[1]), dtype=np.float32)
            out[rows] = vecs
        return out if out is not None else np.zeros((0, self.dimensions or 0), dtype=np.float32)


def _error_message(exc: urllib.error.HTTPError) -> str:
    """The server's error message (OpenAI ``{"error": {"message"}}``), one line, at most 200 chars."""
    try:
        raw = exc.read().decode("utf-8", "replace")
    except Exception:
        raw = ""
    try:
        obj = json.loads(raw)
        err = obj.get("error")
        msg = err.get("message") if isinstance(err, dict) else err
        raw = str(msg or raw)
    except (ValueError, AttributeError):
        pass
    return " ".join(raw.split())[:200] or str(exc.reason)
