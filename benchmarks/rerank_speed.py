"""Cross-encoder throughput, fp32 (sentence-transformers CrossEncoder on PyTorch) vs the
bf16 autocast fast mode, the int8 ONNX Runtime mode and the OpenVINO bf16 mode (when installed), on real SciFact (query,
BM25-candidate) pairs, plus how closely each fast mode agrees with fp32.

    flock /tmp/bakeoff-bench.lock env HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/rerank_speed.py \\
        --queries 20 --top 20 --rounds 3 --modes openvino-bf16

``openvino-bf16-full`` is the OpenVINO scoring before :mod:`bakeoff.models.cross_encoders.first_token`
and the chunked tokenisation (every layer on every token, the whole call tokenised before the first
batch runs; but tokenised once, not twice as before), for a before/after in one run.
``openvino-bf16-v2`` is the OpenVINO scoring of ``openvino_graph`` "2": full batches of ``--batch-size``
(not balanced over the streams), documents tokenised uncut. ``openvino-int8`` is static int8
(:mod:`bakeoff.models.cross_encoders.static_int8`), calibrated as the rerank arm does (256 pairs drawn
from the SciFact corpus, seed 0; the one-time calibration is in its load time, not in the rounds).

Prints pairs/second for each mode in ``--rounds`` interleaved rounds (the order of the modes
rotates each round, a 1 s pause before each timed call; pairs length-sorted and batched exactly as
the rerank arm does, after one untimed warm-up batch, and for OpenVINO modes one untimed call on all pairs), the fast/fp32 ratios of the best rounds and
of the median rounds, and every round's own ratio against the fp32 round next to it; the load
average beside the figures. Agreement with fp32: Pearson and Spearman correlation of the scores, the
mean per-query overlap of the top 10 after reranking, the largest absolute difference, and NDCG@10
(bakeoff's evaluation, SciFact test qrels) of the BM25 top-``--top`` reranked by each mode over
``--ndcg-queries`` queries (default: all test queries; scored once, untimed); with
``--calibration-seeds 0,1,2`` every further int8 calibration draw gets its own NDCG@10 row. The model
(``--model``) is by default the bundled all-MiniLM-L6-v2 with a seeded, untrained head (see
``bakeoff.models.cross_encoders``): agreement figures compare two precisions of the same function, not
ranking quality, and its nearly tied scores make NDCG@10 fragile under any perturbation; the reranker
``benchmarks/distill_reranker.py`` trains offline (test NDCG@10 0.706) is the realistic check.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

ALL_MODES = {"bf16": ("bf16", "torch"), "int8": ("int8", "torch"), "openvino-bf16": ("bf16", "openvino"),
             "openvino-fp32": ("fp32", "openvino"), "openvino-bf16-full": ("bf16", "openvino"),
             "openvino-bf16-v2": ("bf16", "openvino"), "openvino-int8": ("int8", "openvino")}


def _seeds(text):
    """``--calibration-seeds``: comma-separated non-negative integers (argparse reports a bad one)."""
    try:
        seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise argparse.ArgumentTypeError(f"expected at least one non-negative integer, got {text!r}")
    return seeds


def _pairs(ds, queries, top):
    from bakeoff.arms.lexical import BM25Arm
    from bakeoff.arms.rerank import pair_order
    from bakeoff.runner.context import Context

    run = Context(corpus=ds.corpus, progress=False).search(BM25Arm(), queries, k=top)
    texts = ds.corpus.full_texts()
    owners, pairs = [], []
    for qi, qid in enumerate(queries.ids):
        for doc, _ in run[qid]:
            owners.append((qid, doc))
            pairs.append((queries.texts[qi], texts[ds.corpus.position[doc]]))
    order = pair_order(pairs)
    return owners, pairs, order


@contextlib.contextmanager
def _full_graph(full):
    """``openvino-*-full``: the graph before the first-token last layer (all tokens in every layer)."""
    from bakeoff.models.cross_encoders import openvino as ov_backend

    if not full:
        yield
        return

    @contextlib.contextmanager
    def unchanged(hf):
        yield False

    saved, ov_backend.first_token_model = ov_backend.first_token_model, unchanged
    try:
        yield
    finally:
        ov_backend.first_token_model = saved


@contextlib.contextmanager
def _v2(scorer, v2):
    """``openvino-*-v2``: the scoring before the pre-cut and balanced batches."""
    from bakeoff.models.cross_encoders import openvino as ov_backend

    if not v2:
        yield
        return

    def full_batches(n, batch_size, streams):
        return [batch_size] * (n // batch_size) + ([n % batch_size] if n % batch_size else [])

    saved = ov_backend.batch_sizes, scorer._backend.document_cut
    ov_backend.batch_sizes, scorer._backend.document_cut = full_batches, None
    try:
        yield
    finally:
        ov_backend.batch_sizes, scorer._backend.document_cut = saved


def _score(scorer, pairs, order, batch_size):
    with _v2(scorer, getattr(scorer, "bench_v2", False)):
        s = scorer.score([pairs[i] for i in order], batch_size=batch_size)
    out = np.empty(len(pairs), dtype=np.float64)
    out[order] = s
    return out


def _ndcg(owners, scores, qrels, query_ids):
    from bakeoff.data.model import Run
    from bakeoff.metrics import score_run

    per: dict[str, dict[str, float]] = {}
    for (qid, doc), s in zip(owners, scores, strict=True):
        per.setdefault(qid, {})[doc] = float(s)
    return score_run(Run.from_scores("rerank", per), qrels, ["ndcg@10"], query_ids=query_ids).means["ndcg@10"]


def _timed(args, modes, scorers, load_s, pairs, order, owners, queries, times, loads, figures, ratios, agreements):
    """The interleaved timed rounds, the speed figures and the agreement with fp32 (printed, and filled in)."""
    from scipy.stats import spearmanr

    scores: dict[str, np.ndarray] = {}
    for r in range(args.rounds):
        rotated = modes[r % len(modes):] + modes[: r % len(modes)]
        loads.append(os.getloadavg())
        for label in rotated:
            time.sleep(1.0)
            t0 = time.perf_counter()
            scores[label] = _score(scorers[label], pairs, order, args.batch_size)
            times[label].append(time.perf_counter() - t0)
        print(f"round {r + 1} (load average {loads[-1][0]:.2f}): "
              + "   ".join(f"{m} {times[m][-1]:.2f} s ({len(pairs) / times[m][-1]:.1f} pairs/s)" for m in modes))

    for label in modes:
        ts = times[label]
        figures[label] = {"load_s": load_s[label], "best_s": min(ts), "median_s": statistics.median(ts),
                          "pairs_per_s_best": len(pairs) / min(ts),
                          "pairs_per_s_median": len(pairs) / statistics.median(ts), "rounds_s": ts}
        print(f"{label}: load {load_s[label]:6.1f} s   best {min(ts):7.2f} s ({len(pairs) / min(ts):7.1f} pairs/s)"
              f"   median {statistics.median(ts):7.2f} s ({len(pairs) / statistics.median(ts):7.1f} pairs/s)")
    a = scores["fp32"]
    for fast in modes[1:]:
        b = scores[fast]
        overlap = []
        for qid in queries.ids:
            idx = [i for i, (q, _) in enumerate(owners) if q == qid]
            top_a = {owners[i][1] for i in sorted(idx, key=lambda i: -a[i])[:10]}
            top_b = {owners[i][1] for i in sorted(idx, key=lambda i: -b[i])[:10]}
            overlap.append(len(top_a & top_b) / max(1, min(10, len(idx))))
        agreements[fast] = {"pearson": float(np.corrcoef(a, b)[0, 1]),
                            "spearman": float(spearmanr(a, b).statistic),
                            "top10_overlap": float(np.mean(overlap)), "max_abs_diff": float(np.abs(a - b).max())}
        per_round = [f / t for f, t in zip(times["fp32"], times[fast], strict=True)]
        ratios[fast] = {"best": min(times["fp32"]) / min(times[fast]),
                        "median": statistics.median(times["fp32"]) / statistics.median(times[fast]),
                        "rounds": per_round}
        print(f"{fast}/fp32 pairs/s: best {ratios[fast]['best']:.2f}x, median {ratios[fast]['median']:.2f}x, "
              f"per round {', '.join(f'{x:.2f}x' for x in per_round)};  agreement with fp32: "
              + ", ".join(f"{k} {v:.4f}" for k, v in agreements[fast].items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shared = os.environ.get("BAKEOFF_SHARED_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data"
    ap.add_argument("--data", default=str(Path(shared) / "scifact"), help="BEIR SciFact ($BAKEOFF_SHARED_DATA/scifact)")
    ap.add_argument("--queries", type=int, default=10, help="first N test queries (timed)")
    ap.add_argument("--top", type=int, default=20, help="BM25 candidates per query")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=1, help="interleaved timed rounds")
    ap.add_argument("--modes", default=",".join(ALL_MODES), help=f"fast modes, comma-separated, of {list(ALL_MODES)}")
    ap.add_argument("--ndcg-queries", type=int, default=None, help="queries for the NDCG@10 check (default: all; 0: skip)")
    ap.add_argument("--json", default=None, help="also write the figures here")
    ap.add_argument("--model", default=None,
                    help="cross-encoder name or local folder (default: the bundled MiniLM with a seeded head), e.g. "
                         "the reranker benchmarks/distill_reranker.py trains")
    ap.add_argument("--calibration-seeds", default=[0], type=_seeds,
                    help="openvino-int8 calibration draws (comma-separated seeds): the first is timed, every one "
                         "gets its own NDCG@10 row")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import importlib.util

    from bakeoff import load_beir
    from bakeoff.models.cross_encoders import CrossEncoderScorer
    from bakeoff.models.cross_encoders.static_int8 import calibration_pairs

    ds = load_beir(args.data, split="test")
    queries = ds.queries.subset(ds.queries.ids[: args.queries])
    owners, pairs, order = _pairs(ds, queries, args.top)
    print(f"{len(pairs)} pairs ({len(queries)} queries x top {args.top}), batch {args.batch_size}, "
          f"max_length {args.max_length}, {args.rounds} round(s), torch threads: default")

    seeds = args.calibration_seeds
    modes = ["fp32"] + [m for m in args.modes.split(",") if m and m != "fp32"]
    for m in modes[1:]:
        if m not in ALL_MODES:
            ap.error(f"--modes: unknown mode {m!r}")
    if importlib.util.find_spec("openvino") is None:
        modes = [m for m in modes if not m.startswith("openvino")]
    scorers, load_s = {}, {}
    with tempfile.TemporaryDirectory() as onnx_dir:
        for label in modes:
            precision, backend = ("fp32", "torch") if label == "fp32" else ALL_MODES[label]
            t0 = time.perf_counter()
            calibration = None
            if backend == "openvino" and precision == "int8":  # as the rerank arm: pairs drawn from the corpus
                calibration = calibration_pairs(ds.corpus.full_texts(), rng=np.random.default_rng(seeds[0]))
            with _full_graph(label.endswith("-full")):
                scorers[label] = CrossEncoderScorer(model=args.model, precision=precision, max_length=args.max_length,
                                                    onnx_dir=Path(onnx_dir), backend=backend, calibration=calibration)
            load_s[label] = time.perf_counter() - t0
            scorers[label].bench_v2 = label.endswith("-v2")
            if label.endswith("-full"):
                scorers[label]._backend.chunk_batches = 1 << 40  # the whole call in one chunk, as before
            scorers[label].score([pairs[i] for i in order[: args.batch_size]], batch_size=args.batch_size)  # warm-up
            if backend == "openvino":  # and every batch shape of the timed calls (OpenVINO builds kernels per shape)
                _score(scorers[label], pairs, order, args.batch_size)
        times: dict[str, list[float]] = {m: [] for m in modes}
        loads: list[tuple[float, float, float]] = []
        figures: dict[str, dict[str, float]] = {}
        ratios: dict[str, dict[str, float | list[float]]] = {}
        agreements: dict[str, dict[str, float]] = {}
        if args.rounds > 0:  # 0: only the (untimed) NDCG check, no lock needed
            _timed(args, modes, scorers, load_s, pairs, order, owners, queries, times, loads, figures, ratios, agreements)
        ndcg: dict[str, float] = {}
        n_ndcg = len(ds.queries) if args.ndcg_queries is None else args.ndcg_queries
        if n_ndcg > 0:
            nq = ds.queries.subset(ds.queries.ids[:n_ndcg])
            n_owners, n_pairs, n_order = _pairs(ds, nq, args.top)
            for label in modes:
                t0 = time.perf_counter()
                ndcg[label] = _ndcg(n_owners, _score(scorers[label], n_pairs, n_order, args.batch_size),
                                    ds.qrels, nq.ids)
                print(f"NDCG@10, BM25 top {args.top} reranked by {label}, {len(nq)} queries ({len(n_pairs)} pairs, "
                      f"{time.perf_counter() - t0:.0f} s): {ndcg[label]:.4f}"
                      + ("" if label == "fp32" else f"  (fast - fp32 {ndcg[label] - ndcg['fp32']:+.4f})"))
            for seed in seeds[1:] if "openvino-int8" in modes else []:  # further calibration draws, untimed
                label = f"openvino-int8@seed{seed}"
                t0 = time.perf_counter()
                draw = calibration_pairs(ds.corpus.full_texts(), rng=np.random.default_rng(seed))
                scorer = CrossEncoderScorer(model=args.model, precision="int8", max_length=args.max_length,
                                            backend="openvino", calibration=draw)
                ndcg[label] = _ndcg(n_owners, _score(scorer, n_pairs, n_order, args.batch_size), ds.qrels, nq.ids)
                print(f"NDCG@10, BM25 top {args.top} reranked by {label}, {len(nq)} queries (calibrated and scored in "
                      f"{time.perf_counter() - t0:.0f} s): {ndcg[label]:.4f}  (fast - fp32 "
                      f"{ndcg[label] - ndcg['fp32']:+.4f})", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"figures": figures, "ratios": ratios, "agreement": agreements,
                                               "ndcg_at_10": ndcg, "load_average": loads, "n_pairs": len(pairs)},
                                              indent=1))


if __name__ == "__main__":
    main()
