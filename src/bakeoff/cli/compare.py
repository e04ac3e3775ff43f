"""``bakeoff compare A.json B.json``: two result sets of the same dataset, paired, same statistics."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import DEFAULT_RESAMPLES, AlphaOpt, DeltaOpt, ProgressOpt, ResamplesOpt, SeedOpt, show_report


def compare_cmd(
    first: Annotated[Path, typer.Argument(help="results.json (or its folder) of the first result set.")],
    second: Annotated[Path, typer.Argument(help="results.json (or its folder) of the second result set.")],
    out: Annotated[Optional[Path], typer.Option(help="Also write report.json/.html/.tex and per_query files here.")] = None,
    data: Annotated[Optional[Path], typer.Option(help="BEIR folder, if the dataset moved since the runs.")] = None,
    resamples: ResamplesOpt = DEFAULT_RESAMPLES,
    seed: SeedOpt = 0,
    alpha: AlphaOpt = 0.05,
    delta: DeltaOpt = [],
    html: Annotated[bool, typer.Option(help="With --out, write report.html (needs the [report] extra).")] = True,
    progress: ProgressOpt = True,
    fail_if_worse: Annotated[list[str], typer.Option(
        "--fail-if-worse", help="CI gate: exit 1 when SECOND (NEW) is significantly worse than FIRST (BASE) on this "
        "measure, e.g. ndcg@10 (repeatable; paired test, Holm across arms, --alpha).")] = [],
    margin: Annotated[float, typer.Option(help="With --fail-if-worse: drops up to this much never fail.")] = 0.0,
) -> None:
    """Compare two result sets (same corpus, queries and judgments: fingerprints are checked).

    Arms with the same name in both sets are prefixed with their folder name (A/..., B/...).
    With --fail-if-worse the exit status is 1 when NEW is significantly worse (one line per
    failing check), 0 otherwise; mismatched result sets exit 2.
    """
    from ..report.write import ReportOptions, compare_results

    gate = None
    if fail_if_worse:  # checked first: bad input exits 2 before any report is computed
        from ..report.gate import gate_files

        gate = gate_files(first, second, measures=fail_if_worse, alpha=alpha, margin=margin, n_resamples=resamples,
                          seed=seed)
    options = ReportOptions(n_resamples=resamples, seed=seed, alpha=alpha, deltas=delta, html=html, progress=progress)
    show_report(compare_results(first, second, out=out, data=data, options=options))
    if gate is not None:
        for line in gate.lines:
            typer.echo(f"gate: {line}")
        if gate.failed:
            raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
