"""One JSON GET through the shared client, with its headers and conditional revalidation.

:func:`fetch_json` composes :class:`bakeoff.net.HttpClient` (retries, backoff
honouring ``Retry-After``, rate spacing, User-Agent, key scrubbing); it adds
what the ingest needs on top:

* the **response headers** with the decoded body (``Link`` pagination, ``ETag``);
* **conditional requests**: given a stored response, it sends ``If-None-Match``
  (its ``ETag``) and ``If-Modified-Since`` (its ``Last-Modified``); a ``304``
  returns the stored body (``outcome == "not_modified"``);
* a body that is not JSON (a truncated body, an HTML error page) is fetched
  again through :meth:`HttpClient.request_json`, whose retry policy retries
  non-JSON bodies; when that also fails the error is one line saying what the
  server answered instead of JSON. (The headers of the first, unparseable
  answer are kept; its validators are not, so the next revalidation is a full
  fetch.)

``HttpClient.request_json`` returning the response headers beside the body
would make the second request unnecessary; see the ingest report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..net import HttpClient, HttpError, excerpt
from .state import Stored

__all__ = ["Fetched", "NotJson", "fetch_json"]

_ACCEPT = {"Accept": "application/json"}


class NotJson(InputError):
    """The server kept answering something other than JSON (e.g. an HTML page)."""


@dataclass(frozen=True)
class Fetched:
    """A decoded JSON answer: ``raw`` bytes to store, ``headers`` (lower-case keys),
    ``outcome`` ``fetched`` or ``not_modified``; ``etag``/``last_modified`` to store."""

    url: str
    body: Any
    raw: bytes
    headers: Mapping[str, str]
    outcome: str
    etag: str | None
    last_modified: str | None
    content_type: str | None


def fetch_json(client: HttpClient, url: str, *, stored: Stored | None = None) -> Fetched:
    """GET ``url`` and decode its JSON body (see module docstring). Raises
    :class:`~bakeoff.net.HttpError` after retries, :class:`NotJson` for non-JSON answers."""
    headers = dict(_ACCEPT)
    if stored is not None:
        if stored.etag:
            headers["If-None-Match"] = stored.etag
        if stored.last_modified:
            headers["If-Modified-Since"] = stored.last_modified
    resp = client.request("GET", url, headers=headers)
    hdrs = {k.lower(): v for k, v in resp.headers.items()}
    if resp.status_code == 304 and stored is not None:
        return Fetched(url, json.loads(stored.body), stored.body, hdrs, "not_modified", stored.etag,
                       stored.last_modified, stored.content_type)
    raw = resp.content
    ctype = hdrs.get("content-type")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        first = excerpt(resp.text, limit=80)
        try:
            body = client.request_json("GET", url, headers=dict(_ACCEPT))
        except HttpError as exc:
            if "not JSON" not in str(exc):
                raise
            raise NotJson(f"expected JSON, the server answered {ctype or 'no content-type'} "
                          f"({client.retries + 2} tries): {first!r}", path=url) from None
        raw = json.dumps(body, ensure_ascii=False, sort_keys=True).encode("utf-8")
        return Fetched(url, body, raw, hdrs, "fetched", None, None, ctype)
    return Fetched(url, body, raw, hdrs, "fetched", hdrs.get("etag"), hdrs.get("last-modified"), ctype)
