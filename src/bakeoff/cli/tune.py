"""``bakeoff tune``: choose an arm's parameters on a dev split, then test the choice once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import DEFAULT_RESAMPLES, AlphaOpt, AveragingOpt, ProgressOpt, RelevanceLevelOpt, ResamplesOpt, make_cache


def tune(
    config: Annotated[Path | None, typer.Argument(
        help="TOML file: \\[dataset], \\[\\[arms]] and optionally \\[tune].")] = None,
    beir: Annotated[Path | None, typer.Option(help="BEIR folder (instead of a CONFIG).")] = None,
    split: Annotated[str, typer.Option(help="Test split of the BEIR folder (never used for choosing).")] = "test",
    arm: Annotated[list[str], typer.Option("--arm", help="[NAME=]TYPE[:key=value,...]; repeatable.")] = [],  # noqa: B006 - typer passes a new list
    tune_arm: Annotated[str | None, typer.Option("--tune", help="Name of the arm to tune (\\[tune] arm).")] = None,
    param: Annotated[list[str], typer.Option("--param", help="NAME=v1,v2,... or NAME=LOW:HIGH[:log]; "
                                             "repeatable.")] = [],  # noqa: B006 - typer passes a new list
    dev: Annotated[str | None, typer.Option(help="Dev split: a split name (train), slice:F or kfold:N.")] = None,
    search: Annotated[str | None, typer.Option(help="grid (default) or random.")] = None,
    trials: Annotated[int | None, typer.Option(help="Random search: number of settings drawn.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of random search, slices and folds.")] = None,
    measure: Annotated[str | None, typer.Option(help="Measure to maximise on dev (default ndcg@10).")] = None,
    drop_leaks: Annotated[bool, typer.Option("--drop-leaks", help="Drop dev queries equal to test queries "
                                             "instead of refusing.")] = False,
    k: Annotated[int | None, typer.Option(help="Cutoff for the reported metrics.")] = None,
    depth: Annotated[int | None, typer.Option(help="Documents retrieved per query (>= k; default 1000).")] = None,
    out: Annotated[Path | None, typer.Option(help="Folder for results.json, runs/ and tune.json.")] = None,
    cache: Annotated[str | None, typer.Option(help="Cache policy: use, refresh or off.")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder.")] = None,
    resamples: ResamplesOpt = DEFAULT_RESAMPLES,
    alpha: AlphaOpt = 0.05,
    latency_sample: Annotated[int | None, typer.Option("--latency-sample", help="Queries timed one by one on "
                              "the test split (0: skip).")] = None,
    progress: ProgressOpt = True,
    averaging: AveragingOpt = None,
    relevance_level: RelevanceLevelOpt = None,
) -> None:
    """Sweep an arm's parameters on a dev split, pick the best, evaluate it once on the test split."""
    from ..tune.inputs import tune_from_inputs
    from ..tune.summary import summary_lines

    done = tune_from_inputs(config=config, beir=beir, split=split, arms=arm, tune_arm=tune_arm, params=param, dev=dev,
                            search=search, trials=trials, seed=seed, measure=measure, drop_leaks=drop_leaks, k=k,
                            depth=depth, out=out, cache=make_cache(cache or "use", cache_dir), progress=progress,
                            n_resamples=resamples, alpha=alpha, latency_sample=latency_sample,
                            averaging=averaging, relevance_level=relevance_level)
    for line in summary_lines(done.tune):
        typer.echo(line)
    if done.folder is not None:
        typer.echo(f"wrote {', '.join(done.written)} in {done.folder}")


#: ``--help`` epilog (``\b``: click keeps its line breaks).
EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff tune --beir data/scifact --arm bm25 --dev train \\\n"
    "      --param k1=0.9,1.2,1.5 --param b=0.5,0.75 --out out/tune-bm25")


def register(app: typer.Typer) -> None:
    app.command("tune", epilog=EXAMPLES)(tune)
