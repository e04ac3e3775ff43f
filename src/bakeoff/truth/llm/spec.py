"""What ``--llm`` (and ``--pool-llm``, ``--specificity``, ``assess --llm``) names, parsed once.

The text forms, each parsed by :meth:`LLMSpec.parse` into one frozen value that the rest of the code passes on:

* ``local`` — the default bundled model, served by ``llama-server`` on loopback (:mod:`bakeoff.truth.llm.local_server`);
* ``local:NAME`` or ``local:PATH.gguf`` — another bundled model or a GGUF file
  (:func:`bakeoff.models.gguf.resolve_local_model`);
* ``openai:<model>`` — the OpenAI API (key ``$OPENAI_API_KEY``, base ``$OPENAI_BASE_URL`` or the public API);
* ``ollama:<model>`` — an ollama server at ``$OLLAMA_HOST`` (default ``http://127.0.0.1:11434``), no key;
* ``http(s)://host:port/v1|<model>`` — any OpenAI-compatible server.

``str(spec)`` gives the text back (the form recorded in provenance and calibration records). The environment
is read when a client is configured (:meth:`LLMSpec.config`), not when the text is parsed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ...environment import OLLAMA_HOST, OPENAI_API_KEY, OPENAI_BASE_URL
from ...errors import ConfigError

if TYPE_CHECKING:
    from ...models.gguf import LocalModel
    from .client import LLMConfig

__all__ = ["LLMKind", "LLMSpec"]

LLMKind = Literal["local", "openai", "ollama", "url"]


@dataclass(frozen=True)
class LLMSpec:
    """A parsed ``--llm``: ``kind``; ``model`` (``local``: a bundled model's name or a GGUF path, ``""`` for the
    default; otherwise the served model's name); ``base_url`` (``url`` only)."""

    kind: LLMKind
    model: str = ""
    base_url: str | None = None

    @classmethod
    def parse(cls, text: str, *, option: str = "--llm") -> LLMSpec:
        """The spec ``text`` names, or one :class:`~bakeoff.errors.ConfigError` naming ``option`` and the forms."""
        kind, _, model = text.partition(":")
        if kind == "local":
            return cls("local", model)
        if kind == "openai" and model:
            return cls("openai", model)
        if kind == "ollama" and model:
            return cls("ollama", model)
        if text.startswith(("http://", "https://")) and "|" in text:
            base, _, model = text.partition("|")
            if model:
                return cls("url", model, base_url=base)
        raise ConfigError(f"{option} must be local[:NAME|PATH.gguf], openai:<model>, ollama:<model> or "
                          f"<base_url>|<model>, got {text!r}")

    @classmethod
    def of(cls, value: LLMSpec | str, *, option: str = "--llm") -> LLMSpec:
        """``value`` itself, or parsed (:meth:`parse`) when it is text: for the Python API's callers."""
        return value if isinstance(value, LLMSpec) else cls.parse(value, option=option)

    def __str__(self) -> str:
        if self.kind == "url":
            return f"{self.base_url}|{self.model}"
        return f"{self.kind}:{self.model}" if self.model else self.kind

    @property
    def is_local(self) -> bool:
        """Served here, from a GGUF file (``local`` and ``local:…``)."""
        return self.kind == "local"

    def local_model(self) -> LocalModel:
        """The GGUF model of a local spec (:func:`bakeoff.models.gguf.resolve_local_model`)."""
        if not self.is_local:
            raise ConfigError(f"{self} is not a local model")
        from ...models.gguf import resolve_local_model

        return resolve_local_model(self.model)

    def config(self, **overrides: Any) -> LLMConfig:
        """The client configuration of a remote spec (``local`` is configured by the server it starts,
        :meth:`bakeoff.truth.llm.local_server.LocalLLMServer.config`)."""
        from .client import LLMConfig

        if self.kind == "openai":
            base = OPENAI_BASE_URL.get() or "https://api.openai.com/v1"
            return LLMConfig(base_url=base, model=self.model, api_key_env=OPENAI_API_KEY.name, **overrides)
        if self.kind == "ollama":
            host = OLLAMA_HOST.get().rstrip("/")
            if not host.startswith("http"):
                host = "http://" + host
            return LLMConfig(base_url=host + "/v1", model=self.model, **{"concurrency": 1, **overrides})
        if self.kind == "url":
            assert self.base_url is not None
            return LLMConfig(base_url=self.base_url, model=self.model, **overrides)
        raise ConfigError(f"{self} is served by llama-server here: open it with bakeoff.truth.llm.open.open_llm")
