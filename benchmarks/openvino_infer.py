"""How OpenVINO batches are dispatched, three ways on the same compiled models, in one run, on SciFact.

    flock /tmp/bakeoff-bench.lock env HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/openvino_infer.py \\
        --rounds 3 --docs 800 --queries 5

- ``queue``: ``ov.AsyncInferQueue`` with a Python completion callback (main up to fbe4d99; the
  callback runs on OpenVINO's stream threads and needs the GIL; it deadlocked CI at destruction);
- ``ring``: feed ``i`` on request ``i mod n``, waited on in order (4489f97);
- ``waitany``: :func:`bakeoff.models._openvino.infer_unordered` (2 requests per stream, the first
  finished one is collected; the encoder pools each batch as it arrives);
- ``waitany-unpinned``: the same with ``ENABLE_CPU_PINNING=NO`` (the others: streams pinned to cores,
  the plugin's default).

Workloads (OpenVINO bf16): the bi-encoder (all-MiniLM-L6-v2) on the first ``--docs`` corpus documents
(tokenise, infer, pool: the whole ``encode``), and the cross-encoder on (query, BM25 top 20)
pairs of the first ``--queries`` test queries (``score``). The fp32 references (raw
``SentenceTransformer.encode``, fp32 ``CrossEncoder``) run in the same rounds. The order of the
variants rotates every round and a 1 s pause separates runs (PyTorch's OpenMP threads spin
for a moment after a run), so neither load drift nor position favours one variant. Prints each
variant's seconds per round, best and median, its ratio to the fp32 reference, and checks that
every variant returns bit-identical outputs.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np


def queue_infer(compiled: Any, feeds: Sequence[Mapping[str, np.ndarray]]) -> list[np.ndarray]:
    """fbe4d99: AsyncInferQueue + Python callback (for measurement only: it can hang at teardown)."""
    import openvino as ov

    results: list[Any] = [None] * len(feeds)

    def done(request: Any, index: int) -> None:
        results[index] = request.get_output_tensor(0).data.copy()

    queue = ov.AsyncInferQueue(compiled, max(1, int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))))
    queue.set_callback(done)
    for i, feed in enumerate(feeds):
        queue.start_async({k: np.ascontiguousarray(v, dtype=np.int64) for k, v in feed.items()}, i)
    queue.wait_all()
    return results


def ring_infer(compiled: Any, feeds: Sequence[Mapping[str, np.ndarray]]) -> list[np.ndarray]:
    """4489f97: feed i on request i mod n, waited on in order."""
    n = max(1, min(len(feeds), int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))))
    requests = [compiled.create_infer_request() for _ in range(n)]
    owner: list[int | None] = [None] * n
    results: list[Any] = [None] * len(feeds)

    def collect(slot: int) -> None:
        if owner[slot] is not None:
            requests[slot].wait()
            results[owner[slot]] = requests[slot].get_output_tensor(0).data.copy()  # type: ignore[index]
            owner[slot] = None

    for i, feed in enumerate(feeds):
        collect(i % n)
        requests[i % n].start_async({k: np.ascontiguousarray(v, dtype=np.int64) for k, v in feed.items()})
        owner[i % n] = i
    for slot in range(n):
        collect(slot)
    return results


def encode_with(enc: Any, texts: list[str], infer: Callable[..., list[np.ndarray]]) -> np.ndarray:
    """The encoder's encode of fbe4d99/4489f97: every batch inferred first, then pooled."""
    import torch

    from bakeoff.models._openvino import token_count_order
    from bakeoff.models.encoders.base import l2_normalise

    model, compiled = enc._st._load(), enc._compile()
    counts = [len(x) for x in model.tokenizer([t.strip() for t in texts], truncation=True,
                                              max_length=model.max_seq_length)["input_ids"]]
    order = token_count_order(counts)
    batches = [order[s : s + 32] for s in range(0, len(order), 32)]
    features = [enc._features(model, [texts[i] for i in rows]) for rows in batches]
    states = infer(compiled, [{n: f[n].numpy() for n in enc._inputs} for f in features])
    out = np.empty((len(texts), enc.dim), dtype=np.float32)
    with torch.inference_mode():
        for rows, feats, hidden in zip(batches, features, states, strict=True):
            f = dict(feats)
            f["token_embeddings"] = torch.from_numpy(np.asarray(hidden, dtype=np.float32))
            for module in list(model)[1:]:
                f = module(f)
            out[rows] = f["sentence_embedding"].float().numpy()
    return l2_normalise(out)


def rounds_of(variants: dict[str, Callable[[], np.ndarray]], rounds: int, label: str) -> dict[str, list[float]]:
    names = list(variants)
    times: dict[str, list[float]] = {k: [] for k in names}
    outputs: dict[str, np.ndarray] = {}
    for r in range(rounds):
        for k in names[r % len(names):] + names[: r % len(names)]:
            time.sleep(1.0)
            t0 = time.perf_counter()
            outputs[k] = np.asarray(variants[k]())
            times[k].append(time.perf_counter() - t0)
        print(f"{label} round {r + 1}: " + ", ".join(f"{k} {times[k][-1]:.2f} s" for k in names), flush=True)
    fast = [k for k in names if k != "fp32"]
    same = all(np.array_equal(outputs[fast[0]], outputs[k]) for k in fast[1:])
    print(f"{label}: all OpenVINO variants bit-identical: {same}")
    return times


