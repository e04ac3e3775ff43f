"""Embedder instructions: the text prepended to queries and documents before encoding.

Many retrieval embedders are trained with an instruction on one or both sides and score
far lower without it (e5 ``"query: "``/``"passage: "``, nomic ``"search_query: "``,
Qwen3-Embedding ``"Instruct: ...\\nQuery:"``; mteb#1227 reports 0.39 vs 0.86). This module
decides, once per encoder, the **query prompt** and the **document prompt**.

Resolution, for each side independently (the first rule that gives a value wins):

1. an explicit prompt (``query_prompt=`` / ``doc_prompt=``; the older ``prefix_query=`` /
   ``prefix_doc=`` are the same options). An explicit empty string means "no prompt".
2. a prompt named in the model's own sentence-transformers configuration
   (``prompt_name=`` for queries, ``doc_prompt_name=`` for documents), read from
   ``config_sentence_transformers.json`` (keys ``prompts`` and ``default_prompt_name``);
   an unknown name is a :class:`~bakeoff.errors.ConfigError` listing the known ones.
3. ``prompts=`` (``auto`` by default):

   * ``auto``: the model's configuration, with sentence-transformers' own rules --
     queries use the prompt named ``query``, documents the first of ``document``,
     ``passage``, ``corpus`` (as ``encode_query`` / ``encode_document`` do), either
     side falling back to ``default_prompt_name``'s prompt; when the configuration
     gives no prompt for a side, the family preset matched by the model's name
     (:data:`FAMILIES`); otherwise none.
   * ``none`` (or ``off``, the spelling the CLI keeps: ``--arm dense:prompts=off``): no
     prompts (a model known to need one then gets a warning).
   * a family name (``e5``, ``bge``, ``nomic`` ...): that preset, whatever the model.

The resolved prompts are recorded in the encoder's identity (``prefix_query`` /
``prefix_doc``), so they are part of every embedding cache key: a changed prompt never
reuses vectors computed with another. :func:`instruction_warning` is the sentence logged
when a model whose family needs an instruction runs without its query prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...errors import ConfigError

__all__ = ["FAMILIES", "Family", "Prompts", "config_prompts", "instruction_warning", "match_family",
           "resolve_prompts"]

_WEB_SEARCH = "Given a web search query, retrieve relevant passages that answer the query"
_REPRESENT = "Represent this sentence for searching relevant passages: "


@dataclass(frozen=True)
class Family:
    """An instruction family: which model names it covers and the prompts its model cards prescribe.

    ``pattern`` is a case-insensitive regular expression searched in the model name (hub id
    or folder path); ``needs_instruction`` is True when the model card says queries must
    carry the instruction (a warning is logged when they do not).
    """

    name: str
    pattern: str
    query: str
    doc: str
    needs_instruction: bool
    source: str

    def matches(self, model_name: str) -> bool:
        return re.search(self.pattern, model_name, flags=re.IGNORECASE) is not None


#: Presets, most specific first (the first match wins). Prompts as in each model card /
#: its ``config_sentence_transformers.json``.
FAMILIES: tuple[Family, ...] = (
    Family("qwen3", r"qwen3-embedding", f"Instruct: {_WEB_SEARCH}\nQuery:", "", True,
           "Qwen/Qwen3-Embedding-* config_sentence_transformers.json"),
    Family("gte-qwen", r"gte-qwen", f"Instruct: {_WEB_SEARCH}\nQuery: ", "", True,
           "Alibaba-NLP/gte-Qwen2-*-instruct model card"),
    Family("e5-instruct", r"e5-mistral|e5-[a-z]+-instruct", f"Instruct: {_WEB_SEARCH}\nQuery: ", "", True,
           "intfloat/e5-mistral-7b-instruct, multilingual-e5-large-instruct model cards"),
    Family("e5", r"(^|[/_\-])(multilingual-)?e5-(small|base|large)", "query: ", "passage: ", True,
           "intfloat/e5-* model cards"),
    Family("bge-m3", r"bge-m3", "", "", False, "BAAI/bge-m3 model card (no instruction)"),
    Family("bge-zh", r"bge-[a-z]+-zh", "为这个句子生成表示以用于检索相关文章：", "", True,
           "BAAI/bge-*-zh model cards"),
    Family("bge", r"bge-(small|base|large)-en", _REPRESENT, "", True, "BAAI/bge-*-en(-v1.5) model cards"),
    Family("nomic", r"nomic-embed-text", "search_query: ", "search_document: ", True,
           "nomic-ai/nomic-embed-text-* model cards"),
    Family("arctic-v2", r"arctic-embed-[a-z]+-v2", "query: ", "", True,
           "Snowflake/snowflake-arctic-embed-*-v2.0 model cards"),
    Family("arctic", r"arctic-embed", _REPRESENT, "", True, "Snowflake/snowflake-arctic-embed-* model cards"),
    Family("mxbai", r"mxbai-embed", _REPRESENT, "", True, "mixedbread-ai/mxbai-embed-large-v1 model card"),
    Family("gte", r"(^|[/_\-])gte-", "", "", False, "thenlper/gte-*, Alibaba-NLP/gte-* model cards (no instruction)"),
)

_PRESETS = {f.name: f for f in FAMILIES}
#: ``prompts=`` values besides the family names (``off`` is a synonym of ``none``).
MODES = ("auto", "none", "off")
_DOC_NAMES = ("document", "passage", "corpus")


@dataclass(frozen=True)
class Prompts:
    """The resolved prompts and where each came from (for logs and reports)."""

    query: str
    doc: str
    query_source: str
    doc_source: str
    family: str | None = None


def match_family(model_name: str | None) -> Family | None:
    """The first :data:`FAMILIES` entry whose pattern matches ``model_name`` (None if none does)."""
    if not model_name:
        return None
    return next((f for f in FAMILIES if f.matches(model_name)), None)


def config_prompts(folder: Path | None) -> tuple[dict[str, str], str | None]:
    """``(prompts, default_prompt_name)`` from ``folder/config_sentence_transformers.json``
    (empty and ``None`` when the folder or the file or the keys are absent)."""
    if folder is None:
        return {}, None
    path = Path(folder) / "config_sentence_transformers.json"
    if not path.is_file():
        return {}, None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})".splitlines()[0]) from None
    prompts = raw.get("prompts") if isinstance(raw, Mapping) else None
    if prompts is not None and not (isinstance(prompts, Mapping)
                                    and all(isinstance(v, str) for v in prompts.values())):
        raise ConfigError(f"{path}: field 'prompts' must map names to strings")
    default = raw.get("default_prompt_name") if isinstance(raw, Mapping) else None
    return {str(k): str(v) for k, v in (prompts or {}).items()}, (None if default is None else str(default))


def _named(prompts: Mapping[str, str], name: str, option: str, model: str) -> str:
    if name not in prompts:
        known = ", ".join(sorted(prompts)) or "none"
        raise ConfigError(f"dense {option}={name!r}: model {model!r} defines no such prompt (its prompts: {known})")
    return prompts[name]


def resolve_prompts(
    model_name: str | None,
    folder: Path | None,
    *,
    query_prompt: str | None = None,
    doc_prompt: str | None = None,
    prompt_name: str | None = None,
    doc_prompt_name: str | None = None,
    prompts: str | None = None,
) -> Prompts:
    """The query and document prompts of a model (rules in the module docstring).

    ``model_name`` is matched against the family presets; ``folder`` holds the model's
    files (``None`` for API models or hub models not downloaded: only presets apply).
    """
    mode = "auto" if prompts is None else str(prompts).strip().lower()
    mode = "none" if mode in ("off", "false", "no") else mode
    if mode not in MODES and mode not in _PRESETS:
        raise ConfigError(f"dense prompts must be one of {', '.join((*MODES, *_PRESETS))}, got {prompts!r}")
    name = model_name or ""
    cfg, default = config_prompts(folder)
    family = match_family(name)

    def side(explicit: str | None, named: str | None, option: str, candidates: tuple[str, ...]) -> tuple[str, str]:
        if explicit is not None:
            return explicit, "explicit"
        if named is not None:
            return _named(cfg, named, option, name), f"model config prompt {named!r}"
        if mode == "none":
            return "", "none"
        if mode in _PRESETS:
            fam = _PRESETS[mode]
            return (fam.query if option == "prompt_name" else fam.doc), f"preset {fam.name}"
        if cfg:  # auto: sentence-transformers' own rules
            for cand in candidates:
                if cand in cfg:
                    return cfg[cand], f"model config prompt {cand!r}"
            if default is not None and default in cfg:
                return cfg[default], f"model config default prompt {default!r}"
        if family is not None:
            return (family.query if option == "prompt_name" else family.doc), f"preset {family.name}"
        return "", "none"

    q, q_src = side(query_prompt, prompt_name, "prompt_name", ("query",))
    d, d_src = side(doc_prompt, doc_prompt_name, "doc_prompt_name", _DOC_NAMES)
    fam_name = mode if mode in _PRESETS else (family.name if family is not None else None)
    return Prompts(q, d, q_src, d_src, fam_name)


def instruction_warning(model_name: str | None, resolved: Prompts) -> str | None:
    """A one-line warning when ``model_name`` belongs to a family that needs a query
    instruction and ``resolved`` has none; ``None`` otherwise."""
    family = match_family(model_name)
    if family is None or not family.needs_instruction or resolved.query:
        return None
    want = family.query.replace("\n", "\\n")
    return (f"dense model {model_name!r} ({family.name} family) expects the query instruction {want!r} but runs "
            f"without one ({resolved.query_source}); scores may be far lower -- use prompts=auto or "
            f"query_prompt=... ({family.source})")
