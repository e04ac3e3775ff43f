"""The short verbs of the public API: :func:`evaluate`, :func:`compare` and :func:`fuse`.

They take the argument order of ranx and ir_measures, judgments first::

    evaluate(qrels, run, measures)  -> Evaluation   # per-query values and means
    compare(qrels, runs, measures)  -> Report       # CIs, paired tests, Holm; renderers
    fuse(runs, method=..., norm=...) -> Run         # run-level fusion

Inputs are bakeoff's values (:class:`~bakeoff.data.model.Qrels`, :class:`~bakeoff.data.model.Run`) or
the plain dicts of pytrec_eval and ranx: qrels ``{qid: {doc id: grade}}`` and a run
``{qid: {doc id: score}}``. Measures are strings (``"ndcg@10"``, ``"P@5"``, ``"recip_rank"``; see
:mod:`bakeoff.metrics`), one or a list. Every verb is pure: it never mutates its inputs.

The measures, the averaging rule and the tie rule are those of :mod:`bakeoff.metrics` (equal to
trec_eval); the statistics those of :mod:`bakeoff.stats`; the fusion formulas those of
:mod:`bakeoff.arms.fusion` (equal to ranx's ``fuse``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, cast

from .arms.fusion import FUSE_METHODS, FUSE_NORMS, NORMS, canonical_method, canonical_norm, convex_scores, fuse_scores
from .data.model import Qrels, Run
from .data.ranking import NaNScoreError, rank
from .data.trec import RunTable
from .errors import ConfigError
from .metrics import DEFAULT_MEASURES, Evaluation, Measure, averaging_rule, conventions_line, parse_measures, score_run
from .stats import DEFAULT_RESAMPLES, Comparison

__all__ = ["FUSION_METHODS", "Report", "compare", "evaluate", "fuse"]

#: Methods of :func:`fuse`: ranx's ``fuse`` methods plus the ``convex`` combination.
FUSION_METHODS = (*FUSE_METHODS, "convex")
_WEIGHTED = ("sum", "mnz", "rrf", "borda", "convex")
_SCORE_BASED = ("sum", "mnz", "max", "min", "med", "anz", "gmnz", "convex")
#: ``params`` keys of ranx's ``fuse`` and the options they are here.
_PARAMS = {"k": "rank_constant", "weights": "weights", "gamma": "gamma", "sigma": "sigma"}

MeasuresArg = str | Measure | Iterable[str | Measure]


def _measures(measures: MeasuresArg) -> tuple[Measure, ...]:
    if isinstance(measures, (str, Measure)):
        measures = [measures]
    ms = parse_measures(measures)
    if not ms:
        raise ConfigError("no measure given")
    return ms


def _qrels(qrels: Qrels | Mapping[str, Mapping[str, int]]) -> Qrels:
    return qrels if isinstance(qrels, Qrels) else Qrels(qrels)


def _run(run: Run | RunTable | Mapping[str, Any], name: str = "run") -> Run | RunTable:
    if isinstance(run, (Run, RunTable)):
        return run
    if isinstance(run, Mapping):
        return Run.from_scores(name, run)
    raise TypeError(f"a run is a bakeoff Run or a dict {{qid: {{doc id: score}}}}, got {type(run).__name__}")


def evaluate(
    qrels: Qrels | Mapping[str, Mapping[str, int]],
    run: Run | RunTable | Mapping[str, Mapping[str, float]],
    measures: MeasuresArg = DEFAULT_MEASURES,
    *,
    query_ids: Iterable[str] | None = None,
    relevance_level: int = 1,
    averaging: str | None = None,
    trec_eval: bool = False,
    complete: bool = False,
    max_docs: int | None = None,
) -> Evaluation:
    """Score ``run`` against ``qrels`` on ``measures`` (one string or several).

    ``Evaluation.means[measure]`` is the mean over the averaged queries and
    ``Evaluation.per_query[measure][qid]`` each query's value. Which queries are averaged is
    ``averaging``: ``"bakeoff"`` (default: judged queries with a relevant document; a judged query
    missing from the run scores 0), ``"trec_eval"`` (the queries of both the run and the qrels, as
    trec_eval, pytrec_eval, BEIR and MTEB average; also ``trec_eval=True``) or ``"trec_eval-c"``
    (trec_eval ``-c``; also ``complete=True``); ``Evaluation.rule`` says which.
    ``relevance_level`` is trec_eval's ``-l`` (``"P(rel=2)@5"`` sets it for one measure),
    ``max_docs`` its ``-M``. See :mod:`bakeoff.metrics`.

    A run given first is a :class:`TypeError` naming the order.
    """
    if isinstance(qrels, (Run, RunTable)):
        raise TypeError("evaluate takes the judgments first: evaluate(qrels, run, measures), as ranx and "
                        f"ir_measures do; got a {type(qrels).__name__} first")
    return score_run(_run(run), _qrels(qrels), _measures(measures), query_ids=query_ids,
                     relevance_level=relevance_level, averaging=averaging, trec_eval=trec_eval, complete=complete,
                     max_docs=max_docs)


def _named_runs(runs: Sequence[Run] | Mapping[str, Run | Mapping[str, Any]]) -> dict[str, Run]:
    """``{name: Run}``; a sequence is named by each run's own name (which must be unique)."""
    out: dict[str, Run] = {}
    if isinstance(runs, Mapping):
        for name, r in runs.items():
            run = _run(r, str(name))
            out[str(name)] = (run.to_run() if isinstance(run, RunTable) else run).renamed(str(name))
        return out
    for r in runs:
        if not isinstance(r, Run):
            raise TypeError(f"runs given as a list must be bakeoff Runs (they carry their names); got "
                            f"{type(r).__name__}: pass a dict {{name: run}} instead")
        if r.name in out:
            raise ConfigError(f"two runs are named {r.name!r}; pass a dict {{name: run}} or rename one "
                              "(run.renamed(...))")
        out[r.name] = r
    return out


