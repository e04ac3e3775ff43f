"""``bakeoff demo``: the whole mission offline, on the standard library's docstrings or on your corpus.

Stages (each timed, each with a progress bar):

1. **corpus** — Python standard-library docstrings (:mod:`bakeoff.stdlib_corpus`), or ``corpus``:
   anything ``--corpus`` takes elsewhere (a BEIR folder, JSONL/CSV/Parquet records mapped by
   ``fields``, a folder of documents, an ``ingest`` output).
2. **truth** — describe-mode questions from the LLM (default: the embedded local model,
   :mod:`bakeoff.truth.llm.local_server`) for documents of at least ``min_doc_chars`` characters, with
   ``bakeoff generate``'s defaults: zero-shot, the question asked as a searcher's need, answerability
   relative to the corpus (the source document must rank in the top 5 of itself and 99 random documents
   under the multilingual USE bi-encoder, a model no demo arm uses; :mod:`bakeoff.truth.filters.reference_rank`),
   leak recorded and matched in the verdict (:class:`~bakeoff.truth.generation.describe.DescribeOptions`,
   :mod:`bakeoff.report.leak_match`); a truth that collapsed is reported and not evaluated; up to ``1 + DEMO_REGENERATIONS`` tries per
   document. Every query is evaluated (``test_fraction=1``: the demo trains nothing). Written as a
   BEIR folder ``<out>/truth`` so ``bakeoff run --beir <out>/truth`` repeats it.
3. **arms** — TF-IDF, BM25, BM25 + Snowball stemmer, dense MiniLM (offline), and RRF of stemmed
   BM25 + dense; then the quality of the truth (:func:`truth_quality_lines`, :func:`judged_lines`).
4. **report** — the results table, the verdict (:func:`bakeoff.report.verdict.build_verdict`: paired
   tests, Holm, the tie rule) and, when the queries are too few to separate the arms, a line saying
   so and what to do (:func:`separation_line`); ``<out>/results.json``.

Everything is cached (generations, scores, embeddings, runs), so a second run takes seconds and a
run killed half-way resumes where it stopped.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cache import Cache
from .data.loaders import FieldMap, open_corpus
from .truth.llm.spec import LLMSpec

if TYPE_CHECKING:
    from .data.model import Dataset
    from .runner.config import ArmSpec
    from .runner.results import Results, StoredResults
    from .truth.generation.describe import DescribeOptions
    from .truth.generation.synthetic import SyntheticTruth

__all__ = [
    "BIGGER_MODEL_HINT",
    "DEMO_ANSWERABILITY",
    "DEMO_ARMS",
    "MIN_DOC_CHARS",
    "MIN_QUERIES",
    "DemoReport",
    "judged_lines",
    "run_demo",
    "separation_line",
    "truth_quality_lines",
]

#: Standard-library docstrings shorter than this (characters) are not sampled: below it sit the bare one-liners
#: ("Deprecated AST node class. Unused in Python 3.", exception classes) that no question is answered by.
MIN_DOC_CHARS = 120
#: The floor for a user's corpus (``bakeoff generate``'s default).
MIN_CORPUS_DOC_CHARS = 60

#: The demo's answerability scorer: USE, a model no demo arm uses (a filter using the dense arm's own model would
#: make the filter a round trip through that arm; ``bias_caveat`` names such arms).
DEMO_ANSWERABILITY = "use"

#: Regeneration rounds of the demo: a document gets up to ``1 + DEMO_REGENERATIONS`` questions until one passes.
DEMO_REGENERATIONS = 5

#: Fewer kept queries than this and the table cannot tell arms apart that differ by a few points of NDCG@10
#: (a paired test's standard error of the mean difference is about sd / sqrt(n), with per-query sd ~0.3).
MIN_QUERIES = 50

#: Printed with the truth quality: the default local model is for trying the tool.
BIGGER_MODEL_HINT = (
    "note: the default local model (Qwen2.5-Coder-0.5B-Instruct) writes a query its document does not answer "
    "about one time in three; for ground truth you report, read a sample and use a bigger model, e.g. "
    "`--llm local:qwen-coder-1.5b`, `--llm ollama:qwen2.5:7b` (after `ollama pull qwen2.5:7b`) "
    "or `--llm openai:gpt-5-mini` (with OPENAI_API_KEY set)")


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
        ref = ans.get("reference")
        if ref:
            lines.append(f"answerability: the source document must rank <= {ref['max_rank']} among itself and "
                         f"{ref['references']} random documents of the corpus ({ans['score']}); "
                         f"{ref['share_kept']:.0%} of candidates passed; ranks: "
                         + " ".join(f"[{k}]{v}" for k, v in ref["rank_histogram"].items()))
        else:
            lines += _quantile_lines("answerability", ans, unit=ans["score"], threshold=ans["threshold"])
    leak = provenance.get("leak")
    if leak and leak.get("mode") in ("target", "record"):
        bins = leak.get("bins") or []
        labels = [f"{lo:.1f}-{hi:.1f}" for lo, hi in itertools.pairwise(bins)]
        quota = leak.get("quota")
        per_bin = ", ".join(f"{lab} {k}" + (f"/{q}" if quota else "")
                            for lab, k, q in zip(labels, leak["kept_by_bin"], quota or [None] * len(labels), strict=False))
        lines.append(f"leak (share of a query's rare words found in its document), {leak['mode']}"
                     + (" (kept/quota per bin)" if quota else "") + f": {per_bin}; kept mean {leak['kept']['mean']:.2f}")
        target = leak.get("target")
        if target and not quota:
            lines.append("leak target of the verdict (" + str(leak.get("target_source") or "default") + "): "
                         + ", ".join(f"{lab} {t:.0%}" for lab, t in zip(labels, target, strict=False)))
    masked = provenance.get("masked")
    if masked and masked.get("documents"):
        lines.append(f"masked: {len(masked['documents'])} of {counts.get('sampled', 0)} sampled documents (share "
                     f"{masked['share']:.0%}) were shown with {masked['terms']:.0%} of their rare words masked, so their "
                     "queries cannot copy them")
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
    """What the demo measured: stage wall times (s), truth statistics, the results, the verdict."""

    stages: dict[str, float] = field(default_factory=dict)
    truth: dict[str, Any] = field(default_factory=dict)
    results: StoredResults | None = None
    verdict: dict[str, Any] = field(default_factory=dict)


def separation_line(verdict: Mapping[str, Any], n_queries: int) -> str | None:
    """A line when the table cannot separate the arms: fewer than :data:`MIN_QUERIES` queries, or the
    verdict's best arm tied with others (no significant difference after Holm; on the leak-matched view when the
    verdict was taken on it, and then the line says so); ``None`` otherwise."""
    more = ("generate more queries (-n) over more documents, or a stronger --llm that gets more of them "
            "through the filters")
    if n_queries < MIN_QUERIES:
        return (f"too few queries to separate the arms: {n_queries} kept (< {MIN_QUERIES}); read the table as a "
                f"sketch and {more}")
    tied = [t["name"] for t in verdict.get("tied") or []]
    ess = (verdict.get("leak_matched") or {}).get("ess")
    on = f"{n_queries} queries" if ess is None else (f"the {n_queries} queries weighted to the leak target (effective "
                                                       f"sample size {ess:.1f})")
    if tied:
        return f"{verdict.get('best')} is not significantly better than {', '.join(tied)} on {on}; to separate them, {more}"
    return None


def verdict_of(results: StoredResults, dataset: Any, runs: Mapping[str, Any]) -> dict[str, Any]:
    """``bakeoff report``'s verdict of ``results`` (paired tests, Holm, the tie rule)."""
    from .report.model import build_report
    from .report.verdict import build_verdict

    return build_verdict(build_report(results, dataset=dataset, runs=runs))


