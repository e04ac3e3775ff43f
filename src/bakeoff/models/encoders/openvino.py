"""Fast CPU mode: the bi-encoder's transformer compiled by OpenVINO (bf16 on AMX CPUs).

``backend="openvino"`` converts the sentence-transformers model's first module
(the Hugging Face transformer that outputs token states) to an OpenVINO model
once per machine (a trace, ~3 s for MiniLM; the IR is cached across processes under the
bakeoff cache folder, keyed by the weights' sha256 and the OpenVINO version) and compiles it for the CPU in
bfloat16 (or fp32) with one single-threaded stream per core
(:mod:`bakeoff.models._openvino`). OpenVINO falls back to fp32 on CPUs without
bf16 units, so the identity records the CPU capability.

**Documents** go through OpenVINO: tokenised by the model's own
``preprocess`` (identical ids, truncation and padding to sentence-transformers),
sorted by token count within each call and cut into batches of
``batch_size`` (padding waste ~0.2 % on SciFact, vs ~4 % when sorting by
characters); the token states come back as float32 and the model's remaining
modules (pooling, normalisation, dense layers) run in PyTorch fp32, so any
sentence-transformers pipeline keeps its own pooling. Each batch is pooled as
soon as its states arrive (while the streams compute the next batches), so only
the in-flight batches' token states are held, not the whole call's. **Queries stay on the
exact fp32 PyTorch path** (:class:`~.st.SentenceTransformerEncoder`), share its
cache entries and are bit-identical to the ``dense`` fp32 arm's, for the same
reason as the torch bf16 mode: they are a sliver of the work and rounding one
side of each dot product halves the error.

Each batch's result depends only on its texts (batches are formed from the
call's texts alone, and each stream computes a batch by itself), so encodes
are deterministic and a checkpointed resume equals an uninterrupted run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import ConfigError
from ...library_versions import version_of
from .._openvino import (
    OV_PRECISIONS,
    compile_module,
    import_openvino,
    infer_unordered,
    output_module,
    token_count_order,
)
from ..cpu import cpu_capability
from .base import TextKind, apply_prefix, check_kind, l2_normalise
from .st import SentenceTransformerEncoder

__all__ = ["OpenVinoEncoder"]

_PURPOSE = "dense backend=openvino"


class OpenVinoEncoder:
    """Documents through OpenVINO, queries through the exact fp32 sentence-transformers path."""
    code_version = "1"  # bump when this encoder's vectors change (part of identity(), so of cache keys)

    def __init__(
        self,
        *,
        model: str | None = None,
        prefix_query: str = "",
        prefix_doc: str = "",
        max_seq_length: int | None = None,
        precision: str = "bf16",
        streams: int | None = None,
    ) -> None:
        if precision not in OV_PRECISIONS:
            raise ConfigError(f"backend=openvino precision must be one of {', '.join(OV_PRECISIONS)}, "
                              f"got {precision!r}")
        if streams is not None and int(streams) < 1:
            raise ConfigError(f"backend=openvino streams must be >= 1, got {streams}")
        self.precision = precision
        self.streams = None if streams is None else int(streams)
        self._st = SentenceTransformerEncoder(model=model, prefix_query=prefix_query, prefix_doc=prefix_doc,
                                              max_seq_length=max_seq_length, precision="fp32")
        self.name = self._st.name
        self.prefix_query, self.prefix_doc = self._st.prefix_query, self._st.prefix_doc
        self.max_seq_length = self._st.max_seq_length
        self._compiled: Any = None
        self._inputs: tuple[str, ...] = ()

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the loaded model or the compiled graph (a Ray actor rebuilds both)."""
        import copy

        state = self.__dict__.copy()
        state["_compiled"] = None
        state["_st"] = copy.copy(self._st)
        state["_st"]._model = None
        return state

    # identity ---------------------------------------------------------------
    def identity(self, *, kind: TextKind | None = None) -> dict[str, Any]:
        """Query identity = the fp32 encoder's (shared cache); documents add backend, precision, CPU."""
        if kind == "query":
            return self._st.identity(kind="query")
        ident: dict[str, Any] = {"encoder": "openvino", "model": self.name, "weights": self._st.weights(),
                                 "max_seq_length": self.max_seq_length, "normalize": True,
                                 "precision": self.precision, "openvino": version_of("openvino"),
                                 "cpu_capability": cpu_capability(), "prefix_doc": self.prefix_doc}
        ident["code_version"] = self.code_version
        if kind is None:
            ident.update(query_precision="fp32", prefix_query=self.prefix_query,
                         query_code_version=self._st.code_version)
        return ident

    @property
    def dim(self) -> int:
        return self._st.dim

    # compile ----------------------------------------------------------------
    @staticmethod
    def _features(model: Any, texts: list[str]) -> dict[str, Any]:
        prep = getattr(model, "preprocess", None) or model.tokenize
        return {k: v for k, v in prep(texts).items() if hasattr(v, "shape")}

    def _compile(self) -> Any:
        if self._compiled is None:
            import_openvino(_PURPOSE)  # fail fast, before loading the PyTorch model
            model = self._st._load()
            first = model[0]
            hf_model = getattr(first, "model", None) or getattr(first, "auto_model", None)
            if hf_model is None:
                raise ConfigError(f"backend=openvino: the first module of {self.name!r} is not a transformer")
            example = self._features(model, ["an example sentence", "two"])
            self._inputs = tuple(n for n in ("input_ids", "attention_mask", "token_type_ids") if n in example)
            if self._inputs[:2] != ("input_ids", "attention_mask"):
                raise ConfigError(f"backend=openvino: {self.name!r} does not take input_ids/attention_mask")
            key = {"kind": "encoder-last-hidden-state", "model": self.name, "weights": self._st.weights()}
            self._compiled = compile_module(output_module(hf_model, self._inputs, "last_hidden_state"),
                                            {n: example[n] for n in self._inputs}, precision=self.precision,
                                            streams=self.streams, purpose=_PURPOSE, cache_key=key)
        return self._compiled

    # encoding ---------------------------------------------------------------
    def encode(self, texts: Sequence[str], *, kind: TextKind, batch_size: int = 32) -> np.ndarray:
        check_kind(kind)
        if kind == "query":
            return self._st.encode(texts, kind="query", batch_size=batch_size)
        prefixed = apply_prefix(texts, self.prefix_doc)
        if not prefixed:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        compiled = self._compile()
        model = self._st._load()
        counts = [len(ids) for ids in model.tokenizer([t.strip() for t in prefixed], add_special_tokens=True,
                                                      truncation=True, max_length=model.max_seq_length)["input_ids"]]
        order = token_count_order(counts)
        batches = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
        features = [self._features(model, [prefixed[i] for i in rows]) for rows in batches]
        feeds = [{n: f[n].numpy() for n in self._inputs} for f in features]
        out = np.empty((len(prefixed), self.dim), dtype=np.float32)
        seen = 0
        with torch.inference_mode():  # the model's own pooling / normalisation / dense modules, fp32
            for b, hidden in infer_unordered(compiled, feeds):  # pool each batch while the streams run on
                f = dict(features[b])
                f["token_embeddings"] = torch.from_numpy(np.asarray(hidden, dtype=np.float32))
                for module in list(model)[1:]:
                    f = module(f)
                out[batches[b]] = f["sentence_embedding"].float().numpy()
                seen += 1
        if seen != len(batches):
            raise RuntimeError(f"OpenVINO returned {seen} of {len(batches)} batches")
        return l2_normalise(out)
