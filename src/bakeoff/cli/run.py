"""``bakeoff run``: a bake-off from a TOML file or from flags."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ._common import (
    AveragingOpt,
    RelevanceLevelOpt,
    finish_gate,
    finite,
    folder_path,
    make_cache,
    measure_names,
    write_staged,
)

if TYPE_CHECKING:
    from ..data.datasets import DatasetSpec
    from ..runner.config import BakeoffConfig
    from ..runner.results import Results


def run(
    config: Annotated[Path | None, typer.Argument(help="TOML file naming the dataset and the arms.")] = None,
    beir: Annotated[Path | None, typer.Option(help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/).")] = None,
    irds: Annotated[str | None, typer.Option(help="ir_datasets id, e.g. beir/scifact/test.")] = None,
    corpus: Annotated[Path | None, typer.Option(help="Corpus: JSONL/CSV/Parquet records or a folder of files.")] = None,
    queries: Annotated[Path | None, typer.Option(help="Queries (BEIR JSONL or id<TAB>text).")] = None,
    qrels: Annotated[Path | None, typer.Option(help="Judgments (BEIR TSV or TREC qrels).")] = None,
    split: Annotated[str, typer.Option(help="qrels split of a BEIR folder.")] = "test",
    id_field: Annotated[str, typer.Option("--id-field", help="Record field holding the document id.")] = "id",
    text_field: Annotated[list[str], typer.Option("--text-field", help="Record text field; repeat for one document per field.")] = ["text"],  # noqa: B006 - typer passes a new list
    title_field: Annotated[str | None, typer.Option("--title-field", help="Record field holding the title.")] = "title",
    arm: Annotated[list[str], typer.Option("--arm", help="[NAME=]TYPE[:key=value,...]; repeatable.")] = [],  # noqa: B006 - typer passes a new list
    k: Annotated[int | None, typer.Option(min=1, help="Cutoff for the reported metrics.")] = None,
    depth: Annotated[int | None, typer.Option(min=1, help="Documents retrieved per query and written to runs/ (>= k; default 1000).")] = None,
    measure: Annotated[list[str], typer.Option("--measure", callback=measure_names,
                                               help="Measure to compute (repeatable), e.g. ndcg@10.")] = [],  # noqa: B006 - typer passes a new list
    out: Annotated[Path | None, typer.Option(callback=folder_path,
                                                help="Output folder for results.json and runs/.")] = None,
    cache: Annotated[str | None, typer.Option(help="Cache policy: use, refresh or off.")] = None,
    cache_dir: Annotated[Path | None, typer.Option(callback=folder_path, help="Cache folder (default "
                                                      "$BAKEOFF_CACHE_DIR or ~/.cache/bakeoff).")] = None,
    strip_html: Annotated[bool, typer.Option(help="Reduce HTML markup to text.")] = False,
    normalize_space: Annotated[bool, typer.Option(help="Normalise Unicode spaces and newlines.")] = False,
    dedupe: Annotated[bool, typer.Option(help="Keep the first of duplicate document ids (default: error).")] = False,
    min_chars: Annotated[int, typer.Option(min=0, help="Drop documents shorter than this many characters.")] = 0,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    hourly_rate: Annotated[float | None, typer.Option(
        "--hourly-rate", min=0, callback=finite, help="Machine price in USD/hour for $/1k queries (default 0.08925, a 2-vCPU cloud VM).")] = None,
    latency_sample: Annotated[int | None, typer.Option(
        "--latency-sample", min=0, help="Queries timed one by one per arm for p50/p95 latency (0: skip).")] = None,
    latency_seed: Annotated[int | None, typer.Option("--latency-seed", help="Seed of the latency sample.")] = None,
    as_of: Annotated[bool | None, typer.Option("--as-of/--latest", help="Versioned corpora: the versions in force on each "
                     "query's date (default) or the latest.")] = None,
    only_single: Annotated[bool, typer.Option("--only-single", help="Citation-mined folders: only queries "
                           "citing exactly one target.")] = False,
    unmasked: Annotated[bool, typer.Option("--unmasked", help="Citation-mined folders: the unmasked control "
                        "queries (measures how much masking matters).")] = False,
    engine: Annotated[str | None, typer.Option(help="Corpus-encoding engine: local (default) or ray.")] = None,
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster for --engine ray: auto, ADDRESS or local.")] = None,
    chunk: Annotated[str | None, typer.Option(help="Split documents into passages, e.g. "
                     "tokens=128,overlap=32.")] = None,
    aggregate: Annotated[str | None, typer.Option(help="With --chunk: document score, maxp (default) or "
                         "firstp.")] = None,
    fail_under: Annotated[list[str], typer.Option("--fail-under", help="CI gate: exit 1 below a floor "
                          "[ARM:]MEASURE=VALUE (repeatable).")] = [],  # noqa: B006 - typer passes a new list
    ignore_identical_ids: Annotated[bool | None, typer.Option(
        "--ignore-identical-ids/--keep-identical-ids", help="Remove each query's own id from its ranking (default: "
        "when the queries are documents of the corpus, as ArguAna's and Quora's are).")] = None,
    averaging: AveragingOpt = None,
    relevance_level: RelevanceLevelOpt = None,
    max_empty_share: Annotated[float | None, typer.Option(
        "--max-empty-share", help="An arm empty for more than this share of queries is broken (default 0.5).")] = None,
) -> None:
    """Run a bake-off and print one table; with --out, write results.json and TREC runs."""
    from ..runner.config import command_config
    from ..runner.run import run_config

    cfg = command_config(config, arm, _dataset(beir, irds, corpus, queries, qrels, split=split, id_field=id_field,
                                               text_field=text_field, title_field=title_field, strip_html=strip_html,
                                               normalize_space=normalize_space, dedupe=dedupe, min_chars=min_chars))
    floors, out_dir = _floors(fail_under, cfg), _out_folder(out, cfg, config)
    results = run_config(cfg, k=k, depth=depth, measures=measure, cache=make_cache(cache or cfg.cache, cache_dir),
                         progress=progress, as_of=as_of, only_single=only_single, unmasked=unmasked, engine=engine,
                         ray_address=ray_address, hourly_rate=hourly_rate, latency_sample=latency_sample,
                         latency_seed=latency_seed, chunk=chunk, aggregate=aggregate,
                         ignore_identical_ids=ignore_identical_ids, max_empty_share=max_empty_share,
                         averaging=averaging, relevance_level=relevance_level)
    _write_and_print(results, floors, out_dir)


def _dataset(beir: Path | None, irds: str | None, corpus: Path | None, queries: Path | None, qrels: Path | None, *,
             split: str, id_field: str, text_field: list[str], title_field: str | None, strip_html: bool,
             normalize_space: bool, dedupe: bool, min_chars: int) -> DatasetSpec:
    """The dataset named by the flags (used when no CONFIG.toml is given)."""
    from ..data.clean import CleanOptions
    from ..data.datasets import DatasetSpec
    from ..data.loaders import FieldMap

    clean = CleanOptions(strip_html=strip_html, normalize_space=normalize_space, dedupe=dedupe, min_chars=min_chars)
    return DatasetSpec(
        beir=str(beir) if beir else None,
        irds=irds,
        corpus=str(corpus) if corpus else None,
        queries=str(queries) if queries else None,
        qrels=str(qrels) if qrels else None,
        split=split,
        fields=FieldMap(id=id_field, text=tuple(text_field), title=title_field),
        clean=clean,
    )


def _floors(fail_under: list[str], cfg: BakeoffConfig) -> list[tuple[str | None, str, float]]:
    """The CI floors: each ``--fail-under``, then each of the file's ``[run] fail_under``, parsed."""
    from ..report.gate import parse_floor

    return [parse_floor(f) for f in [*fail_under, *(f"{m}={v}" for m, v in cfg.fail_under.items())]]


