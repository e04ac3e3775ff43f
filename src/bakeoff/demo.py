"""``bakeoff demo``: the whole mission offline, on a corpus every Python install has.

Stages (each timed, each with a progress bar):

1. **corpus** — Python standard-library docstrings (:mod:`bakeoff.stdlib_corpus`).
2. **truth** — describe-mode questions from the local Gemma 3 270M server
   (:mod:`bakeoff.truth.local_llm`) for documents of at least ``MIN_DOC_CHARS``
   characters, filtered (example copies, too short, and **answerability** below
   :data:`~bakeoff.truth.answerability.DEFAULT_THRESHOLD`: cosine of the query and its
   source document under the multilingual USE bi-encoder, a model no demo arm uses,
   :mod:`bakeoff.truth.answerability`)
   and regenerated up to three times; leak is recorded, not filtered (:data:`DEMO_LEAK_THRESHOLD`),
   and the Gemma specificity filter is off (:data:`DEMO_SPECIFICITY`; ``bakeoff generate`` keeps
   both). Every query is evaluated (``test_fraction=1``: the demo trains nothing). Written as a
   BEIR folder ``<out>/truth`` so ``bakeoff run --beir <out>/truth`` repeats it.
3. **arms** — TF-IDF, BM25, BM25 + Snowball stemmer, dense MiniLM (offline), and
   RRF of stemmed BM25 + dense; then the quality of the truth (:func:`truth_quality_lines`:
   filters and their counts, the answerability distribution, the bias caveat; :func:`judged_lines`: judged@10,
   holes and round-trip rates per arm) *before* the results table, ``<out>/results.json``.

Everything is cached (generations, embeddings, runs), so a second run takes seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cache import Cache
from .truth.prompts import PromptControl

__all__ = ["DEMO_ARMS", "DemoReport", "run_demo", "truth_quality_lines", "judged_lines", "BIGGER_MODEL_HINT",
           "MIN_DOC_CHARS", "DEMO_LEAK_THRESHOLD", "DEMO_SPECIFICITY", "DEMO_ANSWERABILITY"]

#: Documents shorter than this (characters of docstring text) are not sampled. Below 60 characters sit the bare
#: one-liners ("Deprecated AST node class. Unused in Python 3.", exception classes); hand-judged kept queries
#: were answerable 47 % of the time from documents under 60 characters and 62-75 % at 120-200 characters
#: (benchmarks/data/answerability_judged.jsonl). 120 leaves 1,752 of 3,105 docstrings to sample from.
MIN_DOC_CHARS = 120

#: The demo's leak threshold: 1.0 rejects nothing (leak is recorded and reported by bucket). Measured on 60
#: hand-judged generations of a demo run with the 0.35 threshold: 10 of the 20 leak-rejected ones were
#: answerable by their docstring, 3 of the 40 that passed. A question a one-paragraph docstring answers
#: shares its rare words ("how to create a decimal from float"); the 0.35 filter kept the off-topic ones.
DEMO_LEAK_THRESHOLD = 1.0

#: The demo's specificity scorer: off. On those 40 leak-passing generations the MiniLM answerability score
#: separated answerable from not with ROC AUC 0.86, specificity 0.84, and specificity >= 1.0 on top of
#: answerability >= 0.4 removed 1 query and no answerable one; it cost ~116 s of Gemma scoring per demo.
DEMO_SPECIFICITY = "off"

#: The demo's answerability scorer: USE (cosine >= 0.5), a model no demo arm uses. Two demo runs, 30 kept
#: queries drawn from each (numpy ``default_rng(2026).choice(n_kept, 30)``) and judged by hand: USE kept 51
#: queries, 14 of 30 answerable by their docstring (dense NDCG@10 0.69, BM25 0.55, dense round trip 0.88);
#: MiniLM (cosine >= 0.6) kept 47, 21 of 30 answerable, but it is the dense arm's model, so the filter was a
#: round trip through that arm: dense Recall@10 1.000, NDCG@10 0.82 against BM25's 0.68 -- the filter chose
#: the winner (``"minilm"`` here prints the caveat line naming dense and rrf).
DEMO_ANSWERABILITY = "use"

#: The demo's few-shot examples: docstrings of functions outside the standard library (so no sampled document
#: is an example), in the corpus' own form (qualified name, signature, docstring), from six unrelated topics, each
#: with the question a programmer would type: what they want to do, close to the docstring's first sentence,
#: without the package's name (one example's verb, "rotate", is also the method's). Measured on 40 development documents (sampling seed 7, 4 generations each): the
#: built-in examples (aspirin, exercise, ``shutil.copytree``, ``str.upper``) gave mean USE score 0.27 and 10
#: documents with a query >= 0.5 (many "copy a folder with everything inside" and heart-attack questions);
#: four data-science examples 0.26 and 9 (rows and tables everywhere); these six 0.33 and 18.
DEMO_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("numpy.argsort argsort(a, axis=-1, kind=None, order=None) Returns the indices that would sort an array.",
     "how do I get the indices that would sort an array"),
    (("dateutil.parser.parse parse(timestr, default=None, ignoretz=False) Parse a string in one of the supported "
      "formats into a datetime object."),
     "how to turn a date written as text into a datetime"),
    (("click.confirm confirm(text, default=False, abort=False) Prompts for confirmation (yes/no question). If the "
      "user aborts the input by sending an interrupt signal this function will catch it."),
     "how can I ask the user a yes or no question in the terminal"),
    ("requests.get get(url, params=None, **kwargs) Sends a GET request. Returns a Response object.",
     "how to download a web page from a url"),
    (("psutil.cpu_percent cpu_percent(interval=None, percpu=False) Return a float representing the current "
      "system-wide CPU utilization as a percentage."),
     "how can I check how busy the processor is"),
    (("PIL.Image.Image.rotate rotate(self, angle, resample=0, expand=0) Returns a rotated copy of this image. "
      "angle is in degrees counter clockwise."),
     "how do I rotate a picture by 90 degrees"),
)

#: The demo's describe prompt: :data:`DEMO_EXAMPLES` in the completion prompt (default header, instruction).
DEMO_PROMPT = PromptControl(examples=DEMO_EXAMPLES)

#: Regeneration rounds of the demo: a document gets up to ``1 + DEMO_REGENERATIONS`` questions until one passes.
DEMO_REGENERATIONS = 5

#: Printed with the truth quality: 30 kept queries of a demo run (this prompt, floor and filter) drawn with numpy
#: ``default_rng(20261201).choice(48, 30, replace=False)`` and judged by hand against the whole docstring
#: (benchmarks/data/answerability_demo_v3.jsonl): 9 answerable, 14 weakly, 7 not.
ANSWERABLE_NOTE = ("note: read by hand, 23 of 30 kept queries drawn from a demo run were answered by their docstring, "
                   "but 14 of them only loosely (the query names the function or fits it in part) and 7 not at all: "
                   "treat the table as a rough comparison")

#: Printed with the truth quality: the embedded model is for trying the tool.
BIGGER_MODEL_HINT = (
    "note: the embedded Gemma 3 270M is for trying the tool; for real ground truth use a bigger model, e.g. "
    "`bakeoff generate describe --corpus DOCS --out truth --llm ollama:qwen2.5:7b` (after `ollama pull qwen2.5:7b`) "
    "or `--llm openai:gpt-5-mini` (with OPENAI_API_KEY set), then `bakeoff run --beir truth ...`")


def _quantile_lines(name: str, entry: dict[str, Any], *, unit: str, threshold: Any) -> list[str]:
    """One line of quantiles per distribution of a filter's provenance entry (candidates, kept)."""
    lines = []
    for key, label in (("all_candidates", "candidates"), ("kept", "kept")):
        st = entry[key]
        if st["n"]:
            lines.append(f"{name} ({label}, n={st['n']}, {unit}, keep >= {threshold}): p10 {st['p10']:+.2f}  "
                         f"p25 {st['p25']:+.2f}  median {st['p50']:+.2f}  p75 {st['p75']:+.2f}  p90 {st['p90']:+.2f}")
    return lines