@dataclass(frozen=True)
class Report:
    """What :func:`compare` found: per-run evaluations, the statistics, and the report built from them.

    ``report`` is the same dict as ``bakeoff report``'s ``report.json`` (schema in
    :mod:`bakeoff.report.model`): each run's mean with its bootstrap CI, every pair's paired tests
    with Holm-adjusted p-values, win/tie/loss counts, the per-query oracle and a verdict. The
    renderers are functions of that dict: :meth:`to_table` (text), :meth:`to_html` (the report
    page), :meth:`to_latex`, :meth:`to_dict`; :meth:`save` picks one by the file's suffix.
    """

    evaluations: Mapping[str, Evaluation]
    stats: Comparison
    report: Mapping[str, Any]
    runs: Mapping[str, Run]

    @property
    def measures(self) -> list[str]:
        return list(self.report["measures"])

    def mean(self, run: str, measure: str) -> float:
        """``run``'s mean of ``measure`` over the compared queries."""
        return self.stats.mean(run, str(_measures(measure)[0])).mean

    def pair(self, a: str, b: str, measure: str) -> Any:
        """The paired statistics of ``a`` and ``b`` on ``measure`` (:class:`bakeoff.stats.PairStat`;
        ``diff`` is ``mean(a) - mean(b)`` for the pair's own order ``(pair.a, pair.b)``)."""
        return self.stats.pair(a, b, str(_measures(measure)[0]))

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (non-finite numbers are ``None``)."""
        return dict(self.report)

    def to_df(self) -> Any:
        """A pandas DataFrame, one row per run and measure: ``run``, ``measure``, ``mean``, ``ci_low``,
        ``ci_high`` and ``beats`` (the runs it is significantly better than, Holm-corrected)."""
        import pandas as pd

        rows = [{"run": a["name"], "measure": m, **{k: a["metrics"][m][k] for k in ("mean", "ci_low", "ci_high")},
                 "beats": list(a["beats"].get(m, []))} for a in self.report["arms"] for m in self.measures]
        return pd.DataFrame(rows, columns=["run", "measure", "mean", "ci_low", "ci_high", "beats"])

    to_dataframe = to_df  # ranx's name

    def to_markdown(self) -> str:
        """GitHub-flavoured Markdown (:func:`bakeoff.report.markdown.render_markdown`)."""
        from .report.markdown import render_markdown

        return render_markdown(self.report)

    def to_table(self) -> str:
        """Plain text: each run's means with CIs and significance letters, then per measure the pairs.

        A cell ``0.6650 [0.6300, 0.7000] bc`` means the run is significantly better than runs b
        and c on that measure (paired randomization test, Holm-adjusted, ``alpha``)."""
        from .report.terminal import pair_rows, report_rows

        rep = self.report
        header, rows = report_rows(rep, measures=self.measures)
        parts = [(f"{rep['n_queries']} queries; bootstrap {rep['stats']['confidence']:.0%} CIs;\n"
                  f"paired randomization tests, Holm-adjusted per measure, alpha {rep['stats']['alpha']}\n"
                  f"{conventions_line(rep)}"),
                 _text_table(header[:-1], [r[:-1] for r in rows], left=len(header))]  # no latency column: runs have no timing
        if len(rep["arms"]) > 1:
            for m in self.measures:
                parts.append(f"{m}:\n" + _text_table(*pair_rows(rep, m)))
        if rep.get("note"):
            parts.append(str(rep["note"]))
        return "\n\n".join(parts)

    def __str__(self) -> str:
        return self.to_table()

    def to_html(self) -> str:
        """The report page of ``bakeoff report`` (one self-contained file), for these runs."""
        from .report.html import explorer_data, render_html

        per_query = {name: ev.per_query for name, ev in self.evaluations.items()}
        qids = list(next(iter(self.evaluations.values())).query_ids)
        explorer = explorer_data(self.report, dataset=None, runs=self.runs, per_query=per_query, query_ids=qids)
        return render_html(self.report, explorer=explorer)

    def to_latex(self) -> str:
        """A LaTeX table (booktabs) of the means with CIs and significance marks."""
        from .report.latex import render_latex

        return render_latex(self.report, measures=self.measures)

    def save(self, path: str | Path) -> Path:
        """Write the report to ``path`` atomically, rendered by its suffix: ``.json``, ``.html``,
        ``.tex``, ``.md`` or ``.txt``."""
        from ._io import atomic_write_json, atomic_write_text

        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".json":
            atomic_write_json(path, self.to_dict())
        elif suffix in (".html", ".htm"):
            atomic_write_text(path, self.to_html())
        elif suffix == ".tex":
            atomic_write_text(path, self.to_latex())
        elif suffix == ".txt":
            atomic_write_text(path, self.to_table() + "\n")
        elif suffix == ".md":
            atomic_write_text(path, self.to_markdown())
        else:
            raise ConfigError(f"{path}: cannot tell the format from the suffix {suffix!r}; "
                              "use .json, .html, .tex, .md or .txt")
        return path


def _text_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 2) -> str:
    """Columns padded to their widest cell; the first ``left`` left-aligned, the rest right-aligned."""
    cols = list(zip(*([list(header)] + [list(r) for r in rows]), strict=True))
    widths = [max(len(str(c)) for c in col) for col in cols]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def compare(
    qrels: Qrels | Mapping[str, Mapping[str, int]],
    runs: Sequence[Run] | Mapping[str, Run | Mapping[str, Mapping[str, float]]],
    measures: MeasuresArg = ("ndcg@10",),
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    alpha: float = 0.05,
    seed: int = 0,
    relevance_level: int = 1,
    averaging: str = "bakeoff",
    query_ids: Iterable[str] | None = None,
    name: str = "runs",
    progress: bool = False,
) -> Report:
    """Compare two or more runs on the same queries: :func:`evaluate` each, then the statistics.

    ``runs`` is a list of :class:`~bakeoff.data.model.Run` (named by their ``name``) or a dict
    ``{name: run}`` (a run may be a ``{qid: {doc id: score}}`` dict). Every run is scored on the
    same queries (``averaging="bakeoff"``: the judged queries of ``query_ids``, by default all of the
    qrels, that have a relevant document; a query missing from a run scores 0; ``"trec_eval-c"``:
    every judged query; ``"trec_eval"``: each run's judged queries it answered, compared over those
    every run answered). ``relevance_level`` is trec_eval's ``-l``. For each measure:
    each run's mean with its bootstrap BCa ``confidence`` CI, and for every pair the paired
    randomization test (``n_resamples`` sign flips; exact below ``2**n <= n_resamples``), the
    paired t-test, Cohen's ``d_z``, and Holm's correction across the pairs of that measure; a
    difference is *significant* when its Holm-adjusted randomization p-value is below ``alpha``.
    Formulas in :mod:`bakeoff.stats`. ``seed`` fixes every resampling (keyed by measure and
    pair, so adding a run does not change the others'); ``name`` labels the report, whose document count
    is that of the documents retrieved or judged (the corpus is not known here).
    """
    from .report.model import report_and_stats
    from .runner.results import Averaging, StoredArm, StoredDataset, StoredResults

    ms = [str(m) for m in _measures(measures)]
    q = _qrels(qrels)
    named = _named_runs(runs)
    if not named:
        raise ConfigError("compare needs at least one run")
    qids = None if query_ids is None else list(query_ids)
    try:
        rule = averaging_rule(averaging)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    evaluations = {n: score_run(r, q, ms, query_ids=qids, relevance_level=relevance_level, averaging=rule)
                   for n, r in named.items()}
    first = next(iter(evaluations.values()))
    cutoffs = [m.k for m in _measures(ms) if m.k is not None]
    k = cutoffs[0] if cutoffs else 10
    n_docs = len({d for r in named.values() for q in r for d, _ in r[q]} | {d for qid in q for d in q[qid]})
    results = StoredResults(
        dataset=StoredDataset(name=name, split=f"{len(named)} runs", n_queries=len(first.query_ids), n_docs=n_docs),
        k=k,
        depth=k,  # the runs' own depth is not known here; k is what a results file without one means
        measures=tuple(ms),
        averaging=cast(Averaging, rule),  # a canonical name: averaging_rule checked it
        relevance_level=relevance_level,
        arms=tuple(StoredArm(name=n, type="run", metrics=ev.means, per_query=ev.per_query)
                   for n, ev in evaluations.items()),
    )
    report, stats = report_and_stats(results, runs=named, measures=ms, n_resamples=n_resamples,
                                     confidence=confidence, alpha=alpha, seed=seed, progress=progress)
    assert stats is not None  # runs given here are never broken (they carry no empty-ranking record)
    return Report(evaluations=evaluations, stats=_as_reported(stats), report=report, runs=named)


def _as_reported(stats: Comparison) -> Comparison:
    """``stats`` with the figures the report states: JSON has no infinity, so a non-finite figure (``t`` and
    ``d_z`` when every query differs by the same amount) is NaN, the report's ``null``."""

    def finite(row: Any) -> Any:
        return replace(row, **{f.name: math.nan for f in fields(row)
                               if isinstance(getattr(row, f.name), float) and not math.isfinite(getattr(row, f.name))})

    return replace(stats, means=tuple(finite(m) for m in stats.means), pairs=tuple(finite(p) for p in stats.pairs))


def _weights(weights: Any, n: int, method: str) -> tuple[float, ...] | None:
    if weights is None:
        return None
    if method not in _WEIGHTED:
        raise ConfigError(f"fuse: weights are for methods {', '.join(_WEIGHTED)}, not {method}")
    ws = tuple(float(w) for w in weights)
    if len(ws) != n:
        raise ConfigError(f"fuse: {len(ws)} weights for {n} runs")
    if any(not (math.isfinite(w) and w >= 0) for w in ws) or not any(ws):
        raise ConfigError(f"fuse: weights must be >= 0 and not all 0, got {list(ws)}")
    if method == "convex" and abs(math.fsum(ws) - 1.0) > 1e-9:
        raise ConfigError(f"fuse: convex weights must sum to 1, got {list(ws)}")
    return ws


def fuse(
    runs: Sequence[Run] | Mapping[str, Run | Mapping[str, Mapping[str, float]]],
    *,
    method: str = "rrf",
    norm: str | None = None,
    weights: Sequence[float] | None = None,
    rank_constant: float | None = None,
    depth: int | None = None,
    name: str | None = None,
    k: float | None = None,
    gamma: float | None = None,
    sigma: float | None = None,
    params: Mapping[str, Any] | None = None,
) -> Run:
    """Fuse two or more runs into one, query by query (the run-level twin of the fusion arms).

    Each run contributes its top ``depth`` documents per query (all of them when ``None``), in
    the tie-rule order. ``method``: ``rrf`` (default; ``sum_i w_i / (rank_constant + r_i(d))``,
    ``rank_constant`` 60 by default -- the RRF constant, not a cutoff), ``sum`` (CombSUM), ``mnz``
    (CombMNZ), ``max`` (CombMAX), ``isr``, ``borda``, as ranx's ``fuse`` computes them; or
    ``convex`` (``sum_i w_i * norm_i(s_i(d))``, weights summing to 1, default equal; a document
    missing from a run gets that run's worst normalised score). ``norm`` (score-based methods
    only): ``minmax`` (default), ``zscore``, ``sum``, ``rank`` or ``none`` (``convex``: ``minmax``
    or ``zscore``). ``weights``: one per run, >= 0 (``sum``, ``mnz``, ``rrf``, ``borda``,
    ``convex``). ``min``, ``med``, ``anz``, ``gmnz`` (``gamma``, default 1), ``log_isr`` and ``logn_isr``
    (``sigma``, default 0.01) are ranx's too. An option the method does not use is refused. Formulas in
    :mod:`bakeoff.arms.fusion`.

    ranx's calls work unchanged: its method names (``wsum``, ``wmnz``, ``bordafuse``, ``w_bordafuse``,
    ``comb*``), its norms (``min-max``, ``zmuv``), ``params={"k": 60, "weights": [...], "gamma": ...}``, and
    ``k=60`` for RRF's constant (``k`` is ranx's name; here it never means a cutoff, that is ``depth``).
    ranx's supervised methods (``probfuse``, ``bayesfuse`` ...) are refused with the reason
    (:data:`bakeoff.arms.fusion.UNSUPPORTED_METHODS`).

    The fused run covers every query of any input, holds every candidate document, and is named
    ``name`` (default: the inputs' names joined by ``+``).
    """
    named = _named_runs(runs)
    if len(named) < 2:
        raise ConfigError(f"fuse needs at least two runs, got {len(named)}")
    given: dict[str, Any] = {"rank_constant": rank_constant, "weights": weights, "gamma": gamma, "sigma": sigma}
    if k is not None:
        if rank_constant is not None:
            raise ConfigError("fuse: give k= (ranx's name) or rank_constant=, not both")
        given["rank_constant"] = k
    for key, value in dict(params or {}).items():
        if key not in _PARAMS:
            raise ConfigError(f"fuse: unknown params key {key!r}; known: {', '.join(_PARAMS)}")
        if given[_PARAMS[key]] is not None:
            raise ConfigError(f"fuse: {key} given both in params and as {_PARAMS[key]}=")
        given[_PARAMS[key]] = value
    rank_constant, weights, gamma, sigma = (given["rank_constant"], given["weights"], given["gamma"],
                                            given["sigma"])
    method = canonical_method(method)
    norm = canonical_norm(norm)
    if method not in FUSION_METHODS:
        raise ConfigError(f"fuse: method must be one of {', '.join(FUSION_METHODS)}, got {method!r}")
    if norm is not None and method not in _SCORE_BASED:
        raise ConfigError(f"fuse: norm is for methods {', '.join(_SCORE_BASED)}; method={method} uses ranks only")
    norms = NORMS if method == "convex" else FUSE_NORMS
    norm_ = str(norm or "minmax").lower()
    if norm_ not in norms:
        raise ConfigError(f"fuse: norm must be one of {', '.join(norms)} for method={method}, got {norm!r}")
    if rank_constant is not None and method != "rrf":
        raise ConfigError(f"fuse: rank_constant is the RRF constant, for method=rrf only (method={method})")
    c = 60.0 if rank_constant is None else float(rank_constant)
    if not (math.isfinite(c) and c >= 0):
        raise ConfigError(f"fuse: rank_constant must be >= 0, got {rank_constant!r}")
    if depth is not None and (int(depth) != depth or depth < 1):
        raise ConfigError(f"fuse: depth must be a positive integer, got {depth!r}")
    ws = _weights(weights, len(named), method)
    if gamma is not None and method != "gmnz":
        raise ConfigError(f"fuse: gamma is for method=gmnz only (method={method})")
    if sigma is not None and (method != "logn_isr" or not 0.0 <= float(sigma) <= 1.0):
        raise ConfigError(f"fuse: sigma is for method=logn_isr only, in [0, 1] (method={method}, sigma={sigma})")
    inputs = list(named.values())
    qids = list(dict.fromkeys(q for r in inputs for q in r))
    fused: dict[str, tuple[tuple[str, float], ...]] = {}
    for qid in qids:
        rankings = [r.get(qid)[:depth] if depth else r.get(qid) for r in inputs]
        if method == "convex":
            scores = convex_scores(rankings, weights=ws or tuple(1.0 / len(inputs) for _ in inputs), norm=norm_)
        else:
            scores = fuse_scores(rankings, method=method, norm=norm_, k_rrf=c, weights=ws,
                                 gamma=1.0 if gamma is None else float(gamma),
                                 sigma=0.01 if sigma is None else float(sigma))
        try:
            fused[qid] = rank(scores)
        except NaNScoreError as exc:  # a ±inf input score normalised to NaN
            raise exc.within(f"fuse, query {qid!r} (score fusion needs finite scores; use rrf or norm=rank)") \
                from None
    return Run.from_ranked(name or "+".join(named), fused)
