"""One cross-encoder at one precision: load the model once, seed a missing head, score with the chosen backend.

See :mod:`bakeoff.models.cross_encoders` for the backends and the seeding rule.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ...errors import ConfigError, MissingDependencyError
from ...library_versions import version_of
from ..cpu import cpu_capability
from ..precision import choose_precision
from ..resolve import model_identity, resolve_model

log = logging.getLogger("bakeoff")

__all__ = ["CrossEncoderScorer"]


class _Backend(Protocol):
    def score(self, pairs: Sequence[tuple[str, str]], batch_size: int) -> np.ndarray: ...


def _is_sequence_classifier(folder: Path | None) -> bool:
    if folder is None or not (folder / "config.json").exists():
        return False
    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    return any(str(a).endswith("ForSequenceClassification") for a in cfg.get("architectures") or [])


@contextlib.contextmanager
def _quiet_conversion(quiet: bool) -> Iterator[None]:
    """Within, when ``quiet``: transformers' warnings off (its public verbosity switch, restored after) and
    sentence-transformers' logger at ERROR, so that loading a bi-encoder checkpoint as a cross-encoder prints
    neither sentence-transformers' "Converting ... to CrossEncoder" nor transformers' "LOAD REPORT" table of
    the missing head: :class:`CrossEncoderScorer` seeds that head and says so in one line of its own. Errors
    still print."""
    if not quiet:
        yield
        return
    from transformers.utils import logging as tf_logging

    st_logger = logging.getLogger("sentence_transformers")
    verbosity, st_level = tf_logging.get_verbosity(), st_logger.level
    tf_logging.set_verbosity_error()
    st_logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        tf_logging.set_verbosity(verbosity)
        st_logger.setLevel(st_level)


def _checkpoint_keys(folder: Path | None) -> set[str] | None:
    """Parameter names stored in the folder's safetensors / PyTorch weights (None: unknown)."""
    if folder is None:
        return None
    keys: set[str] = set()
    found = False
    for f in sorted(folder.glob("*.safetensors")):
        from safetensors import safe_open

        with safe_open(str(f), framework="pt") as st:
            keys.update(st.keys())
        found = True
    if not found:
        for f in sorted(folder.glob("pytorch_model*.bin")):
            import torch

            keys.update(torch.load(f, map_location="cpu", weights_only=True, mmap=True).keys())
            found = True
    return keys if found else None


def _seed_missing_head(hf_model: Any, keys: set[str] | None, *, seed: int) -> list[str]:
    """Re-initialise, from ``torch.Generator().manual_seed(seed)``, every parameter that
    lies outside the base model and is absent from the checkpoint. Returns their names."""
    import torch

    prefix = getattr(hf_model, "base_model_prefix", "") or ""
    std = float(getattr(hf_model.config, "initializer_range", 0.02))
    gen = torch.Generator().manual_seed(int(seed))
    fresh = []
    with torch.no_grad():
        for pname, param in hf_model.named_parameters():
            if prefix and pname.startswith(prefix + "."):
                continue
            if keys is not None and pname in keys:
                continue
            if param.ndim >= 2:
                param.copy_(torch.empty_like(param).normal_(0.0, std, generator=gen))
            else:
                param.zero_()
            fresh.append(pname)
    return fresh


def _hf_model(ce: Any) -> Any:
    from transformers import PreTrainedModel

    for module in ce.modules():
        if isinstance(module, PreTrainedModel):
            return module
    raise ConfigError("cross-encoder: no transformers model found inside the CrossEncoder")


