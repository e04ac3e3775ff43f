"""A protocol-faithful fake of the OpenAI embeddings API on 127.0.0.1 (a real HTTP server in a thread).

``POST /v1/embeddings`` with ``{"model", "input": [...], "encoding_format"}``
answers ``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
"model", "usage": {"prompt_tokens", "total_tokens"}}`` like OpenAI, ollama,
vLLM and llama.cpp. Vectors are a deterministic function of the text
(:func:`fake_vector`, hashed character trigrams, *not* normalised); tokens are
whitespace words. ``script`` is a queue of per-request behaviours:
``"ok"``, ``"429"`` (with ``Retry-After``), ``"500"``, ``"503"``, ``"timeout"``
(sleeps past the client's timeout), ``"401"`` (echoes the presented key, as
some servers do, to check it is scrubbed).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

DIM = 16


def fake_vector(text: str) -> list[float]:
    v = np.zeros(DIM)
    padded = f"  {text.lower()}  "
    for i in range(len(padded) - 2):
        h = int.from_bytes(hashlib.sha256(padded[i : i + 3].encode()).digest()[:4], "little")
        v[h % DIM] += 1.0 + (h >> 8) % 3
    return v.tolist()


class FakeOpenAI:
    def __init__(self, *, api_key: str | None = "sk-test-123", retry_after: str = "0.05",
                 timeout_sleep: float = 1.0) -> None:
        self.api_key, self.retry_after, self.timeout_sleep = api_key, retry_after, timeout_sleep
        self.script: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with fake._lock:
                    action = fake.script.pop(0) if fake.script else "ok"
                    fake.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                          "body": json.loads(raw or b"{}"), "action": action})
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                if action == "timeout":
                    time.sleep(fake.timeout_sleep)
                    action = "ok"
                if action == "429":
                    return self._send(429, {"error": {"message": "Rate limit reached", "type": "requests"}},
                                      {"Retry-After": fake.retry_after})
                if action in ("500", "503"):
                    return self._send(int(action), {"error": {"message": "The server had an error"}})
                auth = self.headers.get("Authorization")
                if action == "401" or (fake.api_key and auth != f"Bearer {fake.api_key}"):
                    return self._send(401, {"error": {"message": f"Incorrect API key provided: {auth}",
                                                      "type": "invalid_request_error"}})
                body = json.loads(raw)
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [{"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(inputs)]
                data.reverse()  # servers need not answer in order: clients must use "index"
                tokens = sum(len(t.split()) for t in inputs)
                self._send(200, {"object": "list", "data": data, "model": body["model"],
                                 "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
