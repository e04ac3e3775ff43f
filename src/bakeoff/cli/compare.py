"""``bakeoff compare A.json B.json``: two result sets of the same dataset, paired, same statistics."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import DEFAULT_RESAMPLES, folder_path, AlphaOpt, DeltaOpt, ProgressOpt, ResamplesOpt, SeedOpt, show_report


def compare_cmd(
    first: Annotated[Path, typer.Argument(help="results.json (or its folder) of the first result set.")],
    second: Annotated[Path, typer.Argument(help="results.json (or its folder) of the second result set.")],
    out: Annotated[Optional[Path], typer.Option(callback=folder_path, help="Also write report.json/.html/.tex and per_query files here.")] = None,
    data: Annotated[Optional[Path], typer.Option(help="BEIR folder, if the dataset moved since the runs.")] = None,
    resamples: ResamplesOpt = DEFAULT_RESAMPLES,
    seed: SeedOpt = 0,
    alpha: AlphaOpt = 0.05,
    delta: DeltaOpt = [],
    html: Annotated[bool, typer.Option(help="With --out, write report.html (needs the [report] extra).")] = True,
    progress: ProgressOpt = True,
) -> None:
    """Compare two result sets (same corpus, queries and judgments: fingerprints are checked).

    Arms with the same name in both sets are prefixed with their folder name (A/..., B/...).
    Same corpus, different queries (SYNTHETIC REAL): whether the synthetic queries rank the arms as the real
    ones do (Kendall's tau with a bootstrap CI).
    """
    from ..report.write import ReportOptions, compare_results

    options = ReportOptions(n_resamples=resamples, seed=seed, alpha=alpha, deltas=delta, html=html, progress=progress)
    done = compare_results(first, second, out=out, data=data, options=options)
    if done.agreement is None:
        show_report(done)
        return
    from ..report.terminal import print_agreement

    print_agreement(done.agreement)
    if done.written:
        typer.echo(f"wrote {', '.join(done.written)} in {done.folder}")


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
