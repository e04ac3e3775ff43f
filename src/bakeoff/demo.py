"""``bakeoff demo``: the whole mission offline, on a corpus every Python install has.

Stages (each timed, each with a progress bar):

1. **corpus** — Python standard-library docstrings (:mod:`bakeoff.stdlib_corpus`).
2. **truth** — describe-mode queries from the local Gemma 3 270M server
   (:mod:`bakeoff.truth.local_llm`), leak-filtered (threshold 0.35); every
   query is evaluated (``test_fraction=1``: the demo trains nothing). Written as a
   BEIR folder ``<out>/truth`` so ``bakeoff run --beir <out>/truth`` repeats it.
3. **arms** — TF-IDF, BM25, BM25 + Snowball stemmer, dense MiniLM (offline), and
   RRF of stemmed BM25 + dense; then the results table, ``<out>/results.json``.

Everything is cached (generations, embeddings, runs), so a second run takes seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cache import Cache

__all__ = ["DEMO_ARMS", "DemoReport", "run_demo"]

#: The demo's arms as ``--arm`` specifications.
DEMO_ARMS: tuple[str, ...] = (
    "tfidf",
    "bm25",
    "bm25-stem=bm25:stemmer=english",
    "dense",
    "rrf=rrf:arms=bm25-stem+dense",
)


@dataclass
class DemoReport:
    """What the demo measured: stage wall times (s), truth statistics, the results dict."""

    stages: dict[str, float] = field(default_factory=dict)
    truth: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)


def run_demo(*, out: Path, n: int = 100, seed: int = 0, cache: Cache | None = None, progress: bool = True,
             arms: tuple[str, ...] = DEMO_ARMS, echo: Any = print) -> DemoReport:
    """Run the three stages; write ``out/truth`` (BEIR) and ``out/results.json``."""
    from .data.model import Dataset
    from .report.terminal import print_table
    from .runner.config import build_arms, parse_arm_spec
    from .runner.run import run_bakeoff
    from .stdlib_corpus import stdlib_corpus
    from .truth.generate import generate_truth
    from .truth.synthetic import DescribeOptions

    report = DemoReport()
    t_all = time.perf_counter()

    t0 = time.perf_counter()
    corpus = stdlib_corpus()
    report.stages["corpus"] = time.perf_counter() - t0
    echo(f"[1/3] corpus: {len(corpus)} Python standard-library docstrings ({report.stages['corpus']:.1f} s)")

    t0 = time.perf_counter()
    opts = DescribeOptions(n=n, seed=seed, max_regenerations=2, max_doc_chars=500, test_fraction=1.0)
    done = generate_truth(corpus, options=opts, llm="local", out=out / "truth", source="python-stdlib-docstrings",
                          cache=cache, progress=progress)
    truth, usage = done.truth, done.usage
    assert truth is not None  # no batch file: the truth is generated
    report.stages["llm_startup"] = done.llm_startup_s
    report.stages["truth"] = time.perf_counter() - t0
    prov = truth.provenance
    report.truth = {"kept": prov["counts"]["kept"], "sampled": prov["counts"]["sampled"],
                    "mean_leak": prov["leak"]["kept"]["mean"], "rejection_rate": prov["leak"]["rejection_rate"],
                    "leak_histogram": prov["leak"]["all_generations"]["histogram"], "counts": prov["counts"],
                    "usage": usage.as_dict()}
    echo(f"[2/3] truth: {report.truth['kept']} queries kept of {report.truth['sampled']} sampled documents, "
         f"mean leak {report.truth['mean_leak']:.3f}, rejection rate {report.truth['rejection_rate']:.1%} "
         f"({usage.completion_tokens} tokens generated, {usage.cache_hits} cached; {report.stages['truth']:.1f} s)")

    t0 = time.perf_counter()
    dataset = Dataset(name="python-stdlib-demo", corpus=corpus, queries=truth.queries, qrels=truth.qrels,
                      split="test")
    built = build_arms([parse_arm_spec(a) for a in arms])
    results = run_bakeoff(dataset, built, k=10, depth=100, cache=cache, progress=progress)
    report.stages["arms"] = time.perf_counter() - t0
    results.dataset = {**results.dataset, "source": "bakeoff demo", "truth": str(out / "truth")}
    as_dict = results.to_dict()
    report.results = as_dict
    echo(f"[3/3] arms: {', '.join(a.name for a in built)} ({report.stages['arms']:.1f} s)")
    print_table(as_dict)
    results.write(out)
    report.stages["total"] = time.perf_counter() - t_all
    echo("wall time per stage: " + ", ".join(f"{k} {v:.1f} s" for k, v in report.stages.items()))
    echo(f"wrote {out}/results.json and {out}/truth (re-run: bakeoff run --beir {out}/truth --arm bm25 ...)")
    return report