class CrossEncoderScorer:
    """Scores (query, document) pairs with one cross-encoder at one precision.

    ``score(pairs)`` returns float32 logits in input order; pairs are scored in
    batches of ``batch_size`` in the order given (the caller sorts by length;
    the OpenVINO backend re-sorts by token count within the call).
    """

    code_version = "1"  # bump when the scores change (rerank keys and the ONNX export key include it)

    def __init__(
        self,
        *,
        model: str | None = None,
        precision: str | None = None,  # None: fp32 on torch, bf16 on openvino (as the rerank arm)
        max_length: int = 256,
        seed: int = 0,
        revision: str | None = None,
        onnx_dir: Path | None = None,
        backend: str = "torch",
        calibration: Sequence[tuple[str, str]] | None = None,
    ) -> None:
        self.precision, self.backend = choose_precision("rerank", precision=precision, backend=backend)
        #: ``backend="openvino", precision="int8"`` only: the pairs the int8 model is calibrated on
        #: (:func:`.static_int8.calibration_pairs` of the corpus); ignored otherwise.
        self.calibration = list(calibration) if calibration and self.static_int8 else None
        self.model, self.max_length, self.seed, self.revision = model, int(max_length), int(seed), revision
        self.name, self.local = resolve_model(model)
        self.fresh_parameters: list[str] = []
        self._ce: Any = None
        self._onnx_root = onnx_dir
        self._backend: _Backend = self._load()

    def _load(self) -> _Backend:
        try:
            import torch
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise MissingDependencyError("sentence-transformers", "dense", "the rerank arm") from None
        kwargs: dict[str, Any] = {"device": "cpu", "activation_fn": torch.nn.Identity(), "max_length": self.max_length}
        if not _is_sequence_classifier(self.local):
            kwargs["num_labels"] = 1
        if self.revision and self.local is None:
            kwargs["revision"] = self.revision
        # a local bi-encoder checkpoint (the bundled MiniLM): its head is missing by design, reported below
        converting = self.local is not None and not _is_sequence_classifier(self.local)
        try:
            with _quiet_conversion(converting):
                ce = CrossEncoder(str(self.local or self.name), **kwargs)
        except OSError as exc:
            raise ConfigError(f"rerank: cannot load cross-encoder {self.name!r} ({exc.__class__.__name__}: {exc})") from None
        hf = _hf_model(ce)
        if int(getattr(hf.config, "num_labels", 1)) != 1:
            raise ConfigError(f"rerank: {self.name!r} has {hf.config.num_labels} labels; a reranker needs 1")
        self.fresh_parameters = _seed_missing_head(hf, _checkpoint_keys(self.local), seed=self.seed)
        if self.fresh_parameters:
            log.warning("rerank: %s has no trained relevance head (%s seeded at random, seed %d): its scores "
                        "are not relevance judgments; pass model=<a trained cross-encoder> or train one with "
                        "`bakeoff finetune reranker`", self.name, ", ".join(self.fresh_parameters), self.seed)
        ce.eval()
        self._ce = ce
        if self.backend == "openvino":
            from .openvino import OpenVinoCrossEncoder

            return OpenVinoCrossEncoder(ce, hf, precision=self.precision, max_length=self.max_length,
                                        features=self._features, calibration=self.calibration)
        if self.precision == "int8":
            from .onnx import OnnxInt8CrossEncoder

            return OnnxInt8CrossEncoder(hf, identity=self.identity(), onnx_dir=self._onnx_root,
                                        features=self._features)
        from .st import TorchCrossEncoder

        return TorchCrossEncoder(ce, hf, precision=self.precision)

    @property
    def static_int8(self) -> bool:
        """True for OpenVINO static int8 (:mod:`.static_int8`), calibrated on :attr:`calibration`."""
        return self.backend == "openvino" and self.precision == "int8"

    def _features(self, pairs: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
        """The CrossEncoder's own tokenisation of ``pairs`` as numpy arrays."""
        feats = self._ce.preprocess([list(p) for p in pairs])
        return {k: v.cpu().numpy() if hasattr(v, "cpu") else np.asarray(v) for k, v in feats.items()
                if k in ("input_ids", "attention_mask", "token_type_ids")}

    def score(self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32) -> np.ndarray:
        """float32 logits of ``pairs``, in input order."""
        if not pairs:
            return np.empty(0, dtype=np.float32)
        return self._backend.score(pairs, batch_size)

    def identity(self) -> dict[str, Any]:
        """Everything that changes the scores (feeds cache keys; no secrets)."""
        ident = model_identity(self.model, revision=self.revision)
        ident.update({"precision": self.precision, "max_length": self.max_length, "head_seed": self.seed})
        if self.backend != "torch":
            from .openvino import OPENVINO_CODE_VERSION

            ident.update(backend=self.backend, openvino=version_of("openvino"), openvino_graph=OPENVINO_CODE_VERSION)
        if self.static_int8:
            from .static_int8 import QUANTIZATION_VERSION, calibration_digest

            ident.update(int8=QUANTIZATION_VERSION, nncf=version_of("nncf"),
                         calibration=calibration_digest(self.calibration) if self.calibration else None)
        if self.precision == "bf16" or self.backend != "torch":  # AMX vs emulated kernels round differently
            ident["cpu_capability"] = cpu_capability()
        ident["code_version"] = self.code_version
        return ident
