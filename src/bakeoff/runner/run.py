"""Orchestration: dataset x arms -> Results. No metric math lives here."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from ..arms.base import Arm, DocMask
from .context import Context
from ..cache import Cache
from .costs import DEFAULT_HOURLY_RATE, arm_cost, arm_timing
from ..data.model import Dataset, Run
from ..metrics import Measure, evaluate, parse_measures
from .results import ArmResult, Results
from ..train.common import fine_tuned_mark

__all__ = ["default_measures", "run_bakeoff"]

log = logging.getLogger("bakeoff")


def default_measures(k: int, depth: int) -> tuple[Measure, ...]:
    """NDCG, Recall, MRR, Precision, Hit and MAP at ``k``, plus Recall at ``depth``."""
    names = [f"ndcg@{k}", f"recall@{k}", f"mrr@{k}", f"precision@{k}", f"hit@{k}", f"map@{k}"]
    if depth > k:
        names.append(f"recall@{depth}")
    return parse_measures(names)


def _order(arms: Sequence[Arm]) -> list[Arm]:
    """Children before parents (so a composite arm's own time excludes its inputs' search)."""
    seen: dict[int, Arm] = {}

    def visit(a: Arm) -> None:
        for c in a.children():
            visit(c)
        seen.setdefault(id(a), a)

    for a in arms:
        visit(a)
    return list(seen.values())


def run_bakeoff(
    dataset: Dataset,
    arms: Sequence[Arm],
    *,
    k: int = 10,
    depth: int | None = None,
    measures: Iterable[str | Measure] | None = None,
    cache: Cache | None = None,
    progress: bool = True,
    ctx: Context | None = None,
    latency_sample: int = 50,
    latency_seed: int = 0,
    hourly_rate: float = DEFAULT_HOURLY_RATE,
    mask: DocMask | None = None,
    chunk: Any = None,
) -> Results:
    """Index, search and evaluate every arm on ``dataset``.

    Each arm retrieves ``depth`` (default ``max(k, 100)``) documents per query;
    metrics use their own cutoffs. Runs are cached by content (see
    :meth:`~bakeoff.runner.context.Context.search`); a cached arm is marked ``cached``.

    After the batch runs, each listed arm's per-query latency is measured on
    ``latency_sample`` queries drawn with ``latency_seed``
    (:meth:`~bakeoff.runner.context.Context.measure_latency`; 0 skips it), and its
    cost computed at ``hourly_rate`` USD/hour (:mod:`bakeoff.runner.costs`).

    ``mask`` (qid -> bool row vector) restricts each query to some corpus rows,
    e.g. the target versions in force on the query's date (as-of search).
    Citation-mined datasets (``info["provenance"]["label_kind"] == "citation"``)
    default to Recall/MRR and refuse measures that need judged negatives.

    ``chunk`` (a :class:`bakeoff.ingest.chunking.ChunkSpec`) chunks the corpus into
    passages: every arm indexes and searches passages, and each run is aggregated to
    documents (MaxP / FirstP) before evaluation, with enough passages retrieved that
    ``depth`` documents remain (see :mod:`bakeoff.ingest.chunking`). The chunking
    parameters and the passages' fingerprint go to ``dataset.chunk`` in results.json.
    """
    depth = max(k, depth if depth is not None else 100)
    if (dataset.info.get("provenance") or {}).get("label_kind") == "citation":
        from ..truth.mined import citation_measures

        ms = citation_measures(k, depth, measures)
    else:
        ms = parse_measures(measures) if measures is not None else default_measures(k, depth)
    # --- chunking (bakeoff.ingest.chunking): arms see passages; runs are aggregated to documents ---
    chunked = None
    if chunk is not None:
        from ..ingest.chunking import chunk_corpus

        chunked = chunk_corpus(dataset.corpus, chunk)
        ctx = Context(corpus=chunked.passages, cache=cache, progress=progress,
                      extras=dict(ctx.extras) if ctx is not None else {})

    def search(arm: Arm) -> tuple[Run, Run, int]:
        """(document run, the run the arm produced, the depth asked of the arm)."""
        if chunked is None:
            r = ctx.search(arm, dataset.queries, k=depth, mask=mask)
            return r, r, depth
        return chunked.search(ctx, arm, dataset.queries, depth=depth, mask=mask)
    # --- end chunking ---

    ctx = ctx or Context(corpus=dataset.corpus, cache=cache, progress=progress)
    for arm in _order(arms):
        search(arm)
    results: list[ArmResult] = []
    evaluation = None
    for arm in arms:
        run, arm_run, arm_k = search(arm)
        ctx.measure_latency(arm, dataset.queries, k=arm_k, sample=latency_sample, seed=latency_seed,
                            mask=None if chunked is None else chunked.expand_mask(mask))
        evaluation = evaluate(run, dataset.qrels, ms, query_ids=dataset.queries.ids)
        fp = arm.fingerprint()
        mark = fine_tuned_mark(arm.config())
        # Arms may add their own figures (e.g. ann: recall of the exact top-k); they land in results.json.
        extra_fn = getattr(arm, "extra_metrics", None)
        extra = dict(extra_fn(ctx=ctx, run=arm_run, queries=dataset.queries, k=k, depth=arm_k)) if extra_fn else {}
        results.append(
            ArmResult(
                name=arm.name,
                type=arm.type,
                config=arm.config(),
                fingerprint=fp,
                run=run,
                evaluation=evaluation,
                timing=arm_timing(arm, ctx),
                cached=ctx.was_cached(arm, dataset.queries, k=arm_k,
                                      mask=None if chunked is None else chunked.expand_mask(mask)),
                extra={"cost": arm_cost(arm, ctx, hourly_rate=hourly_rate, n_queries=len(dataset.queries)),
                       **({"children": [c.name for c in arm.children()]} if arm.children() else {}),
                       **({"fine_tuned": mark} if mark else {}),
                       **({"extra_metrics": extra} if extra else {}),
                       **({"passage_depth": arm_k} if chunked is not None else {})},
            )
        )
    info = {
        "name": dataset.name,
        "split": dataset.split,
        "n_docs": len(dataset.corpus),
        "n_queries": len(dataset.queries),
        "fingerprints": {
            "corpus": dataset.corpus.fingerprint(),
            "queries": dataset.queries.fingerprint(),
            "qrels": dataset.qrels.fingerprint(),
        },
        **dict(dataset.info),
        **({"chunk": chunked.info()} if chunked is not None else {}),
    }
    if chunked is not None:
        info["fingerprints"]["passages"] = chunked.passages.fingerprint()
    excluded = dict(evaluation.excluded) if evaluation else {}
    return Results(
        dataset=info,
        k=k,
        depth=depth,
        measures=[str(m) for m in ms],
        arms=results,
        excluded=excluded,
        n_evaluated=len(evaluation.query_ids) if evaluation else 0,
    )