def report(label: str, times: dict[str, list[float]], items: int, unit: str) -> None:
    ref_best, ref_median = min(times["fp32"]), float(np.median(times["fp32"]))
    for k, v in times.items():
        best, median = min(v), float(np.median(v))
        print(f"{label} {k:15s} best {best:7.2f} s ({items / best:7.1f} {unit}/s)  median {median:7.2f} s  "
              f"fp32/this best {ref_best / best:5.2f}x  median {ref_median / median:5.2f}x  "
              f"(spread {min(v):.2f}-{max(v):.2f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.environ.get("BAKEOFF_SHARED_DATA", str(Path(__file__).resolve().parents[2]
                                                                               / "shared" / "data")) + "/scifact")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--docs", type=int, default=800)
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--skip", default="", help="comma list of parts to skip: encoder, cross")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from bakeoff import load_beir
    from bakeoff.models import _openvino
    from bakeoff.models.encoders import make_encoder

    ds = load_beir(args.data, split="test")
    full = ds.corpus.full_texts()

    def unpinned(key: dict[str, Any], names: Sequence[str], precision: str = "bf16") -> Any:
        """The cached IR compiled as this branch does, but with stream threads not pinned to cores."""
        import openvino as ov

        core = ov.Core()
        model = core.read_model(str(_openvino.model_folder(key, names) / "model.xml"))
        return core.compile_model(model, "CPU", {**_openvino.compile_config(precision), "ENABLE_CPU_PINNING": "NO"})

    if "encoder" not in skip:
        texts = full[: args.docs]
        st = make_encoder(None)._load()
        enc = make_encoder(None, backend="openvino")
        enc.encode(texts[:8], kind="doc")
        enc_free = make_encoder(None, backend="openvino")
        enc_free._compile()
        enc_free._compiled = unpinned({"kind": "encoder-last-hidden-state", "model": enc.name,
                                    "weights": enc._st.weights()}, enc._inputs)
        for e in (enc, enc_free):
            e.encode(texts[:8], kind="doc")
        st.encode(texts[:8])
        variants = {
            "fp32": lambda: st.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True),
            "queue": lambda: encode_with(enc, texts, queue_infer),
            "ring": lambda: encode_with(enc, texts, ring_infer),
            "waitany": lambda: enc.encode(texts, kind="doc"),
            "waitany-unpinned": lambda: enc_free.encode(texts, kind="doc"),
        }
        report("encoder", rounds_of(variants, args.rounds, "encoder"), len(texts), "docs")
    if "cross" not in skip:
        import bakeoff.models.cross_encoders.openvino as ce_ov
        from bakeoff.arms.lexical import BM25Arm
        from bakeoff.arms.rerank import pair_order
        from bakeoff.models.cross_encoders import CrossEncoderScorer
        from bakeoff.models.cross_encoders.scorer import _hf_model
        from bakeoff.runner.context import Context

        queries = ds.queries.subset(ds.queries.ids[: args.queries])
        run = Context(corpus=ds.corpus, progress=False).search(BM25Arm(), queries, k=20)
        pairs = [(queries.texts[i], full[ds.corpus.position[d]]) for i, qid in enumerate(queries.ids)
                 for d, _ in run[qid]]
        pairs = [pairs[i] for i in pair_order(pairs)]
        fp32, fast = CrossEncoderScorer(seed=0), CrossEncoderScorer(seed=0, backend="openvino", precision="bf16")
        fp32.score(pairs[:32])
        fast.score(pairs[:32])
        fast_free = CrossEncoderScorer(seed=0, backend="openvino", precision="bf16")
        fast_free._backend._compiled = unpinned({"kind": "cross-encoder-logits", "state": ce_ov.state_digest(
            _hf_model(fast_free._ce))}, fast_free._backend._inputs)
        production = _openvino.infer_batches

        def with_infer(infer: Callable[..., list[np.ndarray]]) -> Callable[[], np.ndarray]:
            def run_it() -> np.ndarray:
                ce_ov.infer_batches = infer
                try:
                    return fast.score(pairs, batch_size=32)
                finally:
                    ce_ov.infer_batches = production
            return run_it

        variants = {"fp32": lambda: fp32.score(pairs, batch_size=32), "queue": with_infer(queue_infer),
                    "ring": with_infer(ring_infer), "waitany": with_infer(production),
                    "waitany-unpinned": lambda: fast_free.score(pairs, batch_size=32)}
        report("cross", rounds_of(variants, args.rounds, "cross"), len(pairs), "pairs")
    os._exit(0)  # the AsyncInferQueue variant can hang when its compiled model is destroyed


if __name__ == "__main__":
    main()
