"""``bakeoff mine citations``: citation-mined ground truth as a BEIR-like folder."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

log = logging.getLogger("bakeoff")

mine_app = typer.Typer(help="Mine ground truth that experts already wrote (citations).", no_args_is_help=True)


#: ``--help`` epilog (``\b``: click keeps its line breaks).
EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff mine citations --targets law.jsonl --sources rulings.jsonl \\\n"
    "      --patterns patterns.toml --out mined")


@mine_app.command("citations", epilog=EXAMPLES)
def citations(
    targets: Annotated[Path, typer.Option(help="Target versions (JSONL/CSV: unit, text, valid_from[, valid_to, title]).")],
    sources: Annotated[Path, typer.Option(help="Sources: JSONL (id, date, url, text) or a folder of .txt files.")],
    patterns: Annotated[Path, typer.Option(help="Pattern file (TOML): extends, law, decree, target_id, [[pattern]].")],
    out: Annotated[Path, typer.Option(help="Output folder (corpus, queries, qrels, audit, provenance).")],
    window: Annotated[int, typer.Option(help="Characters of context on each side of a citation.")] = 1200,
    cap: Annotated[int, typer.Option(help="Maximum characters per query.")] = 4000,
    verbatim_threshold: Annotated[float, typer.Option(help="Drop paragraphs with at least this share of target n-grams.")] = 0.30,
    ngram: Annotated[int, typer.Option(help="Word n-gram length of the verbatim-copy test.")] = 8,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """One query per citing source; cited target versions are the (lower-bound) positives."""
    from ..truth.citations.mined import mine_folder
    from ..truth.citations.mining import MineOptions

    opts = MineOptions(window=window, cap=cap, verbatim_threshold=verbatim_threshold, ngram=ngram)
    mined, path = mine_folder(targets=targets, sources=sources, patterns=patterns, out=out, options=opts,
                              progress=progress)
    for p in mined.problems:
        log.warning(p)
    c = mined.counts
    typer.echo(
        f"mined {c['queries']} queries from {c['sources']} sources over {len(mined.corpus)} target versions; "
        f"skipped: {c['no_date']} without date, {c['no_citation']} without citation, "
        f"{c['no_known_target']} with no known target; {c['unknown_article']} unknown articles, "
        f"{c['not_in_force']} not in force, {c['malformed_patterns']} malformed patterns, "
        f"{c['dropped_paragraphs']} verbatim paragraphs dropped, {c['masked_strings']} strings masked")
    typer.echo(f"wrote {path}")


def register(app: typer.Typer) -> None:
    app.add_typer(mine_app, name="mine")
