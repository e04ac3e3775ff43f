"""The report pipeline: results -> statistics and diagnostics -> report files.

:func:`write_report` builds the report of a results set (means with bootstrap CIs, paired
tests with Holm correction, diagnostics; :func:`bakeoff.report.model.build_report`) and,
given a folder, writes ``report.json``, ``report.html`` (optional), ``report.tex``, ``report.md``
(optional),
``per_query.csv`` and ``per_query.parquet`` (when pyarrow is installed) into it, each
atomically. :func:`report_results` (``bakeoff report``) and :func:`compare_results`
(``bakeoff compare``) first read the results (:func:`bakeoff.runner.results.read_results`), then
reopen their runs and the dataset they were computed on (:mod:`bakeoff.runner.reopen`). Nothing here prints: the caller shows
:attr:`ReportOutput.report` (e.g. :func:`bakeoff.report.terminal.print_report`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._io import atomic_write_json
from ..data.model import Dataset, Run
from ..errors import ConfigError
from ..runner.reopen import load_dataset, load_runs, results_path
from ..runner.results import StoredResults, read_results
from ..stats import DEFAULT_RESAMPLES
from .inputs import merge_results

__all__ = ["ReportOptions", "ReportOutput", "compare_results", "parse_deltas", "report_results", "write_report"]

log = logging.getLogger("bakeoff")


@dataclass(frozen=True, kw_only=True)
class ReportOptions:
    """How the statistics are computed and what is written.

    ``n_resamples`` bootstrap resamples and permutations (seeded by ``seed``), significance
    at ``alpha`` after Holm correction, ``deltas`` (``A..B`` arm pairs) whose mean difference
    is decomposed by buckets, ``html`` whether ``report.html`` is written, ``progress`` bars.
    """

    n_resamples: int = DEFAULT_RESAMPLES
    seed: int = 0
    alpha: float = 0.05
    deltas: Sequence[str] = ()
    html: bool = True
    progress: bool = True
    #: A ``calibration.json`` to show beside the verdict of a synthetic-truth run (``--calibration``; a record
    #: of another generator is refused), and folders where records are looked up besides the run's own
    #: (the cache folder): :func:`bakeoff.report.calibration.lookup_calibration`.
    calibration: Path | None = None
    calibration_dirs: Sequence[Path] = ()
    #: Also write ``report.md`` (:func:`bakeoff.report.markdown.render_markdown`; ``--format md``).
    markdown: bool = False
    #: Write the P-R and per-topic figures (:mod:`bakeoff.report.figures`) as SVG, PNG and PDF into ``figures/``.
    figures: bool = True


@dataclass
class ReportOutput:
    """The report (the ``report.json`` content), the folder written and the files in it."""

    report: dict[str, Any]
    folder: Path | None = None
    written: list[str] = field(default_factory=list)
    #: Set by :func:`compare_results` when the two sets have different queries: the ranking
    #: agreement (:func:`bakeoff.report.agreement.ranking_agreement`), which is then also ``report``.
    agreement: dict[str, Any] | None = None


def parse_deltas(specs: Sequence[str], arms: Sequence[str]) -> list[tuple[str, str]]:
    """``["A..B", ...]`` -> ``[("A", "B"), ...]``; both names must be arms of the results."""
    out = []
    for s in specs:
        a, sep, b = s.partition("..")
        if not sep:
            raise ConfigError(f"--delta {s!r}: expected A..B (two arm names)")
        for n in (a, b):
            if n not in arms:
                raise ConfigError(f"--delta {s!r}: unknown arm {n!r}; arms: {', '.join(arms)}")
        out.append((a, b))
    return out


def write_report(
    results: StoredResults,
    *,
    out: Path | None,
    sources: Sequence[str],
    dataset: Dataset | None,
    runs: Mapping[str, Run] | None,
    options: ReportOptions = ReportOptions(),
) -> ReportOutput:
    """Build the report of ``results`` and, with ``out``, write every file into it.

    With ``options.html`` and ``out``, a missing ``report`` extra fails before anything is written.
    A run on synthetic queries gets a ``calibration`` section (the records of its generator, or a line
    saying none exists), looked up before anything is computed.
    """
    from ..diagnose import write_matrix
    from .calibration import lookup_calibration
    from .model import build_report

    o = options
    calibration = lookup_calibration(results, explicit=o.calibration, folders=o.calibration_dirs)
    if calibration is None and o.calibration is not None:
        raise ConfigError("--calibration applies to a run on synthetic queries (bakeoff generate); this run's "
                          "queries have no generator provenance")
    arms = results.arm_names
    if len(arms) < 1:
        raise ConfigError("the results have no arms")
    if o.html and out is not None:
        from .html import plotly_js

        plotly_js()  # fail (MissingDependencyError) before anything is written
    rep = build_report(results, dataset=dataset, runs=runs, n_resamples=o.n_resamples, seed=o.seed, alpha=o.alpha,
                       deltas=parse_deltas(o.deltas, arms), sources=sources, progress=o.progress)
    if calibration is not None:
        rep["calibration"] = calibration
    if out is None:
        return ReportOutput(rep)
    out.mkdir(parents=True, exist_ok=True)
    per_query = {a.name: a.per_query for a in results.arms}
    qids = list(results.arms[0].per_query[rep["measures"][0]])
    write_matrix(out / "per_query.csv", per_query, query_ids=qids, measures=rep["measures"], arms=arms)
    try:
        write_matrix(out / "per_query.parquet", per_query, query_ids=qids, measures=rep["measures"], arms=arms)
    except Exception as exc:  # noqa: BLE001 - pyarrow is optional; CSV is always written
        log.warning(f"per_query.parquet not written: {exc}")
    from .latex import write_latex

    write_latex(out / "report.tex", rep)
    holes_written = _write_holes(out, rep, dataset=dataset, runs=runs, query_ids=qids)
    figures_written, svgs = _write_figures(out, rep, results=results, dataset=dataset, runs=runs, options=o)
    if o.html:
        from .html import explorer_data, write_html

        exp = explorer_data(rep, dataset=dataset, runs=runs, per_query=per_query, query_ids=qids)
        write_html(out / "report.html", rep, explorer=exp, figures=svgs)
    if o.markdown:
        from .._io import atomic_write_text
        from .markdown import render_markdown

        atomic_write_text(out / "report.md", render_markdown(rep))
    atomic_write_json(out / "report.json", rep)
    written = ["report.json", *(["report.html"] if o.html else []), "report.tex", *(["report.md"] if o.markdown else []),
               "per_query.csv",
               *(["per_query.parquet"] if (out / "per_query.parquet").exists() else []), *holes_written,
               *figures_written]
    return ReportOutput(rep, out, written)


def _write_figures(out: Path, rep: Mapping[str, Any], *, results: StoredResults, dataset: Dataset | None,
                   runs: Mapping[str, Run] | None, options: ReportOptions) -> tuple[list[str], dict[str, str]]:
    """The figures of :mod:`bakeoff.report.figures` (files, inline SVGs); none, with a warning, without
    matplotlib."""
    if not options.figures or not rep.get("arms"):
        return [], {}
    from ..errors import MissingDependencyError
    from .figures import write_figures

    first = rep["measures"][0]
    common = set.intersection(*(set(a.per_query[first]) for a in results.arms))
    qids = [q for q in results.arms[0].per_query[first] if q in common]  # the compared queries
    try:
        return write_figures(out / "figures", rep, results=results, runs=runs,
                             qrels=dataset.qrels if dataset is not None else None, query_ids=qids)
    except MissingDependencyError as exc:
        log.warning(f"figures not written: {exc}")
        return [], {}


def _write_holes(out: Path, rep: Mapping[str, Any], *, dataset: Dataset | None, runs: Mapping[str, Run] | None,
                 query_ids: Sequence[str]) -> list[str]:
    """``holes.tsv`` (:func:`bakeoff.report.quality.write_holes`) when the report counted holes."""
    holes = (rep.get("truth_quality") or {}).get("holes")
    if not holes or dataset is None or runs is None:
        return []
    from .quality import write_holes

    arms = [a["name"] for a in rep["arms"] if a["name"] in runs]
    write_holes(out / holes["file"], {a: runs[a] for a in arms}, dataset, k=holes["k"], query_ids=query_ids)
    return [holes["file"]]


def report_results(results_dir: str | Path, *, out: Path | None = None, data: str | Path | None = None,
                   options: ReportOptions = ReportOptions()) -> ReportOutput:
    """``bakeoff report``: the report of the ``results.json`` in ``results_dir`` (or that file),
    written into ``out`` (default: the results folder). ``data`` replaces the BEIR folder
    recorded in the results (the dataset moved); its fingerprints must still match."""
    path = results_path(results_dir)
    results = read_results(path)
    dataset = load_dataset(results, path=path, data=data)
    runs = load_runs(results, folder=path.parent)
    from dataclasses import replace

    options = replace(options, calibration_dirs=(path.parent, *options.calibration_dirs))
    return write_report(results, out=out or path.parent, sources=[str(path)], dataset=dataset, runs=runs,
                        options=options)


def compare_results(first: str | Path, second: str | Path, *, out: Path | None = None,
                    data: str | Path | None = None, options: ReportOptions = ReportOptions()) -> ReportOutput:
    """``bakeoff compare``: one report over the arms of two result sets of the same dataset
    (:func:`bakeoff.report.inputs.merge_results`: fingerprints checked, clashing arm names
    prefixed with their folder's name, or ``A/`` and ``B/``). Written only with ``out``.

    Same corpus but different queries (a synthetic set and real queries): the *ranking
    agreement* of the arms both ran instead (:mod:`bakeoff.report.agreement`, Kendall's τ with
    a bootstrap CI over ``options.n_resamples`` resamples, at most 2,000), written to
    ``out/agreement.json``."""
    pa, pb = results_path(first), results_path(second)
    ra, rb = read_results(pa), read_results(pb)
    la, lb = pa.parent.name or "A", pb.parent.name or "B"
    if la == lb:
        la, lb = "A", "B"
    fa, fb = ra.fingerprints, rb.fingerprints
    if fa.get("corpus") and fa.get("corpus") == fb.get("corpus") and fa.get("queries") != fb.get("queries"):
        from .agreement import ranking_agreement

        agr = ranking_agreement(ra, rb, labels=(la, lb), paths=(pa, pb), n_resamples=min(options.n_resamples, 2000),
                                seed=options.seed)
        written = []
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            atomic_write_json(out / "agreement.json", agr)
            written.append("agreement.json")
        return ReportOutput(agr, out, written, agreement=agr)
    merged = merge_results(ra, rb, labels=(la, lb), paths=(pa, pb))
    dataset = load_dataset(ra, path=pa, data=data)
    runs = load_runs(merged, folder=pa.parent)
    return write_report(merged, out=out, sources=[str(pa), str(pb)], dataset=dataset, runs=runs, options=options)
