"""Opening the LLM that ``--llm`` names: a client, and for ``local`` the ``llama-server`` it talks to."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ...cache import Cache
from ...errors import ConfigError
from .client import LLMClient
from .spec import LLMSpec

__all__ = ["open_llm"]


@contextlib.contextmanager
def open_llm(spec: LLMSpec | str, *, cache: Cache | None, concurrency: int | None = None,
             price: str | None = None, reasoning_effort: str | None = None) -> Iterator[LLMClient]:
    """An :class:`~bakeoff.truth.llm.client.LLMClient` for ``--llm`` (:class:`~bakeoff.truth.llm.spec.LLMSpec`; a local
    spec starts and stops ``llama-server`` with its model, :meth:`~bakeoff.truth.llm.spec.LLMSpec.local_model`).
    ``price`` is ``"PROMPT_USD_PER_1M,COMPLETION_USD_PER_1M"`` (overrides the price table).
    ``concurrency`` is the number of requests in flight; for ``local``, ``N`` starts ``min(N,``
    :func:`~bakeoff.truth.llm.local_server.default_servers` ``())`` servers of ``N // servers`` slots each (default
    :func:`~bakeoff.truth.llm.local_server.default_servers` servers of :func:`~bakeoff.truth.llm.local_server.default_slots`).
    """
    from .client import Price

    spec = LLMSpec.of(spec)
    overrides: dict[str, Any] = {}
    if price:
        try:
            p, c = (float(x) for x in price.split(","))
        except ValueError:
            raise ConfigError(f"--price must be PROMPT_USD_PER_1M,COMPLETION_USD_PER_1M, got {price!r}") from None
        overrides["price"] = Price(p, c)
    if concurrency is not None:
        if concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1, got {concurrency}")
        overrides["concurrency"] = concurrency
    if reasoning_effort:
        if reasoning_effort not in ("minimal", "low", "medium", "high"):
            raise ConfigError(f"--reasoning-effort must be minimal, low, medium or high, got {reasoning_effort!r}")
        overrides["reasoning_effort"] = reasoning_effort
    if spec.is_local:
        from .local_server import LocalLLMServer, default_servers

        model = spec.local_model()

        n = overrides.pop("concurrency", None)
        servers = None if n is None else min(default_servers(), n)
        slots = None if n is None or servers is None else n // servers
        with LocalLLMServer(servers=servers, slots=slots, model=model) as server, \
                LLMClient(server.config(**overrides), cache=cache) as client:
            yield client
    else:
        with LLMClient(spec.config(**overrides), cache=cache) as client:
            yield client