def _estimated(estimate: Any) -> str:
    """``, estimated N s of LLM time for G generations; G made`` from the truth's estimate record, or nothing."""
    if not estimate or estimate.get("llm_seconds") is None:
        return ""
    return (f"; estimated {estimate['llm_seconds']:.0f} s of LLM time for {estimate['generations']} generations, "
            f"{estimate['measured']['generations']} made in {estimate['measured']['seconds']:.0f} s")


def run_demo(*, out: Path, corpus: Path | None = None, llm: LLMSpec | str = "local", fields: FieldMap = FieldMap(),
             n: int = 100, seed: int = 0, cache: Cache | None = None, progress: bool = True,
             arms: tuple[str, ...] = DEMO_ARMS, echo: Any = print, min_doc_chars: int | None = None,
             retry_fix: bool = True, show_title: bool = True, copy_penalty: bool = True) -> DemoReport:
    """Run the four stages on the standard library (``corpus=None``) or on ``corpus``; write
    ``out/truth`` (BEIR) and ``out/results.json``. ``retry_fix`` and ``show_title``: the generator's
    :class:`~bakeoff.truth.generation.describe.DescribeOptions` of those names; ``copy_penalty``: its default
    :class:`~bakeoff.truth.generation.copy_penalty.CopyPenalty`, or none."""
    llm = LLMSpec.of(llm)
    report = DemoReport()
    t_all = time.perf_counter()
    docs, source, floor, max_chars = _corpus_stage(corpus, fields=fields, min_doc_chars=min_doc_chars, report=report,
                                                   echo=echo)
    opts = _describe_options(n=n, seed=seed, max_chars=max_chars, floor=floor, retry_fix=retry_fix,
                             show_title=show_title, copy_penalty=copy_penalty)
    truth = _truth_stage(docs, opts, llm=llm, out=out, source=source, cache=cache, progress=progress, report=report,
                         echo=echo)
    if not _evaluable(truth, out=out, report=report, echo=echo):
        return report
    dataset, results, specs = _arms_stage(docs, truth, corpus=corpus, arms=arms, out=out, cache=cache,
                                          progress=progress, report=report, echo=echo)
    runs = {a.name: a.run for a in results.arms}
    _quality_stage(dataset, runs, specs, truth.provenance, llm=llm, report=report, echo=echo)
    _report_stage(results, dataset, runs, n_queries=len(truth.queries.ids), out=out, t_all=t_all, report=report,
                  echo=echo)
    return report


