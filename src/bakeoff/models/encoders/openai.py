"""Client for OpenAI-compatible ``POST {base_url}/embeddings`` endpoints.

Speaks the OpenAI wire format, which OpenAI, ollama (``/v1``), vLLM and the
llama.cpp server share: request ``{"model", "input": [..], "encoding_format":
"float"[, "dimensions"]}``; response ``{"data": [{"index", "embedding"}],
"usage": {"prompt_tokens", "total_tokens"}}``. HTTP goes through
:class:`bakeoff.net.HttpClient` (httpx + tenacity).

- **Secret**: the API key is read at request time from the environment
  variable whose *name* is ``api_key_env`` and sent as ``Authorization:
  Bearer``; it is never stored on the object, in :meth:`identity`, in
  errors, logs, caches or results.
- **Batching**: ``batch_size`` inputs per request, in descending length order.
- **Retries**: the policy of :mod:`bakeoff.net` (429, 408, 425, 500, 502,
  503, 504, timeouts, connection errors and non-JSON bodies are retried up to
  ``max_retries`` times, waiting ``min(backoff_max, backoff * 2**attempt)``
  seconds or the server's ``Retry-After``, capped the same way); other 4xx
  fail at once. A server's error text is quoted with the key scrubbed.
- **Cost**: ``usage.total_tokens`` (else ``prompt_tokens``) accumulates in
  :attr:`tokens_used`; with ``price_per_1k_tokens`` the dense arm records
  ``tokens / 1000 * price`` in US dollars.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import ConfigError
from ...net import HttpClient, HttpError
from .base import PrefixedEncoder, TextKind, encode_in_length_order, l2_normalise

__all__ = ["EmbeddingAPIError", "OpenAIEncoder"]


class EmbeddingAPIError(HttpError):
    """The embeddings endpoint failed (after retries, or with a non-retryable status), or answered
    something that is not an embeddings response."""


class OpenAIEncoder(PrefixedEncoder):
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
        self._set_prefixes(prefix_query, prefix_doc)
        self.dimensions = None if dimensions is None else int(dimensions)
        self.max_retries = int(max_retries)
        self.price_per_1k_tokens = None if price_per_1k_tokens is None else float(price_per_1k_tokens)
        self.tokens_used = 0
        self._http = HttpClient(base_url=self.base_url, auth_env=self.api_key_env, timeout=float(timeout),
                                retries=self.max_retries, backoff=float(backoff), backoff_max=float(backoff_max),
                                sleep=sleep)

    @property
    def requests(self) -> int:
        """HTTP requests made (retries included)."""
        return self._http.n_requests

    @property
    def retries(self) -> int:
        """Retries taken after a retryable failure."""
        return self._http.n_retries

    def identity(self, *, kind: TextKind | None = None) -> dict[str, Any]:
        ident: dict[str, Any] = {"encoder": "openai-compatible", "base_url": self.base_url, "model": self.model,
                                 "dimensions": self.dimensions, "normalize": True, "code_version": self.code_version}
        return self.with_prefixes(ident, kind)

    # HTTP -------------------------------------------------------------------
    def _post(self, payload: dict[str, Any]) -> Any:
        try:
            return self._http.post_json("embeddings", payload)
        except HttpError as exc:
            raise EmbeddingAPIError(str(exc), url=exc.url, status=exc.status, reason=exc.reason,
                                    attempts=exc.attempts) from None

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        payload: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions is not None:
            payload["dimensions"] = self.dimensions
        obj = self._post(payload)
        problem = _shape_problem(obj)
        if problem:
            raise EmbeddingAPIError(f"{self.base_url}/embeddings: malformed response: {problem}")
        try:
            data = sorted(obj["data"], key=lambda d: int(d.get("index", 0)))
            vecs = np.asarray([d["embedding"] for d in data], dtype=np.float32)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            # the server's text may quote anything (even the key): scrubbed, then cut
            raise EmbeddingAPIError(f"{self.base_url}/embeddings: malformed response "
                                    f"({self._http.excerpt(f'{type(exc).__name__}: {exc}', limit=120)})") from None
        if vecs.ndim != 2 or vecs.shape[0] != len(texts):
            raise EmbeddingAPIError(
                f"{self.base_url}/embeddings: expected {len(texts)} embeddings, got {vecs.shape[0] if vecs.ndim else 0}")
        usage = obj.get("usage") or {}
        self.tokens_used += int(usage.get("total_tokens") or usage.get("prompt_tokens") or 0)
        return l2_normalise(vecs)

    def encode(self, texts: Sequence[str], *, kind: TextKind, batch_size: int = 32) -> np.ndarray:
        prefixed = self.prefixed(texts, kind)
        return encode_in_length_order(prefixed, batch_size, self._embed_batch, empty_dim=self.dimensions or 0)


def _shape_problem(obj: Any) -> str | None:
    """What is wrong with the shape of an embeddings answer (``None`` when it is
    ``{"data": [{"index"?, "embedding": [...]}, ...]}``); names types only, never the server's text."""
    if not isinstance(obj, dict):
        return f"the answer is a JSON {type(obj).__name__}, expected an object with 'data'"
    if "data" not in obj:
        return "no 'data' field"
    data = obj["data"]
    if not isinstance(data, list):
        return f"'data' is a {type(data).__name__}, expected a list of {{index, embedding}}"
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
            return f"data[{i}] has no 'embedding' list"
    return None
