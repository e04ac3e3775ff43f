"""``bakeoff generate describe|clusters``: LLM-written ground truth as a BEIR folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import make_cache


def generate(
    mode: Annotated[str, typer.Argument(help="describe (one answer per query) or clusters (graded answers).")],
    corpus: Annotated[Path, typer.Option(help="BEIR folder, corpus.jsonl, records file or text folder.")],
    out: Annotated[Path, typer.Option(help="Output BEIR folder (queries.jsonl, qrels/, provenance.json).")],
    llm: Annotated[str, typer.Option(help="local | openai:<model> | ollama:<model> | <base_url>|<model>.")] = "local",
    n: Annotated[int, typer.Option("-n", help="Number of queries wanted.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of sampling, clustering and generation.")] = 0,
    leak_threshold: Annotated[float, typer.Option(help="describe: reject queries with leak above this.")] = 0.35,
    regenerations: Annotated[int, typer.Option(help="describe: regenerations of a rejected query.")] = 3,
    stratify_by: Annotated[Optional[str], typer.Option(help="describe: metadata field to stratify sampling by.")] = None,
    lang: Annotated[str, typer.Option(help="Common-word list of the leak metric: en or es.")] = "en",
    max_doc_chars: Annotated[Optional[int], typer.Option(help="Characters of each document shown to the model.")] = None,
    cluster_size: Annotated[int, typer.Option(help="clusters: documents per KMeans cluster (about).")] = 10,
    questions_per_cluster: Annotated[int, typer.Option(help="clusters: questions asked per cluster.")] = 2,
    grades: Annotated[str, typer.Option(help="clusters: grade by relevant rank, 'g1,g2,...;default'.")] = "3,2,2;1",
    encoder: Annotated[Optional[str], typer.Option(help="clusters: dense model for the embeddings (default MiniLM).")] = None,
    test_fraction: Annotated[float, typer.Option(help="Share of queries in qrels/test.tsv (rest: train).")] = 0.5,
    concurrency: Annotated[Optional[int], typer.Option(help="Requests in flight (default 4; local 1).")] = None,
    price: Annotated[Optional[str], typer.Option(help="USD per 1M tokens 'prompt,completion' (overrides the table).")] = None,
    id_field: Annotated[str, typer.Option("--id-field")] = "id",
    text_field: Annotated[str, typer.Option("--text-field")] = "text",
    title_field: Annotated[Optional[str], typer.Option("--title-field")] = "title",
    batch_out: Annotated[Optional[Path], typer.Option(help="Write uncached requests as an OpenAI batch JSONL file instead of asking.")] = None,
    batch_in: Annotated[Optional[Path], typer.Option(help="Ingest an OpenAI batch results JSONL into the cache first.")] = None,
    cache: Annotated[str, typer.Option(help="Cache policy: use, refresh or off.")] = "use",
    cache_dir: Annotated[Optional[Path], typer.Option(help="Cache folder.")] = None,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Write LLM-generated queries and judgments for CORPUS as a BEIR folder; then `bakeoff run --beir OUT`.

    Batch path (cheap, slow): `--batch-out req.jsonl` writes the requests of the next round and stops;
    submit it to the OpenAI Batch API; re-run with `--batch-in results.jsonl` (and `--batch-out` again while
    describe mode still has documents to regenerate)."""
    from functools import partial

    from ..data.loaders import FieldMap
    from ..errors import ConfigError
    from ..truth.generate import generate_truth
    from ..truth.repair import GradeMap
    from ..truth.synthetic import ClusterOptions, DescribeOptions

    if mode not in ("describe", "clusters"):
        raise ConfigError(f"mode must be describe or clusters, got {mode!r}")
    doc_chars = {"max_doc_chars": max_doc_chars} if max_doc_chars else {}
    if mode == "describe":
        opts: DescribeOptions | ClusterOptions = DescribeOptions(
            n=n, seed=seed, leak_threshold=leak_threshold, max_regenerations=regenerations, stratify_by=stratify_by,
            lang=lang, test_fraction=test_fraction, **doc_chars)
    else:
        try:
            gm = GradeMap.parse(grades)
        except ValueError:
            raise ConfigError(f"--grades must look like '3,2,2;1', got {grades!r}") from None
        opts = ClusterOptions(n=n, seed=seed, cluster_size=cluster_size, questions_per_cluster=questions_per_cluster,
                              grade_map=gm, test_fraction=test_fraction, **doc_chars)
    cache_obj = make_cache(cache, cache_dir)
    embed = None
    if mode == "clusters":
        from ..runner.embed import embed_corpus

        embed = partial(embed_corpus, model=encoder, cache=cache_obj, progress=progress)
    fields = FieldMap(id=id_field, text=(text_field,), title=title_field)
    done = generate_truth(corpus, options=opts, out=out, fields=fields, llm=llm, cache=cache_obj,
                          concurrency=concurrency, price=price, embed=embed, batch_in=batch_in, batch_out=batch_out,
                          progress=progress)
    if done.ingested is not None:
        c = done.ingested
        typer.echo(f"batch results: {c['ingested']} ingested, {c['invalid']} invalid, {c['unknown']} unknown")
    if done.truth is None:
        typer.echo(f"wrote {done.batch_requests} requests to {batch_out}; submit it to the Batch API, then re-run "
                   f"with --batch-in RESULTS.jsonl")
        return
    prov = done.truth.provenance
    typer.echo(f"llm: {done.usage.summary()}")
    if mode == "describe":
        lk = prov["leak"]
        typer.echo(f"kept {prov['counts']['kept']} of {prov['counts']['sampled']} sampled documents; "
                   f"mean leak {lk['kept']['mean']:.3f}; rejection rate {lk['rejection_rate']:.1%}")
    else:
        rep = ", ".join(f"{k} {v}" for k, v in prov["repairs"].items() if v)
        typer.echo(f"kept {prov['counts']['kept']} questions from {prov['counts'].get('clusters', 0)} clusters; "
                   f"repairs: {rep or 'none'}; hard negatives {prov['n_hard_negatives']}")
    typer.echo(f"wrote {out} (run it: bakeoff run --beir {out} --arm bm25 ...)")


def register(app: typer.Typer) -> None:
    app.command("generate")(generate)
