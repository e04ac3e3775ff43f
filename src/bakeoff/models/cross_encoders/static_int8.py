"""Static int8 for the OpenVINO cross-encoder: NNCF post-training quantisation, calibrated on the corpus.

``backend=openvino precision=int8`` runs the traced graph (:mod:`.openvino`) with int8 weights
**and** int8 activations in the dense layers, so their products use the CPU's int8 dot-product
units (AVX512-VNNI / AMX-INT8), about twice bf16's multiply-adds per instruction; everything NNCF
leaves unquantised runs in bf16 as in the bf16 mode.

**Quantisation** (:func:`quantize`): ``nncf.quantize`` with ``model_type=TRANSFORMER`` (weights
symmetric per output channel; activations per tensor, scales from the calibration statistics;
SmoothQuant moves activation outliers into the weights; fast bias correction), over
:data:`CALIBRATION_PAIRS` pairs in batches of :data:`CALIBRATION_BATCH`. Kept out of int8
(:func:`ignored_patterns`): the last transformer layer (for a BERT classifier it runs for the
``[CLS]`` token only, so int8 would save almost nothing there and its error reaches the logit
undamped), the pooler and the classification head. Measured on SciFact (BM25 top 20 of 300 test
queries reranked, NDCG@10 against fp32; ``benchmarks/rerank_speed.py --calibration-seeds``): on a
reranker that works (``benchmarks/distill_reranker.py``, fp32 0.7057) five calibration draws moved
NDCG@10 by -0.0005 to +0.0028 (bf16: -0.0017); on the bundled MiniLM with its seeded head, whose scores
are nearly tied, by -0.0019 to -0.0052 (bf16: +0.0000). Pearson correlation with fp32 0.998; about
1.4x bf16's pairs/s (6.6-7.2x fp32's) on an AVX512-VNNI CPU.

**Calibration data** (:func:`calibration_pairs`) come from the corpus being reranked, never from
the queries: the scores of a pair depend on the corpus and the seed, not on which queries share a
call. Pair ``j`` is (the first :data:`QUERY_WORDS` words of document ``a_j``, a document): ``a_j``
itself for even ``j`` (a matching pair) and another document ``b_j`` for odd ``j``; documents are
drawn without replacement with the caller's ``numpy.random.Generator`` (cycling when the corpus
has fewer than ``2 * n`` non-empty documents). :func:`calibration_digest` names them in cache
keys: the quantised IR is cached across processes under the traced model's key plus that digest,
:data:`QUANTIZATION_VERSION` and the NNCF version.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import ConfigError, MissingDependencyError

__all__ = ["CALIBRATION_BATCH", "CALIBRATION_PAIRS", "QUANTIZATION_VERSION", "QUERY_WORDS", "calibration_digest",
           "calibration_pairs", "ignored_patterns", "quantize"]

#: Version of :func:`quantize`'s recipe (bump when the int8 graph changes for the same inputs).
QUANTIZATION_VERSION = "1"
#: Calibration pairs drawn from the corpus.
CALIBRATION_PAIRS = 256
#: Pairs per calibration batch (NNCF sees ``ceil(n / CALIBRATION_BATCH)`` batches).
CALIBRATION_BATCH = 16
#: Words of a document that make a calibration pseudo-query.
QUERY_WORDS = 16

log = logging.getLogger(__name__)


def calibration_pairs(texts: Sequence[str], *, n: int = CALIBRATION_PAIRS,
                      rng: np.random.Generator) -> list[tuple[str, str]]:
    """``n`` (pseudo-query, document) calibration pairs from the documents ``texts`` (module doc)."""
    usable = np.array([i for i, t in enumerate(texts) if t.split()], dtype=np.int64)
    if usable.size == 0:
        raise ConfigError("rerank precision=int8: the corpus has no non-empty document to calibrate on")
    drawn = usable[rng.permutation(usable.size)]
    pairs = []
    for j in range(int(n)):
        a = int(drawn[(2 * j) % drawn.size])
        b = a if j % 2 == 0 else int(drawn[(2 * j + 1) % drawn.size])
        pairs.append((" ".join(texts[a].split()[:QUERY_WORDS]), texts[b]))
    return pairs


def calibration_digest(pairs: Sequence[tuple[str, str]]) -> str:
    """sha256 (first 16 hex digits) of the calibration pairs, in order."""
    return hashlib.sha256(json.dumps([list(p) for p in pairs], ensure_ascii=False).encode()).hexdigest()[:16]


def ignored_patterns(hf_model: Any) -> list[str]:
    """Node-name patterns NNCF leaves in bf16: the last encoder layer, the pooler and the head."""
    layers = getattr(getattr(getattr(hf_model, hf_model.base_model_prefix, hf_model), "encoder", None), "layer", None)
    out = [r".*\.pooler\..*", r".*\.classifier\b.*"]
    if layers is not None and len(layers):
        out.insert(0, rf".*\.encoder\.layer\.{len(layers) - 1}\..*")
    return out


def quantize(model: Any, feeds: Sequence[dict[str, np.ndarray]], *, ignored: Sequence[str]) -> Any:
    """``model`` (an ``openvino.Model``) with int8 dense layers, calibrated on ``feeds`` (module doc)."""
    try:
        import nncf
    except ImportError:
        raise MissingDependencyError("nncf", "fast", "rerank backend=openvino precision=int8") from None
    nncf_log = logging.getLogger("nncf")
    level = nncf_log.level
    nncf_log.setLevel(logging.ERROR)  # its INFO lines and progress bars would interleave with bakeoff's
    try:
        return nncf.quantize(model, nncf.Dataset(list(feeds)), model_type=nncf.ModelType.TRANSFORMER,
                             subset_size=len(feeds), ignored_scope=nncf.IgnoredScope(patterns=list(ignored),
                                                                                     validate=False))
    finally:
        nncf_log.setLevel(level)
