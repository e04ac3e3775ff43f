"""SciFact bake-off benchmark: cold vs warm runs, encode throughput, fast mode, peak memory.

Usage (timed figures belong under the shared lock)::

    flock /tmp/bakeoff-bench.lock .venv/bin/python benchmarks/scifact_bakeoff.py [--docs N]

In one invocation it measures

1. raw sentence-transformers ``encode`` of the corpus (fp32, batch 32, bundled
   MiniLM, ``normalize_embeddings=True``) in this process;
2. a **cold** run (fresh, empty cache) of every available arm -- bm25,
   bm25+stemmer, dense fp32, dense torch bf16, dense OpenVINO bf16 (the fast
   mode, when ``openvino`` is installed), dense int8 (``--int8``), and rrf /
   rerank (fp32, torch bf16, OpenVINO bf16) -- in a child process;
3. a **warm** re-run of the same arms with the now-full cache, in a new child
   process (imports, data loading, fingerprints and evaluation included);

and prints wall times, documents/second and tokens/second of the corpus
encodes (tokens = MiniLM word pieces after truncation to 256, [CLS]/[SEP]
included), the raw/ours ratios (wall and CPU seconds), the encode times scaled
to the issue's reference machine (raw ST = 150 s; this VM's speed drifts by
>2x between days, so a torch matmul GFLOP/s probe is printed at start and
end), NDCG@10 of each fast mode vs fp32, reranking pairs/s, and each
process's peak RSS (``VmHWM``). ``--docs N`` encodes only the first N
documents (a quick smoke run; metrics then mean little).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"
#: raw sentence-transformers fp32 SciFact encode on the issue's reference run of this machine
#: kind (~150 s); this VM's speed drifts by >2x between days, so times are also shown scaled to it
REFERENCE_RAW_S = 150.0

BASE_ARMS = [
    "bm25",
    "bm25-stem=bm25:stemmer=english",
    "dense",
    "dense-bf16=dense:precision=bf16",
]
#: the OpenVINO fast mode, when ``openvino`` is installed (the ``fast`` extra)
OV_ARMS = ["dense-ov=dense:backend=openvino"]
OV_RERANK = "rerank-rrf-ov=rerank:base=rrf-stem-dense,top=20,backend=openvino"
#: ``--int8``: the weight-only int8 ONNX build (slower than fp32 on this machine; off by default)
INT8_ARM = "dense-int8=dense:precision=int8"
OPTIONAL_ARMS = {
    # "+" separates the inputs of arms= and "," the options, so names use neither
    "rrf": ["rrf-bm25-dense=rrf:arms=bm25+dense", "rrf-stem-dense=rrf:arms=bm25-stem+dense"],
    # top 20 keeps the cold run bounded on 2 cores (6,000 pairs); the untrained-head reranker is no quality anchor
    "rerank": ["rerank-rrf=rerank:base=rrf-stem-dense,top=20",
               "rerank-rrf-bf16=rerank:base=rrf-stem-dense,top=20,precision=bf16"],
}


def arm_specs(*, int8: bool = False) -> list[str]:
    """The base arms plus rrf/rerank when those arm types are importable."""
    from bakeoff.arms.registry import arm_types

    import importlib.util

    has_ov = importlib.util.find_spec("openvino") is not None
    specs = list(BASE_ARMS) + (OV_ARMS if has_ov else []) + ([INT8_ARM] if int8 else [])
    try:
        types = arm_types()
    except Exception:  # an optional arm module failing to import must not sink the benchmark
        types = {}
    for type_name, extra in OPTIONAL_ARMS.items():
        if type_name in types:
            specs += extra
    if has_ov and "rerank" in types:
        specs.append(OV_RERANK)
    return specs


def load(data: Path, docs: int | None):
    from bakeoff.data import load_beir
    from bakeoff.data.model import Corpus, Dataset

    ds = load_beir(data, split="test")
    if docs:
        c = ds.corpus
        small = Corpus(ids=c.ids[:docs], texts=c.texts[:docs], titles=c.titles[:docs], metadata=c.metadata[:docs])
        ds = Dataset(name=ds.name, corpus=small, queries=ds.queries, qrels=ds.qrels, split=ds.split, info=ds.info)
    return ds


def worker(args: argparse.Namespace) -> None:
    """Child process: one bake-off over all arms with the given cache; writes a JSON summary."""
    t0 = time.perf_counter()
    from bakeoff.runner.run import run_bakeoff
    from bakeoff.cache import Cache
    from bakeoff.runner.config import build_arms, parse_arm_spec

    ds = load(args.data, args.docs)
    arms = build_arms([parse_arm_spec(s) for s in arm_specs(int8=args.int8)])
    res = run_bakeoff(ds, arms, k=10, depth=100, cache=Cache(args.cache), progress=False)
    wall = time.perf_counter() - t0
    out = {"wall_s": wall, "cpu_s": time.process_time(), "vm_hwm_mib": _vm_hwm_mib(), "arms": []}
    for a in res.arms:
        out["arms"].append({"name": a.name, "cached": a.cached, "metrics": dict(a.evaluation.means),
                            "timing": dict(a.timing)})
    Path(args.worker_out).write_text(json.dumps(out))


def _vm_hwm_mib() -> float:
    """This process's peak RSS (``VmHWM``; unlike ``ru_maxrss`` not inherited from the parent at fork/exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(args: argparse.Namespace, phase: str, cache: Path) -> dict[str, Any]:
    """Run :func:`worker` in a fresh interpreter; add its wall time and peak RSS."""
    out = cache.parent / f"{phase}.json"
    cmd = [sys.executable, __file__, "--worker", phase, "--cache", str(cache), "--worker-out", str(out),
           "--data", str(args.data)] + (["--docs", str(args.docs)] if args.docs else []) + \
        (["--int8"] if args.int8 else [])
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{phase} run failed (exit {os.waitstatus_to_exitcode(status)})")
    summary = json.loads(out.read_text())
    summary.update({"process_wall_s": wall, "peak_rss_mib": summary["vm_hwm_mib"],
                    "process_cpu_s": usage.ru_utime + usage.ru_stime})
    return summary


