"""Shared scaffolding of the fake HTTP servers: a real ``http.server`` on 127.0.0.1 in a daemon thread.

A fake subclasses :class:`FakeServer` and implements :meth:`FakeServer.handle`,
which gets the recorded request (a dict: ``method``, ``path``, ``headers``,
``raw`` body bytes, ``body`` = the JSON-decoded body or ``None``, ``index`` =
0-based arrival number, ``t`` = ``time.monotonic()`` at arrival) and returns a
:class:`Reply`. Every request is appended to :attr:`FakeServer.requests`
before it is handled; handlers may add keys to it. Use as a context manager::

    with MyFake() as srv:
        client.get(srv.url("/x"))
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeServer", "Reply"]


@dataclass
class Reply:
    """One answer: ``body`` is sent as is when bytes or str, else as JSON; ``delay_s`` is slept first
    (past a client's timeout the client has gone and the write is dropped)."""

    status: int = 200
    body: Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    content_type: str = "application/json"


class FakeServer:
    """A threaded HTTP server on 127.0.0.1 (port chosen by the OS) that records and answers requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                fake._serve(self, "GET")

            def do_POST(self) -> None:
                fake._serve(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # -- to implement --------------------------------------------------------------
    def handle(self, request: dict[str, Any]) -> Reply:
        raise NotImplementedError

    # -- plumbing ------------------------------------------------------------------
    def _serve(self, h: BaseHTTPRequestHandler, method: str) -> None:
        t = time.monotonic()
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self.lock:
            request = {"method": method, "path": h.path, "headers": dict(h.headers), "raw": raw, "body": body,
                       "index": len(self.requests), "t": t}
            self.requests.append(request)
        reply = self.handle(request)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        data = reply.body if isinstance(reply.body, bytes) else (
            reply.body.encode() if isinstance(reply.body, str) else json.dumps(reply.body).encode())
        try:
            h.send_response(reply.status)
            h.send_header("Content-Type", reply.content_type)
            h.send_header("Content-Length", str(len(data)))
            for k, v in reply.headers.items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, path: str = "") -> str:
        """``http://127.0.0.1:<port><path>``."""
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> Any:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
