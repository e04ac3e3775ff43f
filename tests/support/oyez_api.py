"""A test web API shaped like the Oyez API that seed 000 scraped (real HTTP on 127.0.0.1, in a thread).

Routes (``base_url`` = ``http://127.0.0.1:PORT``):

* ``GET /robots.txt``: ``robots`` (default ``User-agent: *`` / ``Disallow: /cases/sealed/``).
* ``GET /cases?page=P&per_page=N`` (P from 0, N default 30): a listing whose pages
  **overlap**: page P holds items ``[P*(N - N//2), P*(N - N//2) + N)``, so about every item
  appears on two pages (Oyez: 8,412 rows for 3,746 cases). Past the end: ``[]``; the
  last non-empty page is short. Each item: ``ID``, ``name``, ``href`` (absolute URL of
  its detail), ``docket_number``, ``term``. The item listed at ``sealed`` has its
  ``href`` under ``/cases/sealed/`` (disallowed by robots.txt).
* ``GET /cases/<term>/<docket>`` (and ``/cases/sealed/...``): the detail, with HTML in
  ``facts_of_the_case``/``question``/``conclusion`` and nested ``decisions``
  (``[{"winning_party", "decision_type": {"label"}}]``; ``null`` for every 7th case).
* Other pagination styles over the same items: ``/v2/cases?offset=&limit=`` (no overlap),
  ``/v3/cases?cursor=`` (``{"data": [...], "meta": {"next_cursor"}}``), ``/v4/cases?page=``
  (RFC 8288 ``Link: <...>; rel="next"``), ``/v5/cases?page=`` (``{"results", "next": URL}``).
* ``GET /html/cases``: an HTML page (``text/html``) where JSON was expected.

Every JSON answer carries an ``ETag`` and ``Last-Modified``; ``If-None-Match`` with the
current ETag gets ``304``. ``faults`` maps a path (with query, as requested) to a queue of
behaviours consumed one per request: ``"429"`` (``Retry-After: retry_after``), ``"500"``,
``"503"``, ``"timeout"`` (sleeps ``timeout_sleep`` before answering), ``"truncated"``
(a JSON body cut in half, with a matching Content-Length), ``"html"``, ``"loop"`` (a 302
to the same path), ``"badgzip"`` (plain JSON labelled ``Content-Encoding: gzip``), ``"drip"``
(the body one byte every 0.2 s). ``log`` records
every request: monotonic start time, ``run`` (a label the test sets), path, status,
User-Agent, conditional headers, and the number of detail requests in flight.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Entry:
    t: float
    run: int
    path: str
    status: int = 0
    user_agent: str = ""
    if_none_match: str | None = None
    in_flight: int = 0
    done: float = 0.0
    action: str = "ok"

    @property
    def served(self) -> bool:
        """A whole, normal answer (status 200, no fault injected)."""
        return self.status == 200 and self.action == "ok"

    @property
    def route(self) -> str:
        return urllib.parse.urlsplit(self.path).path


def make_cases(n: int) -> list[dict[str, str]]:
    """``n`` synthetic cases (varied, deterministic) for tests that need many items."""
    topics = ["search warrants", "jury selection", "free speech", "tax refunds", "water rights", "patents",
              "immigration", "labor unions", "voting districts", "prison conditions", "copyright", "railroads"]
    out = []
    for i in range(n):
        t = topics[i % len(topics)]
        out.append({"name": f"Party {i} v. State {i % 17}", "term": str(1950 + i % 70), "docket": f"{i:02d}-{7 * i % 1000}",
                    "facts": f"Case {i} arose from a dispute about {t}. The petitioner claimed that the lower court "
                             f"misread the statute in a matter of {t} and number {i * 37 % 101}.",
                    "question": f"Did the lower court err about {t} in case {i}?",
                    "conclusion": f"The Court decided case {i} on {t}, by a vote of {5 + i % 5} to {4 - i % 5 if i % 5 < 5 else 0}.",
                    "winner": f"Party {i}" if i % 2 else f"State {i % 17}", "decision": "majority opinion"})
    return out


class OyezServer:
    """The server (see module docstring). Use as a context manager."""

    def __init__(self, cases: Sequence[dict[str, str]], *, sealed: int | None = 3, retry_after: str = "1",
                 timeout_sleep: float = 1.5, detail_delay: float = 0.0, no_id: Sequence[int] = (),
                 robots: str = "User-agent: *\nDisallow: /cases/sealed/\n") -> None:
        self.cases = list(cases)
        self.sealed = sealed
        self.retry_after = retry_after
        self.timeout_sleep = timeout_sleep
        self.detail_delay = detail_delay
        self.no_id = set(no_id)
        self.robots = robots
        self.faults: dict[str, list[str]] = {}
        self.log: list[Entry] = []
        self.run = 0
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: bytes, ctype: str = "application/json",
                      headers: dict[str, str] | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                route = urllib.parse.urlsplit(self.path).path
                is_detail = route.startswith("/cases/")
                with srv._lock:
                    if is_detail:
                        srv._in_flight += 1
                        srv.max_in_flight = max(srv.max_in_flight, srv._in_flight)
                    entry = Entry(time.monotonic(), srv.run, self.path, user_agent=self.headers.get("User-Agent", ""),
                                  if_none_match=self.headers.get("If-None-Match"), in_flight=srv._in_flight)
                    srv.log.append(entry)
                    queue = srv.faults.get(self.path)
                    action = queue.pop(0) if queue else "ok"
                    entry.action = action
                try:
                    entry.status = self._answer(route, action, is_detail)
                finally:
                    entry.done = time.monotonic()
                    if is_detail:
                        with srv._lock:
                            srv._in_flight -= 1

            def _answer(self, route: str, action: str, is_detail: bool) -> int:
                if is_detail and srv.detail_delay:
                    time.sleep(srv.detail_delay)
                if action == "timeout":
                    time.sleep(srv.timeout_sleep)
                if action == "429":
                    self._send(429, b'{"error": "slow down"}', headers={"Retry-After": srv.retry_after})
                    return 429
                if action in ("500", "503"):
                    self._send(int(action), b'{"error": "internal error"}')
                    return int(action)
                if action == "loop":
                    self._send(302, b"", headers={"Location": self.path})
                    return 302
                if action == "html" or route == "/html/cases":
                    page = b"<!doctype html><html><head><title>Sign in</title></head><body><p>Please sign in</p></body></html>"
                    self._send(200, page, "text/html; charset=utf-8")
                    return 200
                if route == "/robots.txt":
                    self._send(200, srv.robots.encode(), "text/plain")
                    return 200
                query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
                obj, extra = srv._route(route, query, self.headers.get("Host", ""))
                if obj is _MISSING:
                    self._send(404, b'{"error": "not found"}')
                    return 404
                body = json.dumps(obj).encode()
                etag = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
                headers = {"ETag": etag, "Last-Modified": "Mon, 02 Jun 2025 10:00:00 GMT", **extra}
                if self.headers.get("If-None-Match") == etag:
                    self.send_response(304)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return 304
                if action == "truncated":
                    body = body[: len(body) // 2]
                if action == "badgzip":
                    headers["Content-Encoding"] = "gzip"
                if action == "drip":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    try:
                        for i in range(len(body)):
                            self.wfile.write(body[i: i + 1])
                            self.wfile.flush()
                            time.sleep(0.2)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    return 200
                self._send(200, body, headers=headers)
                return 200

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # -- data ------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def case_id(self, i: int) -> int:
        return 50000 + i

    def detail_path(self, i: int) -> str:
        c = self.cases[i]
        folder = "sealed" if i == self.sealed else c["term"]
        return f"/cases/{folder}/{urllib.parse.quote(c['docket'])}"

    def listing_item(self, i: int) -> dict[str, Any]:
        c = self.cases[i]
        item: dict[str, Any] = {"ID": self.case_id(i), "name": c["name"], "href": self.base_url + self.detail_path(i),
                                "docket_number": c["docket"], "term": c["term"]}
        if i in self.no_id:
            del item["ID"]
        return item

    def detail(self, i: int) -> dict[str, Any]:
        c = self.cases[i]
        decisions = None if i % 7 == 6 else [{"winning_party": c["winner"], "decision_type": {"label": c["decision"]},
                                             "majority_vote": 5 + i % 5, "minority_vote": 4 - i % 5}]
        out: dict[str, Any] = {
            "ID": self.case_id(i), "name": c["name"], "href": self.base_url + self.detail_path(i),
            "docket_number": c["docket"], "term": c["term"],
            "facts_of_the_case": f"<p>{_html(c['facts'])}</p>\n<p>&nbsp;</p>",
            "question": f"<p>{_html(c['question'])}</p>",
            "conclusion": f"<p>{_html(c['conclusion'])}</p>",
            "decisions": decisions,
        }
        if i in self.no_id:
            del out["ID"]
        return out

    def expected_ids(self) -> list[str]:
        """Ids of every case the ingest may fetch (all but the sealed one), in listing order."""
        return [str(self.case_id(i)) for i in range(len(self.cases)) if i != self.sealed and i not in self.no_id]

    def _route(self, route: str, q: dict[str, str], host: str) -> tuple[Any, dict[str, str]]:
        n = len(self.cases)
        if route == "/cases":
            per = int(q.get("per_page", 30))
            page = int(q.get("page", 0))
            stride = per - per // 2
            lo = page * stride
            return [self.listing_item(i) for i in range(lo, min(n, lo + per))], {}
        if route.startswith("/cases/"):
            for i in range(n):
                if self.detail_path(i) == route:
                    return self.detail(i), {}
            return _MISSING, {}
        if route == "/v2/cases":
            off, lim = int(q.get("offset", 0)), int(q.get("limit", 10))
            return {"items": [self.listing_item(i) for i in range(off, min(n, off + lim))]}, {}
        if route == "/v3/cases":
            start = int(q.get("cursor", "c0")[1:])
            items = [self.listing_item(i) for i in range(start, min(n, start + 5))]
            nxt = f"c{start + 5}" if start + 5 < n else None
            return {"data": items, "meta": {"next_cursor": nxt}}, {}
        if route in ("/v4/cases", "/v5/cases"):
            page = int(q.get("page", 1))
            lo = (page - 1) * 4
            items = [self.listing_item(i) for i in range(lo, min(n, lo + 4))]
            more = lo + 4 < n
            if route == "/v4/cases":
                hdr = {"Link": f'</v4/cases?page={page + 1}>; rel="next", </v4/cases?page=1>; rel="first"'} if more else {}
                return items, hdr
            return {"results": items, "next": (f"{self.base_url}/v5/cases?page={page + 1}" if more else None)}, {}
        return _MISSING, {}

    # -- log helpers -------------------------------------------------------------------
    def requests(self, *, run: int | None = None, prefix: str = "") -> list[Entry]:
        with self._lock:
            return [e for e in self.log if (run is None or e.run == run) and e.route.startswith(prefix)]

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


_MISSING = object()


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (killed, timed out) is part of these tests, not an error."""


def _html(text: str) -> str:
    """Some HTML escaping and markup in a text field, as Oyez has (``&amp;``, ``<em>``)."""
    words = text.replace("&", "&amp;").split(" ")
    if len(words) > 3:
        words[1] = f"<em>{words[1]}</em>"
    return " ".join(words)


if __name__ == "__main__":  # serve the hand-written cases for a manual run: python -m tests.support.oyez_api
    import sys

    from tests.support.oyez_cases import CASES

    with OyezServer(CASES) as _srv:
        print(_srv.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            sys.exit(0)