def count_tokens(texts: list[str]) -> int:
    """MiniLM word pieces per text after truncation to 256 (what the model actually sees)."""
    from tokenizers import Tokenizer

    from bakeoff.models.resolve import bundled_minilm_dir

    tok = Tokenizer.from_file(str(bundled_minilm_dir() / "tokenizer.json"))
    tok.enable_truncation(max_length=256)
    tok.no_padding()
    return sum(len(e.ids) for e in tok.encode_batch([t.strip() for t in texts]))


def machine_speed() -> dict[str, float]:
    """GFLOP/s of a 2048^3 torch matmul in fp32 and bf16 (this VM's speed drifts; print it beside times)."""
    import torch

    out = {}
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        a = torch.rand(2048, 2048).to(dtype)
        a @ a
        t0 = time.perf_counter()
        for _ in range(5):
            a @ a
        out[name] = 5 * 2 * 2048**3 / (time.perf_counter() - t0) / 1e9
    return out


def raw_st_encode(texts: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of plain ``SentenceTransformer.encode`` (fp32, batch 32) of ``texts``."""
    from sentence_transformers import SentenceTransformer

    from bakeoff.models.resolve import bundled_minilm_dir

    model = SentenceTransformer(str(bundled_minilm_dir()), device="cpu")
    model.encode(texts[:8], batch_size=32)  # warm-up (lazy init), excluded
    t0, c0 = time.perf_counter(), time.process_time()
    model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--docs", type=int, default=None, help="encode only the first N documents (smoke run)")
    ap.add_argument("--int8", action="store_true", help="also run the int8 ONNX dense arm")
    ap.add_argument("--skip-raw", action="store_true", help="skip the raw sentence-transformers baseline")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    ap.add_argument("--worker", choices=["cold", "warm"], help=argparse.SUPPRESS)
    ap.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.worker:
        return worker(args)
    if not (args.data / "corpus.jsonl").exists():
        raise SystemExit(f"SciFact not found at {args.data}")

    ds = load(args.data, args.docs)
    texts = ds.corpus.full_texts()
    n_docs, n_tokens = len(texts), count_tokens(texts)
    print(f"corpus: {n_docs} documents, {n_tokens} tokens (MiniLM word pieces, max 256/doc); "
          f"{len(ds.queries)} queries; arms: {', '.join(arm_specs(int8=args.int8))}")
    figures: dict[str, Any] = {"n_docs": n_docs, "n_tokens": n_tokens, "gflops_start": machine_speed()}
    print("machine speed at start: " + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in figures["gflops_start"].items()))

    raw_s = raw_cpu = None
    if not args.skip_raw:
        raw_s, raw_cpu = raw_st_encode(texts)
        figures["raw_st_encode_s"], figures["raw_st_encode_cpu_s"] = raw_s, raw_cpu
        print(f"raw sentence-transformers encode (fp32, batch 32): {raw_s:8.1f} s  "
              f"{n_docs / raw_s:7.1f} docs/s  {n_tokens / raw_s:8.0f} tokens/s  (CPU {raw_cpu:.1f} s)")

    with tempfile.TemporaryDirectory(prefix="bakeoff-bench-") as tmp:
        cache = Path(tmp) / "cache"
        cold = child(args, "cold", cache)
        warm = child(args, "warm", cache)
    figures.update({"cold": cold, "warm": warm})

    fp = {a["name"]: a for a in cold["arms"]}
    print("\nphase  wall(s)  CPU(s)  peak RSS(MiB)   [process wall / CPU incl. interpreter start]")
    for phase, r in (("cold", cold), ("warm", warm)):
        print(f"{phase:5s} {r['wall_s']:8.2f} {r['cpu_s']:7.2f} {r['peak_rss_mib']:10.0f}        "
              f"[{r['process_wall_s']:.2f} s / {r['process_cpu_s']:.2f} s]")
    print(f"\n{'arm':28s} {'nDCG@10':>8s} {'R@10':>7s} {'MRR@10':>7s} {'cold idx s':>10s} {'warm cached':>11s}")
    for a in warm["arms"]:
        m, c = a["metrics"], fp[a["name"]]
        print(f"{a['name']:28s} {m.get('ndcg@10', float('nan')):8.5f} {m.get('recall@10', float('nan')):7.5f} "
              f"{m.get('mrr@10', float('nan')):7.5f} {c['timing'].get('index_s', 0.0):10.2f} {a['cached']!s:>11s}")

    scaled: dict[str, float] = {}
    print("\ncorpus encode        seconds   docs/s   tokens/s   raw ST / this   CPU s   raw CPU / this")
    for label, name in (("ours fp32", "dense"), ("ours torch bf16", "dense-bf16"),
                        ("ours OpenVINO bf16", "dense-ov"), ("ours int8", "dense-int8")):
        if name not in fp or fp[name]["timing"].get("doc_encode_s") is None:
            continue
        t, cpu = fp[name]["timing"]["doc_encode_s"], fp[name]["timing"].get("doc_encode_cpu_s", float("nan"))
        figures[f"{name}_encode_s"], figures[f"{name}_encode_cpu_s"] = t, cpu
        ratio = f"{raw_s / t:6.2f}x" if raw_s else "   n/a"
        cratio = f"{raw_cpu / cpu:6.2f}x" if raw_cpu else "   n/a"
        print(f"{label:18s} {t:9.1f} {n_docs / t:8.1f} {n_tokens / t:10.0f}   {ratio}        {cpu:7.1f}   {cratio}")
        if raw_s:
            scaled[label] = REFERENCE_RAW_S * t / raw_s
    if raw_s:
        print(f"{'raw ST fp32':18s} {raw_s:9.1f} {n_docs / raw_s:8.1f} {n_tokens / raw_s:10.0f}     1.00x        "
              f"{raw_cpu:7.1f}     1.00x")
    if scaled:
        figures["scaled_to_reference_s"] = scaled
        print(f"scaled to the issue's reference machine (raw ST = {REFERENCE_RAW_S:.0f} s): "
              + ", ".join(f"{k} {v:.1f} s" for k, v in scaled.items()) + " (fast-mode target <= 60 s)")
    d32 = fp["dense"]["metrics"]["ndcg@10"]
    figures["ndcg_fp32"] = d32
    for name in ("dense-bf16", "dense-ov", "dense-int8"):
        if name in fp:
            d = fp[name]["metrics"]["ndcg@10"]
            figures[f"ndcg_{name}"] = d
            print(f"NDCG@10 fp32 {d32:.5f}  {name} {d:.5f}  |diff| {abs(d32 - d):.5f} (target <= 0.002)")
    for name in ("rerank-rrf", "rerank-rrf-bf16", "rerank-rrf-ov"):
        t = fp.get(name, {}).get("timing", {})
        if t.get("pairs_scored") and t.get("score_s"):
            figures[f"{name}_pairs_per_s"] = t["pairs_scored"] / t["score_s"]
            print(f"{name}: {t['pairs_scored']:.0f} pairs scored in {t['score_s']:.1f} s = "
                  f"{t['pairs_scored'] / t['score_s']:.1f} pairs/s")
    print(f"warm re-run of all arms: {warm['wall_s']:.2f} s in-process, {warm['process_wall_s']:.2f} s "
          f"with interpreter start (target < 10 s)")
    figures["gflops_end"] = machine_speed()
    print("machine speed at end: " + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in figures["gflops_end"].items()))
    self_rss = _vm_hwm_mib()
    figures["parent_peak_rss_mib"] = self_rss
    print(f"peak RSS: parent (raw ST) {self_rss:.0f} MiB, cold child {cold['peak_rss_mib']:.0f} MiB, "
          f"warm child {warm['peak_rss_mib']:.0f} MiB")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
