"""``bakeoff demo``: offline end-to-end demo on the Python standard-library docs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import make_cache


def demo(
    out: Annotated[Path, typer.Option(help="Output folder (truth/ BEIR folder and results.json).")] = Path("results/demo"),
    n: Annotated[int, typer.Option("-n", help="Documents to write queries for.")] = 100,
    seed: Annotated[int, typer.Option(help="Seed of the document sample and of generation.")] = 0,
    cache: Annotated[str, typer.Option(help="Cache policy: use, refresh or off.")] = "use",
    cache_dir: Annotated[Optional[Path], typer.Option(help="Cache folder.")] = None,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    min_doc_chars: Annotated[Optional[int], typer.Option(help="Never sample documents shorter than this (characters).")] = None,
) -> None:
    """Stdlib docstrings -> Gemma-written queries (leak- and specificity-filtered) -> TF-IDF, BM25, BM25+stemmer, dense, RRF."""
    from ..demo import run_demo

    from ..demo import MIN_DOC_CHARS

    run_demo(out=out, n=n, seed=seed, cache=make_cache(cache, cache_dir), progress=progress, echo=typer.echo,
             min_doc_chars=MIN_DOC_CHARS if min_doc_chars is None else min_doc_chars)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
