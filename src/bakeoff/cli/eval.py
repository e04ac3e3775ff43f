"""``bakeoff eval QRELS RUN``: this package's trec_eval."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer


def eval_cmd(
    qrels: Annotated[Path, typer.Argument(help="Judgments: TREC qrels or BEIR TSV.")],
    run: Annotated[Path, typer.Argument(help="TREC run file.")],
    metric: Annotated[list[str], typer.Option("--metric", "-m", help="Measure, e.g. ndcg@10 (repeatable).")] = [],
    as_json: Annotated[bool, typer.Option("--json", help='Print {"measure": mean, ...} as JSON.')] = False,
    per_query: Annotated[bool, typer.Option("--per-query", "-q", help="Also print per-query values.")] = False,
) -> None:
    """Evaluate a TREC run against judgments (ties broken as trec_eval does)."""
    from ..data.loaders import read_qrels, read_trec_run
    from ..errors import ConfigError
    from ..metrics import evaluate, parse_measures

    try:
        measures = parse_measures(metric or ["ndcg@10", "recall@10", "mrr@10", "precision@10", "map@10"])
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    judgments = read_qrels(qrels)
    ranking = read_trec_run(run)
    ev = evaluate(ranking, judgments, measures, query_ids=[q for q in judgments])
    if as_json:
        typer.echo(json.dumps(ev.means, sort_keys=False))
    else:
        if per_query:
            for m in ev.per_query:
                for q, v in ev.per_query[m].items():
                    typer.echo(f"{m}\t{q}\t{v:.6f}")
        for m, v in ev.means.items():
            typer.echo(f"{m}\tall\t{v:.6f}")
        typer.echo(f"queries\tall\t{len(ev.query_ids)}")
    if ev.excluded.get("no_relevant"):
        typer.echo(f"note: {len(ev.excluded['no_relevant'])} judged queries have no relevant document; excluded",
                   err=True)
    if ev.excluded.get("not_judged"):
        typer.echo(f"note: {len(ev.excluded['not_judged'])} run queries have no judgments; excluded", err=True)


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_cmd)
