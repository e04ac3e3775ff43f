"""Orchestration: dataset x arms -> Results. No metric math lives here.

:func:`run_bakeoff` runs arms on an opened dataset; :func:`run_config` is ``bakeoff run``:
it opens the dataset of a :class:`~bakeoff.runner.config.BakeoffConfig` (with its search
mode), builds the arms and runs them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..arms.base import Arm, DocMask
from ..cache import Cache
from ..data.chunking import ChunkedCorpus, ChunkSpec
from ..data.model import Dataset, Queries, Run
from ..errors import ConfigError
from ..metrics import Evaluation, Measure, averaging_rule, default_measures, measures_for, score_run
from .context import Context
from .costs import DEFAULT_HOURLY_RATE, arm_cost, arm_timing
from .footprint import MIB, model_bytes
from .guards import DEFAULT_MAX_EMPTY_SHARE, check_share, drop_identical_ids, empty_guard, self_retrieval
from .passages import chunked_corpus, search_passages
from .results import ArmResult, Results

if TYPE_CHECKING:
    from .config import BakeoffConfig

__all__ = ["default_measures", "run_bakeoff", "run_config"]

log = logging.getLogger("bakeoff")


def _arms(arms: Sequence[Arm | str]) -> list[Arm]:
    """Arms as given, in order; the spec strings among them built together
    (:func:`~bakeoff.runner.config.build_arms`), so a spec may name a spec before it."""
    from .config import build_arms, parse_arm_spec

    if isinstance(arms, (str, Arm)):
        arms = [arms]
    bad = [a for a in arms if not isinstance(a, (str, Arm))]
    if bad:
        raise ConfigError(f"an arm is an Arm or a spec string such as 'bm25:stemmer=english', got {bad[0]!r}")
    built = iter(build_arms([parse_arm_spec(a) for a in arms if isinstance(a, str)]))
    return [a if isinstance(a, Arm) else next(built) for a in arms]


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
    arms: Sequence[Arm | str],
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
    chunk: ChunkSpec | None = None,
    max_empty_share: float = DEFAULT_MAX_EMPTY_SHARE,
    ignore_identical_ids: bool | None = None,
    averaging: str = "bakeoff",
    relevance_level: int = 1,
) -> Results:
    """Index, search and evaluate every arm on ``dataset``.

    ``arms`` are :class:`~bakeoff.arms.base.Arm` objects or specs as ``bakeoff run --arm`` takes
    them (``"bm25"``, ``"stem=bm25:stemmer=english"``, ``"hyb=rrf:arms=bm25+dense"``; a spec may
    name arms given before it).

    Each arm retrieves ``depth`` (default ``max(k, 1000)``, as BEIR, TREC and MTEB:
    :data:`~bakeoff.runner.config.DEFAULT_DEPTH`) documents per query; metrics use their own cutoffs. Runs are cached by content (see
    :meth:`~bakeoff.runner.context.Context.search`); a cached arm is marked ``cached``.

    After the batch runs, each listed arm's per-query latency is measured on
    ``latency_sample`` queries drawn with ``latency_seed``
    (:meth:`~bakeoff.runner.context.Context.measure_latency`; 0 skips it), and its
    cost computed at ``hourly_rate`` USD/hour (:mod:`bakeoff.runner.costs`).

    ``mask`` (qid -> bool row vector) restricts each query to some corpus rows,
    e.g. the target versions in force on the query's date (as-of search).
    Which measures the dataset's labels allow is asked of the dataset
    (:attr:`~bakeoff.data.model.Dataset.label_kind`) and the measure policy
    (:func:`bakeoff.metrics.measures_for`): citation-mined datasets default to
    Recall/MRR and refuse measures that need judged negatives.

    An arm that declares its provenance (``arm.provenance()``, e.g. a dense or
    rerank arm whose model folder bakeoff fine-tuned) gets it as ``fine_tuned``.

    ``chunk`` (a :class:`bakeoff.data.chunking.ChunkSpec`) chunks the corpus into
    passages: every arm indexes and searches passages, and each run is aggregated to
    documents (MaxP / FirstP) before evaluation, with enough passages retrieved that
    ``depth`` documents remain (see :mod:`bakeoff.runner.passages`). The chunking
    parameters and the passages' fingerprint go to ``dataset.chunk`` in results.json.

    Guards (:mod:`bakeoff.runner.guards`): each arm's share of evaluated queries with an empty
    ranking is recorded in ``empty`` and the arm is ``broken`` above ``max_empty_share``;
    ``ignore_identical_ids`` removes each query's own id from its ranking before evaluation; ``None``
    (default) does so when the dataset's queries are its documents
    (:func:`~bakeoff.runner.guards.self_retrieval`: ArguAna, Quora), as MTEB does on those tasks.

    ``averaging`` (:data:`bakeoff.metrics.AVERAGING`: ``bakeoff``, ``trec_eval``, ``trec_eval-c``) says
    which queries each mean is over and ``relevance_level`` the minimum grade binary measures count
    (trec_eval ``-l``); both go to results.json (``averaging``, ``relevance_level``) and every table.
    Each arm's ``footprint`` (:mod:`bakeoff.runner.footprint`) holds its model size on disk and
    the peak memory of its subtree's index and search.
    """
    max_empty_share = check_share(max_empty_share)
    averaging = _averaging(averaging)
    _check_relevance_level(relevance_level)
    identical_ids = _identical_ids(dataset, ignore=ignore_identical_ids)
    arms = _arms(arms)
    from .config import DEFAULT_DEPTH

    depth = max(k, depth if depth is not None else DEFAULT_DEPTH)
    scoring = _Scoring(measures=measures_for(dataset.label_kind, k=k, depth=depth, requested=measures), k=k,
                       averaging=averaging, relevance_level=relevance_level, max_empty_share=max_empty_share,
                       ignore_identical_ids=identical_ids["removed"])
    chunked = chunked_corpus(dataset.corpus, chunk) if chunk is not None else None
    search = _Search(ctx=_context(dataset, chunked, ctx, cache=cache, progress=progress), queries=dataset.queries,
                     depth=depth, mask=mask, chunked=chunked)
    for arm in _order(arms):
        search(arm)
    results = [_arm_result(arm, search, dataset, scoring, latency_sample=latency_sample, latency_seed=latency_seed,
                           hourly_rate=hourly_rate) for arm in arms]
    evaluation = results[-1].evaluation if results else None
    return Results(dataset=_dataset_info(dataset, chunked, identical_ids=identical_ids), k=k, depth=depth,
                   measures=[str(m) for m in scoring.measures], arms=results,
                   excluded=dict(evaluation.excluded) if evaluation else {},
                   n_evaluated=len(evaluation.query_ids) if evaluation else 0, averaging=averaging,
                   relevance_level=relevance_level)


def _averaging(averaging: str) -> str:
    """The canonical name of an averaging rule (:func:`~bakeoff.metrics.averaging_rule`), a
    :class:`~bakeoff.errors.ConfigError` when there is none."""
    try:
        return averaging_rule(averaging)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _check_relevance_level(relevance_level: int) -> None:
    """A :class:`~bakeoff.errors.ConfigError` unless ``relevance_level`` is an integer grade (not a bool)."""
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, int):
        raise ConfigError(f"relevance_level must be an integer grade, got {relevance_level!r}")


def _identical_ids(dataset: Dataset, *, ignore: bool | None) -> dict[str, Any]:
    """Whether each query's own id is removed from its ranking, and how that was decided: results.json's
    ``dataset.identical_ids``, ``{"removed", "how": "auto" | "option", "own_document_queries"}``. ``ignore``
    ``None`` (auto) removes them when the dataset's queries are its documents
    (:func:`~bakeoff.runner.guards.self_retrieval`)."""
    self_ret = self_retrieval(dataset)
    removed = bool(self_ret["self_retrieval"]) if ignore is None else bool(ignore)
    return {"removed": removed, "how": "auto" if ignore is None else "option",
            "own_document_queries": self_ret["queries"]}


@dataclass(frozen=True)
class _Scoring:
    """How each arm's document run is scored and guarded (:func:`run_bakeoff`'s options, checked)."""

    measures: Sequence[Measure]
    k: int
    averaging: str
    relevance_level: int
    max_empty_share: float
    ignore_identical_ids: bool


def _context(dataset: Dataset, chunked: ChunkedCorpus | None, ctx: Context | None, *, cache: Cache | None,
             progress: bool) -> Context:
    """The context arms search in: over the passages when the corpus is chunked (keeping the given
    context's extras), else the given context or a new one over the documents."""
    if chunked is not None:
        ctx = Context(corpus=chunked.passages, cache=cache, progress=progress,
                      extras=dict(ctx.extras) if ctx is not None else {})
    return ctx or Context(corpus=dataset.corpus, cache=cache, progress=progress)


@dataclass(frozen=True)
class _Search:
    """Where arms search: the documents in ``ctx``, or, when ``chunked``, its passages aggregated back to
    documents (:mod:`bakeoff.runner.passages`)."""

    ctx: Context
    queries: Queries
    depth: int
    mask: DocMask | None
    chunked: ChunkedCorpus | None

    def __call__(self, arm: Arm) -> tuple[Run, Run, int]:
        """(document run, the run the arm produced, the depth asked of the arm)."""
        if self.chunked is None:
            r = self.ctx.search(arm, self.queries, k=self.depth, mask=self.mask)
            return r, r, self.depth
        return search_passages(self.ctx, self.chunked, arm, self.queries, depth=self.depth, mask=self.mask)

    def arm_mask(self) -> DocMask | None:
        """The mask latency and the cache record are keyed by: the passage mask when chunked, else ``None``."""
        return None if self.chunked is None else self.chunked.expand_mask(self.mask)


def _arm_result(arm: Arm, search: _Search, dataset: Dataset, scoring: _Scoring, *, latency_sample: int,
                latency_seed: int, hourly_rate: float) -> ArmResult:
    """One arm's run (already searched, memoised in ``search.ctx``), its latency, evaluation, guards, cost
    and provenance."""
    ctx = search.ctx
    run, arm_run, arm_k = search(arm)
    ctx.measure_latency(arm, dataset.queries, k=arm_k, sample=latency_sample, seed=latency_seed,
                        mask=search.arm_mask())
    run, evaluation, guards = _scored(run, dataset, scoring)
    guards["footprint"] = _footprint(arm, ctx)
    fp = arm.fingerprint()
    # Optional hook (dense, rerank): what the arm's model was fine-tuned on.
    mark = arm.provenance()
    # Arms may add their own figures (e.g. ann: recall of the exact top-k); they land in results.json.
    extra_fn = getattr(arm, "extra_metrics", None)
    extra = (dict(extra_fn(ctx=ctx, run=arm_run, queries=dataset.queries, k=scoring.k, depth=arm_k))
             if extra_fn else {})
    return ArmResult(
        name=arm.name,
        type=arm.type,
        config=arm.config(),
        fingerprint=fp,
        run=run,
        evaluation=evaluation,
        timing=arm_timing(arm, ctx),
        cached=ctx.was_cached(arm, dataset.queries, k=arm_k, mask=search.arm_mask()),
        extra={"cost": arm_cost(arm, ctx, hourly_rate=hourly_rate, n_queries=len(dataset.queries)),
               **({"children": [c.name for c in arm.children()]} if arm.children() else {}),
               **({"fine_tuned": mark} if mark else {}),
               **({"extra_metrics": extra} if extra else {}),
               **({"passage_depth": arm_k} if search.chunked is not None else {}), **guards},
    )


def _scored(run: Run, dataset: Dataset, scoring: _Scoring) -> tuple[Run, Evaluation, dict[str, Any]]:
    """``run`` (without each query's own id when ``scoring.ignore_identical_ids``), its evaluation, and the
    guards (:mod:`bakeoff.runner.guards`): ``identical_ids_removed``, ``empty`` and ``judged``."""
    guards: dict[str, Any] = {}
    if scoring.ignore_identical_ids:
        run, guards["identical_ids_removed"] = drop_identical_ids(run)
    evaluation = score_run(run, dataset.qrels, scoring.measures, query_ids=dataset.queries.ids,
                           averaging=scoring.averaging, relevance_level=scoring.relevance_level)
    # under trec_eval's rule an unanswered query is not evaluated: the guard counts every judged query
    guard_ids = (evaluation.query_ids if scoring.averaging != "trec_eval"
                 else tuple(q for q in dataset.queries.ids if q in dataset.qrels))
    guards["empty"] = empty_guard(run, guard_ids, max_share=scoring.max_empty_share)
    # judged@k (metrics module docstring): how much of the top k the labels cover, same queries
    k = scoring.k
    judged = score_run(run, dataset.qrels, [f"judged@{k}"], query_ids=evaluation.query_ids)
    guards["judged"] = {"k": k, "mean": float(judged.means[f"judged@{k}"])}
    return run, evaluation, guards


def _dataset_info(dataset: Dataset, chunked: ChunkedCorpus | None, *,
                  identical_ids: Mapping[str, Any]) -> dict[str, Any]:
    """The ``dataset`` section of results.json: name, split, sizes, fingerprints (with the passages' when
    chunked), the loader's own keys, the chunking and whether and how each query's own id was removed."""
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
        **({"ignore_identical_ids": True} if identical_ids["removed"] else {}),
        "identical_ids": dict(identical_ids),
    }
    if chunked is not None:
        info["fingerprints"]["passages"] = chunked.passages.fingerprint()
    return info