def truth_quality_lines(provenance: dict[str, Any]) -> list[str]:
    """The truth's own quality as text lines: documents skipped as too short, each filter's
    rejection count, and the specificity distribution of the candidates and of the kept queries."""
    lines = []
    docs = provenance.get("documents", {})
    counts = provenance.get("counts", {})
    if docs:
        lines.append(f"documents: {docs['corpus']} in the corpus, {docs['too_short']} too short to describe "
                     f"(< {docs['min_doc_chars']} chars) never sampled; {counts.get('sampled', 0)} sampled")
    rej = provenance.get("rejections", {})
    if rej:
        lines.append(f"generations: {counts.get('generations', 0)} answered; rejected: "
                     + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in rej.items()
                                 if not k.startswith("below_") or v)
                     + f"; kept {counts.get('kept', 0)} queries, {counts.get('dropped_docs', 0)} documents dropped "
                       "after all regenerations")
    ans = provenance.get("answerability")
    if ans:
        lines += _quantile_lines("answerability", ans, unit=ans["score"], threshold=ans["threshold"])
    leak = provenance.get("leak")
    if leak and leak.get("threshold") is not None and leak["threshold"] >= 1.0:
        lines.append(f"leak (share of a query's rare words found in its document): recorded, not filtered; kept queries "
                     f"mean {leak['kept']['mean']:.2f}, median {leak['kept']['median']:.2f}")
    spec = provenance.get("specificity")
    if spec:
        lines += _quantile_lines("specificity", spec, unit="nats/token", threshold=spec["options"]["threshold"])
        hist = spec["all_candidates"].get("histogram")
        if hist:
            lines.append("  histogram: " + " ".join(f"[{k}]{v}" for k, v in hist.items() if v))
    return lines


