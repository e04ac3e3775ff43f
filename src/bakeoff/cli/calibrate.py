"""``bakeoff calibrate``: does a generator's synthetic verdict match the human one on a judged corpus?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import AlphaOpt, ProgressOpt, SeedOpt, folder_path, make_cache, measure_names
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


def calibrate(
    dataset: Annotated[str, typer.Option(help="Judged corpus: BEIR folder, ir_datasets name or bake-off TOML file.")],
    out: Annotated[Path, typer.Option(callback=folder_path, help="Output folder (calibration.json, truth/, human/, synthetic/).")],
    llm: LlmOpt = "local",
    n: Annotated[int, typer.Option("-n", help="Synthetic queries wanted (documents sampled).")] = 150,
    arm: Annotated[list[str] | None, typer.Option("--arm", help="An arm [NAME=]TYPE[:k=v,...] (repeatable; default: nine arms; ft-dense, and with --ft-rerank ft-rerank, are added).")] = None,
    train_fraction: Annotated[float, typer.Option(help="Share of synthetic source documents whose queries fine-tune ft-dense and ft-rerank, in [0, 1) (0: no fine-tuned arms).")] = 0.5,
    ft_rerank: Annotated[bool, typer.Option("--ft-rerank", help="Also train ft-rerank, a cross-encoder on the train split (opt-in).")] = False,
    rerank_base: Annotated[str, typer.Option(help="Arm whose results give the hard negatives (and whose top 20 ft-rerank reranks).")] = "bm25-stem",
    measure: Annotated[list[str] | None, typer.Option("--measure", callback=measure_names, help="Measure compared (repeatable; the first decides the verdict).")] = None,
    gen_seed: Annotated[int, typer.Option("--gen-seed", help="Seed of the document sample and of generation.")] = 0,
    leak_mode: LeakModeOpt = "record",
    leak_target: LeakTargetOpt = "default",
    queries_like: QueriesLikeOpt = None,
    leak_threshold: LeakThresholdOpt = LEAK_THRESHOLD,
    regenerations: RegenerationsOpt = 3,
    candidates: CandidatesOpt = 1,
    mask_share: MaskShareOpt = 0.0,
    max_doc_chars: MaxDocCharsOpt = None,
    min_doc_chars: MinDocCharsOpt = 60,
    answerability: AnswerabilityOpt = "use",
    answerability_alpha: AnswerabilityAlphaOpt = ANSWERABILITY_ALPHA,
    answerability_references: AnswerabilityReferencesOpt = ANSWERABILITY_REFERENCES,
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
    concurrency: ConcurrencyOpt = None,
    price: PriceOpt = None,
    reasoning_effort: ReasoningEffortOpt = None,
    pool_depth: Annotated[int, typer.Option(min=0, help="Also judge every arm's top DEPTH for each synthetic query and calibrate on that widened truth (0: off).")] = 0,
    pool_method: Annotated[str, typer.Option(help="How the pool is judged: likelihood, yesno, expected or umbrela (as bakeoff assess --method).")] = "likelihood",
    pool_llm: Annotated[str | None, typer.Option(help="The pool's judge (default: --llm); never the model of an arm you compare.")] = None,
    pool_threshold: Annotated[float, typer.Option(help="likelihood: a pooled document is relevant at this PMI (nats/token) or more.")] = 1.0,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples and permutations (smallest p-value 1/(N+1)).")] = 10000,
    seed: SeedOpt = 0,
    alpha: AlphaOpt = 0.05,
    cache: Annotated[str, typer.Option(help="Cache policy: use, refresh or off.")] = "use",
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder.")] = None,
    progress: ProgressOpt = True,
) -> None:
    """Generate synthetic queries over a judged corpus, split them by source document, fine-tune an
    embedder (and with --ft-rerank a reranker) on the train split, run one arm set against the human queries and the
    synthetic test split, and measure how far the synthetic ordering and verdict match the human ones; writes OUT/calibration.json, which
    `bakeoff report` shows beside the verdict of any run by the same generator."""
    from ..calibration_pipeline import DEFAULT_ARMS, DEFAULT_MEASURES, run_calibration
    from ..report.calibration import calibration_text
    from ..truth.generation.describe import DescribeOptions
    from ..truth.generation.leak_target import leak_target_shares
    from ..truth.generation.options import answerability_options, copy_penalty_option, prompt_control
    from ..truth.generation.queries_like import read_queries_like
    from ..truth.judging.assess import AssessOptions
    from ..truth.llm.spec import LLMSpec

    llm_spec = LLMSpec.parse(llm)
    judge_spec = None if pool_llm is None else LLMSpec.parse(pool_llm, option="--pool-llm")

    prompt = prompt_control(style=style, lang=prompt_lang, persona=persona, instruction=instruction, preset=preset,
                            examples=examples)
    extra: dict = {"max_doc_chars": max_doc_chars} if max_doc_chars else {}
    opts = DescribeOptions(
        n=n, seed=gen_seed, leak_threshold=leak_threshold, max_regenerations=regenerations, lang=prompt_lang,
        min_doc_chars=min_doc_chars, candidates=candidates, leak_mode=leak_mode,
        leak_target=leak_target_shares(leak_target, lang=prompt_lang), leak_target_source=leak_target,
        queries_like=read_queries_like(queries_like) if queries_like else None, mask_share=mask_share,
        bootstrap=bootstrap, retry_fix=retry_fix, show_title=show_title, copy_penalty=copy_penalty_option(copy_penalty),
        prompt=prompt, answerability=answerability_options(
            answerability, alpha=answerability_alpha, references=answerability_references, seed=gen_seed), **extra)
    record = run_calibration(
        dataset=dataset, out=out, options=opts, llm=llm_spec, arms=arm or DEFAULT_ARMS,
        measures=measure or DEFAULT_MEASURES, cache=make_cache(cache, cache_dir), progress=progress,
        n_resamples=resamples, seed=seed, alpha=alpha, echo=typer.echo, train_fraction=train_fraction,
        rerank_base=rerank_base, rerank=ft_rerank, pool_llm=judge_spec,
        pool=AssessOptions(depth=pool_depth, method=pool_method, threshold=pool_threshold) if pool_depth else None,
        generate={"answerability": answerability, "concurrency": concurrency, "price": price,
                  "reasoning_effort": reasoning_effort})
    typer.echo(calibration_text(record))


#: ``--help`` epilog (``\b``: click keeps its line breaks).
EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff calibrate --dataset ../shared/data/scifact --llm local -n 100 \\\n"
    "      --out cal/scifact-local\n"
    "  bakeoff calibrate --dataset ../shared/data/cisi -n 100 --pool-depth 5 --out cal/cisi-pooled\n"
    "  bakeoff report myrun --calibration cal/scifact-local/calibration.json")


def register(app: typer.Typer) -> None:
    app.command("calibrate", epilog=EXAMPLES)(calibrate)
