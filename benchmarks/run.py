"""The benchmark suite: run benchmarks and record each one's figures with where and when they were measured.

    python benchmarks/run.py --list
    python benchmarks/run.py --quick                      # the fast subset, small sizes (minutes)
    python benchmarks/run.py eval_speed bm25_scifact      # named benchmarks at their full sizes
    flock /tmp/bakeoff-bench.lock python benchmarks/run.py rerank_speed finetune
    python benchmarks/run.py side_by_side                 # takes the lock itself, stage by stage: no flock around it

Each benchmark is a script of this folder run in its own process (so its timings and peak memory are its own)
with the arguments listed in :data:`SUITE` (``quick`` arguments with ``--quick``). Its record,
``benchmarks/records/<name>.json``, written atomically, holds:

* ``name``, ``title``, ``command`` (the exact command line), ``quick``;
* ``date`` (UTC, ISO 8601), ``wall_s``, ``returncode``;
* ``machine``: CPU model, logical cores, the 1-minute load average before and after;
* ``versions``: Python and the libraries the figures depend on (``importlib.metadata``), and
  ``commit``: the checkout's ``git`` commit, ``dirty`` when the tree had uncommitted changes;
* ``output``: what the benchmark printed (its figures, tables and ratios), and ``figures``: the
  structured figures of a benchmark that writes them (``--json``).

The docs' benchmarks page renders these records (``docs/_hooks/bench_results.py``): a figure on the page is
the output of the last recorded run, never typed by hand. Timings are only comparable within one record:
each benchmark measures its ratios against a reference in the same run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "records"
DATA = Path(os.environ.get("BAKEOFF_SHARED_DATA", ROOT.parent / "shared" / "data"))

#: Libraries whose versions go into every record (those installed).
LIBRARIES = ("bakeoff", "numpy", "scipy", "pyarrow", "bm25s", "PyStemmer", "torch", "sentence-transformers",
             "openvino", "onnxruntime", "faiss-cpu", "psycopg", "pytrec-eval-terrier", "ranx", "llama_cpp_python",
             "playwright")


@dataclass(frozen=True)
class Bench:
    """One benchmark: ``script`` in this folder, its arguments at full size and in the quick subset
    (``None``: not in it), and whether it writes structured figures to ``--json PATH``."""

    title: str
    script: str
    args: tuple[str, ...] = ()
    quick: tuple[str, ...] | None = None
    json: bool = False
    needs: tuple[str, ...] = field(default_factory=tuple)


#: The cross-encoder modes the rerank arm offers (``rerank_speed.py`` also knows earlier graphs, for before/after runs).
SHIPPED_RERANK_MODES = "bf16,int8,openvino-bf16,openvino-int8"

SUITE: dict[str, Bench] = {
    "side_by_side": Bench(
        "SciFact side by side: a plain script without bakeoff vs `bakeoff run` (fp32 cold, fast cold, warm)",
        "side_by_side.py", (), json=True, needs=("scifact",)),
    "eval_speed": Bench(
        "`bakeoff eval` vs pytrec_eval on a large generated run (file parsing included)",
        "eval_speed.py", (), quick=("--queries", "1000", "--docs", "1000", "--corpus", "100000")),
    "bm25_scifact": Bench(
        "BM25 arm vs raw bm25s on SciFact: queries/second, same index settings",
        "bm25_scifact.py", (), quick=("--repeat", "2"), needs=("scifact",)),
    "scaling": Bench(
        "Index build time, peak memory and latency vs corpus size (generated corpora)",
        "scaling.py", ("--sizes", "10000,100000,1000000"), quick=("--sizes", "10000", "--methods",
                                                                  "bm25,dense-exact,dense-exact-f64"),
        json=True),
    "exact_search": Bench(
        "Exact dense search: float64 reference vs float32 screen vs int8 index (bit-identical runs)",
        "exact_search.py", ("--sizes", "100000,1000000"), quick=("--sizes", "20000", "--queries", "20")),
    "exact_stored_index": Bench(
        "Small searches over a large corpus: the float32 screen vs the stored exact index",
        "exact_stored_index.py", ("--n", "1000000"), quick=("--n", "100000", "--queries", "1,10")),
    "encoder_speed": Bench(
        "Corpus encoding: raw sentence-transformers fp32 vs the OpenVINO fast mode, on SciFact",
        "encoder_speed.py", ("--rounds", "2", "--skip", "cross"),
        quick=("--docs", "1000", "--rounds", "2", "--skip", "cross"), needs=("scifact",)),
    "rerank_speed": Bench(
        "Cross-encoder throughput and fidelity: fp32 vs bf16, int8 ONNX, OpenVINO bf16/int8 (NDCG@10 on 100 queries)",
        "rerank_speed.py", ("--queries", "20", "--top", "20", "--rounds", "3", "--modes", SHIPPED_RERANK_MODES,
                            "--ndcg-queries", "100"),
        quick=("--queries", "5", "--top", "20", "--rounds", "2", "--modes", "openvino-bf16", "--ndcg-queries", "20"),
        json=True, needs=("scifact",)),
    "scifact_scale": Bench(
        "The scale arms on SciFact: PostgreSQL FTS, pgvector, FAISS HNSW/IVF-PQ beside BM25 and exact dense",
        "scifact_scale.py", (), needs=("scifact",)),
    "finetune": Bench(
        "`bakeoff finetune` training throughput and peak memory (SciFact train)",
        "finetune.py", (), quick=("--queries", "16", "--which", "embedder", "--precision", "fp32"),
        needs=("scifact",)),
    "label_latency": Bench(
        "`bakeoff label`: keypress-to-update latency in headless Chromium",
        "label_latency.py", (), needs=("scifact",)),
    "truth_quality": Bench(
        "Synthetic vs human ground truth on SciFact: `bakeoff generate` + `bakeoff run` + `bakeoff compare`",
        "truth_quality.py", ("-n", "30"), needs=("scifact",)),
    "run_hashes": Bench(
        "sha256 of every offline arm type's TREC run on SciFact (compare two commits: behaviour preserved?)",
        "run_hashes.py", (), needs=("scifact",)),
    "filter_acceptance": Bench(
        "The synthetic-truth filters on SciFact's human (query, document) pairs and on random pairs",
        "filter_acceptance.py", (), needs=("scifact",)),
    "filter_acceptance_cisi": Bench(
        "The synthetic-truth filters on CISI's human (query, document) pairs (about 41 relevant documents a query)",
        "filter_acceptance.py", ("--data", str(DATA / "cisi")), needs=("cisi",)),
    "verdict_trust_scifact": Bench(
        "Synthetic vs human verdict on SciFact, default local generator: generation before/after, unweighted and "
        "leak-matched readings (-n 100)",
        "verdict_trust.py", ("--data", str(DATA / "scifact"), "-n", "100"), json=True, needs=("scifact",)),
    "verdict_trust_cisi": Bench(
        "Synthetic vs human verdict on CISI, default local generator: generation before/after, unweighted and "
        "leak-matched readings (-n 100)",
        "verdict_trust.py", ("--data", str(DATA / "cisi"), "-n", "100"), json=True, needs=("cisi",)),
    "verdict_trust_pooled_cisi": Bench(
        "Synthetic vs human verdict on CISI with judgments beyond the source document (every arm's top 5 judged by "
        "query likelihood with the default local model; -n 100)",
        "verdict_trust.py", ("--data", str(DATA / "cisi"), "-n", "100", "--pipelines", "after", "--pool-depth", "5"),
        json=True, needs=("cisi",)),
    "verdict_trust_pooled_scifact": Bench(
        "Synthetic vs human verdict on SciFact with judgments beyond the source document (every arm's top 5 judged "
        "by query likelihood with the default local model; -n 100)",
        "verdict_trust.py", ("--data", str(DATA / "scifact"), "-n", "100", "--pipelines", "after", "--pool-depth",
                             "5"), json=True, needs=("scifact",)),
    "depth_cost": Bench(
        "Depth 1000 vs 100 in one run: search, .trec write and size, evaluation (SciFact; 1M generated documents)",
        "depth_cost.py", ("--big", "1000000"), quick=("--arms", "bm25,tfidf", "--big", "20000", "--repeat", "1"),
        json=True, needs=("scifact",)),
    "llm_layout": Bench(
        "llama-server layouts on this machine: servers x slots x threads, prompt cache, batch size (describe requests)",
        "llm_layout.py", ("-r", "16"), quick=("-r", "4"), json=True, needs=("scifact",)),
    "likelihood_workers": Bench(
        "Query likelihood in one process vs one worker process per core (assess --method likelihood, the pool judge)",
        "likelihood_workers.py", ("-n", "60"), quick=("-n", "16"), json=True, needs=("scifact",)),
    "assessor_agreement": Bench(
        "`bakeoff assess` grades against SciFact's human labels (Cohen's kappa, ROC AUC)",
        "assessor_agreement.py", ("-n", "40", "--methods", "likelihood,yesno", "--max-doc-chars", "4000"),
        needs=("scifact",)),
}


def machine() -> dict[str, object]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "system": platform.system(), "machine": platform.machine()}


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for lib in LIBRARIES:
        try:
            out[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            continue
    return out


def commit() -> dict[str, object]:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              check=False).stdout.strip()

    sha = git("rev-parse", "HEAD")
    return {"commit": sha or None, "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def run_one(name: str, bench: Bench, *, quick: bool, out: Path) -> dict[str, object]:
    args = list(bench.quick if quick and bench.quick is not None else bench.args)
    with tempfile.TemporaryDirectory(prefix=f"bakeoff-bench-{name}-") as tmp:
        figures_path = Path(tmp) / "figures.json"
        if bench.json:
            args += ["--json", str(figures_path)]
        command = [sys.executable, str(HERE / bench.script), *args]
        shown = " ".join(["python", f"benchmarks/{bench.script}", *(shlex.quote(a) for a in args
                                                                    if str(figures_path) not in a)])
        if bench.json:
            shown = shown.removesuffix(" --json")
        record: dict[str, object] = {
            "name": name, "title": bench.title, "command": shown, "quick": quick,
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "machine": {**machine(), "load1_before": os.getloadavg()[0]},
            "versions": versions(), **commit(),
        }
        print(f"[{name}] {shown}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})
        record["wall_s"] = round(time.perf_counter() - t0, 2)
        record["machine"]["load1_after"] = os.getloadavg()[0]  # type: ignore[index]
        record["returncode"] = proc.returncode
        record["output"] = proc.stdout.rstrip("\n")
        if proc.returncode != 0:
            record["error"] = "\n".join(proc.stderr.strip().splitlines()[-20:])
        if bench.json and figures_path.exists():
            record["figures"] = json.loads(figures_path.read_text())
    path = out / f"{name}.json"
    sys.path.insert(0, str(ROOT / "src"))
    from bakeoff._io import atomic_write_text

    atomic_write_text(path, json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    state = "ok" if proc.returncode == 0 else f"FAILED ({proc.returncode})"
    print(f"[{name}] {state} in {record['wall_s']} s -> {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}",
          file=sys.stderr, flush=True)
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="benchmarks to run (default: all; with --quick, the quick subset)")
    ap.add_argument("--quick", action="store_true", help="the quick subset at small sizes")
    ap.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    ap.add_argument("--out", type=Path, default=RESULTS, help="folder of the JSON records (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.list:
        for name, b in SUITE.items():
            print(f"{name:20s} {'quick ' if b.quick is not None else '      '}{b.title}")
        return 0
    unknown = [n for n in args.names if n not in SUITE]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; see --list", file=sys.stderr)
        return 2
    names = args.names or [n for n, b in SUITE.items() if not args.quick or b.quick is not None]
    missing = [n for n in names if "scifact" in SUITE[n].needs and not (DATA / "scifact" / "corpus.jsonl").exists()]
    if missing:
        print(f"SciFact not found under {DATA} (set BAKEOFF_SHARED_DATA); needed by {', '.join(missing)}",
              file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    failed = [n for n in names if run_one(n, SUITE[n], quick=args.quick, out=args.out)["returncode"] != 0]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
