"""``bakeoff label``: judge pooled documents in the browser; ``label agreement``; ``label export``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from ..errors import MissingDependencyError


class _DefaultServe(TyperGroup):
    """``bakeoff label DATASET ...`` means ``bakeoff label serve DATASET ...``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's click.Context (vendored by typer >= 0.20)
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["serve", *args]
        return super().parse_args(ctx, args)


label_app = typer.Typer(cls=_DefaultServe, no_args_is_help=True, add_completion=False,
                        help="Human judgments in the browser: bakeoff label DATASET --pool ARM ... --db FILE; "
                             "bakeoff label agreement --db FILE; bakeoff label export --db FILE --out DIR.")


#: ``--help`` epilog (``\b``: click keeps its line breaks).
EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff label data/scifact --pool bm25 --pool dense --depth 20 \\\n"
    "      --db judgments.sqlite --annotator ana")


@label_app.command("serve", epilog=EXAMPLES)
def serve_cmd(
    db: Annotated[Path, typer.Option("--db", help="Judgments database (SQLite; created if absent).")],
    dataset: Annotated[Path | None, typer.Argument(help="BEIR folder (a synthetic set with --review); with --from "
                                                        "or an existing --db, the one they record.")] = None,
    from_results: Annotated[Path | None, typer.Option(
        "--from", help="Pool from a results folder (top --depth) or a "
                       "holes.tsv of bakeoff report.")] = None,
    pool: Annotated[list[str], typer.Option("--pool", help="Pool arm, [NAME=]TYPE[:key=value,...]; repeatable.")] = [],  # noqa: B006 - typer passes a new list
    depth: Annotated[int | None, typer.Option(help="Top documents pooled per arm (default 20).")] = None,
    annotator: Annotated[str | None, typer.Option(help="Your name (else the page asks).")] = None,
    port: Annotated[int, typer.Option(help="Port; 0 picks a free one.")] = 8765,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    split: Annotated[str, typer.Option(help="qrels split whose queries are judged.")] = "test",
    review: Annotated[bool, typer.Option("--review", help="Review the synthetic set's queries (accept/edit/reject) "
                                         "before judging them.")] = False,
    log: Annotated[Path | None, typer.Option("--log", help="Query log: one query per line, or JSONL "
                                                '{"query": ..., "count": N}.')] = None,
    sample: Annotated[int | None, typer.Option(help="Judge a seeded sample of this many queries.")] = None,
    weighted: Annotated[bool, typer.Option("--weighted",
                                           help="Query logs: sample by frequency (else uniform).")] = False,
    seed: Annotated[int | None, typer.Option(help="Seed of sampling, pool order and routing (default 0).")] = None,
    overlap: Annotated[float | None, typer.Option(help="Share of queries routed to a second annotator "
                                                     "(default 0.1).")] = None,
    guidelines: Annotated[Path | None, typer.Option(help="Judging guidelines (a TOML file) shown in "
                                                       "the app.")] = None,
    gold: Annotated[int | None, typer.Option(help="Known-answer check items per query (default "
                                                "0).")] = None,
    cache: Annotated[str, typer.Option(help="Run cache policy: use, refresh or off.")] = "use",
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default $BAKEOFF_CACHE_DIR).")] = None,
    progress: Annotated[bool, typer.Option(help="Show progress bars while pooling.")] = True,
) -> None:
    """Start the labelling app on 127.0.0.1 and print its URL (Ctrl-C stops it; nothing is lost)."""
    try:
        from ..label.session import LabelOptions, serve_labelling
    except ImportError as exc:
        raise MissingDependencyError(exc.name or "starlette", "label", "the labelling app") from None

    opts = LabelOptions(dataset=dataset, db=db, pool=tuple(pool), from_results=from_results, depth=depth, split=split, annotator=annotator,
                        host=host, port=port, review=review, log=log, sample=sample, weighted=weighted, seed=seed,
                        overlap=overlap, guidelines=guidelines, gold=gold, cache=cache, cache_dir=cache_dir, progress=progress)
    serve_labelling(opts, announce=lambda url: typer.echo(f"labelling at {url}  (Ctrl-C to stop)"))


def _fmt(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.4f}"


