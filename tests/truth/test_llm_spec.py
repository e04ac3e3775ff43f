"""``--llm`` parsed once (truth/llm_spec.py): every form, its text back, the one-line refusal, and the client
configuration each remote form gives."""

from __future__ import annotations

import pytest

from bakeoff.errors import ConfigError
from bakeoff.truth.llm.spec import LLMSpec


@pytest.mark.parametrize(("text", "kind", "model", "base_url"), [
    ("local", "local", "", None),
    ("local:gemma-270m", "local", "gemma-270m", None),
    ("local:/models/my model.gguf", "local", "/models/my model.gguf", None),
    ("openai:gpt-5-mini", "openai", "gpt-5-mini", None),
    ("ollama:qwen2.5:7b", "ollama", "qwen2.5:7b", None),
    ("http://127.0.0.1:8080/v1|qwen", "url", "qwen", "http://127.0.0.1:8080/v1"),
    ("https://api.example.org/v1|m:latest", "url", "m:latest", "https://api.example.org/v1"),
])
def test_each_form_parses_and_gives_its_text_back(text, kind, model, base_url) -> None:
    spec = LLMSpec.parse(text)
    assert (spec.kind, spec.model, spec.base_url) == (kind, model, base_url)
    assert str(spec) == text and LLMSpec.parse(str(spec)) == spec
    assert spec.is_local is (kind == "local") and LLMSpec.of(text) == spec and LLMSpec.of(spec) is spec


@pytest.mark.parametrize("text", ["", "gpt-5", "openai:", "ollama:", "http://host/v1", "http://host/v1|", "lokal"])
def test_other_text_is_refused_in_one_line_naming_the_option(text) -> None:
    with pytest.raises(ConfigError) as err:
        LLMSpec.parse(text, option="--pool-llm")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("--pool-llm must be local[:NAME|PATH.gguf], openai:<model>")
    assert repr(text) in msg


def test_remote_configs_read_the_environment_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OLLAMA_HOST", "10.0.0.2:11434")
    openai = LLMSpec.parse("openai:gpt-5-mini").config()
    assert (openai.base_url, openai.model, openai.api_key_env) == ("https://api.openai.com/v1", "gpt-5-mini",
                                                                    "OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert LLMSpec.parse("openai:x").config().base_url == "http://127.0.0.1:9/v1"
    ollama = LLMSpec.parse("ollama:qwen2.5:7b").config()
    assert (ollama.base_url, ollama.model, ollama.concurrency, ollama.api_key_env) == (
        "http://10.0.0.2:11434/v1", "qwen2.5:7b", 1, None)
    assert LLMSpec.parse("ollama:m").config(concurrency=3).concurrency == 3  # --concurrency wins over ollama's 1
    url = LLMSpec.parse("http://127.0.0.1:8080/v1|qwen").config(concurrency=2)
    assert (url.base_url, url.model, url.concurrency) == ("http://127.0.0.1:8080/v1", "qwen", 2)
    with pytest.raises(ConfigError, match="served by llama-server here"):
        LLMSpec.parse("local").config()
    with pytest.raises(ConfigError, match="is not a local model"):
        LLMSpec.parse("openai:x").local_model()


def test_the_default_local_spec_is_the_bundled_default_model() -> None:
    from bakeoff.models.gguf import resolve_local_model

    assert LLMSpec.parse("local").local_model() == resolve_local_model("")
    assert LLMSpec.parse("local:gemma-270m").local_model() == resolve_local_model("gemma-270m")
