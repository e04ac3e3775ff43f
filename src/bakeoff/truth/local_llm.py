"""The offline default LLM: Gemma 3 270M (GGUF, from PyPI) served by llama-cpp-python.

:class:`LocalLLMServer` is a context manager that assembles the model file
(once, into the bakeoff cache folder), starts ``python -m llama_cpp.server
--model M --host 127.0.0.1 --port P --chat_format gemma`` (through
:mod:`bakeoff.truth.llama_server`, which turns weight repacking off to avoid a
llama.cpp crash on AMX CPUs) on a free loopback
port, waits until ``GET /v1/models`` answers, and kills the process on exit.
The server's default ``logits_all=True`` is switched off: it ran the 262k-token
output layer (the larger half of this model) for every *prompt* token and copied
each row into a Python array, doubling the time of a request; only the last
token's logits are ever sampled, and they are bit-identical either way (same
text for the same requests; measured in ``benchmarks/truth_speed.py``). The
client asks for no logprobs. Gemma 3 270M is a *base* model: prompts are few-shot completions (``prompt_style
= "completion"``); measured here it gives on-topic queries in 1-2 s each that
way, while chat-template prompts mostly echo the examples. Its server accepts
``response_format={"type": "json_object", "schema": ...}`` (grammar-constrained
JSON), so :meth:`LocalLLMServer.config` selects that form.

``servers`` (default :func:`default_servers`: one per usable core, at most 2;
``$BAKEOFF_LLM_SERVERS``) starts that many identical servers, each one thread and one
slot, on their own ports: :meth:`LocalLLMServer.config` lists the others as
:attr:`~bakeoff.truth.llm.LLMConfig.replicas`, and the client runs independent chains
of requests on them in parallel with the answers one server gives
(:mod:`bakeoff.truth.replicas`). Separate processes, not threads or slots in one
context: no thread synchronisation (llama.cpp's spin-waiting threads collapse on a busy
machine), and each request keeps the one-sequence numerics of the serial path.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..cache import default_cache_dir
from ..errors import BakeoffError, MissingDependencyError
from ..models.gguf import LocalModel
from ..net import HttpClient, HttpError
from ..versions import installed_version
from .llama_slots import MAX_SLOTS
from .llm import LLMConfig
from .replicas import N_BATCH

__all__ = ["DEFAULT_SLOTS", "DEFAULT_SNAPSHOTS", "LOCAL_MODEL_NAME", "MAX_DEFAULT_SERVERS", "LocalLLMServer", "default_servers",
           "default_slots", "default_snapshots", "free_port", "gemma_model_path"]

log = logging.getLogger("bakeoff")

LOCAL_MODEL_NAME = "gemma-3-270m-q4_k_m"

#: Prompts whose KV cache each server keeps for a prompt asked again (:mod:`bakeoff.truth.llama_snapshots`;
#: ~9 MB each for the demo's ~450-token prompts with their logits row, at most ``llama_snapshots.MAX_BYTES`` = 768 MiB per server);
#: ``$BAKEOFF_LLAMA_SNAPSHOTS`` overrides, 0 turns it off.
DEFAULT_SNAPSHOTS = 128

#: Slots per server (:mod:`bakeoff.truth.llama_slots`: sequences of one context whose one-token decodes run
#: as one batch, each answering like a one-slot server); ``$BAKEOFF_LLAMA_SLOTS`` overrides, 1 is
#: llama-cpp-python's own one-slot server. Measured on one thread: 41.4 ms per decoded token alone,
#: 18.9 with 4 slots decoding, 20.5 with 6.
DEFAULT_SLOTS = 4

#: Upper bound of :func:`default_servers` (measured on a 2-core machine; more servers than cores only queue).
MAX_DEFAULT_SERVERS = 2


def default_servers() -> int:
    """``$BAKEOFF_LLM_SERVERS`` when set, else one server per CPU this process may use, at most
    :data:`MAX_DEFAULT_SERVERS`."""
    env = os.environ.get("BAKEOFF_LLM_SERVERS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise BakeoffError(f"BAKEOFF_LLM_SERVERS must be a positive integer, got {env!r}")
        return int(env)
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MAX_DEFAULT_SERVERS, usable))


def default_slots() -> int:
    """``$BAKEOFF_LLAMA_SLOTS`` when set, else :data:`DEFAULT_SLOTS`."""
    env = os.environ.get("BAKEOFF_LLAMA_SLOTS", "").strip()
    if env:
        if not env.isdigit() or not 1 <= int(env) <= MAX_SLOTS:
            raise BakeoffError(f"BAKEOFF_LLAMA_SLOTS must be an integer in 1..{MAX_SLOTS}, got {env!r}")
        return int(env)
    return DEFAULT_SLOTS


def default_snapshots() -> int:
    """``$BAKEOFF_LLAMA_SNAPSHOTS`` when set (0: off), else :data:`DEFAULT_SNAPSHOTS`."""
    env = os.environ.get("BAKEOFF_LLAMA_SNAPSHOTS", "").strip()
    if env:
        if not env.isdigit():
            raise BakeoffError(f"BAKEOFF_LLAMA_SNAPSHOTS must be a non-negative integer, got {env!r}")
        return int(env)
    return DEFAULT_SNAPSHOTS


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gemma_model_path(folder: Path | None = None) -> Path:
    """Assemble (first time) and return the Gemma 3 270M GGUF file; sha256-verified by the package."""
    from ..models.gguf import gemma_path

    return gemma_path(folder or default_cache_dir() / "models")


def _llama_cpp_version() -> str:
    version = installed_version("llama-cpp-python")
    if version is None:
        raise MissingDependencyError("llama-cpp-python[server]", "llm", "the local LLM server")
    return version


class LocalLLMServer:
    """Run the llama.cpp server for the embedded Gemma model on a free loopback port.

    ``n_threads`` defaults to 1 (``$BAKEOFF_LLM_THREADS``): on a contended machine llama.cpp's
    spin-waiting worker threads collapse (measured here: 0.4 tok/s with 2 threads vs 6.6 with 1
    at load 9 on 2 cores). ``n_ctx`` is the context window in tokens. ``prompt_logprobs=True``
    keeps llama.cpp's ``logits_all`` on, which ``/v1/completions`` needs to answer ``echo=true,
    logprobs=N`` (prompt-token log-probabilities, for the specificity filter over HTTP); generation
    leaves it off (twice as fast, same text). ``servers`` identical server processes are started
    (default :func:`default_servers`); ``port``/``proc`` are the first one's, ``ports``/``procs`` all.
    Each serves ``slots`` sequences of one llama.cpp context (default :func:`default_slots`;
    :mod:`bakeoff.truth.llama_slots`), each slot a one-slot server to the client (``base_urls`` lists
    them all), their one-token decodes batched; ``slots=1`` (always with ``prompt_logprobs``) runs
    llama-cpp-python's own server.
    ``snapshots`` prompts' KV caches are kept per server for a prompt asked again (default
    :data:`DEFAULT_SNAPSHOTS`; 0: off; never with ``prompt_logprobs``).
    """

    def __init__(self, *, model_path: Path | None = None, n_ctx: int = 4096, n_threads: int | None = None,
                 startup_timeout_s: float = 120.0, chat_format: str | None = "gemma", prompt_logprobs: bool = False,
                 servers: int | None = None, snapshots: int | None = None, slots: int | None = None,
                 model: LocalModel | None = None) -> None:
        """``model`` (:func:`bakeoff.models.gguf.resolve_local_model`) selects another GGUF model than the
        embedded Gemma: its file, prompt style and identity; its chat template comes from the GGUF
        metadata (``chat_format`` is not passed)."""
        self.model = model
        if model is not None:
            model_path, chat_format = model.path, None
        self.servers = default_servers() if servers is None else servers
        if self.servers < 1:
            raise BakeoffError("the local LLM needs at least one server")
        self.slots = 1 if prompt_logprobs else default_slots() if slots is None else slots
        if not 1 <= self.slots <= MAX_SLOTS:
            raise BakeoffError(f"the local LLM serves 1..{MAX_SLOTS} slots per server, got {self.slots}")
        self.snapshots = default_snapshots() if snapshots is None else snapshots
        self.model_path = model_path
        self.prompt_logprobs = prompt_logprobs
        self.n_ctx = n_ctx
        self.n_threads = n_threads or int(os.environ.get("BAKEOFF_LLM_THREADS", "1"))
        self.startup_timeout_s = startup_timeout_s
        self.chat_format = chat_format
        self.ports: list[int] = []
        self.procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[Any] = []

    @property
    def port(self) -> int | None:
        return self.ports[0] if self.ports else None

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return self.procs[0] if self.procs else None

    @property
    def base_url(self) -> str:
        return self.base_urls[0]

    @property
    def base_urls(self) -> list[str]:
        """Every slot of every server (one slot: the server's ``/v1``; more: ``/slot/<s>/v1`` each)."""
        if not self.ports:
            raise RuntimeError("server not started")
        if self.slots == 1:
            return [f"http://127.0.0.1:{p}/v1" for p in self.ports]
        return [f"http://127.0.0.1:{p}/slot/{s}/v1" for p in self.ports for s in range(self.slots)]

    def model_id(self) -> str:
        """Cache identity: model file + llama-cpp-python version (either changes outputs)."""
        repack = "repack" if os.environ.get("BAKEOFF_LLAMA_REPACK") == "1" else "norepack"
        name = self.model.identity if self.model is not None else LOCAL_MODEL_NAME
        return f"{name}@llama-cpp-python-{_llama_cpp_version()}+{repack}"

    def config(self, **overrides: Any) -> LLMConfig:
        """An :class:`LLMConfig` for these servers (one request at a time per slot; every slot but the first is
        one of the ``replicas``)."""
        opts: dict[str, Any] = {"base_url": self.base_url, "replicas": tuple(self.base_urls[1:]),
                                "model": self.model.name if self.model is not None else LOCAL_MODEL_NAME,
                                "concurrency": 1, "response_format": "json_object_schema",
                                "prompt_style": self.model.prompt_style if self.model is not None else "completion",
                                "model_id": self.model_id(),
                                "timeout_s": 300.0, "max_retries": 2, "json_stop": True}
        opts.update(overrides)
        return LLMConfig(**opts)

    def start(self) -> LocalLLMServer:
        """Start the servers (all at once) and wait until each answers; on failure none is left running."""
        _llama_cpp_version()
        path = self.model_path or gemma_model_path()
        env = {**os.environ, "BAKEOFF_PARENT_PID": str(os.getpid()),  # the server exits when we are gone
               "BAKEOFF_LLAMA_SNAPSHOTS": str(0 if self.prompt_logprobs else self.snapshots),
               "BAKEOFF_LLAMA_SLOTS": str(self.slots)}
        try:
            for _ in range(self.servers):
                port = free_port()
                cmd = [sys.executable, "-m", "bakeoff.truth.llama_server", "--model", str(path), "--host", "127.0.0.1",
                       "--port", str(port), *(["--chat_format", self.chat_format] if self.chat_format else []),
                       "--n_ctx", str(self.n_ctx),
                       "--n_batch", str(N_BATCH), "--n_threads", str(self.n_threads),
                       "--n_threads_batch", str(self.n_threads),
                       "--logits_all", "true" if self.prompt_logprobs else "false"]
                self._logs.append(tempfile.TemporaryFile())  # noqa: SIM115 - closed in stop()
                self.ports.append(port)
                self.procs.append(subprocess.Popen(cmd, stdout=self._logs[-1], stderr=subprocess.STDOUT,
                                                   stdin=subprocess.DEVNULL, env=env))
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        log.debug("local LLM servers on %s (pids %s)", self.base_urls, [p.pid for p in self.procs])
        return self

    def _tail(self, i: int = 0) -> str:
        if i >= len(self._logs):
            return ""
        self._logs[i].seek(0)
        lines = self._logs[i].read().decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else ""

    def _wait_ready(self) -> None:
        probe = HttpClient(timeout=2.0, retries=0)  # one try per poll: this loop is the retry (it watches the process)
        try:
            self._poll_ready(probe)
        finally:
            probe.close()

    def _poll_ready(self, probe: HttpClient) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        waiting = set(range(len(self.procs)))
        while time.monotonic() < deadline:
            for i in sorted(waiting):
                if self.procs[i].poll() is not None:
                    raise BakeoffError(f"local LLM server exited during startup: {self._tail(i)}")
                try:
                    if probe.request("GET", f"{self.base_urls[i * self.slots]}/models").status_code == 200:
                        waiting.discard(i)
                except HttpError:
                    pass
            if not waiting:
                return
            time.sleep(0.05)  # a refused connect costs nothing; the servers are ready ~2 s after start
        raise BakeoffError(f"local LLM server not ready after {self.startup_timeout_s:.0f}s")

    def stop(self) -> None:
        """Terminate every server (kill after 10 s) and close their logs."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs, self.ports = [], []
        for fh in self._logs:
            fh.close()
        self._logs = []

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