def _out_folder(out: Path | None, cfg: BakeoffConfig, config: Path | None) -> Path | None:
    """The output folder: ``--out``, else the file's ``[run] out`` (checked here, before any work), else none."""
    from ..errors import ConfigError

    out_dir = out or (Path(cfg.out) if cfg.out else None)
    if out_dir is not None and out is None:  # [run] out of a TOML file: checked before any work
        try:
            folder_path(out_dir)
        except typer.BadParameter as exc:
            raise ConfigError(f"{config}: [run] out: {exc.format_message()}") from None
    return out_dir


def _write_and_print(results: Results, floors: list[tuple[str | None, str, float]], out_dir: Path | None) -> None:
    """Check the floors, write the output folder, print the table, then the gate's lines (exit 1 below a floor)."""
    from ..report.gate import fail_under as check_floors
    from ..report.terminal import print_table

    table = results.stored()
    gate = check_floors(table, floors) if floors else None  # a bad floor exits 2 before anything is written
    written = write_staged(out_dir, results.write) if out_dir is not None else None  # before stdout: `| head` may end it
    print_table(table)
    if written is not None:
        typer.echo(f"wrote {written}")
    finish_gate(gate)


#: ``--help`` epilog (``\b``: click keeps its line breaks).
EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff run --beir data/scifact --arm bm25 --arm dense --out results/sf\n"
    "  bakeoff run bakeoff.toml --fail-under ndcg@10=0.60")


def register(app: typer.Typer) -> None:
    app.command("run", epilog=EXAMPLES)(run)
