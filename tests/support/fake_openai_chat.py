"""A fake OpenAI-compatible server on 127.0.0.1 for failure cases (a paid API cannot run here).

It speaks the real wire protocol: ``POST /v1/chat/completions`` and ``POST
/v1/completions`` with JSON bodies, answers ``{"choices": [...], "usage": {...}}``,
and can be scripted to return 429 (with ``Retry-After``), 500, a body that is
not JSON, answers that violate the schema, or to stall past the client timeout.
Every request (path, headers, JSON body) is recorded for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    content: str | None = None  # the model's answer text (chat content or completion text)
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: bytes | None = None  # send exactly these bytes instead of a completion
    delay_s: float = 0.0
    prompt_tokens: int = 10
    completion_tokens: int = 5


def completion_body(path: str, content: str, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens}
    if path.endswith("/chat/completions"):
        choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        obj = "chat.completion"
    else:
        choice = {"index": 0, "text": content, "finish_reason": "stop", "logprobs": None}
        obj = "text_completion"
    return {"id": "cmpl-fake", "object": obj, "created": 0, "model": "fake", "choices": [choice], "usage": usage}


class FakeOpenAI:
    """``responder(request_json, call_index) -> Reply``; or a list of replies used in order
    (the last one repeats)."""

    def __init__(self, responder: Callable[[dict[str, Any], int], Reply] | list[Reply]) -> None:
        if isinstance(responder, list):
            replies = responder
            self.responder = lambda req, i: replies[min(i, len(replies) - 1)]
        else:
            self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [{"id": "fake"}]}).encode(), {})
                else:
                    self._send(404, b'{"error": "not found"}', {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    idx = len(fake.requests)
                    fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                reply = fake.responder(body, idx)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.raw_body is not None:
                    data = reply.raw_body
                elif reply.status == 200:
                    data = json.dumps(completion_body(self.path, reply.content or "", reply.prompt_tokens,
                                                      reply.completion_tokens)).encode()
                else:
                    data = json.dumps({"error": {"message": f"status {reply.status}", "type": "fake"}}).encode()
                try:
                    self._send(reply.status, data, reply.headers)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
