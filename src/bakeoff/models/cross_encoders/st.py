"""The PyTorch cross-encoder backend: ``CrossEncoder.predict`` in fp32, or under bf16 autocast with an fp32 head."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["TorchCrossEncoder"]


def _fp32_head(hf: Any) -> None:
    """Run ``hf``'s classification head (``classifier`` or ``score``) in fp32 even under autocast."""
    import torch

    class Fp32Head(torch.nn.Module):
        """``inner(x.float())`` with autocast disabled."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: Any, *args: Any, **kwargs: Any) -> Any:
            with torch.autocast("cpu", enabled=False):
                return self.inner(x.float(), *args, **kwargs)

    for attr in ("classifier", "score"):
        head = getattr(hf, attr, None)
        if isinstance(head, torch.nn.Module):
            setattr(hf, attr, Fp32Head(head))
            return


class TorchCrossEncoder:
    """Scores with the loaded ``CrossEncoder`` itself (``precision`` ``fp32`` or ``bf16``)."""

    def __init__(self, ce: Any, hf: Any, *, precision: str) -> None:
        self._ce, self.precision = ce, precision
        if precision == "bf16":
            _fp32_head(hf)

    def score(self, pairs: Sequence[tuple[str, str]], batch_size: int) -> np.ndarray:
        import torch

        ctx = torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16")
        with ctx:
            out = self._ce.predict([list(p) for p in pairs], batch_size=batch_size, show_progress_bar=False,
                                   convert_to_tensor=True)
        out = out.float().cpu().numpy()
        return np.asarray(out, dtype=np.float32).reshape(len(pairs))
