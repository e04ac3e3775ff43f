"""``bakeoff generate describe|clusters``: LLM-written ground truth as a BEIR folder."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..data.loaders import FieldMap, read_beir_corpus, read_folder, read_records
from ..data.model import Corpus
from ..errors import ConfigError, InputError
from ._common import make_cache

log = logging.getLogger("bakeoff")


def load_corpus(path: Path, *, id_field: str = "id", text_field: str = "text", title_field: str | None = "title") -> Corpus:
    """A BEIR folder (its ``corpus.jsonl``), a BEIR ``corpus.jsonl``, records (JSONL/CSV/Parquet) or a
    folder of text files."""
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    if path.is_dir():
        return read_beir_corpus(path / "corpus.jsonl") if (path / "corpus.jsonl").exists() else read_folder(path)
    if path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as fh:
            first = fh.readline()
        if '"_id"' in first:
            return read_beir_corpus(path)
    return read_records(path, fields=FieldMap(id=id_field, text=(text_field,), title=title_field))


@contextlib.contextmanager
def open_llm(spec: str, *, cache, concurrency: int | None = None, price: str | None = None) -> Iterator:  # type: ignore[no-untyped-def]
    """An :class:`~bakeoff.truth.llm.LLMClient` for ``--llm`` (``local`` starts and stops the server)."""
    from ..truth.llm import LLMClient, Price, parse_llm_spec

    overrides = {}
    if price:
        try:
            p, c = (float(x) for x in price.split(","))
        except ValueError:
            raise ConfigError(f"--price must be PROMPT_USD_PER_1M,COMPLETION_USD_PER_1M, got {price!r}") from None
        overrides["price"] = Price(p, c)
    if concurrency:
        overrides["concurrency"] = concurrency
    if spec == "local":
        from ..truth.local_llm import LocalLLMServer

        with LocalLLMServer() as server, LLMClient(server.config(**overrides), cache=cache) as client:
            yield client
    else:
        with LLMClient(parse_llm_spec(spec, **overrides), cache=cache) as client:
            yield client


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
    from ..truth.repair import GradeMap
    from ..truth.synthetic import ClusterOptions, DescribeOptions, cluster_truth, describe_truth

    if mode not in ("describe", "clusters"):
        raise ConfigError(f"mode must be describe or clusters, got {mode!r}")
    if n < 1:
        raise ConfigError("-n must be >= 1")
    if not 0.0 <= test_fraction <= 1.0:
        raise ConfigError("--test-fraction must be in [0, 1]")
    docs = load_corpus(corpus, id_field=id_field, text_field=text_field, title_field=title_field)
    cache_obj = make_cache(cache, cache_dir)
    if (batch_in or batch_out) and cache_obj is None:
        raise ConfigError("--batch-in/--batch-out need the cache (--cache use)")
    if (batch_in or batch_out) and llm == "local":
        raise ConfigError("batch files are for remote APIs; use --llm openai:<model>")
    with open_llm(llm, cache=cache_obj, concurrency=concurrency, price=price) as client:
        if batch_out is not None:
            client.collect = []
        if mode == "describe":
            opts = DescribeOptions(n=n, seed=seed, leak_threshold=leak_threshold, max_regenerations=regenerations,
                                   stratify_by=stratify_by, lang=lang, test_fraction=test_fraction,
                                   **({"max_doc_chars": max_doc_chars} if max_doc_chars else {}))
            if batch_in is not None:
                _ingest(client, batch_in, docs, opts)
            truth = describe_truth(docs, client, options=opts, progress=progress)
        else:
            try:
                gm = GradeMap.parse(grades)
            except ValueError:
                raise ConfigError(f"--grades must look like '3,2,2;1', got {grades!r}") from None
            copts = ClusterOptions(n=n, seed=seed, cluster_size=cluster_size,
                                   questions_per_cluster=questions_per_cluster, grade_map=gm,
                                   test_fraction=test_fraction,
                                   **({"max_doc_chars": max_doc_chars} if max_doc_chars else {}))
            vectors, name = embed_corpus(docs, model=encoder, cache=cache_obj, progress=progress)
            truth = cluster_truth(docs, client, vectors=vectors, options=copts, progress=progress, encoder_name=name)
        usage = client.usage
        if client.collect:
            from ..truth.llm import write_batch

            n_req = write_batch(client, client.collect, batch_out)  # type: ignore[arg-type]
            typer.echo(f"wrote {n_req} requests to {batch_out}; submit it to the Batch API, then re-run with "
                       f"--batch-in RESULTS.jsonl")
            return
    truth.provenance["corpus"] = {"source": str(corpus)}
    truth.write(out, corpus=docs)
    prov = truth.provenance
    typer.echo(f"llm: {usage.summary()}")
    if mode == "describe":
        lk = prov["leak"]
        typer.echo(f"kept {prov['counts']['kept']} of {prov['counts']['sampled']} sampled documents; "
                   f"mean leak {lk['kept']['mean']:.3f}; rejection rate {lk['rejection_rate']:.1%}")
    else:
        rep = ", ".join(f"{k} {v}" for k, v in prov["repairs"].items() if v)
        typer.echo(f"kept {prov['counts']['kept']} questions from {prov['counts'].get('clusters', 0)} clusters; "
                   f"repairs: {rep or 'none'}; hard negatives {prov['n_hard_negatives']}")
    typer.echo(f"wrote {out} (run it: bakeoff run --beir {out} --arm bm25 ...)")


def _ingest(client, path: Path, docs: Corpus, opts) -> None:  # type: ignore[no-untyped-def]
    """Ingest batch results for every request describe mode could have made (all rounds)."""
    from dataclasses import replace

    from ..truth.llm import ingest_batch
    from ..truth.synthetic import describe_requests

    reqs = [r for attempt in range(opts.max_regenerations + 1)
            for r in describe_requests(docs, client, replace(opts), attempt=attempt)]
    counts = ingest_batch(client, reqs, path)
    typer.echo(f"batch results: {counts['ingested']} ingested, {counts['invalid']} invalid, "
               f"{counts['unknown']} unknown")


def embed_corpus(corpus: Corpus, *, model: str | None, cache, progress: bool):  # type: ignore[no-untyped-def]
    """Document vectors from the dense arm (``model`` None = offline MiniLM) and the encoder identity."""
    from ..runner.context import Context
    from ..arms.dense import DenseArm

    arm = DenseArm(model=model)
    ctx = Context(corpus=corpus, cache=cache, progress=progress)
    return arm.embed_corpus(corpus, ctx=ctx), str(arm.encoder.identity())


def register(app: typer.Typer) -> None:
    app.command("generate")(generate)