def _corpus_stage(corpus: Path | None, *, fields: FieldMap, min_doc_chars: int | None, report: DemoReport,
                  echo: Any) -> tuple[Any, str, int, int]:
    """Stage 1: the documents, their source, the shortest document sampled and the longest shown to the LLM."""
    from .stdlib_corpus import stdlib_corpus

    t0 = time.perf_counter()
    if corpus is None:
        docs, source, floor, max_chars = stdlib_corpus(), "python-stdlib-docstrings", MIN_DOC_CHARS, 500
        what = "Python standard-library docstrings"
    else:
        docs, source, floor, max_chars = open_corpus(corpus, fields=fields), str(corpus), MIN_CORPUS_DOC_CHARS, 1200
        what = f"documents from {corpus}"
    floor = floor if min_doc_chars is None else min_doc_chars
    report.stages["corpus"] = time.perf_counter() - t0
    echo(f"[1/4] corpus: {len(docs)} {what} ({report.stages['corpus']:.1f} s)")
    return docs, source, floor, max_chars


def _describe_options(*, n: int, seed: int, max_chars: int, floor: int, retry_fix: bool, show_title: bool,
                      copy_penalty: bool) -> DescribeOptions:
    """The generator's options for the demo: ``bakeoff generate``'s defaults, every query evaluated."""
    from .truth.filters.answerability import AnswerabilityOptions
    from .truth.generation.copy_penalty import CopyPenalty
    from .truth.generation.describe import DescribeOptions

    return DescribeOptions(n=n, seed=seed, max_regenerations=DEMO_REGENERATIONS, max_doc_chars=max_chars,
                           test_fraction=1.0, min_doc_chars=floor, answerability=AnswerabilityOptions(),
                           retry_fix=retry_fix, show_title=show_title,
                           copy_penalty=CopyPenalty() if copy_penalty else None)


def _truth_stage(docs: Any, opts: DescribeOptions, *, llm: LLMSpec, out: Path, source: str, cache: Cache | None,
                 progress: bool, report: DemoReport, echo: Any) -> SyntheticTruth:
    """Stage 2: generate the truth into ``out/truth`` and record its statistics in ``report.truth``."""
    from .truth.generation.generate import generate_truth

    t0 = time.perf_counter()
    done = generate_truth(docs, options=opts, llm=llm, out=out / "truth", source=source, cache=cache,
                          progress=progress, answerability=DEMO_ANSWERABILITY, announce=lambda line: echo("      " + line))
    truth, usage = done.truth, done.usage
    assert truth is not None  # no batch file: the truth is generated
    report.stages["llm_startup"] = done.llm_startup_s
    report.stages["truth"] = time.perf_counter() - t0
    prov = truth.provenance
    report.truth = {"kept": prov["counts"]["kept"], "sampled": prov["counts"]["sampled"],
                    "mean_leak": prov["leak"]["kept"]["mean"], "rejection_rate": prov["leak"]["rejection_rate"],
                    "leak_histogram": prov["leak"]["all_generations"]["histogram"], "counts": prov["counts"],
                    "rejections": prov["rejections"], "documents": prov["documents"],
                    "examples": prov["prompts"]["examples"], "leak_by_bin": prov["leak"]["kept_by_bin"],
                    "answerability": prov.get("answerability"), "usage": usage.as_dict()}
    echo(f"[2/4] truth: {report.truth['kept']} queries kept of {report.truth['sampled']} sampled documents, "
         f"mean leak {report.truth['mean_leak']:.3f}, examples {report.truth['examples']} "
         f"({usage.completion_tokens} tokens generated, {usage.cache_hits} cached; {report.stages['truth']:.1f} s"
         + _estimated(prov.get("estimate")) + ")")
    return truth