def judged_lines(quality: dict[str, Any]) -> list[str]:
    """Text lines of :func:`bakeoff.report.quality.quick_quality`'s answer: judged@k per arm (share of
    each arm's top k that has a judgment), the holes (unjudged pooled pairs; disputed = in some arms'
    top k but not all), and the round trip (share of queries whose source document is in the arm's
    top 10 / top 100; reported, never used as a filter: it favours the arm it would filter with)."""
    k = quality["k"]
    lines = [f"judged@{k}: " + ", ".join(f"{a} {v:.3f}" for a, v in quality["judged"].items())]
    h = quality["holes"]
    lines.append(f"holes: {h['total']} unjudged (query, document) pairs in the arms' top {k}, {h['disputed']} "
                 "where the arms disagree (`bakeoff report` lists them; `bakeoff assess` grades them)")
    rt = quality.get("round_trip")
    if rt:
        lines.append("round trip (source document in the arm's top 10 / top 100): "
                     + ", ".join(f"{a} {v['top10']:.2f}/{v['top100']:.2f}" for a, v in rt["arms"].items()))
    return lines

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
             arms: tuple[str, ...] = DEMO_ARMS, echo: Any = print, min_doc_chars: int = MIN_DOC_CHARS) -> DemoReport:
    """Run the three stages; write ``out/truth`` (BEIR) and ``out/results.json``."""
    from .data.model import Dataset
    from .report.quality import quick_quality
    from .report.terminal import print_table
    from .runner.config import build_arms, parse_arm_spec
    from .runner.run import run_bakeoff
    from .stdlib_corpus import stdlib_corpus
    from .truth.answerability import AnswerabilityOptions, bias_caveat
    from .truth.generate import generate_truth
    from .truth.specificity import SpecificityOptions
    from .truth.synthetic import DescribeOptions

    report = DemoReport()
    t_all = time.perf_counter()

    t0 = time.perf_counter()
    corpus = stdlib_corpus()
    report.stages["corpus"] = time.perf_counter() - t0
    echo(f"[1/3] corpus: {len(corpus)} Python standard-library docstrings ({report.stages['corpus']:.1f} s)")

    t0 = time.perf_counter()
    opts = DescribeOptions(n=n, seed=seed, max_regenerations=DEMO_REGENERATIONS, max_doc_chars=500, test_fraction=1.0,
                           min_doc_chars=min_doc_chars, leak_threshold=DEMO_LEAK_THRESHOLD, prompt=DEMO_PROMPT,
                           specificity=None if DEMO_SPECIFICITY == "off" else SpecificityOptions(),
                           answerability=AnswerabilityOptions())
    done = generate_truth(corpus, options=opts, llm="local", out=out / "truth", source="python-stdlib-docstrings",
                          cache=cache, progress=progress, specificity=DEMO_SPECIFICITY, answerability=DEMO_ANSWERABILITY)
    truth, usage = done.truth, done.usage
    assert truth is not None  # no batch file: the truth is generated
    report.stages["llm_startup"] = done.llm_startup_s
    report.stages["truth"] = time.perf_counter() - t0
    prov = truth.provenance
    report.truth = {"kept": prov["counts"]["kept"], "sampled": prov["counts"]["sampled"],
                    "mean_leak": prov["leak"]["kept"]["mean"], "rejection_rate": prov["leak"]["rejection_rate"],
                    "leak_histogram": prov["leak"]["all_generations"]["histogram"], "counts": prov["counts"],
                    "rejections": prov["rejections"], "documents": prov["documents"],
                    "specificity": prov.get("specificity"),
                    "answerability": prov.get("answerability"), "usage": usage.as_dict()}
    leak_part = ("" if DEMO_LEAK_THRESHOLD >= 1.0 else f", rejection rate {report.truth['rejection_rate']:.1%}")
    echo(f"[2/3] truth: {report.truth['kept']} queries kept of {report.truth['sampled']} sampled documents, "
         f"mean leak {report.truth['mean_leak']:.3f}{leak_part} "
         f"({usage.completion_tokens} tokens generated, {usage.cache_hits} cached; {report.stages['truth']:.1f} s)")

    t0 = time.perf_counter()
    dataset = Dataset(name="python-stdlib-demo", corpus=corpus, queries=truth.queries, qrels=truth.qrels,
                      split="test")
    specs = [parse_arm_spec(a) for a in arms]
    built = build_arms(specs)
    results = run_bakeoff(dataset, built, k=10, depth=100, cache=cache, progress=progress)
    report.stages["arms"] = time.perf_counter() - t0
    results.dataset = {**results.dataset, "source": "bakeoff demo", "truth": str(out / "truth")}
    as_dict = results.to_dict()
    report.results = as_dict
    echo(f"[3/3] arms: {', '.join(a.name for a in built)} ({report.stages['arms']:.1f} s)")
    echo("quality of this ground truth:")
    quality = quick_quality(dataset, {a.name: a.run for a in results.arms}, k=10)
    report.truth["quality"] = quality
    arm_models = {s.name: {"kind": s.type, "model": s.options.get("model"),
                           "members": [*str(s.options.get("arms", "")).split("+"), str(s.options.get("base", ""))]}
                  for s in specs}
    caveat = bias_caveat(prov.get("answerability"), arm_models)
    for line in [*truth_quality_lines(prov), *([caveat] if caveat else []), *judged_lines(quality)]:
        echo("  " + line)
    if DEMO_ANSWERABILITY == "use":
        echo(ANSWERABLE_NOTE)
    echo(BIGGER_MODEL_HINT)
    print_table(as_dict)
    results.write(out)
    report.stages["total"] = time.perf_counter() - t_all
    echo("wall time per stage: " + ", ".join(f"{k} {v:.1f} s" for k, v in report.stages.items()))
    echo(f"wrote {out}/results.json and {out}/truth (re-run: bakeoff run --beir {out}/truth --arm bm25 ...)")
    return report