@label_app.command("agreement")
def agreement_cmd(
    db: Annotated[Path, typer.Option("--db", help="Judgments database.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Cohen's kappa (unweighted and quadratic-weighted) per pair of annotators, Krippendorff's alpha (ordinal)."""
    from ..label.agreement import agreement_of_db

    ag = agreement_of_db(db)
    if as_json:
        typer.echo(json.dumps(ag.as_dict(), indent=2))
        return
    typer.echo("annotators: " + (", ".join(f"{a} ({n} judgments)" for a, n in ag.annotators.items()) or "none"))
    typer.echo(f"items: {ag.items} judged, {ag.items_multi} by two or more annotators")
    typer.echo("Cohen's kappa, unweighted and quadratic-weighted, each pair of annotators on the items both judged:")
    for p in ag.pairs:
        obs = "-" if p.observed is None else f"{p.observed:.4f}"
        typer.echo(f"  {p.a} / {p.b}: items {p.items}, observed agreement {obs}, kappa {_fmt(p.kappa)}, "
                   f"quadratic-weighted kappa {_fmt(p.kappa_quadratic)}")
    if not ag.pairs:
        typer.echo("  (one annotator only)")
    typer.echo(f"Krippendorff's alpha (ordinal): {_fmt(ag.alpha)} over {ag.alpha_items} items, "
               f"{ag.alpha_judgments} judgments, {len(ag.annotators)} annotators")
    if ag.per_annotator:
        typer.echo("per annotator: judgments, grades 0/1/2/3, mean grade, agreement with the others on shared items, "
                   "median minutes per judgment")
        for f in ag.per_annotator:
            agr = "-" if f.agreement is None else f"{f.agreement:.3f} over {f.shared} items"
            mean = "-" if f.mean_grade is None else f"{f.mean_grade:.2f}"
            pace = "-" if f.pace is None else f"{f.pace:.2f}"
            known = ("" if not f.gold_items else f"; known answers: {f.gold_items}, same relevance "
                     f"{f.gold_relevance:.3f}, same grade {f.gold_exact:.3f}")
            typer.echo(f"  {f.annotator}: {f.judgments}, {'/'.join(str(f.grades[g]) for g in range(4))}, {mean}, "
                       f"{agr}, {pace}{known}")
    for note in ag.notes:
        typer.echo(f"note: {note}", err=True)


@label_app.command("export")
def export_cmd(
    db: Annotated[Path, typer.Option("--db", help="Judgments database.")],
    out: Annotated[Path, typer.Option("--out", help="Folder to write (qrels, queries, provenance).")],
    split: Annotated[str, typer.Option(help="Name of the BEIR qrels split written.")] = "test",
    complete_only: Annotated[bool, typer.Option("--complete-only", help="Leave out queries whose pool is only "
                                                "partly judged.")] = False,
) -> None:
    """Write TREC and BEIR qrels, the reviewed queries and provenance (conflicts: majority, then the lower grade)."""
    from ..label.export import export_judgments

    summary = export_judgments(db, out, split=split, complete_only=complete_only)
    c: dict[str, Any] = summary.provenance["counts"]
    cov: dict[str, Any] = summary.provenance["coverage"]
    typer.echo(f"wrote {summary.out}: {c['queries']} queries, {c['pairs']} judged pairs, {c['judgments']} judgments "
               f"by {len(summary.provenance['annotators'])} annotator(s); {c['conflicts']} conflicts "
               f"({c.get('resolved_by_review', 0)} by a reviewer, {c['resolved_by_majority']} by majority, "
               f"{c['resolved_by_lower_grade']} by the lower grade)")
    partial = ", ".join(f"{q} {v['judged']}/{v['pooled']}" for q, v in cov["partial"].items())
    if cov["dropped"]:
        typer.echo(f"left out {len(cov['dropped'])} partly judged quer{'y' if len(cov['dropped']) == 1 else 'ies'}: "
                   f"{partial}", err=True)
    elif cov["partial"]:
        typer.echo(f"warning: {len(cov['partial'])} of {cov['queries']} exported queries are only partly judged "
                   f"({partial} pooled pairs judged); their unjudged documents are missing from the qrels. "
                   "--complete-only leaves them out", err=True)
    if cov["pairs_owed_second_judgment"]:
        typer.echo(f"note: {cov['pairs_owed_second_judgment']} pair(s) routed to two annotators have one judgment "
                   "so far", err=True)
    if c["resolved_by_lower_grade"]:
        typer.echo(f"note: {c['resolved_by_lower_grade']} of {c['pairs_judged_twice_or_more']} pairs judged twice "
                   "were settled by the lower grade (a tie), not by a reviewer: the app's Disagreements page "
                   "(/disagreements/NAME) settles them", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(label_app, name="label")
