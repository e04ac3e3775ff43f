"""How the LLM client's requests reach the servers: one :class:`~bakeoff.net.HttpClient` per server
(``base_url`` and its replicas, retried as :mod:`bakeoff.net` says), each request to the least busy one, and
many requests in flight at once (:func:`map_in_flight`).

Accounting: each HTTP call adds ``http_calls`` to the client's :class:`~bakeoff.truth.llm.client.Usage`,
each transport retry ``transport_retries``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from ...net import HttpClient, HttpError
from .structured import RequestRefused, is_refusal, refusal

if TYPE_CHECKING:  # pragma: no cover
    from .client import LLMConfig, Usage

log = logging.getLogger("bakeoff")

T = TypeVar("T")
R = TypeVar("R")


class ServerPool:
    """The servers of one client: ``base_url`` first, then the ``replicas`` (identical servers)."""

    def __init__(self, config: LLMConfig, *, usage: Usage, sleep: Callable[[float], None]) -> None:
        self.usage = usage
        self._servers = [HttpClient(base_url=u, auth_env=config.api_key_env, timeout=config.timeout_s,
                                    retries=config.max_retries, backoff=config.backoff_s,
                                    backoff_max=config.backoff_max_s, sleep=sleep, on_request=self._on_request,
                                    on_retry=self._on_retry, no_retry=is_refusal)
                         for u in (config.base_url, *config.replicas)]
        self._in_flight = [0] * len(self._servers)
        #: Requests sent to each server (``base_url`` first, then the ``replicas``).
        self.sent = [0] * len(self._servers)
        self._pick = threading.Lock()

    def _on_request(self) -> None:
        self.usage.add(http_calls=1)

    def _on_retry(self, reason: str, delay: float) -> None:
        self.usage.add(transport_retries=1)
        log.debug("llm: %s, retrying in %.2fs", reason, delay)

    def close(self) -> None:
        """Close the pooled connections (they reopen on demand)."""
        for http in self._servers:
            http.close()

    def post(self, body: Mapping[str, Any], endpoint: str = "chat/completions") -> Any:
        """POST ``body`` as JSON to the least busy server (the first on a tie);
        :class:`~bakeoff.net.HttpError` when it fails."""
        with self._pick:
            k = min(range(len(self._servers)), key=self._in_flight.__getitem__)
            self._in_flight[k] += 1
            self.sent[k] += 1
        try:
            return self._servers[k].post_json(endpoint, body)
        finally:
            with self._pick:
                self._in_flight[k] -= 1

    def post_or_refuse(self, body: Mapping[str, Any], endpoint: str) -> Any:
        """:meth:`post`, with a refusal of the request itself raised as
        :class:`~bakeoff.truth.llm.structured.RequestRefused`."""
        try:
            return self.post(body, endpoint)
        except HttpError as exc:
            refused = refusal(exc.status, exc.body)
            if refused is None or exc.status is None:
                raise
            raise RequestRefused(exc.url, exc.status, refused) from None


def map_in_flight(fn: Callable[[T], R], items: Sequence[T], *, concurrency: int,
                  done: Callable[[int], None]) -> list[R]:
    """``[fn(x) for x in items]`` with at most ``concurrency`` calls at once, results in input order;
    ``done(1)`` after each call. An error or an interrupt drops the queued calls and does not wait for those
    in flight."""
    out: list[R | None] = [None] * len(items)

    def one(i: int) -> None:
        out[i] = fn(items[i])
        done(1)

    if concurrency == 1 or len(items) <= 1:
        for i in range(len(items)):
            one(i)
    else:
        pool = ThreadPoolExecutor(max_workers=concurrency)
        try:
            list(pool.map(one, range(len(items))))
        except BaseException:
            # an error, an interrupt or SIGTERM: drop the queued requests and do not wait for those in
            # flight, so the caller's clean-up (staging folders, local servers) runs now
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    return [g for g in out if g is not None]
