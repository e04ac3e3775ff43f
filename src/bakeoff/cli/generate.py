"""``bakeoff generate describe|clusters``: LLM-written ground truth as a BEIR folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import make_cache
from ._generator import (
    ANSWERABILITY_ALPHA,
    ANSWERABILITY_REFERENCES,
    LEAK_THRESHOLD,
    AnswerabilityAlphaOpt,
    AnswerabilityOpt,
    AnswerabilityReferencesOpt,
    BootstrapOpt,
    CandidatesOpt,
    ConcurrencyOpt,
    CopyPenaltyOpt,
    ExamplesOpt,
    InstructionOpt,
    LeakModeOpt,
    LeakTargetOpt,
    LeakThresholdOpt,
    LlmOpt,
    MaskShareOpt,
    MaxDocCharsOpt,
    MinDocCharsOpt,
    PersonaOpt,
    PresetOpt,
    PriceOpt,
    PromptLangOpt,
    QueriesLikeOpt,
    ReasoningEffortOpt,
    RegenerationsOpt,
    RetryFixOpt,
    ShowTitleOpt,
    StyleOpt,
)


def generate(
    mode: Annotated[str, typer.Argument(help="describe (one answer per query) or clusters (graded answers).")],
    corpus: Annotated[Path, typer.Option(help="BEIR folder, corpus.jsonl, records file or text folder.")],
    out: Annotated[Path, typer.Option(help="Output BEIR folder (queries.jsonl, qrels/, provenance.json).")],
    llm: LlmOpt = "local",
    n: Annotated[int, typer.Option("-n", help="Number of queries wanted.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of sampling, clustering and generation.")] = 0,
    leak_mode: LeakModeOpt = "record",
    leak_target: LeakTargetOpt = "default",
    queries_like: QueriesLikeOpt = None,
    leak_threshold: LeakThresholdOpt = LEAK_THRESHOLD,
    regenerations: RegenerationsOpt = 3,
    candidates: CandidatesOpt = 1,
    mask_share: MaskShareOpt = 0.0,
    stratify_by: Annotated[str | None, typer.Option(help="describe: metadata field to stratify sampling by.")] = None,
    lang: Annotated[str, typer.Option(help="Common-word list of the leak metric: en or es.")] = "en",
    max_doc_chars: MaxDocCharsOpt = None,
    cluster_size: Annotated[int, typer.Option(help="clusters: documents per KMeans cluster (about).")] = 10,
    questions_per_cluster: Annotated[int, typer.Option(help="clusters: questions asked per cluster.")] = 2,
    grades: Annotated[str, typer.Option(help="clusters: grade by relevant rank, 'g1,g2,...;default'.")] = "3,2,2;1",
    encoder: Annotated[str | None, typer.Option(help="clusters: dense model for the embeddings (default MiniLM).")] = None,
    encoder_key_env: Annotated[str, typer.Option(help="clusters: variable holding an openai: encoder's key.")] = "OPENAI_API_KEY",
    specificity: Annotated[str, typer.Option(help="Specificity scorer: off, local[:NAME|PATH] or a server.")] = "off",
    specificity_threshold: Annotated[float | None, typer.Option(help="Keep queries whose specificity (nats/token) is at least this (default 1.0).")] = None,
    specificity_top: Annotated[float | None, typer.Option(help="Keep only this top fraction of queries by specificity.")] = None,
    answerability: AnswerabilityOpt = "use",
    answerability_threshold: Annotated[float | None, typer.Option(help="An absolute rule instead of the rank rule: keep queries whose answerability score is at least this.")] = None,
    answerability_alpha: AnswerabilityAlphaOpt = ANSWERABILITY_ALPHA,
    answerability_references: AnswerabilityReferencesOpt = ANSWERABILITY_REFERENCES,
    answerability_top: Annotated[float | None, typer.Option(help="Keep only this top fraction of queries by answerability.")] = None,
    min_doc_chars: MinDocCharsOpt = 60,
    style: StyleOpt = "question",
    prompt_lang: PromptLangOpt = "en",
    persona: PersonaOpt = None,
    instruction: InstructionOpt = None,
    preset: PresetOpt = None,
    examples: ExamplesOpt = None,
    bootstrap: BootstrapOpt = 0,
    retry_fix: RetryFixOpt = True,
    show_title: ShowTitleOpt = True,
    copy_penalty: CopyPenaltyOpt = True,
    reasoning_effort: ReasoningEffortOpt = None,
    test_fraction: Annotated[float, typer.Option(help="Share of queries in qrels/test.tsv (rest: train).")] = 0.5,
    concurrency: ConcurrencyOpt = None,
    price: PriceOpt = None,
    id_field: Annotated[str, typer.Option("--id-field")] = "id",
    text_field: Annotated[str, typer.Option("--text-field")] = "text",
    title_field: Annotated[str | None, typer.Option("--title-field")] = "title",
    batch_out: Annotated[Path | None, typer.Option(help="Write uncached requests as an OpenAI batch JSONL file instead of asking.")] = None,
    batch_in: Annotated[Path | None, typer.Option(help="Ingest an OpenAI batch results JSONL into the cache first.")] = None,
    cache: Annotated[str, typer.Option(help="Cache policy: use, refresh or off.")] = "use",
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder.")] = None,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Write LLM-generated queries and judgments for CORPUS as a BEIR folder; then `bakeoff run --beir OUT`.

    Batch path (cheap, slow): `--batch-out req.jsonl` writes the requests of the next round and stops;
    submit it to the OpenAI Batch API; re-run with `--batch-in results.jsonl` (and `--batch-out` again while
    describe mode still has documents to regenerate)."""
    from functools import partial

    from ..data.loaders import FieldMap
    from ..truth.generation.generate import generate_truth, outcome_lines
    from ..truth.generation.options import generation_options
    from ..truth.llm.spec import LLMSpec

    llm_spec = LLMSpec.parse(llm)
    scorer_spec = None if specificity == "off" else LLMSpec.parse(specificity, option="--specificity")
    opts = generation_options(
        mode, n=n, seed=seed, test_fraction=test_fraction, max_doc_chars=max_doc_chars, style=style,
        prompt_lang=prompt_lang, persona=persona, instruction=instruction, preset=preset, examples=examples,
        specificity=specificity, specificity_threshold=specificity_threshold, specificity_top=specificity_top,
        answerability=answerability, answerability_alpha=answerability_alpha,
        answerability_references=answerability_references, answerability_threshold=answerability_threshold,
        answerability_top=answerability_top, leak_threshold=leak_threshold, leak_mode=leak_mode,
        leak_target=leak_target, queries_like=queries_like, lang=lang, regenerations=regenerations,
        candidates=candidates, mask_share=mask_share, stratify_by=stratify_by, min_doc_chars=min_doc_chars,
        bootstrap=bootstrap, retry_fix=retry_fix, show_title=show_title, copy_penalty=copy_penalty,
        cluster_size=cluster_size, questions_per_cluster=questions_per_cluster, grades=grades)
    cache_obj = make_cache(cache, cache_dir)
    embed = None
    if mode == "clusters":
        from ..runner.embed import embed_corpus

        embed = partial(embed_corpus, model=encoder, cache=cache_obj, progress=progress, api_key_env=encoder_key_env)
    fields = FieldMap(id=id_field, text=(text_field,), title=title_field)
    done = generate_truth(corpus, options=opts, out=out, fields=fields, llm=llm_spec, cache=cache_obj,
                          concurrency=concurrency, price=price, embed=embed, batch_in=batch_in, batch_out=batch_out,
                          progress=progress, specificity=scorer_spec, reasoning_effort=reasoning_effort,
                          cluster_leak_threshold=leak_threshold, answerability=answerability, announce=typer.echo)
    for line in outcome_lines(done, out=out, batch_out=batch_out):
        typer.echo(line)


#: ``--help`` epilog (``\b``: click keeps its line breaks).
EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff generate describe --corpus docs.jsonl -n 200 --out truth\n"
    "  bakeoff generate clusters --corpus docs.jsonl --llm openai:gpt-4o-mini \\\n"
    "      --out truth")


def register(app: typer.Typer) -> None:
    app.command("generate", epilog=EXAMPLES)(generate)
