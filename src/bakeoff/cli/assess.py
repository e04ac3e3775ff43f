"""``bakeoff assess RESULTS_DIR --llm ...``: grade the unjudged pooled documents with an LLM."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import make_cache
from ._generator import ConcurrencyOpt, LlmOpt, PriceOpt


def assess_cmd(
    results_dir: Annotated[Path, typer.Argument(help="Folder written by `bakeoff run --out` (or its results.json).")],
    llm: LlmOpt = "local",
    arms: Annotated[str | None, typer.Option(help="Comma-separated arms to pool (default: all).")] = None,
    depth: Annotated[int, typer.Option(help="Pool each arm's top DEPTH documents.")] = 10,
    max_pairs: Annotated[int | None, typer.Option(help="Grade at most this many holes (disputed first).")] = None,
    relevant_from: Annotated[int, typer.Option(help="Lowest assessed grade (0-3) counted relevant when merged.")] = 2,
    method: Annotated[str, typer.Option(help="Grading: umbrela, expected, yesno or likelihood.")] = "umbrela",
    threshold: Annotated[float, typer.Option(help="likelihood: relevant at this PMI (nats/token) or more.")] = 1.0,
    baseline: Annotated[str, typer.Option(help="likelihood: baseline documents, random or none.")] = "random",
    max_doc_chars: Annotated[int, typer.Option(min=1, help="Characters of each document shown to the judge.")] = 1000,
    out: Annotated[Path | None, typer.Option(help="Output folder (default RESULTS_DIR/assessed).")] = None,
    data: Annotated[Path | None, typer.Option(help="BEIR folder, if the dataset moved since the run.")] = None,
    concurrency: ConcurrencyOpt = None,
    price: PriceOpt = None,
    cache: Annotated[str, typer.Option(help="Cache policy: use, refresh or off.")] = "use",
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder.")] = None,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Grade each unjudged document in the arms' pooled top DEPTH 0-3 with an LLM (UMBRELA-style rubric).

    Writes assessed.qrels (a separate judgment file) and assessment.json (provenance, counts, cost, and every
    arm's metrics with the original labels and with original + assessed labels, side by side)."""
    from ..truth.judging.assess import AssessOptions, assess_results
    from ..truth.llm.spec import LLMSpec

    judge = LLMSpec.parse(llm)
    chosen = tuple(a.strip() for a in arms.split(",") if a.strip()) if arms else ()
    options = AssessOptions(depth=depth, arms=chosen, max_pairs=max_pairs, relevant_from=relevant_from, method=method,
                            threshold=threshold, baseline=baseline, max_doc_chars=max_doc_chars)
    done = assess_results(results_dir, llm=judge, options=options, out=out, data=data, cache=make_cache(cache, cache_dir),
                          concurrency=concurrency, price=price, progress=progress)
    c, u = done.counts, done.usage
    typer.echo(f"holes: {c['holes']} unjudged (query, document) pairs in the pooled top {depth} "
               f"({c['disputed']} disputed); asked {c['asked']}, assessed {c['assessed']}, failed {c['failed']} "
               f"(invalid after re-asking; {c['re_asked']} re-asks), skipped {c['skipped']}")
    typer.echo("grades: " + ", ".join(f"{g}: {n}" for g, n in done.grades.items()))
    typer.echo(f"llm: {u['requests']} requests ({u['cache_hits']} cached), {u['prompt_tokens']} prompt + "
               f"{u['completion_tokens']} completion tokens, ${u['cost_usd']:.4f}; {done.seconds:.1f} s "
               f"(startup {done.llm_startup_s:.1f} s)")
    _print_side_by_side(done)
    typer.echo(f"wrote {', '.join(done.written)} in {done.folder} (assessed labels are kept apart from the originals)")


def _print_side_by_side(done: object) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    measures, rows = done.measures, done.metrics  # type: ignore[attr-defined]
    table = Table(title="Metrics with the original labels | with original + assessed labels")
    table.add_column("arm")
    for m in measures:
        table.add_column(f"{m} orig", justify="right")
        table.add_column(f"{m} +assessed", justify="right")
    for r in rows:
        cells = []
        for m in measures:
            cells += [f"{r['original'][m]:.4f}", f"{r['with_assessed'][m]:.4f}"]
        table.add_row(escape(r["arm"]), *cells)
    name_w = max([3, *(len(r["arm"]) for r in rows)]) + 3
    width = name_w + sum(max(len(m) + 13, 10) for m in measures) * 2 + 4
    Console(width=max(100, width)).print(table)


#: ``--help`` epilog (``\b``: click keeps its line breaks).
EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff assess results/syn --llm openai:gpt-4o-mini --depth 10\n"
    "  bakeoff assess results/syn --llm local:qwen-coder-1.5b --method likelihood")


def register(app: typer.Typer) -> None:
    app.command("assess", epilog=EXAMPLES)(assess_cmd)
