"""``bakeoff compare A.json B.json``: two result sets of the same dataset, paired, same statistics."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..stats import DEFAULT_RESAMPLES


def compare_cmd(
    first: Annotated[Path, typer.Argument(help="results.json (or its folder) of the first result set.")],
    second: Annotated[Path, typer.Argument(help="results.json (or its folder) of the second result set.")],
    out: Annotated[Optional[Path], typer.Option(help="Also write report.json/.html/.tex and per_query files here.")] = None,
    data: Annotated[Optional[Path], typer.Option(help="BEIR folder, if the dataset moved since the runs.")] = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples and permutations.")] = DEFAULT_RESAMPLES,
    seed: Annotated[int, typer.Option(help="Seed of the resampling.")] = 0,
    alpha: Annotated[float, typer.Option(help="Significance level after Holm correction.")] = 0.05,
    delta: Annotated[list[str], typer.Option("--delta", help="A..B: also decompose mean(A)-mean(B) by buckets.")] = [],
    html: Annotated[bool, typer.Option(help="With --out, write report.html (needs the [report] extra).")] = True,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Compare two result sets (same corpus, queries and judgments: fingerprints are checked).

    Arms with the same name in both sets are prefixed with their folder name (A/..., B/...).
    """
    from ..report.inputs import load_dataset, load_runs, merge_results, results_path
    from ..runner.results import read_results
    from .report import produce

    pa, pb = results_path(first), results_path(second)
    ra, rb = read_results(pa), read_results(pb)
    la, lb = pa.parent.name or "A", pb.parent.name or "B"
    if la == lb:
        la, lb = "A", "B"
    merged = merge_results(ra, rb, labels=(la, lb), paths=(pa, pb))
    dataset = load_dataset(ra, path=pa, data=data)
    runs = load_runs(merged, folder=pa.parent)
    produce(merged, out=out, sources=[str(pa), str(pb)], dataset=dataset, runs=runs, n_resamples=resamples,
            seed=seed, alpha=alpha, deltas=delta, html=html, progress=progress)


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
