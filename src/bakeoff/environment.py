"""Every environment variable bakeoff reads: declared once, here, and read here, when asked.

A :class:`Variable` has a ``name``, what it ``takes`` (its type, in words), its ``default`` (in words:
what holds when it is unset or blank) and its ``meaning``; :data:`VARIABLES` lists them all, and the
docs' environment page shows the same table (a test compares them). ``variable.get()`` reads the
environment at the moment it is called (importing this module, or any other, reads nothing): the value
parsed, with surrounding whitespace ignored, or the variable's ``fallback`` when it is unset or blank.
A fallback of ``None`` means the caller computes the default (one per usable core, a quarter of memory,
the ``llama-server`` beside the interpreter ...), as its own docstring says. A value that does not parse
is one :class:`~bakeoff.errors.ConfigError` line naming the variable and what it takes.

**Secrets.** An API key is read by :func:`read_secret` from the variable a caller names
(``OPENAI_API_KEY``, or any name given to an ``api_key_env=`` option), at request time; it is returned,
never stored, logged, or put in an error message. :data:`OPENAI_API_KEY` is declared for its name and
its line in the docs; nothing reads it through :meth:`Variable.get`.

**Not read here, on purpose.** :mod:`bakeoff.stdlib_corpus` hands its whole environment to the
subprocess that lists the standard library (it reads no variable), and
:func:`bakeoff.progress.library_bars_off` *sets* the libraries' own progress-bar switches
(``HF_HUB_DISABLE_PROGRESS_BARS``, ``TQDM_DISABLE``). Variables that only the libraries under bakeoff
read (``HF_HUB_OFFLINE``, psycopg's ``PG*``, Ray's own ...) are passed through untouched and are listed
on the docs page, not here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from .errors import ConfigError

__all__ = [
    "ATEN_CPU_CAPABILITY", "CACHE_DIR", "GROUPS", "LLAMA_REPACK", "LLAMA_SERVER", "LLAMA_SLOTS", "LLM_SERVERS",
    "LLM_THREADS", "OLLAMA_HOST", "OPENAI_API_KEY", "OPENAI_BASE_URL", "PGDATA", "PG_SHARED_BUFFERS_MB",
    "PROGRESS_INTERVAL", "RAY_ADDRESS", "VARIABLES", "XDG_CACHE_HOME", "Variable", "read_secret",
]

T = TypeVar("T")

#: The groups of :data:`VARIABLES`, in the docs page's order.
GROUPS = ("Caches and progress", "Local LLM (llama.cpp)", "Remote models and services", "PostgreSQL arms",
          "Libraries")


@dataclass(frozen=True)
class Variable(Generic[T]):
    """One environment variable (see the module docstring).

    ``parse`` turns the stripped text into the value and raises ``ValueError`` when it cannot;
    ``fallback`` is the value when the variable is unset or blank.
    """

    name: str
    takes: str
    default: str
    meaning: str
    group: str
    parse: Callable[[str], T]
    fallback: T
    secret: bool = False

    def get(self) -> T:
        """The value now: parsed, or :attr:`fallback` when unset or blank; a value that does not parse is a
        one-line :class:`~bakeoff.errors.ConfigError` naming the variable (never quoting a secret)."""
        raw = os.environ.get(self.name, "").strip()
        if not raw:
            return self.fallback
        try:
            return self.parse(raw)
        except ValueError:
            got = "" if self.secret else f", got {raw!r}"
            raise ConfigError(f"{self.name} must be {self.takes}{got}") from None


def read_secret(name: str) -> str | None:
    """The value of the variable ``name`` (an API key) now, ``None`` when unset or empty. The caller
    sends it and drops it: it is never stored, logged or quoted."""
    return os.environ.get(name) or None


# -- parsers: each raises ValueError on text it does not take ---------------------------------------


def _text(raw: str) -> str:
    return raw


def _whole(*, low: int = 1, high: int | None = None) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        if not raw.isdigit() or int(raw) < low or (high is not None and int(raw) > high):
            raise ValueError(raw)
        return int(raw)

    return parse


def _seconds(raw: str) -> float:
    return max(0.0, float(raw))


def _flag(raw: str) -> bool:
    if raw not in ("0", "1"):
        raise ValueError(raw)
    return raw == "1"


def _megabytes(raw: str) -> int:
    return max(16, _whole(low=0)(raw))


# -- the variables ----------------------------------------------------------------------------------

CACHE_DIR: Variable[Path | None] = Variable(
    "BAKEOFF_CACHE_DIR", "a folder", "`$XDG_CACHE_HOME/bakeoff`, else `~/.cache/bakeoff`",
    "the content-keyed cache of runs, encodings, models and LLM answers (`--cache-dir` overrides it per command)",
    "Caches and progress", Path, None)
XDG_CACHE_HOME: Variable[Path | None] = Variable(
    "XDG_CACHE_HOME", "a folder", "`~/.cache`",
    "where user caches live (the XDG convention): the default cache is its `bakeoff` folder",
    "Caches and progress", Path, None)
PROGRESS_INTERVAL: Variable[float] = Variable(
    "BAKEOFF_PROGRESS_INTERVAL", "a number of seconds", "`30`",
    "seconds between progress lines when the output is not a terminal (a CI log); below 0 counts as 0",
    "Caches and progress", _seconds, 30.0)

LLAMA_SERVER: Variable[Path | None] = Variable(
    "BAKEOFF_LLAMA_SERVER", "an executable file", "the `llama-server` beside the Python interpreter, else on `PATH`",
    "the llama.cpp server executable that `--llm local` starts",
    "Local LLM (llama.cpp)", Path, None)
LLM_SERVERS: Variable[int | None] = Variable(
    "BAKEOFF_LLM_SERVERS", "a positive integer", "one per usable core, at most 4",
    "llama-server processes started by `--llm local`, and the worker processes that score query likelihood "
    "in-process", "Local LLM (llama.cpp)", _whole(), None)
LLAMA_SLOTS: Variable[int] = Variable(
    "BAKEOFF_LLAMA_SLOTS", "a positive integer in 1..64", "`2`",
    "parallel slots of each server (requests decoded together in one batch)",
    "Local LLM (llama.cpp)", _whole(high=64), 2)
LLM_THREADS: Variable[int] = Variable(
    "BAKEOFF_LLM_THREADS", "a positive integer", "`1`",
    "threads of each server, and of in-process query likelihood; more than one collapses under load",
    "Local LLM (llama.cpp)", _whole(), 1)
LLAMA_REPACK: Variable[bool] = Variable(
    "BAKEOFF_LLAMA_REPACK", "1 or 0", "`0`",
    "`1` turns llama.cpp's weight repacking back on (off by default: the numeric path the cached answers were "
    "made with)", "Local LLM (llama.cpp)", _flag, False)

OPENAI_API_KEY: Variable[str | None] = Variable(
    "OPENAI_API_KEY", "a key", "unset",
    "the API key of `--llm openai:…` and `openai:` encoders, read when a request is sent (never written to logs, "
    "caches or reports)", "Remote models and services", _text, None, secret=True)
OPENAI_BASE_URL: Variable[str | None] = Variable(
    "OPENAI_BASE_URL", "a URL", "the public API, `https://api.openai.com/v1`",
    "an OpenAI-compatible endpoint for `--llm openai:…` and `openai:` encoders",
    "Remote models and services", _text, None)
OLLAMA_HOST: Variable[str] = Variable(
    "OLLAMA_HOST", "a URL or host:port", "`http://127.0.0.1:11434`",
    "the Ollama server of `--llm ollama:…`",
    "Remote models and services", _text, "http://127.0.0.1:11434")
RAY_ADDRESS: Variable[str | None] = Variable(
    "RAY_ADDRESS", "a Ray address", "a local cluster",
    "the Ray cluster `--engine ray` joins",
    "Remote models and services", _text, None)

PGDATA: Variable[Path | None] = Variable(
    "BAKEOFF_PGDATA", "a folder", "`<cache>/pgserver` (as root `/var/tmp/bakeoff-pgserver`)",
    "the data folder of the embedded PostgreSQL server",
    "PostgreSQL arms", Path, None)
PG_SHARED_BUFFERS_MB: Variable[int | None] = Variable(
    "BAKEOFF_PG_SHARED_BUFFERS_MB", "a whole number of megabytes", "a quarter of memory, 128 MB..2 GB",
    "the embedded server's `shared_buffers` (16 MB at least)",
    "PostgreSQL arms", _megabytes, None)

ATEN_CPU_CAPABILITY: Variable[str] = Variable(
    "ATEN_CPU_CAPABILITY", "torch's kernel level (`avx2`, `avx512` ...)", "unset: the best the CPU has",
    "torch's own switch, read (never set) because bf16 results depend on the kernels torch runs",
    "Libraries", _text, "")

#: Every variable above, in the docs page's order.
VARIABLES: tuple[Variable[Any], ...] = (
    CACHE_DIR, XDG_CACHE_HOME, PROGRESS_INTERVAL,
    LLAMA_SERVER, LLM_SERVERS, LLAMA_SLOTS, LLM_THREADS, LLAMA_REPACK,
    OPENAI_API_KEY, OPENAI_BASE_URL, OLLAMA_HOST, RAY_ADDRESS,
    PGDATA, PG_SHARED_BUFFERS_MB,
    ATEN_CPU_CAPABILITY,
)
