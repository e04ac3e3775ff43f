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
    answerability_options,
    copy_penalty_option,
    prompt_control,
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
    from ..errors import ConfigError
    from ..truth.filters.specificity import SpecificityOptions
    from ..truth.filters.thresholds import SPECIFICITY_THRESHOLD
    from ..truth.generation.clusters import ClusterOptions
    from ..truth.generation.describe import DescribeOptions
    from ..truth.generation.generate import generate_truth
    from ..truth.generation.leak_target import leak_target_shares
    from ..truth.generation.queries_like import read_queries_like
    from ..truth.generation.repair import GradeMap
    from ..truth.llm.spec import LLMSpec

    llm_spec = LLMSpec.parse(llm)
    scorer_spec = None if specificity == "off" else LLMSpec.parse(specificity, option="--specificity")
    if mode not in ("describe", "clusters"):
        raise ConfigError(f"mode must be describe or clusters, got {mode!r}")
    doc_chars: dict = {"max_doc_chars": max_doc_chars} if max_doc_chars else {}
    doc_chars["prompt"] = prompt_control(style=style, lang=prompt_lang, persona=persona, instruction=instruction,
                                         preset=preset, examples=examples)
    doc_chars["specificity"] = None if specificity == "off" else SpecificityOptions(
        threshold=SPECIFICITY_THRESHOLD if specificity_threshold is None else specificity_threshold,
        keep_fraction=specificity_top)
    doc_chars["answerability"] = answerability_options(
        answerability, alpha=answerability_alpha, references=answerability_references, seed=seed,
        threshold=answerability_threshold, top=answerability_top)
    if mode == "describe":
        opts: DescribeOptions | ClusterOptions = DescribeOptions(
            n=n, seed=seed, leak_threshold=leak_threshold, max_regenerations=regenerations, stratify_by=stratify_by,
            lang=lang, test_fraction=test_fraction, min_doc_chars=min_doc_chars, candidates=candidates,
            leak_mode=leak_mode, leak_target=leak_target_shares(leak_target, lang=lang), leak_target_source=leak_target,
            queries_like=read_queries_like(queries_like) if queries_like else None, mask_share=mask_share, bootstrap=bootstrap, retry_fix=retry_fix, show_title=show_title,
            copy_penalty=copy_penalty_option(copy_penalty), **doc_chars)
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

        embed = partial(embed_corpus, model=encoder, cache=cache_obj, progress=progress, api_key_env=encoder_key_env)
    fields = FieldMap(id=id_field, text=(text_field,), title=title_field)
    done = generate_truth(corpus, options=opts, out=out, fields=fields, llm=llm_spec, cache=cache_obj,
                          concurrency=concurrency, price=price, embed=embed, batch_in=batch_in, batch_out=batch_out,
                          progress=progress, specificity=scorer_spec, reasoning_effort=reasoning_effort,
                          cluster_leak_threshold=leak_threshold, answerability=answerability, announce=typer.echo)
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
                   f"mean leak {lk['kept']['mean']:.3f} (leak mode {lk['mode']}; kept per leak bin {lk['kept_by_bin']}"
                   + (f", quota {lk['quota']}" if lk.get("quota") else "") + f"); examples: {prov['prompts']['examples']}")
        if lk.get("quota_waived_after_round") is not None:
            st = lk["steered"]
            typer.echo(f"leak quota waived after round {lk['quota_waived_after_round']}: {st['reached_room']} of "
                       f"{st['judged']} steered regenerations reached a bin with room (the model does not follow the "
                       "steer; --leak-mode record skips the quota)")
        typer.echo("rejected generations: " + ", ".join(f"{k} {v}" for k, v in prov["rejections"].items())
                   + f"; documents too short to sample: {prov['documents']['too_short']}")
        if (prov.get("health") or {}).get("line"):
            typer.echo(prov["health"]["line"])
        est = prov.get("estimate") or {}
        if est.get("llm_seconds") is not None:
            typer.echo(f"generation: {est['measured']['generations']} generations in {est['measured']['seconds']:.0f} s "
                       f"(estimated {est['generations']} in {est['llm_seconds']:.0f} s of LLM time)")
    if mode != "describe":
        rep = ", ".join(f"{k} {v}" for k, v in prov["repairs"].items() if v)
        typer.echo(f"kept {prov['counts']['kept']} questions from {prov['counts'].get('clusters', 0)} clusters; "
                   f"repairs: {rep or 'none'}; hard negatives {prov['n_hard_negatives']}; dropped: low specificity "
                   f"{prov['counts'].get('low_specificity', 0)}, not answerable {prov['counts'].get('not_answerable', 0)}, "
                   f"leak {prov['counts'].get('rejected_leak', 0)}")
    if "specificity" in prov:
        sp = prov["specificity"]["all_candidates"]
        if sp["n"]:
            typer.echo(f"specificity of {sp['n']} candidates (nats/token): p10 {sp['p10']:+.2f}, median {sp['p50']:+.2f}, "
                       f"p90 {sp['p90']:+.2f}; below threshold {sp.get('share_below', 0.0):.0%}")
    if "answerability" in prov:
        an = prov["answerability"]
        st = an["all_candidates"]
        if st["n"]:
            rule = (f"rank of the source among {an['reference']['references']} random documents <= "
                    f"{an['reference']['max_rank']}: {an['reference']['share_kept']:.0%} pass" if "reference" in an
                    else f"below {an['threshold']} {st.get('share_below', 0.0):.0%}")
            typer.echo(f"answerability ({an['score']}, {an['scorer'].get('model')}) of {st['n']} candidates: "
                       f"p10 {st['p10']:+.2f}, median {st['p50']:+.2f}, p90 {st['p90']:+.2f}; {rule}")
    if prov["counts"]["kept"]:
        typer.echo(f"wrote {out} (run it: bakeoff run --beir {out} --arm bm25 ...)")
    else:
        typer.echo(f"wrote {out}, but with no query kept there is nothing to evaluate; see the rejections above "
                   "(more documents with -n, a bigger model with --llm, or a looser --answerability-alpha)")


#: ``--help`` epilog (``\b``: click keeps its line breaks).
EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff generate describe --corpus docs.jsonl -n 200 --out truth\n"
    "  bakeoff generate clusters --corpus docs.jsonl --llm openai:gpt-4o-mini \\\n"
    "      --out truth")


def register(app: typer.Typer) -> None:
    app.command("generate", epilog=EXAMPLES)(generate)
