"""The wait known up front: how long describe-mode generation will take on this machine.

Before the first round, :func:`warm_up` sends ``k`` real requests (the describe requests of the first
``k`` documents the pipeline samples, with a seed the pipeline never uses) through the same client, *bypassing the
cache*, ``k`` = the client's concurrency capped at :data:`WARM_UP_REQUESTS`, untimed, then the same ``k`` requests
with another seed, timed:

    seconds per generation  s = wall time of the second k requests in flight together / k

The first round is not timed because it is not what the run is made of: a fresh server reads the whole prompt,
while later requests reuse the instruction's cached prefix, so a first round timed alone overestimates the LLM
time (measured on the docs' benchmarks page, "The demo from an empty cache").

The estimate is then

    generations  G = n × GENERATIONS_PER_DOCUMENT        (at most n × candidates × (1 + max_regenerations))
    cached       c = share of the first round's requests whose answer is in the cache
    LLM time     T = G × (1 − c) × s

with :data:`GENERATIONS_PER_DOCUMENT` the mean measured with today's defaults on three corpora (see its
comment). The first round's requests are known before it starts; the later rounds' are not, so ``c`` stands in
for them (a re-run with changed filters asks new questions in later rounds only, and takes longer than ``T``).
The filters' own time (answerability scoring, leak) is not in ``T``. The estimate goes into the truth's provenance beside what was measured
(:func:`record`), so its accuracy is visible.

The warm-up runs only for local models (``--llm local``, ``local:NAME``): against a paid API it would
cost money, so there the estimate is the number of generations alone.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["GENERATIONS_PER_DOCUMENT", "WARM_UP_REQUESTS", "Estimate", "record", "warm_up"]

#: Generations per sampled document with the default pipeline (zero-shot, leak recorded, regenerations of
#: rejected queries, the copy penalty): 1.54 on CISI, 1.54 on SciFact (``-n 100``, seed 0), 1.38 on the stdlib
#: demo (the docs' benchmarks page, "A copy penalty at decoding").
GENERATIONS_PER_DOCUMENT = 1.5

#: Requests timed by the warm-up (at most; never more than the client has in flight).
WARM_UP_REQUESTS = 2

#: The attempt number of the warm-up requests: far above any regeneration round, so their seeds are
#: never the pipeline's.
_WARM_UP_ATTEMPT = 1_000_000


@dataclass(frozen=True)
class Estimate:
    """What generation will do and how long its LLM calls should take."""

    documents: int
    generations: int
    max_generations: int
    seconds_per_generation: float | None   # None: no warm-up (a remote API)
    warm_up_seconds: float = 0.0
    #: Of the first round's requests, how many have their answer in the cache (``cached_first_round`` of
    #: ``first_round``); ``first_round`` 0: not looked up (no cache).
    cached_first_round: int = 0
    first_round: int = 0

    @property
    def cached_share(self) -> float:
        return self.cached_first_round / self.first_round if self.first_round else 0.0

    @property
    def seconds(self) -> float | None:
        if self.seconds_per_generation is None:
            return None
        return self.generations * (1.0 - self.cached_share) * self.seconds_per_generation

    def line(self) -> str:
        """One line for the terminal."""
        head = (f"plan: {self.documents} documents, about {self.generations} generations "
                f"({GENERATIONS_PER_DOCUMENT:g} per document with the default filters; at most {self.max_generations})")
        cached = (f"; {self.cached_first_round} of the first round's {self.first_round} answers are in the cache"
                  if self.cached_first_round else "")
        if self.seconds is None:
            return head + cached
        return (f"{head}{cached}; {self.seconds_per_generation:.2f} s per generation on this machine (warm-up) "
                f"-> about {_duration(self.seconds)} of LLM time")

    def as_dict(self) -> dict[str, Any]:
        return {"documents": self.documents, "generations": self.generations, "max_generations": self.max_generations,
                "seconds_per_generation": (None if self.seconds_per_generation is None
                                           else round(self.seconds_per_generation, 3)),
                "llm_seconds": None if self.seconds is None else round(self.seconds, 1),
                "warm_up_seconds": round(self.warm_up_seconds, 3),
                "cached_first_round": self.cached_first_round, "first_round": self.first_round,
                "rule": f"generations = n x {GENERATIONS_PER_DOCUMENT:g}; LLM time = generations x (1 - the first "
                        "round's cached share) x the warm-up's seconds per generation"}


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def warm_up(corpus: Any, client: Any, options: Any, *, local: bool) -> Estimate:
    """Time ``k`` uncached describe requests (module docstring) and return the estimate for ``options``."""
    import numpy as np

    from .describe import describe_request
    from .sampling import eligible_rows, sample_rows

    n = int(options.n)
    per_doc = int(getattr(options, "candidates", 1)) * (1 + int(getattr(options, "max_regenerations", 0)))
    gens = max(n, round(n * GENERATIONS_PER_DOCUMENT))
    est = Estimate(documents=n, generations=min(gens, n * per_doc), max_generations=n * per_doc,
                   seconds_per_generation=None)
    if not local:
        return _with_cached(est, corpus, client, options)
    rows = [int(r) for r in sample_rows(corpus, n, rng=np.random.default_rng(options.seed),  # the pipeline's draw
                                        stratify_by=options.stratify_by,
                                        eligible=eligible_rows(corpus, min_chars=options.min_doc_chars))]
    k = min(len(rows), max(1, int(client.config.concurrency)), WARM_UP_REQUESTS)
    if k == 0:
        return _with_cached(est, corpus, client, options)
    reqs = [describe_request(corpus, r, client, options, attempt=_WARM_UP_ATTEMPT) for r in rows[:k]]
    saved = client.cache
    client.cache = None  # a real request, timed; its answer is not kept
    try:
        t0 = time.perf_counter()
        client.generate_many(reqs, progress=False, desc="warm-up")
        t1 = time.perf_counter()
        client.generate_many([describe_request(corpus, r, client, options, attempt=_WARM_UP_ATTEMPT + 1)
                              for r in rows[:k]], progress=False, desc="warm-up")
        t2 = time.perf_counter()
    finally:
        client.cache = saved
    # counted after the warm-up: the cache keys hold the structured-output form the server took
    return _with_cached(replace(est, seconds_per_generation=(t2 - t1) / k, warm_up_seconds=t2 - t0),
                        corpus, client, options)


def _with_cached(est: Estimate, corpus: Any, client: Any, options: Any) -> Estimate:
    """``est`` with the first round's requests looked up in the client's cache (none without a cache)."""
    from .describe import describe_requests

    if client.cache is None:
        return est
    first = describe_requests(corpus, client, options, attempt=0)
    hits = sum(client.cache.get_json("llm", client.request_key(r)) is not None for r in first)
    return replace(est, cached_first_round=hits, first_round=len(first))


def record(estimate: Estimate, *, counts: Mapping[str, Any], seconds: float) -> dict[str, Any]:
    """The estimate beside the measured generations and wall time (for the provenance)."""
    out = estimate.as_dict()
    out["measured"] = {"generations": counts.get("generations"), "seconds": round(seconds, 1)}
    return out
