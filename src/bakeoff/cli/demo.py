"""``bakeoff demo``: offline end-to-end demo on the Python standard-library docs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import make_cache
from ._generator import CopyPenaltyOpt, LlmOpt, RetryFixOpt, ShowTitleOpt


def demo(
    out: Annotated[Path, typer.Option(help="Output folder (truth/ BEIR folder and results.json).")] = Path("results/demo"),
    corpus: Annotated[Path | None, typer.Option(help="Your corpus (default: the standard library's docstrings).")] = None,
    llm: LlmOpt = "local",
    id_field: Annotated[str, typer.Option("--id-field", help="Records: field of the document id.")] = "id",
    text_field: Annotated[str, typer.Option("--text-field", help="Records: field of the text.")] = "text",
    title_field: Annotated[str | None, typer.Option("--title-field", help="Records: field of the title.")] = "title",
    n: Annotated[int, typer.Option("-n", help="Documents to write queries for.")] = 100,
    seed: Annotated[int, typer.Option(help="Seed of the document sample and of generation.")] = 0,
    cache: Annotated[str, typer.Option(help="Cache policy: use, refresh or off.")] = "use",
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder.")] = None,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    min_doc_chars: Annotated[int | None, typer.Option(help="Never sample documents shorter than this (characters).")] = None,
    retry_fix: RetryFixOpt = True,
    show_title: ShowTitleOpt = True,
    copy_penalty: CopyPenaltyOpt = True,
) -> None:
    """Corpus (stdlib docstrings or --corpus) -> LLM-written queries, filtered -> TF-IDF, BM25, BM25+stemmer, dense, RRF -> verdict."""
    from ..data.loaders import FieldMap
    from ..demo import run_demo
    from ..truth.llm.spec import LLMSpec

    run_demo(out=out, corpus=corpus, llm=LLMSpec.parse(llm), fields=FieldMap(id=id_field, text=(text_field,), title=title_field),
             n=n, seed=seed, cache=make_cache(cache, cache_dir), progress=progress, echo=typer.echo,
             min_doc_chars=min_doc_chars, retry_fix=retry_fix, show_title=show_title,
             copy_penalty=copy_penalty)


#: ``--help`` epilog (``\b``: click keeps its line breaks).
EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff demo --out results/demo\n"
    "  bakeoff demo --corpus path/to/corpus --out results/mine")


def register(app: typer.Typer) -> None:
    app.command("demo", epilog=EXAMPLES)(demo)
