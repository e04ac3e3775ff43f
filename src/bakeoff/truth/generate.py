"""``bakeoff generate``: LLM-written ground truth for a corpus, end to end.

corpus (:func:`bakeoff.data.loaders.open_corpus`) -> an LLM client (:func:`open_llm`:
``local`` starts and stops the bundled llama.cpp server) -> describe or cluster mode
(:mod:`bakeoff.truth.synthetic`, chosen by the options' type) -> a BEIR folder with
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..cache import Cache
from ..data.loaders import FieldMap, open_corpus
from ..data.model import Corpus
from ..errors import ConfigError
from .llm import LLMClient, Usage
from .llm_spec import LLMSpec
from .synthetic import (
    ClusterOptions,
    DescribeOptions,
    SyntheticTruth,
    cluster_leak_filter,
    cluster_truth,
    describe_truth,
)

__all__ = ["Embed", "GenerateOutcome", "generate_truth", "open_llm"]

#: ``embed(corpus) -> ((len(corpus), dim) vectors, encoder identity)`` for cluster mode.
Embed = Callable[[Corpus], tuple[np.ndarray, str]]


@contextlib.contextmanager
def open_llm(spec: LLMSpec | str, *, cache: Cache | None, concurrency: int | None = None,
             price: str | None = None, reasoning_effort: str | None = None) -> Iterator[LLMClient]:
    """An :class:`~bakeoff.truth.llm.LLMClient` for ``--llm`` (:class:`~bakeoff.truth.llm_spec.LLMSpec`; a local
    spec starts and stops ``llama-server`` with its model, :meth:`~bakeoff.truth.llm_spec.LLMSpec.local_model`).
    ``price`` is ``"PROMPT_USD_PER_1M,COMPLETION_USD_PER_1M"`` (overrides the price table).
    ``concurrency`` is the number of requests in flight; for ``local``, ``N`` starts ``min(N,``
    :func:`~bakeoff.truth.local_llm.default_servers` ``())`` servers of ``N // servers`` slots each (default
    :func:`~bakeoff.truth.local_llm.default_servers` servers of :func:`~bakeoff.truth.local_llm.default_slots`).
    """
    from .llm import Price

    spec = LLMSpec.of(spec)
    overrides: dict[str, Any] = {}
    if price:
        try:
            p, c = (float(x) for x in price.split(","))
        except ValueError:
            raise ConfigError(f"--price must be PROMPT_USD_PER_1M,COMPLETION_USD_PER_1M, got {price!r}") from None
        overrides["price"] = Price(p, c)
    if concurrency is not None:
        if concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1, got {concurrency}")
        overrides["concurrency"] = concurrency
    if reasoning_effort:
        if reasoning_effort not in ("minimal", "low", "medium", "high"):
            raise ConfigError(f"--reasoning-effort must be minimal, low, medium or high, got {reasoning_effort!r}")
        overrides["reasoning_effort"] = reasoning_effort
    if spec.is_local:
        from .local_llm import LocalLLMServer, default_servers

        model = spec.local_model()

        n = overrides.pop("concurrency", None)
        servers = None if n is None else min(default_servers(), n)
        slots = None if n is None or servers is None else n // servers
        with LocalLLMServer(servers=servers, slots=slots, model=model) as server, \
                LLMClient(server.config(**overrides), cache=cache) as client:
            yield client
    else:
        with LLMClient(spec.config(**overrides), cache=cache) as client:
            yield client


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
    from .llm import ingest_batch
    from .synthetic import describe_requests

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
    cluster_leak_threshold: float | None = 0.35,
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
    (:func:`~bakeoff.truth.synthetic.cluster_leak_filter`; ``None`` only records the leak).
    ``specificity`` names the query-likelihood scorer of the specificity filter (``off``/``None``, the
    default: no filter; ``local``: the bundled Gemma in-process; else a completions server spec, see
    :func:`bakeoff.truth.specificity.open_likelihood`); its options are ``options.specificity``.
    ``answerability`` names the scorer of the answerability filter (``use``: the multilingual USE bi-encoder;
    ``cross-encoder:<model>``; ``off``/``None``: no filter, see
    :func:`bakeoff.truth.answerability.open_answerability`); its options are ``options.answerability``.
    ``announce`` (a print function) gets the plan before describe mode starts: the documents, the expected
    generations and, for a local model, the LLM time from a short warm-up (:mod:`bakeoff.truth.estimate`),
    which the provenance records beside the measured time (``estimate``).
    With ``options.queries_like`` and the default leak target, the target is estimated from those queries
    (:func:`~bakeoff.truth.queries_like.estimated_leak_shares`). Batch files turn describe mode's bootstrapped
    examples off (a batch holds requests known in
    advance). Refused (:class:`~bakeoff.errors.ConfigError`): ``n < 1``, a test fraction outside [0, 1],
    batch files without a cache or with the local LLM.
    """
    llm = LLMSpec.of(llm)
    if options.n < 1:
        raise ConfigError("-n must be >= 1")
    if not 0.0 <= options.test_fraction <= 1.0:
        raise ConfigError("--test-fraction must be in [0, 1]")
    if (batch_in or batch_out) and cache is None:
        raise ConfigError("--batch-in/--batch-out need the cache (--cache use)")
    if (batch_in or batch_out) and llm.is_local:
        raise ConfigError("batch files are for remote APIs; use --llm openai:<model>")
    if isinstance(options, ClusterOptions) and embed is None:
        raise ConfigError("cluster mode needs document vectors (an embed function)")
    if (batch_in or batch_out) and isinstance(options, DescribeOptions) and options.bootstrap:
        # a batch file holds one round's requests, known in advance: no examples chosen between rounds
        options = replace(options, bootstrap=0)
    if not isinstance(corpus, Corpus):
        source = source or str(corpus)
        corpus = open_corpus(corpus, fields=fields)
    if isinstance(options, DescribeOptions) and options.queries_like and options.leak_target_source == "default":
        from .queries_like import estimated_leak_shares

        options = replace(options, leak_target=estimated_leak_shares(options.queries_like, corpus, lang=options.lang),
                          leak_target_source="--queries-like (each query's leak against its top USE document)")
    ingested = None
    answerer = None
    if options.answerability is not None and batch_out is None:
        from .answerability import Preloading, open_answerability

        answerer = open_answerability(answerability)  # before the LLM starts: a bad spec or threshold costs nothing
        if answerer is not None:
            options.answerability.resolved_threshold(answerer)
            answerer = Preloading(answerer)  # its model loads while the LLM servers start
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(open_llm(llm, cache=cache, concurrency=concurrency, price=price,
                                              reasoning_effort=reasoning_effort))
        started = time.perf_counter() - t0
        scorer = None
        t1 = time.perf_counter()
        if options.specificity is not None and batch_out is None:
            from .specificity import open_likelihood

            scorer = open_likelihood(specificity)
            if scorer is not None:
                stack.callback(scorer.close)  # type: ignore[attr-defined]
        scorer_s = time.perf_counter() - t1
        if batch_out is not None:
            client.collect = []
        if isinstance(options, DescribeOptions):
            if batch_in is not None:
                ingested = _ingest(client, batch_in, corpus, options)
            estimate = None
            if announce is not None and batch_in is None and batch_out is None:
                from .estimate import warm_up

                estimate = warm_up(corpus, client, options, local=llm.is_local)
                announce(estimate.line())
            t2 = time.perf_counter()
            truth = describe_truth(corpus, client, options=options, progress=progress, scorer=scorer,
                                   answerer=answerer)
            if estimate is not None:
                from .estimate import record

                truth.provenance["estimate"] = record(estimate, counts=truth.provenance.get("counts") or {},
                                                      seconds=time.perf_counter() - t2)
        else:
            assert embed is not None
            vectors, name = embed(corpus)
            truth = cluster_truth(corpus, client, vectors=vectors, options=options, progress=progress,
                                  encoder_name=name, scorer=scorer, answerer=answerer)
            truth = cluster_leak_filter(truth, corpus, threshold=cluster_leak_threshold)
        usage = client.usage
        if client.collect:
            from .llm import write_batch

            n_req = write_batch(client, client.collect, batch_out)  # type: ignore[arg-type]
            return GenerateOutcome(usage, batch_requests=n_req, ingested=ingested, llm_startup_s=started)
    truth.provenance["corpus"] = {"source": source or "corpus"}
    folder = truth.write(out, corpus=corpus) if out is not None else None
    return GenerateOutcome(usage, truth=truth, folder=folder, ingested=ingested, llm_startup_s=started,
                           scorer_startup_s=scorer_s)
