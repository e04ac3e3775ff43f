"""Local GGUF models served by llama.cpp's own server, ``llama-server``.

:class:`LocalLLMServer` is a context manager: it resolves the model file (the default of ``--llm local``,
or any :class:`~bakeoff.models.gguf.LocalModel`), starts

    llama-server -m MODEL --host 127.0.0.1 --port P --parallel S --ctx-size S*N_CTX
                 --threads T --threads-batch T --no-repack --no-webui [--jinja]

``N`` times (``servers``), each on a free loopback port, waits until every ``GET /health`` answers 200,
and stops them on exit (and when the process that started them dies: ``PR_SET_PDEATHSIG`` on Linux).
``llama-server`` serves ``S`` parallel slots with continuous batching, reuses the KV cache of a prompt's
common prefix (``cache_prompt``), constrains answers to a JSON schema (``response_format``
``json_schema``, or ``json_schema`` on ``/v1/completions``) and returns token log-probabilities
(``logprobs`` / ``top_logprobs``) over its OpenAI-compatible API, so the client is the same
:class:`~bakeoff.truth.llm.client.LLMClient` as for any other server, with ``concurrency = N * S`` and the
other servers as its :attr:`~bakeoff.truth.llm.client.LLMConfig.replicas` (each request goes to the least busy).

Conventions:

* **One thread per server, one server per core** (defaults :func:`default_servers`, ``T = 1``): llama.cpp's
  worker threads meet at a barrier after every operation of the graph, so on a machine whose cores are
  busy with other work a multi-threaded server waits a scheduler slice at each of them and its speed
  collapses (the docs' benchmarks page, "Local models"); independent one-thread servers never wait for
  each other. ``--no-repack``: llama.cpp's CPU weight repacking
  (extra buffer types) is off, the numeric path of earlier bakeoff releases; ``BAKEOFF_LLAMA_REPACK=1``
  turns it on. Chat models get ``--jinja``: their chat template is the one in the GGUF metadata.
* **Reproducibility** rests on the generation cache: cached answers are authoritative. A cold run
  asks the same requests in the same order at ``--concurrency 1`` and is then deterministic; with
  more slots in flight, which requests share a batch depends on timing, and a sampled answer may
  differ in its last digits of probability, hence sometimes in a token.
* The binary is found as :func:`llama_server_binary` says; its ``--version`` is part of the cache
  identity (:meth:`LocalLLMServer.model_id`), since another llama.cpp build may answer differently.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Self

from ...cache import default_cache_dir
from ...environment import LLAMA_REPACK, LLAMA_SERVER, LLAMA_SLOTS, LLM_SERVERS, LLM_THREADS
from ...errors import BakeoffError
from ...models.gguf import LocalModel
from ...net import HttpClient, HttpError
from .client import LLMConfig

__all__ = ["DEFAULT_SLOTS", "LocalLLMServer", "default_servers", "default_slots",
           "default_threads", "free_port", "gemma_model_path", "llama_server_binary", "llama_server_version"]

log = logging.getLogger("bakeoff")

#: Parallel slots of each server (requests decoded together in one batch); ``$BAKEOFF_LLAMA_SLOTS`` overrides.
DEFAULT_SLOTS = LLAMA_SLOTS.fallback

#: Upper bound of :func:`default_servers`.
MAX_DEFAULT_SERVERS = 4
MAX_SLOTS = 64

#: Tokens of context per slot.
DEFAULT_N_CTX = 4096


def default_slots() -> int:
    """``$BAKEOFF_LLAMA_SLOTS`` when set, else :data:`DEFAULT_SLOTS`."""
    return LLAMA_SLOTS.get()


def _usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def default_servers() -> int:
    """``$BAKEOFF_LLM_SERVERS`` when set, else one server per CPU this process may use, at most
    :data:`MAX_DEFAULT_SERVERS`."""
    chosen = LLM_SERVERS.get()
    return chosen if chosen is not None else max(1, min(MAX_DEFAULT_SERVERS, _usable_cpus()))


def default_threads() -> int:
    """``$BAKEOFF_LLM_THREADS`` when set, else 1 (threads of each server; see the module docstring)."""
    return LLM_THREADS.get()


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gemma_model_path(folder: Path | None = None) -> Path:
    """Assemble (first time) and return the Gemma 3 270M GGUF file; sha256-verified by the package."""
    from ...models.gguf import gemma_path

    return gemma_path(folder or default_cache_dir() / "models")


_INSTALL_HINT = ("install llama.cpp's server: `make llama-server` in a bakeoff checkout (builds it from the "
                 "llama.cpp sources llama-cpp-python ships), a llama.cpp release or package (e.g. "
                 "`brew install llama.cpp`), or set BAKEOFF_LLAMA_SERVER=/path/to/llama-server")


def llama_server_binary() -> Path:
    """The ``llama-server`` executable: ``$BAKEOFF_LLAMA_SERVER``, else the one beside this Python
    (``<prefix>/bin``, where ``make llama-server`` installs it), else the first on ``PATH``."""
    chosen = LLAMA_SERVER.get()
    if chosen is not None:
        path = chosen.expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise BakeoffError(f"{LLAMA_SERVER.name}={chosen}: not an executable file")
        return path
    beside = Path(sys.prefix) / "bin" / "llama-server"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("llama-server")
    if found:
        return Path(found)
    raise BakeoffError(f"the local LLM needs llama-server, which was not found: {_INSTALL_HINT}")


@functools.lru_cache(maxsize=8)
def llama_server_version(binary: Path) -> str:
    """The ``version:`` line of ``llama-server --version`` as one token, e.g. ``0.5.0-dev-build-1-commit-0c1e570``."""
    try:
        proc = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False)
    except OSError as exc:
        raise BakeoffError(f"cannot run {binary}: {exc.strerror or exc}") from None
    m = re.search(r"^version:\s*(\S.*)$", proc.stdout + proc.stderr, flags=re.MULTILINE)
    if m is None:
        raise BakeoffError(f"{binary} --version did not print a llama.cpp version: "
                           f"{(proc.stdout + proc.stderr).strip()[:200]!r}")
    return re.sub(r"[^\w.]+", "-", m.group(1)).strip("-")


def with_parent_death_signal(cmd: list[str]) -> list[str]:
    """``cmd`` run under util-linux's ``setpriv --pdeathsig TERM``: Linux sends the server SIGTERM when the thread
    that started it ends, so a parent killed with SIGKILL leaves no server behind (``cmd`` itself where setpriv
    is missing: the servers are then stopped by :meth:`LocalLLMServer.stop` and at exit only).

    Not a ``preexec_fn``: with one, CPython starts the child with ``fork()`` rather than ``vfork()``, and fork runs
    OpenBLAS's at-fork handler, which shuts down its thread pool under any thread that is inside a BLAS call at
    that moment; that thread then waits for its workers forever (the answerability model, loading in a background
    thread while the servers start, hung ``bakeoff demo`` this way)."""
    setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    return [setpriv, "--pdeathsig", "TERM", "--", *cmd] if setpriv else cmd


class LocalLLMServer:
    """One ``llama-server`` process for a local GGUF model on a free loopback port (module docstring).

    ``model`` is the model (default: :func:`~bakeoff.models.gguf.resolve_local_model` of ``""``, the
    default of ``--llm local``, resolved when the servers start); ``servers`` the number of server
    processes (default :func:`default_servers`); ``slots`` the parallel slots of each (default
    :func:`default_slots`); the client's ``concurrency`` is ``servers * slots``; ``n_ctx`` the context
    per slot; ``n_threads`` the CPU threads of each server (default :func:`default_threads`); ``batch_size``
    llama.cpp's logical and physical batch (``--batch-size``/``--ubatch-size``; default llama.cpp's own).
    ``port``/``proc`` are the first server's, ``ports``/``procs`` all of them.
    """

    def __init__(self, *, model: LocalModel | None = None, servers: int | None = None, slots: int | None = None,
                 n_ctx: int = DEFAULT_N_CTX, n_threads: int | None = None, startup_timeout_s: float = 180.0,
                 batch_size: int | None = None) -> None:
        self.model = model
        self.servers = default_servers() if servers is None else servers
        if self.servers < 1:
            raise BakeoffError(f"the local LLM needs at least one server, got {self.servers}")
        self.slots = default_slots() if slots is None else slots
        if not 1 <= self.slots <= MAX_SLOTS:
            raise BakeoffError(f"the local LLM serves 1..{MAX_SLOTS} parallel requests per server, got {self.slots}")
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.batch_size = batch_size
        self.startup_timeout_s = startup_timeout_s
        self.binary: Path | None = None
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
    def base_urls(self) -> list[str]:
        if not self.ports:
            raise RuntimeError("server not started")
        return [f"http://127.0.0.1:{p}/v1" for p in self.ports]

    @property
    def base_url(self) -> str:
        return self.base_urls[0]

    def _model(self) -> LocalModel:
        if self.model is None:
            from ...models.gguf import resolve_local_model

            self.model = resolve_local_model("")
        return self.model

    @property
    def name(self) -> str:
        return self._model().name

    @property
    def prompt_style(self) -> str:
        return self._model().prompt_style

    def model_id(self) -> str:
        """Cache identity: the model and the llama.cpp build (either changes answers)."""
        binary = self.binary or llama_server_binary()
        repack = "repack" if LLAMA_REPACK.get() else "norepack"
        return f"{self._model().identity}@llama.cpp-{llama_server_version(binary)}+{repack}"

    def config(self, **overrides: Any) -> LLMConfig:
        """An :class:`LLMConfig` for these servers: one request per slot in flight."""
        opts: dict[str, Any] = {"base_url": self.base_url, "replicas": tuple(self.base_urls[1:]), "model": self.name,
                                "concurrency": self.servers * self.slots,
                                "response_format": "json_schema", "prompt_style": self.prompt_style,
                                "model_id": self.model_id(), "timeout_s": 600.0, "max_retries": 2,
                                "llama_cpp_sampling": True}
        opts.update(overrides)
        return LLMConfig(**opts)

    def command(self, path: Path, port: int) -> list[str]:
        """The ``llama-server`` command line."""
        assert self.binary is not None
        cmd = [str(self.binary), "--model", str(path), "--host", "127.0.0.1", "--port", str(port),
               "--parallel", str(self.slots), "--ctx-size", str(self.n_ctx * self.slots),
               "--threads", str(self.n_threads), "--threads-batch", str(self.n_threads),
               "--no-webui", "--log-verbosity", "2"]
        if self.batch_size is not None:
            cmd += ["--batch-size", str(self.batch_size), "--ubatch-size", str(self.batch_size)]
        if not LLAMA_REPACK.get():
            cmd.append("--no-repack")
        if self.prompt_style == "chat":
            cmd.append("--jinja")
        return cmd

    def start(self) -> Self:
        """Start the servers (all at once) and wait until each answers; on failure none is left running."""
        self.binary = llama_server_binary()
        llama_server_version(self.binary)  # an unusable binary fails here, in one line
        path = self._model().path
        try:
            for _ in range(self.servers):
                port = free_port()
                self._logs.append(tempfile.TemporaryFile())  # noqa: SIM115 - closed in stop()
                self.ports.append(port)
                self.procs.append(subprocess.Popen(with_parent_death_signal(self.command(path, port)),
                                                   stdout=self._logs[-1], stderr=subprocess.STDOUT,
                                                   stdin=subprocess.DEVNULL))
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        log.debug("llama-server on %s (pids %s)", self.base_urls, [p.pid for p in self.procs])
        return self

    def _tail(self, i: int) -> str:
        self._logs[i].seek(0)
        lines = [ln for ln in self._logs[i].read().decode("utf-8", "replace").strip().splitlines() if ln.strip()]
        errors = [ln for ln in lines if "error" in ln.lower()]
        return (errors or lines or [""])[-1].strip()

    def _wait_ready(self) -> None:
        probe = HttpClient(timeout=2.0, retries=0)  # one try per poll: this loop is the retry (it watches the process)
        deadline = time.monotonic() + self.startup_timeout_s
        waiting = set(range(len(self.procs)))
        try:
            while waiting and time.monotonic() < deadline:
                for i in sorted(waiting):
                    if self.procs[i].poll() is not None:
                        raise BakeoffError(f"llama-server exited during startup: {self._tail(i)}")
                    try:
                        if probe.request("GET", f"http://127.0.0.1:{self.ports[i]}/health").status_code == 200:
                            waiting.discard(i)
                    except HttpError:
                        pass  # refused while starting, 503 while the model loads
                if waiting:
                    time.sleep(0.05)
        finally:
            probe.close()
        if waiting:
            raise BakeoffError(f"llama-server not ready after {self.startup_timeout_s:.0f}s: {self._tail(min(waiting))}")

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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
