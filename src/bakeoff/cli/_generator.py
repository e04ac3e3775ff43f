"""The options of a query generator, declared once for ``generate``, ``calibrate`` and ``demo`` (one help text
each, one default each). The option objects they build are the library's
(:mod:`bakeoff.truth.generation.options`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

#: The defaults of the generator's filter options: :data:`bakeoff.truth.filters.thresholds.LEAK_THRESHOLD`,
#: ``REFERENCE_ALPHA`` and ``REFERENCE_DOCUMENTS`` (a test checks), written out so that building the CLI does not
#: import :mod:`bakeoff.truth`.
LEAK_THRESHOLD = 0.35
ANSWERABILITY_ALPHA = 0.05
ANSWERABILITY_REFERENCES = 99

LlmOpt = Annotated[str, typer.Option(help="local[:NAME|PATH.gguf], openai:<model>, ollama:<model> or URL|<model>.")]
LeakModeOpt = Annotated[str, typer.Option(
    help="describe: record (the verdict weights queries by leak), target (a quota per leak bin) or cut.")]
LeakTargetOpt = Annotated[str, typer.Option(
    help="Leak the verdict weights queries to: default, uniform, 'a,b,c,d,e' or a judged folder.")]
QueriesLikeOpt = Annotated[Path | None, typer.Option(
    help="describe: real queries of this collection (text or JSONL, no judgments): style examples and the leak target.")]
LeakThresholdOpt = Annotated[float, typer.Option(
    help="Reject queries whose leak is above this (--leak-mode cut, clusters).")]
RegenerationsOpt = Annotated[int, typer.Option(help="describe: regenerations of a rejected query.")]
CandidatesOpt = Annotated[int, typer.Option(min=1, help="describe: queries per document and round (best of n).")]
MaskShareOpt = Annotated[float, typer.Option(
    min=0.0, max=1.0, help="describe: share of documents shown with half their rare words masked (opt-in; see the docs).")]
MaxDocCharsOpt = Annotated[int | None, typer.Option(help="Characters of each document shown to the model.")]
MinDocCharsOpt = Annotated[int, typer.Option(help="describe: never sample documents shorter than this (characters).")]
AnswerabilityOpt = Annotated[str, typer.Option(
    help="Scorer: use, minilm, cross-encoder:<model>, bi-encoder:<model> or off.")]
AnswerabilityAlphaOpt = Annotated[float, typer.Option(
    help="Rank rule: keep a query when its document beats all but this share of the reference documents.")]
AnswerabilityReferencesOpt = Annotated[int, typer.Option(
    help="Rank rule: random documents of the corpus each query's document is ranked against.")]
StyleOpt = Annotated[str, typer.Option(help="Query style: question, keywords or typos.")]
PromptLangOpt = Annotated[str, typer.Option(help="Language of the prompt and its examples: en or es.")]
PersonaOpt = Annotated[str | None, typer.Option(help="Who searches, e.g. 'a tenant in a deposit dispute'.")]
InstructionOpt = Annotated[str | None, typer.Option(help="Extra instruction added to the prompt.")]
PresetOpt = Annotated[str | None, typer.Option(help="Named constraint set: need-not-document (alias seed000).")]
ExamplesOpt = Annotated[Path | None, typer.Option(
    help="describe: JSONL of {\"document\", \"query\"} examples shown to the model (default: none).")]
BootstrapOpt = Annotated[int, typer.Option(min=0, help="describe: examples bootstrapped from a pilot round (0: none).")]
ShowTitleOpt = Annotated[bool, typer.Option(
    "--show-title/--hide-title", help="describe: show the model each document's title (--hide-title: the text only; filters still read both).")]
RetryFixOpt = Annotated[bool, typer.Option(
    help="describe: a document whose query copied a sentence or its title is asked again with that reason said.")]
CopyPenaltyOpt = Annotated[bool, typer.Option(
    "--copy-penalty/--no-copy-penalty",
    help="describe, --llm local: penalise at decoding a query that repeats a run of the prompt's words (a pasted sentence).")]
ConcurrencyOpt = Annotated[int | None, typer.Option(
    min=1, help="Requests in flight (default 4; with --llm local, the parallel slots of llama-server).")]
PriceOpt = Annotated[str | None, typer.Option(help="USD per 1M tokens 'prompt,completion' (overrides the table).")]
ReasoningEffortOpt = Annotated[str | None, typer.Option(help="Reasoning models: minimal, low, medium or high.")]
