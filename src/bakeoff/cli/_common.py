"""Helpers shared by CLI commands: the cache option, and the options ``report`` and ``compare`` share.

Command modules import only typer and this module at top level (``bakeoff eval --help``
stays fast); everything else is imported inside the command functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from ..cache import Cache
    from ..report.write import ReportOutput

#: Bootstrap resamples by default; equals :data:`bakeoff.stats.DEFAULT_RESAMPLES` (a test checks),
#: written out so that building the CLI does not import the statistics module.
DEFAULT_RESAMPLES = 10_000

ResamplesOpt = Annotated[int, typer.Option(help="Bootstrap resamples and permutations.")]
SeedOpt = Annotated[int, typer.Option(help="Seed of the resampling.")]
AlphaOpt = Annotated[float, typer.Option(help="Significance level after Holm correction.")]
DeltaOpt = Annotated[list[str], typer.Option("--delta", help="A..B: also decompose mean(A)-mean(B) by buckets.")]
ProgressOpt = Annotated[bool, typer.Option(help="Show progress bars.")]


def make_cache(policy: str, cache_dir: Path | None) -> Cache | None:
    """The cache of ``--cache use|refresh|off`` in ``--cache-dir`` (default ``$BAKEOFF_CACHE_DIR``)."""
    from ..cache import Cache, default_cache_dir
    from ..errors import ConfigError

    if policy not in ("use", "refresh", "off"):
        raise ConfigError(f"--cache must be use, refresh or off, got {policy!r}")
    if policy == "off":
        return None
    return Cache(cache_dir or default_cache_dir(), policy=policy)  # type: ignore[arg-type]


def show_report(done: ReportOutput) -> None:
    """Print the report and the files written."""
    from ..report.terminal import print_report

    print_report(done.report)
    if done.written:
        typer.echo(f"wrote {', '.join(done.written)} in {done.folder}")


def warn_all(lines: list[str]) -> None:
    """Each line as a ``warning:`` on stderr (through the ``bakeoff`` logger)."""
    import logging

    log = logging.getLogger("bakeoff")
    for line in lines:
        log.warning(line)
