"""A fake OpenAI-compatible server on 127.0.0.1 for failure cases (a paid API cannot run here).

It speaks the real wire protocol: ``POST /v1/chat/completions`` and ``POST
/v1/completions`` with JSON bodies, answers ``{"choices": [...], "usage": {...}}``,
and can be scripted to return 429 (with ``Retry-After``), 500, a body that is
not JSON, answers that violate the schema, or to stall past the client timeout.
Every request (path, headers, JSON body) is recorded for assertions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support import fake_http


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


class FakeOpenAI(fake_http.FakeServer):
    """``responder(request_json, call_index) -> Reply``; or a list of replies used in order
    (the last one repeats). Requests are recorded with ``path``, ``headers`` and ``body``."""

    def __init__(self, responder: Callable[[dict[str, Any], int], Reply] | list[Reply]) -> None:
        super().__init__()
        self._posts = 0
        if isinstance(responder, list):
            replies = responder
            self.responder = lambda req, i: replies[min(i, len(replies) - 1)]
        else:
            self.responder = responder

    @property
    def base_url(self) -> str:
        return self.url("/v1")

    def handle(self, request: dict[str, Any]) -> fake_http.Reply:
        if request["method"] == "GET":
            with self.lock:
                self.requests.remove(request)  # health probes are not API calls
            if request["path"].rstrip("/").endswith("/models"):
                return fake_http.Reply(200, {"object": "list", "data": [{"id": "fake"}]})
            return fake_http.Reply(404, {"error": "not found"})
        body = request["body"] if request["body"] is not None else {}
        request["body"] = body
        with self.lock:
            idx, self._posts = self._posts, self._posts + 1
        reply = self.responder(body, idx)
        if reply.raw_body is not None:
            data: Any = reply.raw_body
        elif reply.status == 200:
            data = completion_body(request["path"], reply.content or "", reply.prompt_tokens, reply.completion_tokens)
        else:
            data = {"error": {"message": f"status {reply.status}", "type": "fake"}}
        return fake_http.Reply(reply.status, data, dict(reply.headers), delay_s=reply.delay_s)
