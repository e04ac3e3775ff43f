"""A protocol-faithful fake of the OpenAI embeddings API on 127.0.0.1 (a real HTTP server in a thread).

``POST /v1/embeddings`` with ``{"model", "input": [...], "encoding_format"}``
answers ``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
"model", "usage": {"prompt_tokens", "total_tokens"}}`` like OpenAI, ollama,
vLLM and llama.cpp. Vectors are a deterministic function of the text
(:func:`fake_vector`, hashed character trigrams, *not* normalised); tokens are
whitespace words. ``script`` is a queue of per-request behaviours:
``"ok"``, ``"429"`` (with ``Retry-After``), ``"500"``, ``"503"``, ``"timeout"``
(sleeps past the client's timeout), ``"401"`` (echoes the presented key, as
some servers do, to check it is scrubbed). Malformed answers with status 200:
``"echo-float"`` (the Authorization header where a float belongs, so parsing fails
quoting it), ``"echo-text"`` (a non-JSON body quoting the header), ``"echo-cut"`` (the
same, the key placed across the client's 80-character excerpt boundary),
``"data-string"`` (``{"data": "..."}``).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from tests.support.fake_http import FakeServer, Reply

DIM = 16


def fake_vector(text: str) -> list[float]:
    v = np.zeros(DIM)
    padded = f"  {text.lower()}  "
    for i in range(len(padded) - 2):
        h = int.from_bytes(hashlib.sha256(padded[i : i + 3].encode()).digest()[:4], "little")
        v[h % DIM] += 1.0 + (h >> 8) % 3
    return v.tolist()


class FakeOpenAI(FakeServer):
    """Requests are recorded with ``path``, ``auth`` (the Authorization header), ``body`` and ``action``."""

    def __init__(self, *, api_key: str | None = "sk-test-123", retry_after: str = "0.05",
                 timeout_sleep: float = 1.0) -> None:
        super().__init__()
        self.api_key, self.retry_after, self.timeout_sleep = api_key, retry_after, timeout_sleep
        self.script: list[str] = []

    @property
    def base_url(self) -> str:
        return self.url("/v1")

    def handle(self, request: dict[str, Any]) -> Reply:
        with self.lock:
            action = self.script.pop(0) if self.script else "ok"
        auth = request["headers"].get("Authorization")
        request.update(auth=auth, action=action, body=request["body"] or {})
        if request["path"] != "/v1/embeddings":
            return Reply(404, {"error": {"message": f"no route {request['path']}"}})
        delay = 0.0
        if action == "timeout":
            delay, action = self.timeout_sleep, "ok"
        if action == "429":
            return Reply(429, {"error": {"message": "Rate limit reached", "type": "requests"}},
                         {"Retry-After": self.retry_after})
        if action in ("500", "503"):
            return Reply(int(action), {"error": {"message": "The server had an error"}})
        if action == "echo-float":
            return Reply(200, {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [auth]}]})
        if action == "echo-text":
            return Reply(200, f"upstream rejected header Authorization: {auth}", content_type="text/plain")
        if action == "echo-cut":  # the key starts at character 65: the client's 80-character excerpt cuts it
            prefix = "x" * (65 - len("Bearer "))
            return Reply(200, f"{prefix}Bearer {auth.split()[-1] if auth else ''} trailing", content_type="text/plain")
        if action == "data-string":
            return Reply(200, {"object": "list", "data": "this is not a list"})
        if action == "401" or (self.api_key and auth != f"Bearer {self.api_key}"):
            return Reply(401, {"error": {"message": f"Incorrect API key provided: {auth}",
                                         "type": "invalid_request_error"}})
        body = request["body"]
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(inputs)]
        data.reverse()  # servers need not answer in order: clients must use "index"
        tokens = sum(len(t.split()) for t in inputs)
        return Reply(200, {"object": "list", "data": data, "model": body["model"],
                           "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}, delay_s=delay)
