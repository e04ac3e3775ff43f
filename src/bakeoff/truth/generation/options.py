"""A generation run's options from flat values, as the command line gives them (``bakeoff generate``,
``calibrate``; the options themselves are declared once in ``bakeoff.cli._generator``).

* :func:`prompt_control`: the prompt (style, language, persona, instruction, preset, examples file);
* :func:`answerability_options`: the answerability filter of ``--answerability`` (``None`` for ``off``);
* :func:`copy_penalty_option`: the default copy penalty, or none;
* :func:`generation_options`: :class:`~bakeoff.truth.generation.describe.DescribeOptions` or
  :class:`~bakeoff.truth.generation.clusters.ClusterOptions`, every value above included, the leak target
  read (:func:`~bakeoff.truth.generation.leak_target.leak_target_shares`), the ``--queries-like`` file read and
  the ``--grades`` map parsed.

Each is a :class:`~bakeoff.errors.ConfigError` (one line) on a bad value, checked in the order of the arguments.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import ConfigError
from ..filters.answerability import AnswerabilityOptions
from ..filters.reference_rank import ReferenceRankOptions
from ..filters.specificity import SpecificityOptions
from ..filters.thresholds import SPECIFICITY_THRESHOLD
from .clusters import ClusterOptions
from .copy_penalty import CopyPenalty
from .describe import DescribeOptions
from .leak_target import leak_target_shares
from .prompts import PromptControl, read_examples
from .queries_like import read_queries_like
from .repair import GradeMap

__all__ = ["MODES", "answerability_options", "copy_penalty_option", "generation_options", "prompt_control"]

#: The modes of ``bakeoff generate``: one answer per query, or graded answers per cluster of documents.
MODES: tuple[str, ...] = ("describe", "clusters")


def copy_penalty_option(on: bool) -> CopyPenalty | None:
    """``--copy-penalty``: the default :class:`~bakeoff.truth.generation.copy_penalty.CopyPenalty`, or none."""
    return CopyPenalty() if on else None


def prompt_control(*, style: str, lang: str, persona: str | None, instruction: str | None, preset: str | None,
                   examples: Path | None) -> PromptControl:
    """The prompt options (``--style``, ``--prompt-lang``, ``--persona``, ``--instruction``, ``--preset``,
    ``--examples``)."""
    return PromptControl(style=style, lang=lang, persona=persona, instruction=instruction,  # type: ignore[arg-type]
                         preset=preset, examples=read_examples(examples) if examples else None)


def answerability_options(scorer: str, *, alpha: float, references: int, seed: int, threshold: float | None = None,
                          top: float | None = None) -> AnswerabilityOptions | None:
    """The answerability filter of ``--answerability`` (``None`` for ``off``): the rank rule against
    ``references`` random documents at ``alpha``, or the absolute ``threshold``; ``top`` keeps a top fraction."""
    if scorer == "off":
        return None
    return AnswerabilityOptions(threshold=threshold, keep_fraction=top,
                                reference=ReferenceRankOptions(references=references, alpha=alpha, seed=seed))


def generation_options(
    mode: str, *, n: int, seed: int, test_fraction: float, max_doc_chars: int | None,
    style: str, prompt_lang: str, persona: str | None, instruction: str | None, preset: str | None,
    examples: Path | None,
    specificity: str, specificity_threshold: float | None, specificity_top: float | None,
    answerability: str, answerability_alpha: float, answerability_references: int,
    answerability_threshold: float | None, answerability_top: float | None,
    leak_threshold: float, leak_mode: str, leak_target: str, queries_like: str | os.PathLike[str] | None,
    lang: str, regenerations: int, candidates: int, mask_share: float, stratify_by: str | None,
    min_doc_chars: int, bootstrap: int, retry_fix: bool, show_title: bool, copy_penalty: bool,
    cluster_size: int, questions_per_cluster: int, grades: str,
) -> DescribeOptions | ClusterOptions:
    """The options of ``bakeoff generate MODE`` (``describe`` or ``clusters``) from its flags; the describe-only
    flags are ignored in cluster mode and the cluster-only ones in describe mode. ``specificity`` is the scorer
    spec (``off``: no specificity filter; the default threshold is ``SPECIFICITY_THRESHOLD``), ``answerability``
    the scorer name (``off``: no answerability filter), ``grades`` the grade map ``'g1,g2,...;default'``."""
    if mode not in MODES:
        raise ConfigError(f"mode must be describe or clusters, got {mode!r}")
    shared: dict = {"max_doc_chars": max_doc_chars} if max_doc_chars else {}
    shared["prompt"] = prompt_control(style=style, lang=prompt_lang, persona=persona, instruction=instruction,
                                      preset=preset, examples=examples)
    shared["specificity"] = None if specificity == "off" else SpecificityOptions(
        threshold=SPECIFICITY_THRESHOLD if specificity_threshold is None else specificity_threshold,
        keep_fraction=specificity_top)
    shared["answerability"] = answerability_options(
        answerability, alpha=answerability_alpha, references=answerability_references, seed=seed,
        threshold=answerability_threshold, top=answerability_top)
    if mode == "describe":
        return DescribeOptions(
            n=n, seed=seed, leak_threshold=leak_threshold, max_regenerations=regenerations, stratify_by=stratify_by,
            lang=lang, test_fraction=test_fraction, min_doc_chars=min_doc_chars, candidates=candidates,
            leak_mode=leak_mode, leak_target=leak_target_shares(leak_target, lang=lang), leak_target_source=leak_target,
            queries_like=read_queries_like(queries_like) if queries_like else None, mask_share=mask_share,
            bootstrap=bootstrap, retry_fix=retry_fix, show_title=show_title,
            copy_penalty=copy_penalty_option(copy_penalty), **shared)
    try:
        gm = GradeMap.parse(grades)
    except ValueError:
        raise ConfigError(f"--grades must look like '3,2,2;1', got {grades!r}") from None
    return ClusterOptions(n=n, seed=seed, cluster_size=cluster_size, questions_per_cluster=questions_per_cluster,
                          grade_map=gm, test_fraction=test_fraction, **shared)
