"""``bakeoff eval QRELS RUN``: this package's trec_eval (bakeoff's query rule, or trec_eval's with --trec-eval)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ._common import AveragingOpt


def eval_cmd(
    qrels: Annotated[Path, typer.Argument(help="Judgments: TREC qrels, BEIR TSV or a `bakeoff label` database.")],
    run: Annotated[Path, typer.Argument(help="TREC run file (qid Q0 docid rank score tag).")],
    metric: Annotated[list[str], typer.Option("--metric", "-m",
                                              help="Measure, e.g. ndcg@10, P_5, map, Rprec, bpref (repeatable).")] = [],  # noqa: B006 - typer passes a new list
    as_json: Annotated[bool, typer.Option("--json", help='Print {"measure": mean, ...} as JSON.')] = False,
    per_query: Annotated[bool, typer.Option("--per-query", "-q", help="Also print per-query values.")] = False,
    trec: Annotated[bool, typer.Option("--trec-eval", help="trec_eval's query set, measure names and "
                                       "output format.")] = False,
    averaging: AveragingOpt = None,
    complete: Annotated[bool, typer.Option("--complete", "-c", help="With --trec-eval: average over every judged "
                                           "query (trec_eval -c).")] = False,
    level: Annotated[int, typer.Option("--relevance-level", "-l", help="Minimum grade that counts as relevant "
                                       "for binary measures (trec_eval -l).")] = 1,
    max_docs: Annotated[int | None, typer.Option("--max-docs", "-M", min=1, help="Only the first M documents of "
                                                 "each ranking count (trec_eval -M).")] = None,
    allow_dups: Annotated[bool, typer.Option("--allow-duplicate-judgments", help="A judgment repeated for one "
                                             "(query, document) is not an error: the last one wins (counted).")] = False,
) -> None:
    """Evaluate a TREC run against judgments (ties broken as trec_eval does)."""
    from ..errors import ConfigError
    from ..metrics import DEFAULT_MEASURES, evaluate_files, parse_measures, trec_name
    from ._common import warn_all

    if complete and not trec and averaging is None:
        raise ConfigError("--complete (-c) is trec_eval's rule: add --trec-eval (bakeoff's rule already scores "
                          "judged queries missing from the run as 0)")
    if averaging is not None and ((complete and averaging != "trec_eval-c") or (trec and averaging == "bakeoff")):
        raise ConfigError(f"--averaging {averaging} contradicts --trec-eval{' -c' if complete else ''}")
    rule = averaging or ("trec_eval-c" if complete else "trec_eval" if trec else "bakeoff")
    try:
        measures = parse_measures(metric or DEFAULT_MEASURES)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    done = evaluate_files(qrels, run, measures, averaging=rule, relevance_level=level,
                          max_docs=max_docs, allow_duplicate_judgments=allow_dups)
    ev = done.evaluation
    warn_all(list(done.warnings))
    if as_json:
        typer.echo(json.dumps(ev.means, sort_keys=False))
        return
    if trec:  # trec_eval's layout: per query (with -q), then "all", 4 decimals
        names = {m: trec_name(m) for m in measures}
        lines = []
        if per_query:
            for q in ev.query_ids:
                lines += [f"{names[m]:<22}\t{q}\t{ev.per_query[str(m)][q]:6.4f}" for m in measures]
        lines.append(f"{'num_q':<22}\tall\t{len(ev.query_ids)}")
        lines += [f"{names[m]:<22}\tall\t{ev.means[str(m)]:6.4f}" for m in measures]
        typer.echo("\n".join(lines))
        return
    if per_query:
        for m in ev.per_query:
            for q, v in ev.per_query[m].items():
                typer.echo(f"{m}\t{q}\t{v:.6f}")
    for m, v in ev.means.items():
        typer.echo(f"{m}\tall\t{v:.6f}")
    typer.echo(f"queries\tall\t{len(ev.query_ids)}")
    typer.echo(f"averaging\tall\t{ev.rule}")


#: ``--help`` epilog (``\b``: click keeps its line breaks).
EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff eval qrels.tsv run.trec -m ndcg@10 -m recall@100\n"
    "  bakeoff eval qrels.tsv run.trec --trec-eval -c")


def register(app: typer.Typer) -> None:
    app.command("eval", epilog=EXAMPLES)(eval_cmd)
