"""The ``http`` arm: a retriever behind an HTTP service.

For each query bakeoff sends ``METHOD url`` with the body template filled in,
reads the response as JSON and picks the ranked doc ids (and optional scores)
with a :mod:`~bakeoff.arms.external.jsonpath` selector::

    --arm 'svc=http:url=http://127.0.0.1:8080/search,ids=$.hits[*].id,scores=$.hits[*].score'

**Body template**: the placeholders ``{query}``, ``{qid}`` (JSON strings,
quotes included) and ``{k}`` (an integer) are replaced textually; the default
is ``{"query": {query}, "k": {k}}``. Other braces are left alone, so a JSON
template needs no escaping. The same placeholders in the URL are replaced
URL-encoded (for ``method=GET``, which sends no body:
``url=http://h/search?q={query}&n={k}``).

**Retries**: requests go through :class:`bakeoff.net.HttpClient`, so a
connection error, a timeout, a body that is not JSON, HTTP 429, 408, 425, 500,
502, 503 or 504 is retried up to ``retries`` more times, waiting
``min(30, backoff * 2**attempt)`` seconds (or the service's ``Retry-After``);
other 4xx statuses fail at once. When a query still fails the arm raises
:class:`~bakeoff.arms.external.ExternalError` naming the query, the last error
and the number of attempts; no run is cached. ``concurrency`` requests are in
flight at once (one pooled client per search).

Header values and URL query values whose names look secret (``Authorization``,
``api_key``, ``token`` ...) are sent but appear as ``***`` in the arm's
configuration, hence never in caches, logs or results. Hits are ordered by the
package tie rule (scores re-ranked; without scores the service's order is kept).
Masked documents (as-of search) are dropped from a query's hits after retrieval.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any
from urllib.parse import quote

from ...data.model import Corpus, Queries, Run
from ...errors import ConfigError
from ...net import HttpClient, HttpError
from ...progress import progress_bar
from ...validation import NonNegative, NonNegativeInt, Positive, PositiveInt
from ..base import Arm, ArmContext, DocMask, register_arm
from ._common import ExternalError, apply_mask, is_secret_name, ranked_from_hits, redact_url
from .jsonpath import SelectorError, parse_selector, select

__all__ = ["HttpArm", "fill_template"]

DEFAULT_BODY = '{"query": {query}, "k": {k}}'


def fill_template(template: str, *, query: str, qid: str, k: int) -> str:
    """Replace ``{query}``/``{qid}`` with JSON strings and ``{k}`` with an integer."""
    return (template.replace("{query}", json.dumps(query, ensure_ascii=False))
            .replace("{qid}", json.dumps(qid, ensure_ascii=False))
            .replace("{k}", str(int(k))))


@register_arm("http", code_version="1")
class HttpArm(Arm):
    """POST (or ``method``) each query to ``url``; read ids/scores with JSONPath-like selectors."""

    def __init__(
        self,
        *,
        name: str | None = None,
        url: str,
        body: str = DEFAULT_BODY,
        ids: str = "$.hits[*].id",
        scores: str | None = None,
        method: str = "POST",
        headers: Mapping[str, str] | None = None,
        content_type: str = "application/json",
        concurrency: PositiveInt = 4,
        retries: NonNegativeInt = 3,
        backoff: NonNegative = 0.5,
        timeout: Positive = 30.0,
        version: str | None = None,
    ) -> None:
        super().__init__(name=name)
        if not str(url).startswith(("http://", "https://")):
            raise ConfigError(f"http arm {self.name!r}: url must start with http:// or https://")
        for sel in (ids, scores):
            if sel is not None:
                try:
                    parse_selector(sel)
                except SelectorError as exc:
                    raise ConfigError(f"http arm {self.name!r}: {exc}") from None
        if int(concurrency) < 1 or int(retries) < 0 or float(timeout) <= 0 or float(backoff) < 0:
            raise ConfigError(f"http arm {self.name!r}: need concurrency >= 1, retries >= 0, timeout > 0, backoff >= 0")
        self.url, self.body, self.ids, self.scores = str(url), str(body), str(ids), scores
        self.name = self.name.replace(self.url, redact_url(self.url))  # default name = --arm text
        self.method = str(method).upper()
        self.headers = {str(k): str(v) for k, v in (headers or {}).items()}
        self.content_type = content_type
        self.concurrency, self.retries = int(concurrency), int(retries)
        self.backoff, self.timeout = float(backoff), float(timeout)
        self.version = None if version is None else str(version)
        self._corpus: Corpus | None = None

    def config(self) -> dict[str, Any]:
        # Retry/concurrency/timeouts do not change a successful response, so they stay out of the identity.
        return {"url": redact_url(self.url), "method": self.method, "body": self.body, "ids": self.ids,
                "scores": self.scores, "content_type": self.content_type, "version": self.version,
                "headers": {k: ("***" if is_secret_name(k) else v) for k, v in sorted(self.headers.items())}}

    def index(self, corpus: Corpus, *, ctx: ArmContext) -> None:
        self._corpus = corpus  # the service holds its own index

    # one request ------------------------------------------------------------
    def _client(self) -> HttpClient:
        return HttpClient(headers=self.headers, timeout=self.timeout, retries=self.retries, backoff=self.backoff)

    def _one(self, http: HttpClient, query: str, qid: str, k: int) -> tuple[tuple[str, float], ...]:
        url = (self.url.replace("{query}", quote(query, safe="")).replace("{qid}", quote(qid, safe=""))
               .replace("{k}", str(int(k))))
        body = fill_template(self.body, query=query, qid=qid, k=k).encode("utf-8")
        try:
            doc = http.request_json(self.method, url, content=body if self.method != "GET" else None,
                                    headers={"Content-Type": self.content_type, "Accept": "application/json"})
        except HttpError as exc:
            raise ExternalError(f"http arm {self.name!r}: query {qid!r}: {exc.detail} "
                                f"({self.method} {redact_url(self.url)})") from None
        try:
            ids = select(self.ids, doc)
            scores = None if self.scores is None else select(self.scores, doc)
        except SelectorError as exc:
            raise ExternalError(f"http arm {self.name!r}: query {qid!r}: response has {exc}") from None
        if scores is not None and len(scores) != len(ids):
            raise ExternalError(f"http arm {self.name!r}: query {qid!r}: {len(ids)} ids but {len(scores)} scores")
        bad = [d for d in ids if not isinstance(d, (str, int)) or isinstance(d, bool)]
        if bad:
            raise ExternalError(f"http arm {self.name!r}: query {qid!r}: doc id {bad[0]!r} is not a string")
        if scores is not None:
            for s in scores:
                if not isinstance(s, (int, float)) or isinstance(s, bool):
                    raise ExternalError(f"http arm {self.name!r}: query {qid!r}: score {s!r} is not a number")
        return ranked_from_hits(ids, scores, len(ids))

    def search(self, queries: Queries, *, k: int, ctx: ArmContext, mask: DocMask | None = None) -> Run:
        if self._corpus is None:
            raise RuntimeError("index() must run before search()")
        out: dict[str, tuple[tuple[str, float], ...]] = {}
        bar = progress_bar(total=len(queries), desc=f"search {self.name}", enabled=ctx.progress)
        with self._client() as http, ThreadPoolExecutor(max_workers=self.concurrency,
                                                        thread_name_prefix=f"http-{self.name}") as pool:
            futures = {pool.submit(self._one, http, text, qid, k): qid for qid, text in zip(queries.ids, queries.texts)}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for fut in done:
                    exc = fut.exception()
                    if exc is not None:
                        for p in pending:
                            p.cancel()
                        bar.close()
                        raise exc
                    qid = futures[fut]
                    m = None if mask is None else mask.get(qid)
                    out[qid] = apply_mask(fut.result(), self._corpus, m)[:k]
                    bar.update(1)
        bar.close()
        return Run.from_ranked(self.name, {q: out[q] for q in queries.ids})
