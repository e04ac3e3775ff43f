"""The last transformer layer computed for the first token only: same logits, ~1/6 less work.

A BERT sequence classifier reads one vector: the pooler takes the last layer's output at token 0
(``[CLS]``) and the classifier maps it to the logit. Every other position of the last layer is
computed and thrown away. In the last layer, token 0's output needs

- its own query ``q0 = W_q h0``, and the keys and values of *all* tokens (``K = W_k H``,
  ``V = W_v H``: the only all-token work left);
- ``a0 = LayerNorm(W_o softmax(q0 Kᵀ / √d + mask) V + h0)`` (one row of the attention);
- ``out0 = LayerNorm(W_2 act(W_1 a0) + a0)`` (one row of the feed-forward block).

Each of these is row-wise in the full layer too, so the result is the same function (equal up to
the kernels' float rounding; 2e-8 here in fp32). For all-MiniLM-L6-v2 (6 layers, hidden 384,
feed-forward 1,536) the query, output and feed-forward products of the last layer are
``(384² · 2 + 2 · 384 · 1536) / 6 / (384² · 4 + 2 · 384 · 1536)`` ≈ 14 % of all dense-layer
multiply-adds, plus a sixth of the attention; measured in OpenVINO bf16 at 256 tokens: 1.17-1.26x
pairs/s (``benchmarks/rerank_speed.py``).

:func:`first_token_model` swaps the last layer for :func:`first_token_layer` for the duration of a
``with`` block (the OpenVINO trace), and restores it; it does nothing for models it does not
recognise (anything but a ``BertForSequenceClassification`` encoder with a pooler, no
cross-attention and no feed-forward chunking), and says which via the value it yields.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["applies", "first_token_layer", "first_token_model"]


def applies(hf_model: Any) -> bool:
    """Whether ``hf_model`` is a BERT classifier whose logits read token 0 of the last layer only."""
    if type(hf_model).__name__ != "BertForSequenceClassification":
        return False
    base = getattr(hf_model, "bert", None)
    cfg = getattr(hf_model, "config", None)
    if base is None or cfg is None or getattr(base, "pooler", None) is None:
        return False
    if getattr(cfg, "is_decoder", False) or getattr(cfg, "add_cross_attention", False):
        return False
    if getattr(cfg, "chunk_size_feed_forward", 0):
        return False
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    if not layers:
        return False
    last = layers[-1]
    need = ("attention", "intermediate", "output")
    return all(hasattr(last, n) for n in need) and all(
        hasattr(last.attention.self, n) for n in ("query", "key", "value", "attention_head_size", "scaling"))


def first_token_layer(layer: Any) -> Any:
    """A ``torch.nn.Module`` wrapping the ``BertLayer`` ``layer`` that returns only token 0's output,
    shape ``[batch, 1, hidden]`` (traceable).

    Keys and values come from every token; the attention mask (4-D, as the model builds it for its
    attention implementation) is cut to the first query row; the attention itself is the model's own
    attention function (``config._attn_implementation``: sdpa or eager)."""
    import torch
    from transformers.models.bert import modeling_bert

    class FirstTokenLayer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = layer

        def forward(self, hidden_states: Any, attention_mask: Any = None, *args: Any, **kwargs: Any) -> Any:
            lay = self.layer
            sa = lay.attention.self
            batch, length, _ = hidden_states.shape
            first = hidden_states[:, :1]
            q = sa.query(first).view(batch, 1, -1, sa.attention_head_size).transpose(1, 2)
            k = sa.key(hidden_states).view(batch, length, -1, sa.attention_head_size).transpose(1, 2)
            v = sa.value(hidden_states).view(batch, length, -1, sa.attention_head_size).transpose(1, 2)
            if attention_mask is not None and attention_mask.dim() == 4:
                attention_mask = attention_mask[:, :, :1, :]
            attend = modeling_bert.ALL_ATTENTION_FUNCTIONS.get_interface(sa.config._attn_implementation,
                                                                        modeling_bert.eager_attention_forward)
            out, _ = attend(sa, q, k, v, attention_mask, dropout=0.0, scaling=sa.scaling)
            attended = lay.attention.output(out.reshape(batch, 1, -1), first)
            return lay.output(lay.intermediate(attended), attended)

    return FirstTokenLayer()


@contextmanager
def first_token_model(hf_model: Any) -> Iterator[bool]:
    """Within the block, ``hf_model``'s last layer is a :func:`first_token_layer` (yields True), or
    unchanged when :func:`applies` is false (yields False). Restored on exit, also on error."""
    if not applies(hf_model):
        yield False
        return
    layers = hf_model.bert.encoder.layer
    original = layers[-1]
    layers[-1] = first_token_layer(original)
    try:
        yield True
    finally:
        layers[-1] = original