def _footprint(arm: Arm, ctx: Context) -> dict[str, Any]:
    """``{"model_bytes", "peak_rss_mb", "added_mb"}`` of ``arm`` with its inputs: model files on
    disk (:func:`~bakeoff.runner.footprint.model_bytes`), the highest process peak RSS and the sum
    of the memory each arm of the subtree added while indexing and searching (``None`` when not
    measured, e.g. a run restored from an older cache entry)."""
    from ..arms.base import subtree

    mems = [ctx.timings.get(node.fingerprint(), {}).get("memory") or {} for node in subtree(arm)]
    peaks = [m["peak_rss_mb"] for m in mems if isinstance(m.get("peak_rss_mb"), (int, float))]
    added = [m.get("added_mb") for m in mems]
    size = model_bytes(arm)
    measured = (sum(float(a) for a in added if a is not None)
                if added and all(isinstance(a, (int, float)) for a in added) else None)
    method = next((m.get("method") for m in mems if m.get("method")), None)
    if measured is not None and size and measured < size / MIB:
        # the model was already resident when the arm's window opened (loaded by an earlier arm or
        # step of this process): it still counts for this arm, which cannot run without it
        measured, method = size / MIB, f"{method}; at least the model's size (loaded before the arm)"
    return {"model_bytes": size,
            "peak_rss_mb": max(peaks) if peaks and len(peaks) == len(mems) else None,
            "added_mb": measured, "memory_method": method}


