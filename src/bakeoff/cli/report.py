"""``bakeoff report RESULTS_DIR``: statistics, diagnostics, HTML, LaTeX and per-query exports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import (
    DEFAULT_RESAMPLES,
    AlphaOpt,
    DeltaOpt,
    ProgressOpt,
    ResamplesOpt,
    SeedOpt,
    folder_path,
    output_format,
    show_report,
)


def report_cmd(
    results_dir: Annotated[Path, typer.Argument(help="Folder written by `bakeoff run --out` (or its results.json).")],
    out: Annotated[Path | None, typer.Option(callback=folder_path, help="Where to write the report files (default: RESULTS_DIR).")] = None,
    data: Annotated[Path | None, typer.Option(help="BEIR folder, if the dataset moved since the run.")] = None,
    resamples: ResamplesOpt = DEFAULT_RESAMPLES,
    seed: SeedOpt = 0,
    alpha: AlphaOpt = 0.05,
    delta: DeltaOpt = [],  # noqa: B006 - typer passes a new list
    html: Annotated[bool, typer.Option(help="Write report.html (needs the \\[report] extra).")] = True,
    progress: ProgressOpt = True,
    calibration: Annotated[Path | None, typer.Option(help="The generator's calibration.json to show beside the verdict (default: looked up).")] = None,
    fmt: Annotated[str, typer.Option("--format", callback=output_format, help="text (tables) or md: GitHub-flavoured "
                                     "Markdown on stdout and in report.md.")] = "text",
) -> None:
    """Report a bake-off: table with CIs and significance, diagnostics, report.json/.html/.tex, per-query matrix."""
    from ..cache import default_cache_dir
    from ..report.write import ReportOptions, report_results

    options = ReportOptions(n_resamples=resamples, seed=seed, alpha=alpha, deltas=delta, html=html, progress=progress,
                            calibration=calibration, calibration_dirs=(default_cache_dir(),), markdown=fmt == "md")
    show_report(report_results(results_dir, out=out, data=data, options=options), fmt=fmt)


#: ``--help`` epilog (``\b``: click keeps its line breaks).
EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff report results/sf\n"
    "  bakeoff report results/sf --format md >> \"$GITHUB_STEP_SUMMARY\"")


def register(app: typer.Typer) -> None:
    app.command("report", epilog=EXAMPLES)(report_cmd)
