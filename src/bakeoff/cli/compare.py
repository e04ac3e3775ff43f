"""``bakeoff compare A.json B.json``: two result sets of the same dataset, paired, same statistics."""

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
    finish_gate,
    folder_path,
    output_format,
    show_report,
)


def compare_cmd(
    first: Annotated[Path, typer.Argument(help="results.json (or its folder) of the first result set.")],
    second: Annotated[Path, typer.Argument(help="results.json (or its folder) of the second result set.")],
    out: Annotated[Path | None, typer.Option(callback=folder_path, help="Also write report.json/.html/.tex and per_query files here.")] = None,
    data: Annotated[Path | None, typer.Option(help="BEIR folder, if the dataset moved since the runs.")] = None,
    resamples: ResamplesOpt = DEFAULT_RESAMPLES,
    seed: SeedOpt = 0,
    alpha: AlphaOpt = 0.05,
    delta: DeltaOpt = [],  # noqa: B006 - typer passes a new list
    html: Annotated[bool, typer.Option(help="With --out, write report.html (needs the [report] extra).")] = True,
    progress: ProgressOpt = True,
    fail_if_worse: Annotated[list[str], typer.Option(
        "--fail-if-worse", help="CI gate: exit 1 when NEW is significantly worse than BASE on this measure "
        "(repeatable).")] = [],  # noqa: B006 - typer passes a new list
    margin: Annotated[float, typer.Option(help="With --fail-if-worse: drops up to this much never fail.")] = 0.0,
    summary: Annotated[str, typer.Option("--summary", callback=output_format, help="text (tables) or md: "
                                         "GitHub-flavoured Markdown on stdout (verdict, table, gate), e.g. for "
                                         "$GITHUB_STEP_SUMMARY.")] = "text",
) -> None:
    """Compare two result sets (same corpus, queries and judgments: fingerprints are checked).

    Arms with the same name in both sets are prefixed with their folder name (A/..., B/...).
    Same corpus, different queries (SYNTHETIC REAL): whether the synthetic queries rank the arms as the real
    ones do (Kendall's tau with a bootstrap CI).
    With --fail-if-worse the exit status is 1 when NEW is significantly worse (one line per
    failing check), 0 otherwise; result sets on different data, splits or queries exit 2.
    """
    from ..report.write import ReportOptions, compare_results

    gate = None
    if fail_if_worse:  # checked first: bad input exits 2 before any report is computed
        from ..report.gate import gate_files

        gate = gate_files(first, second, measures=fail_if_worse, alpha=alpha, margin=margin, n_resamples=resamples,
                          seed=seed)
    options = ReportOptions(n_resamples=resamples, seed=seed, alpha=alpha, deltas=delta, html=html, progress=progress,
                            markdown=summary == "md" and out is not None)
    done = compare_results(first, second, out=out, data=data, options=options)
    if done.agreement is None:
        show_report(done, fmt=summary, gate=gate)
    else:
        from ..report.terminal import print_agreement

        print_agreement(done.agreement)
        if done.written:
            typer.echo(f"wrote {', '.join(done.written)} in {done.folder}")
    finish_gate(gate, err=summary == "md")


#: ``--help`` epilog (``\b``: click keeps its line breaks).
EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff compare results/a results/b\n"
    "  bakeoff compare BASE NEW --fail-if-worse ndcg@10 --margin 0.01\n"
    "  bakeoff compare BASE NEW --fail-if-worse ndcg@10 --summary md \\\n"
    "      >> \"$GITHUB_STEP_SUMMARY\"")


def register(app: typer.Typer) -> None:
    app.command("compare", epilog=EXAMPLES)(compare_cmd)