def _evaluable(truth: SyntheticTruth, *, out: Path, report: DemoReport, echo: Any) -> bool:
    """Whether the arms are evaluated on ``truth``: not when no query was kept or the truth collapsed (said why)."""
    prov = truth.provenance
    if not truth.queries.ids:
        echo("no query was kept, so there is nothing to evaluate; see the rejections in "
             f"{out / 'truth' / 'provenance.json'} and try a stronger --llm or more documents (-n)")
        return False
    health = prov.get("health") or {}
    report.truth["health"] = health
    if health.get("line"):
        echo(health["line"])
        echo(f"not evaluating the arms on this truth; it is in {out / 'truth'} (bakeoff run --beir {out / 'truth'} "
             "evaluates it anyway)")
        return False
    return True


def _arms_stage(docs: Any, truth: SyntheticTruth, *, corpus: Path | None, arms: tuple[str, ...], out: Path,
                cache: Cache | None, progress: bool, report: DemoReport,
                echo: Any) -> tuple[Dataset, Results, list[ArmSpec]]:
    """Stage 3: run the arms on the generated truth; ``report.results`` is their table."""
    from .data.model import Dataset
    from .runner.config import build_arms, parse_arm_spec
    from .runner.run import run_bakeoff

    t0 = time.perf_counter()
    dataset = Dataset(name="python-stdlib-demo" if corpus is None else Path(str(corpus)).name or "corpus",
                      corpus=docs, queries=truth.queries, qrels=truth.qrels, split="test")
    specs = [parse_arm_spec(a) for a in arms]
    built = build_arms(specs)
    results = run_bakeoff(dataset, built, k=10, depth=100, cache=cache, progress=progress)
    report.stages["arms"] = time.perf_counter() - t0
    results.dataset = {**results.dataset, "source": "bakeoff demo", "truth": str(out / "truth")}
    report.results = results.stored()
    echo(f"[3/4] arms: {', '.join(a.name for a in built)} ({report.stages['arms']:.1f} s)")
    return dataset, results, specs


def _quality_stage(dataset: Dataset, runs: Mapping[str, Any], specs: list[ArmSpec], prov: dict[str, Any], *,
                   llm: LLMSpec, report: DemoReport, echo: Any) -> None:
    """The quality of the truth (judged@10, holes, round trip, answerability bias), printed and in ``report.truth``."""
    from .report.quality import quick_quality
    from .truth.filters.answerability import bias_caveat

    echo("quality of this ground truth:")
    quality = quick_quality(dataset, runs, k=10)
    report.truth["quality"] = quality
    arm_models = {s.name: {"kind": s.type, "model": s.options.get("model"),
                           "members": [*str(s.options.get("arms", "")).split("+"), str(s.options.get("base", ""))]}
                  for s in specs}
    caveat = bias_caveat(prov.get("answerability"), arm_models)
    for line in [*truth_quality_lines(prov), *([caveat] if caveat else []), *judged_lines(quality)]:
        echo("  " + line)
    if llm.is_local and llm.model in ("", "qwen-coder-0.5b", "gemma-270m"):  # the small bundled models
        echo(BIGGER_MODEL_HINT)


def _report_stage(results: Results, dataset: Dataset, runs: Mapping[str, Any], *, n_queries: int, out: Path,
                  t_all: float, report: DemoReport, echo: Any) -> None:
    """Stage 4: the table, the verdict and ``out/results.json``; then the wall time of each stage."""
    from .report.terminal import print_table

    stored = report.results
    assert stored is not None  # set by the arms stage
    t0 = time.perf_counter()
    print_table(stored)
    report.verdict = verdict_of(stored, dataset, runs)
    echo(f"[4/4] verdict ({report.verdict['measure']}, synthetic ground truth):")
    for line in report.verdict["lines"]:
        echo("  " + line)
    sep = separation_line(report.verdict, n_queries)
    if sep:
        echo("  " + sep)
    results.write(out)
    report.stages["report"] = time.perf_counter() - t0
    report.stages["total"] = time.perf_counter() - t_all
    echo("wall time per stage: " + ", ".join(f"{k} {v:.1f} s" for k, v in report.stages.items()))
    echo(f"wrote {out}/results.json and {out}/truth (re-run: bakeoff run --beir {out}/truth --arm bm25 ...; "
         f"full report: bakeoff report {out})")
