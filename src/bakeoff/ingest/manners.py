"""Manners of a web reader: an honest User-Agent, a request rate, and robots.txt.

* **User-Agent**: :func:`bakeoff.net.default_user_agent` (``bakeoff/<version>
  (+project URL; <contact>)``); ``contact`` should be an e-mail or URL where the
  site's operator can reach the person running the ingest.
* **Rate**: ``rate`` requests per second at most, across all threads (the
  shared client's ``min_interval = 1 / rate`` spaces request *starts*); a
  robots.txt ``Crawl-delay`` or ``Request-rate`` for our agent that asks for
  more spacing wins.
* **robots.txt** (RFC 9309), fetched once per host through the shared client
  and parsed by the standard library's :mod:`urllib.robotparser` for the
  product token ``bakeoff``: a 4xx answer means "no rules" (everything
  allowed); a 5xx or network failure after retries means "unreachable",
  which RFC 9309 asks crawlers to treat as *everything disallowed* (an error
  here, naming the opt-out). ``respect=False`` (``--ignore-robots``) skips it.
"""

from __future__ import annotations

import logging
import urllib.robotparser
from dataclasses import dataclass, field
from typing import Any

from ..errors import BakeoffError
from ..net import HttpClient, HttpError

__all__ = ["ROBOTS_AGENT", "Robots", "RobotsUnreachable"]

log = logging.getLogger("bakeoff")

#: The product token matched against robots.txt ``User-agent`` lines.
ROBOTS_AGENT = "bakeoff"


class RobotsUnreachable(BakeoffError):
    """robots.txt could not be read (5xx / network): RFC 9309 says assume everything is disallowed."""


def _origin(url: str) -> str:
    import httpx

    u = httpx.URL(url)
    port = f":{u.port}" if u.port else ""
    return f"{u.scheme}://{u.host}{port}"


@dataclass
class Robots:
    """robots.txt rules per origin, fetched lazily through ``client`` (see module docstring)."""

    client: HttpClient
    respect: bool = True
    agent: str = ROBOTS_AGENT
    _parsers: dict[str, urllib.robotparser.RobotFileParser | None] = field(default_factory=dict)
    #: URLs that were not fetched because robots.txt disallows them.
    disallowed: list[str] = field(default_factory=list)
    #: origin -> {"url", "status", "crawl_delay"} of each robots.txt read.
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)

    def _parser(self, url: str) -> urllib.robotparser.RobotFileParser | None:
        origin = _origin(url)
        if origin in self._parsers:
            return self._parsers[origin]
        robots_url = origin + "/robots.txt"
        parser: urllib.robotparser.RobotFileParser | None
        try:
            resp = self.client.request("GET", robots_url)
            parser = urllib.robotparser.RobotFileParser(robots_url)
            parser.parse(resp.text.splitlines())
            status = resp.status_code
        except HttpError as exc:
            if exc.status is not None and 400 <= exc.status < 500:
                parser, status = None, exc.status
            else:
                raise RobotsUnreachable(
                    f"{robots_url} could not be read ({exc}); RFC 9309 treats an unreachable robots.txt as "
                    "'disallow all' — retry later, or pass --ignore-robots if you have the site's permission"
                ) from None
        self._parsers[origin] = parser
        self.seen[origin] = {"url": robots_url, "status": status, "crawl_delay": self.delay(url)}
        return parser

    def allowed(self, url: str) -> bool:
        """Whether ``url`` may be fetched (always ``True`` when robots.txt is not respected).
        A disallowed URL is remembered in :attr:`disallowed`."""
        if not self.respect:
            return True
        parser = self._parser(url)
        ok = parser is None or parser.can_fetch(self.agent, url)
        if not ok:
            self.disallowed.append(url)
        return ok

    def delay(self, url: str) -> float:
        """Seconds robots.txt asks between requests for our agent (``Crawl-delay``, or the
        interval of ``Request-rate: n/s``); 0 when it asks nothing."""
        if not self.respect:
            return 0.0
        parser = self._parsers.get(_origin(url))
        if parser is None:
            return 0.0
        delay = float(parser.crawl_delay(self.agent) or 0.0)
        rate = parser.request_rate(self.agent)
        if rate is not None and rate.requests > 0:
            delay = max(delay, rate.seconds / rate.requests)
        return delay

    def pace(self, url: str) -> None:
        """Widen the client's spacing to robots.txt's delay for ``url``'s host, if larger."""
        if not self.respect:
            return
        self._parser(url)
        delay = self.delay(url)
        if delay > self.client.min_interval:
            log.info("robots.txt of %s asks %.3g s between requests; honouring it", _origin(url), delay)
            self.client.min_interval = delay