def run_config(
    cfg: BakeoffConfig,
    *,
    k: int | None = None,
    depth: int | None = None,
    measures: Sequence[str] | None = None,
    cache: Cache | None = None,
    progress: bool = True,
    as_of: bool | None = None,
    only_single: bool = False,
    unmasked: bool = False,
    engine: Any = None,
    ray_address: str | None = None,
    hourly_rate: float | None = None,
    latency_sample: int | None = None,
    latency_seed: int | None = None,
    chunk: str | None = None,
    aggregate: str | None = None,
    ignore_identical_ids: bool | None = None,
    max_empty_share: float | None = None,
    averaging: str | None = None,
    relevance_level: int | None = None,
) -> Results:
    """``bakeoff run``: build the arms of ``cfg``, open its dataset (search mode ``as_of`` /
    ``only_single`` / ``unmasked``, see :func:`bakeoff.data.datasets.open_dataset`), log the
    loader's warnings, and run. Keyword values that are not ``None`` (or empty) override the
    file's; ``depth`` is at least ``k``. ``engine`` (``local``/``ray`` or a TOML ``[engine]``
    table, default ``cfg.extra["engine"]``) encodes corpora through
    :func:`bakeoff.engine.make_engine`. ``dataset.source`` in the results is ``cfg.dataset``.
    ``chunk`` (``tokens=128,overlap=32`` ...) and ``aggregate`` (``maxp``/``firstp``) override the
    file's ``[dataset.chunk]`` (see :mod:`bakeoff.data.chunking`). ``ignore_identical_ids`` and
    ``max_empty_share`` override ``[run]``'s (see :mod:`bakeoff.runner.guards`), ``averaging`` and
    ``relevance_level`` too (:func:`run_bakeoff`).
    """
    from ..data.datasets import open_dataset
    from ..engine import make_engine
    from .config import build_arms

    chunk_spec = cfg.dataset.chunk
    if chunk is not None or aggregate is not None:
        if chunk is not None:
            chunk_spec = ChunkSpec.parse(chunk, aggregate=aggregate)
        elif chunk_spec is None:
            raise ConfigError("--aggregate needs --chunk (or a [dataset.chunk] table)")
        else:
            chunk_spec = dataclasses.replace(chunk_spec, aggregate=aggregate)  # type: ignore[arg-type]
        cfg = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, chunk=chunk_spec))
    k_ = k if k is not None else cfg.k
    depth_ = max(k_, depth if depth is not None else max(cfg.depth, k_))
    arms = build_arms(cfg.arms)
    dataset, mask = open_dataset(cfg.dataset, as_of=as_of, only_single=only_single, unmasked=unmasked)
    for line in dataset.info.get("warnings", []):
        log.warning(line)
    for note in dataset.info.get("notes", []):
        log.info(note)
    rate = hourly_rate if hourly_rate is not None else cfg.hourly_rate
    eng = make_engine(engine if engine is not None else cfg.extra.get("engine"), address=ray_address)
    ctx = None if eng is None else Context(corpus=dataset.corpus, cache=cache, progress=progress,
                                           extras={"encode_engine": eng})
    results = run_bakeoff(dataset, arms, k=k_, depth=depth_, measures=measures or cfg.measures, cache=cache,
                          progress=progress, mask=mask, ctx=ctx,
                          latency_sample=latency_sample if latency_sample is not None else cfg.latency_sample,
                          latency_seed=latency_seed if latency_seed is not None else cfg.latency_seed,
                          hourly_rate=rate if rate is not None else DEFAULT_HOURLY_RATE, chunk=chunk_spec,
                          ignore_identical_ids=(ignore_identical_ids if ignore_identical_ids is not None
                                                else cfg.ignore_identical_ids),
                          max_empty_share=max_empty_share if max_empty_share is not None else cfg.max_empty_share,
                          averaging=averaging if averaging is not None else cfg.averaging,
                          relevance_level=relevance_level if relevance_level is not None else cfg.relevance_level)
    results.dataset = {**results.dataset, "source": cfg.dataset.as_dict()}
    return results

