"""Pagination styles of JSON listing APIs: how to get from one listing page to the next.

A :class:`Pagination` turns the URL of the page just read, its decoded body,
its HTTP headers and the number of items it held into the URL of the next
page, or ``None`` when the listing has ended. Styles:

* ``page``: ``?page=P&per_page=N``, ``P`` from ``start`` (default 1) upward.
  Stops on an **empty page**, and also on a **short page** (fewer than ``N``
  items) unless ``stop_on="empty"`` (for servers that cap ``N`` below what
  was asked).
* ``offset``: ``?offset=O&limit=N``, ``O`` from ``start`` (default 0);
  the next offset is ``O + items received``. Stops as ``page`` does.
* ``cursor``: the JMESPath ``next`` expression picks a value out of the body.
  A value that looks like a URL (has ``://``, or starts with ``/`` or ``?``)
  is followed (resolved against the current URL: a "next link" in the body);
  any other value is a cursor token sent as ``?cursor=VALUE`` (``param``) on
  the first page's URL. Stops when the value is ``null`` or ``""``.
* ``link``: the RFC 8288 ``Link: <URL>; rel="next"`` header (parsed by
  httpx), resolved against the current URL. Stops when there is none.
* ``none``: a single request.

Every style also stops when the next URL was already visited in this pass (a
loop) and, for ``page``/``offset``, when a page repeats the previous page's
item ids exactly (a server ignoring the page parameter); both are reported
as a note. ``max_pages`` caps the walk.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ConfigError
from .mapping import compile_expression

__all__ = ["STYLES", "Pagination"]

STYLES = ("page", "offset", "cursor", "link", "none")
Style = Literal["page", "offset", "cursor", "link", "none"]


def _httpx() -> Any:
    import httpx

    return httpx


@dataclass(frozen=True, kw_only=True)
class Pagination:
    """A pagination style and its parameters (see module docstring).

    ``param`` is the page / offset / cursor query parameter (default ``page``,
    ``offset``, ``cursor``); ``size_param`` the page-size parameter (``per_page``
    for ``page``, ``limit`` for ``offset``); ``size`` the page size asked for
    (``None``: send no size, and stop only on an empty page); ``start`` the first
    page number or offset; ``next`` the JMESPath of the cursor / next link
    (``cursor`` style).
    """

    style: Style = "page"
    param: str | None = None
    size_param: str | None = None
    size: int | None = None
    start: int | None = None
    next: str | None = None
    stop_on: Literal["short", "empty"] = "short"
    max_pages: int | None = None

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ConfigError(f"--pagination must be one of {', '.join(STYLES)}, got {self.style!r}")
        if self.style == "cursor":
            if not self.next:
                raise ConfigError("--pagination cursor needs --next EXPRESSION (where the cursor or next link is)")
            compile_expression(self.next, option="--next")
        if self.size is not None and self.size < 1:
            raise ConfigError(f"--per-page must be >= 1, got {self.size}")
        if self.stop_on not in ("short", "empty"):
            raise ConfigError(f"--stop-on must be short or empty, got {self.stop_on!r}")
        if self.max_pages is not None and self.max_pages < 1:
            raise ConfigError(f"--max-pages must be >= 1, got {self.max_pages}")

    # -- parameters with their per-style defaults -------------------------------
    @property
    def page_param(self) -> str:
        return self.param or {"page": "page", "offset": "offset", "cursor": "cursor"}.get(self.style, "page")

    @property
    def page_size_param(self) -> str:
        return self.size_param or ("limit" if self.style == "offset" else "per_page")

    @property
    def first(self) -> int:
        return self.start if self.start is not None else (0 if self.style == "offset" else 1)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"style": self.style}
        if self.style in ("page", "offset"):
            out.update(param=self.page_param, size_param=self.page_size_param, size=self.size, start=self.first,
                       stop_on=self.stop_on)
        if self.style == "cursor":
            out.update(next=self.next, param=self.page_param)
        if self.max_pages is not None:
            out["max_pages"] = self.max_pages
        return out

    # -- walking ------------------------------------------------------------------
    def first_url(self, url: str) -> str:
        """The URL of the first page."""
        httpx = _httpx()
        if self.style in ("page", "offset"):
            params: dict[str, Any] = {self.page_param: self.first}
            if self.size is not None:
                params[self.page_size_param] = self.size
            return str(httpx.URL(url).copy_merge_params(params))
        return url

    def next_url(self, *, base: str, current: str, body: Any, headers: Mapping[str, str], n_items: int,
                 position: int) -> str | None:
        """The next page's URL after the page at ``current`` (see module docstring).

        ``base`` is the first page's URL without pagination parameters; ``position``
        is the page number / offset of ``current`` (``page``/``offset`` styles).
        """
        httpx = _httpx()
        if self.style == "none":
            return None
        if self.style in ("page", "offset"):
            if n_items == 0:
                return None
            if self.stop_on == "short" and self.size is not None and n_items < self.size:
                return None
            nxt = position + (1 if self.style == "page" else n_items)
            params: dict[str, Any] = {self.page_param: nxt}
            if self.size is not None:
                params[self.page_size_param] = self.size
            return str(httpx.URL(base).copy_merge_params(params))
        if self.style == "cursor":
            value = compile_expression(str(self.next), option="--next").search(body)
            if value is None or value == "" or isinstance(value, (dict, list, bool)):
                return None
            text = str(value)
            if "://" in text or text.startswith(("/", "?")):
                return str(httpx.URL(current).join(text))
            return str(httpx.URL(base).copy_set_param(self.page_param, text))
        # link
        resp = httpx.Response(200, headers=dict(headers))
        link = resp.links.get("next")
        if not link or not link.get("url"):
            return None
        return str(httpx.URL(current).join(link["url"]))

    def position_after(self, position: int, n_items: int) -> int:
        """The page number / offset of the page after one at ``position`` holding ``n_items``."""
        return position + (1 if self.style == "page" else n_items)
