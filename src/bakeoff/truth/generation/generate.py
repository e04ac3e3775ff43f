"""``bakeoff generate``: LLM-written ground truth for a corpus, end to end.

corpus (:func:`bakeoff.data.loaders.open_corpus`) -> an LLM client (:func:`~bakeoff.truth.llm.open.open_llm`:
``local`` starts and stops the bundled llama.cpp server) -> describe or cluster mode
(:mod:`bakeoff.truth.generation.describe` or :mod:`bakeoff.truth.generation.clusters`, chosen by the options' type) -> a BEIR folder with
``provenance.json``.

**Batch path** (remote APIs, cheap and slow): with ``batch_out`` the uncached requests of
the next round are written as an OpenAI batch file instead of being asked, and nothing else
is written; ``batch_in`` ingests a batch results file into the cache first (every request
describe mode could make, all rounds), so the next call finds the answers there.

Cluster mode needs document vectors: the caller passes ``embed(corpus) -> (vectors,
encoder identity)`` (``bakeoff generate clusters`` uses :func:`bakeoff.runner.embed.embed_corpus`,
which shares the dense arm's cache entries), so this package imports no arm.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...cache import Cache
from ...data.loaders import FieldMap, open_corpus
from ...data.model import Corpus
from ...errors import ConfigError
from ..filters.thresholds import LEAK_THRESHOLD
from ..llm.client import LLMClient, Usage
from ..llm.open import open_llm
from ..llm.spec import LLMSpec
from .clusters import CLUSTER_TEXT_DROPS, ClusterOptions, cluster_leak_filter, cluster_truth
from .describe import DescribeOptions, describe_truth
from .synthetic import SyntheticTruth

if TYPE_CHECKING:
    from ..filters.answerability import AnswerabilityScorer
    from ..filters.specificity import QueryLikelihood

__all__ = ["Embed", "GenerateOutcome", "generate_truth", "outcome_lines"]

#: ``embed(corpus) -> ((len(corpus), dim) vectors, encoder identity)`` for cluster mode.
Embed = Callable[[Corpus], tuple[np.ndarray, str]]


@dataclass
class GenerateOutcome:
    """What :func:`generate_truth` did.

    ``truth`` and ``folder`` are ``None`` when the requests went to a batch file
    (``batch_requests`` of them); ``ingested`` holds the counts of a ``batch_in`` file
    (``ingested``, ``invalid``, ``unknown``); ``llm_startup_s`` is the time until the
    client was ready (the local server's start-up).
    """

    usage: Usage
    truth: SyntheticTruth | None = None
    scorer_startup_s: float = 0.0
    folder: Path | None = None
    batch_requests: int = 0
    ingested: dict[str, int] | None = None
    llm_startup_s: float = 0.0


def _ingest(client: LLMClient, path: Path, corpus: Corpus, options: DescribeOptions) -> dict[str, int]:
    """Ingest batch results for every request describe mode could have made (all rounds)."""
    from ..llm.client import ingest_batch
    from .describe import describe_requests

    reqs = [r for attempt in range(options.max_regenerations + 1)
            for r in describe_requests(corpus, client, replace(options), attempt=attempt)]
    return ingest_batch(client, reqs, path)


def generate_truth(
    corpus: Corpus | str | os.PathLike[str],
    *,
    options: DescribeOptions | ClusterOptions,
    out: str | os.PathLike[str] | None,
    source: str | None = None,
    fields: FieldMap = FieldMap(),
    llm: LLMSpec | str = "local",
    cache: Cache | None = None,
    concurrency: int | None = None,
    price: str | None = None,
    embed: Embed | None = None,
    batch_in: Path | None = None,
    batch_out: Path | None = None,
    progress: bool = True,
    specificity: LLMSpec | str | None = "off",
    reasoning_effort: str | None = None,
    cluster_leak_threshold: float | None = LEAK_THRESHOLD,
    answerability: str | None = "use",
    announce: Callable[[str], Any] | None = None,
) -> GenerateOutcome:
    """``bakeoff generate``: ground truth for ``corpus`` (describe mode for :class:`DescribeOptions`,
    cluster mode for :class:`ClusterOptions`), written with ``out`` as a BEIR folder whose
    provenance names ``source`` (default: the corpus path) as the corpus.

    ``corpus`` is a :class:`~bakeoff.data.model.Corpus` or a path opened by
    :func:`bakeoff.data.loaders.open_corpus` (records mapped by ``fields``), after the options
    are checked. Cluster mode needs ``embed``; ``batch_in`` applies to describe mode. Cluster
    questions whose leak exceeds ``cluster_leak_threshold`` are dropped
    (:func:`~bakeoff.truth.generation.clusters.cluster_leak_filter`; ``None`` only records the leak).
    ``specificity`` names the query-likelihood scorer of the specificity filter (``off``/``None``, the
    default: no filter; ``local``: the bundled Gemma in-process; else a completions server spec, see
    :func:`bakeoff.truth.filters.specificity.open_likelihood`); its options are ``options.specificity``.
    ``answerability`` names the scorer of the answerability filter (``use``: the multilingual USE bi-encoder;
    ``cross-encoder:<model>``; ``off``/``None``: no filter, see
    :func:`bakeoff.truth.filters.answerability.open_answerability`); its options are ``options.answerability``.
    ``announce`` (a print function) gets the plan before describe mode starts: the documents, the expected
    generations and, for a local model, the LLM time from a short warm-up (:mod:`bakeoff.truth.generation.estimate`),
    which the provenance records beside the measured time (``estimate``).
    With ``options.queries_like`` and the default leak target, the target is estimated from those queries
    (:func:`~bakeoff.truth.generation.queries_like.estimated_leak_shares`). Batch files turn describe mode's bootstrapped
    examples off (a batch holds requests known in
    advance). Refused (:class:`~bakeoff.errors.ConfigError`): ``n < 1``, a test fraction outside [0, 1],
    batch files without a cache or with the local LLM.
    """
    llm = LLMSpec.of(llm)
    options = _checked(options, llm=llm, cache=cache, embed=embed, batch=bool(batch_in or batch_out))
    if not isinstance(corpus, Corpus):
        source = source or str(corpus)
        corpus = open_corpus(corpus, fields=fields)
    options = _queries_like_target(options, corpus)
    ingested = None
    answerer = _open_answerer(options, answerability) if batch_out is None else None
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(open_llm(llm, cache=cache, concurrency=concurrency, price=price,
                                              reasoning_effort=reasoning_effort))
        started = time.perf_counter() - t0
        t1 = time.perf_counter()
        scorer = _open_scorer(stack, options, specificity) if batch_out is None else None
        scorer_s = time.perf_counter() - t1
        if batch_out is not None:
            client.collect = []
        if isinstance(options, DescribeOptions):
            if batch_in is not None:
                ingested = _ingest(client, batch_in, corpus, options)
            truth = _describe(corpus, client, options, progress=progress, scorer=scorer, answerer=answerer,
                              announce=announce if batch_in is None and batch_out is None else None,
                              local=llm.is_local)
        else:
            assert embed is not None
            vectors, name = embed(corpus)
            truth = cluster_truth(corpus, client, vectors=vectors, options=options, progress=progress,
                                  encoder_name=name, scorer=scorer, answerer=answerer)
            truth = cluster_leak_filter(truth, corpus, threshold=cluster_leak_threshold)
        usage = client.usage
        if client.collect:
            from ..llm.client import write_batch

            n_req = write_batch(client, client.collect, batch_out)  # type: ignore[arg-type]
            return GenerateOutcome(usage, batch_requests=n_req, ingested=ingested, llm_startup_s=started)
    truth.provenance["corpus"] = {"source": source or "corpus"}
    folder = truth.write(out, corpus=corpus) if out is not None else None
    return GenerateOutcome(usage, truth=truth, folder=folder, ingested=ingested, llm_startup_s=started,
                           scorer_startup_s=scorer_s)


def _checked(options: DescribeOptions | ClusterOptions, *, llm: LLMSpec, cache: Cache | None, embed: Embed | None,
             batch: bool) -> DescribeOptions | ClusterOptions:
    """The options, refused as :func:`generate_truth` says; batch files turn bootstrapping off."""
    if options.n < 1:
        raise ConfigError("-n must be >= 1")
    if not 0.0 <= options.test_fraction <= 1.0:
        raise ConfigError("--test-fraction must be in [0, 1]")
    if batch and cache is None:
        raise ConfigError("--batch-in/--batch-out need the cache (--cache use)")
    if batch and llm.is_local:
        raise ConfigError("batch files are for remote APIs; use --llm openai:<model>")
    if isinstance(options, ClusterOptions) and embed is None:
        raise ConfigError("cluster mode needs document vectors (an embed function)")
    if batch and isinstance(options, DescribeOptions) and options.bootstrap:
        # a batch file holds one round's requests, known in advance: no examples chosen between rounds
        options = replace(options, bootstrap=0)
    return options


def _queries_like_target(options: DescribeOptions | ClusterOptions, corpus: Corpus) -> DescribeOptions | ClusterOptions:
    """With ``queries_like`` and the default leak target, the target estimated from those queries."""
    if isinstance(options, DescribeOptions) and options.queries_like and options.leak_target_source == "default":
        from .queries_like import estimated_leak_shares

        options = replace(options, leak_target=estimated_leak_shares(options.queries_like, corpus, lang=options.lang),
                          leak_target_source="--queries-like (each query's leak against its top USE document)")
    return options


def _open_answerer(options: DescribeOptions | ClusterOptions, answerability: str | None) -> AnswerabilityScorer | None:
    """The answerability scorer, opened before the LLM starts (a bad spec or threshold costs nothing) and
    loading its model in the background while the LLM servers start."""
    if options.answerability is None:
        return None
    from ..filters.answerability import Preloading, open_answerability

    answerer = open_answerability(answerability)
    if answerer is not None:
        options.answerability.resolved_threshold(answerer)
        answerer = Preloading(answerer)
    return answerer


def _open_scorer(stack: contextlib.ExitStack[Any], options: DescribeOptions | ClusterOptions,
                 specificity: LLMSpec | str | None) -> QueryLikelihood | None:
    """The specificity filter's query-likelihood scorer (``None`` without one), closed with ``stack``."""
    if options.specificity is None:
        return None
    from ..filters.specificity import open_likelihood

    scorer = open_likelihood(specificity)
    if scorer is not None:
        stack.callback(scorer.close)  # type: ignore[attr-defined]
    return scorer


def _describe(corpus: Corpus, client: LLMClient, options: DescribeOptions, *, progress: bool,
              scorer: QueryLikelihood | None, answerer: AnswerabilityScorer | None,
              announce: Callable[[str], Any] | None, local: bool) -> SyntheticTruth:
    """Describe mode; with ``announce``, the plan from a warm-up first and the estimate beside the measured
    time in provenance (``estimate``)."""
    estimate = None
    if announce is not None:
        from .estimate import warm_up

        estimate = warm_up(corpus, client, options, local=local)
        announce(estimate.line())
    t2 = time.perf_counter()
    truth = describe_truth(corpus, client, options=options, progress=progress, scorer=scorer, answerer=answerer)
    if estimate is not None:
        from .estimate import record

        truth.provenance["estimate"] = record(estimate, counts=truth.provenance.get("counts") or {},
                                              seconds=time.perf_counter() - t2)
    return truth


def outcome_lines(done: GenerateOutcome, *, out: str | os.PathLike[str], batch_out: str | os.PathLike[str] | None
                  ) -> list[str]:
    """What ``bakeoff generate`` prints when :func:`generate_truth` returns: the batch files' counts, the
    LLM's usage, what was kept and rejected (describe mode: the leak by bin, the health line and the estimate
    beside the measured time; cluster mode: repairs, drops and the health line), the filters' score distributions and where
    the folder was written."""
    lines: list[str] = []
    if done.ingested is not None:
        c = done.ingested
        lines.append(f"batch results: {c['ingested']} ingested, {c['invalid']} invalid, {c['unknown']} unknown")
    if done.truth is None:
        lines.append(f"wrote {done.batch_requests} requests to {batch_out}; submit it to the Batch API, then re-run "
                     f"with --batch-in RESULTS.jsonl")
        return lines
    prov = done.truth.provenance
    lines.append(f"llm: {done.usage.summary()}")
    if prov.get("mode") == "clusters":
        lines.append(_clusters_line(prov))
        if (prov.get("health") or {}).get("line"):
            lines.append(prov["health"]["line"])
    else:
        lines += _describe_lines(prov)
    lines += _filter_lines(prov)
    if prov["counts"]["kept"]:
        lines.append(f"wrote {out} (run it: bakeoff run --beir {out} --arm bm25 ...)")
    else:
        lines.append(f"wrote {out}, but with no query kept there is nothing to evaluate; see the rejections above "
                     "(more documents with -n, a bigger model with --llm, or a looser --answerability-alpha)")
    return lines


def _describe_lines(prov: dict[str, Any]) -> list[str]:
    lk = prov["leak"]
    lines = [f"kept {prov['counts']['kept']} of {prov['counts']['sampled']} sampled documents; "
             f"mean leak {lk['kept']['mean']:.3f} (leak mode {lk['mode']}; kept per leak bin {lk['kept_by_bin']}"
             + (f", quota {lk['quota']}" if lk.get("quota") else "") + f"); examples: {prov['prompts']['examples']}"]
    if lk.get("quota_waived_after_round") is not None:
        st = lk["steered"]
        lines.append(f"leak quota waived after round {lk['quota_waived_after_round']}: {st['reached_room']} of "
                     f"{st['judged']} steered regenerations reached a bin with room (the model does not follow the "
                     "steer; --leak-mode record skips the quota)")
    lines.append("rejected generations: " + ", ".join(f"{k} {v}" for k, v in prov["rejections"].items())
                 + f"; documents too short to sample: {prov['documents']['too_short']}")
    if (prov.get("health") or {}).get("line"):
        lines.append(prov["health"]["line"])
    est = prov.get("estimate") or {}
    if est.get("llm_seconds") is not None:
        lines.append(f"generation: {est['measured']['generations']} generations in {est['measured']['seconds']:.0f} s "
                     f"(estimated {est['generations']} in {est['llm_seconds']:.0f} s of LLM time)")
    return lines


def _clusters_line(prov: dict[str, Any]) -> str:
    rep = ", ".join(f"{k} {v}" for k, v in prov["repairs"].items() if v)
    counts = prov["counts"]
    drops = {"low_specificity": counts.get("low_specificity", 0), "not_answerable": counts.get("not_answerable", 0),
             "leak": counts.get("rejected_leak", 0), **{k: counts[k] for k in CLUSTER_TEXT_DROPS if counts.get(k)}}
    return (f"kept {counts['kept']} questions from {counts.get('clusters', 0)} clusters; repairs: {rep or 'none'}; "
            f"hard negatives {prov['n_hard_negatives']}; dropped: "
            + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in drops.items()))


def _filter_lines(prov: dict[str, Any]) -> list[str]:
    """The specificity and answerability scores of all candidates (when those filters ran)."""
    lines = []
    if "specificity" in prov:
        sp = prov["specificity"]["all_candidates"]
        if sp["n"]:
            lines.append(f"specificity of {sp['n']} candidates (nats/token): p10 {sp['p10']:+.2f}, median "
                         f"{sp['p50']:+.2f}, p90 {sp['p90']:+.2f}; below threshold {sp.get('share_below', 0.0):.0%}")
    if "answerability" in prov:
        an = prov["answerability"]
        st = an["all_candidates"]
        if st["n"]:
            rule = (f"rank of the source among {an['reference']['references']} random documents <= "
                    f"{an['reference']['max_rank']}: {an['reference']['share_kept']:.0%} pass" if "reference" in an
                    else f"below {an['threshold']} {st.get('share_below', 0.0):.0%}")
            lines.append(f"answerability ({an['score']}, {an['scorer'].get('model')}) of {st['n']} candidates: "
                         f"p10 {st['p10']:+.2f}, median {st['p50']:+.2f}, p90 {st['p90']:+.2f}; {rule}")
    return lines
