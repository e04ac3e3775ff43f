"""``bakeoff report RESULTS_DIR``: statistics, diagnostics, HTML, LaTeX and per-query exports."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..errors import ConfigError
from ..stats import DEFAULT_RESAMPLES

log = logging.getLogger("bakeoff")


def _parse_pairs(specs: Sequence[str], arms: Sequence[str]) -> list[tuple[str, str]]:
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


def produce(
    results: Mapping[str, Any],
    *,
    out: Path | None,
    sources: Sequence[str],
    dataset: Any,
    runs: Mapping[str, Any] | None,
    n_resamples: int,
    seed: int,
    alpha: float,
    deltas: Sequence[str] = (),
    html: bool = True,
    progress: bool = True,
) -> dict[str, Any]:
    """Build the report, print it, and (with ``out``) write every file; returns the report dict."""
    from .._io import atomic_write_json
    from ..diagnose import write_matrix
    from ..report.model import build_report
    from ..report.terminal import print_report

    arms = [a["name"] for a in results["arms"]]
    if len(arms) < 1:
        raise ConfigError("the results have no arms")
    if html and out is not None:
        from ..report.html import plotly_js

        plotly_js()  # fail (MissingDependencyError) before anything is written
    rep = build_report(results, dataset=dataset, runs=runs, n_resamples=n_resamples, seed=seed, alpha=alpha,
                       deltas=_parse_pairs(deltas, arms), sources=sources, progress=progress)
    print_report(rep)
    if out is None:
        return rep
    out.mkdir(parents=True, exist_ok=True)
    per_query = {a["name"]: a["per_query"] for a in results["arms"]}
    qids = list(results["arms"][0]["per_query"][rep["measures"][0]])
    write_matrix(out / "per_query.csv", per_query, query_ids=qids, measures=rep["measures"], arms=arms)
    try:
        write_matrix(out / "per_query.parquet", per_query, query_ids=qids, measures=rep["measures"], arms=arms)
    except Exception as exc:  # noqa: BLE001 - pyarrow is optional; CSV is always written
        log.warning(f"per_query.parquet not written: {exc}")
    from ..report.latex import write_latex

    write_latex(out / "report.tex", rep)
    if html:
        from ..report.html import explorer_data, write_html

        exp = explorer_data(rep, dataset=dataset, runs=runs, per_query=per_query, query_ids=qids)
        write_html(out / "report.html", rep, explorer=exp)
    atomic_write_json(out / "report.json", rep)
    written = ["report.json", *(["report.html"] if html else []), "report.tex", "per_query.csv",
               *(["per_query.parquet"] if (out / "per_query.parquet").exists() else [])]
    typer.echo(f"wrote {', '.join(written)} in {out}")
    return rep


def report_cmd(
    results_dir: Annotated[Path, typer.Argument(help="Folder written by `bakeoff run --out` (or its results.json).")],
    out: Annotated[Optional[Path], typer.Option(help="Where to write the report files (default: RESULTS_DIR).")] = None,
    data: Annotated[Optional[Path], typer.Option(help="BEIR folder, if the dataset moved since the run.")] = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples and permutations.")] = DEFAULT_RESAMPLES,
    seed: Annotated[int, typer.Option(help="Seed of the resampling.")] = 0,
    alpha: Annotated[float, typer.Option(help="Significance level after Holm correction.")] = 0.05,
    delta: Annotated[list[str], typer.Option("--delta", help="A..B: also decompose mean(A)-mean(B) by buckets.")] = [],
    html: Annotated[bool, typer.Option(help="Write report.html (needs the [report] extra).")] = True,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Report a bake-off: table with CIs and significance, diagnostics, report.json/.html/.tex, per-query matrix."""
    from ..report.inputs import load_dataset, load_runs, results_path
    from ..runner.results import read_results

    path = results_path(results_dir)
    results = read_results(path)
    dataset = load_dataset(results, path=path, data=data)
    runs = load_runs(results, folder=path.parent)
    produce(results, out=out or path.parent, sources=[str(path)], dataset=dataset, runs=runs, n_resamples=resamples,
            seed=seed, alpha=alpha, deltas=delta, html=html, progress=progress)


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)
