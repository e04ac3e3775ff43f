"""``bakeoff finetune embedder|reranker``: train on one split, refuse test-query leaks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from ._common import ProgressOpt

finetune_app = typer.Typer(help="Fine-tune an embedder or a reranker on a training split.", no_args_is_help=True)

TrainOpt = Annotated[str, typer.Option("--train", help="Training data: BEIR folder[:split] (default split: train).")]
OutOpt = Annotated[Path, typer.Option("--out", help="Output model folder (written atomically).")]
TestOpt = Annotated[list[str], typer.Option("--test", help="Held-out FOLDER[:split], never trained on "
                                            "(repeatable).")]
CorpusOpt = Annotated[Path | None, typer.Option(help="Corpus for a training folder without corpus.jsonl (e.g. a synthetic set).")]
EpochsOpt = Annotated[float, typer.Option()]
LrOpt = Annotated[float, typer.Option("--lr", help="Peak learning rate.")]
WarmupOpt = Annotated[float, typer.Option(help="Warm-up fraction of the steps.")]
SeedOpt = Annotated[int, typer.Option()]
ValFractionOpt = Annotated[float, typer.Option(help="Training queries held out for validation (0: none).")]
EvalsOpt = Annotated[int, typer.Option(help="Validations (and checkpoints) during training.")]
MaxStepsOpt = Annotated[int, typer.Option(help="Stop after this many steps (-1: epochs decide).")]
Bf16Opt = Annotated[bool, typer.Option(help="bfloat16 mixed precision (fast on CPUs with AMX; fp32 weights).")]
DropLeaksOpt = Annotated[bool, typer.Option(help="Drop training queries equal to held-out ones instead of refusing.")]
OverwriteOpt = Annotated[bool, typer.Option(help="Replace an existing --out folder.")]


def embedder(
    train: TrainOpt,
    out: OutOpt,
    base: Annotated[str, typer.Option(help="Base model: folder, hub name, or 'minilm' (bundled, offline).")] = "minilm",
    test: TestOpt = [],  # noqa: B006 - typer passes a new list
    corpus: CorpusOpt = None,
    hard_negatives: Annotated[str, typer.Option(help="none, qrels (grade 0), provenance (synthetic set) or bm25.")] = "none",
    n_negatives: Annotated[int, typer.Option(help="Hard negatives kept per query.")] = 1,
    batch_size: Annotated[int, typer.Option(help="Rows per batch (in-batch negatives).")] = 32,
    epochs: EpochsOpt = 1.0,
    lr: LrOpt = 2e-5,
    warmup: WarmupOpt = 0.1,
    seed: SeedOpt = 0,
    cached: Annotated[bool, typer.Option(help="CachedMultipleNegativesRankingLoss (big batches, small memory).")] = False,
    mini_batch_size: Annotated[int, typer.Option(help="Mini-batch of the cached loss.")] = 8,
    max_seq_length: Annotated[int | None, typer.Option(help="Truncate texts to this many tokens.")] = None,
    val_fraction: ValFractionOpt = 0.1,
    val_corpus_size: Annotated[int, typer.Option(help="Documents ranked during validation.")] = 500,
    evals: EvalsOpt = 3,
    max_steps: MaxStepsOpt = -1,
    bf16: Bf16Opt = False,
    drop_leaks: DropLeaksOpt = False,
    overwrite: OverwriteOpt = False,
    progress: ProgressOpt = True,
) -> None:
    """Fine-tune a sentence-transformers embedder (MNRL with in-batch negatives)."""
    from ..train.embedder import EmbedderParams
    from ..train.finetune import finetune

    params = EmbedderParams(batch_size=batch_size, epochs=epochs, learning_rate=lr, warmup_ratio=warmup, seed=seed,
                            cached=cached, mini_batch_size=mini_batch_size, max_seq_length=max_seq_length,
                            val_fraction=val_fraction, val_corpus_size=val_corpus_size, evals=evals, max_steps=max_steps,
                            bf16=bf16)
    rec = finetune("embedder", train, out=out, params=params, base=base, tests=test, corpus=corpus,
                   negatives=hard_negatives, n_negatives=n_negatives, drop_leaks=drop_leaks, overwrite=overwrite,
                   progress=progress)
    _summary(rec)
    typer.echo(f"wrote {out} (use it as --arm dense:model={out})")


def reranker(
    train: TrainOpt,
    out: OutOpt,
    base: Annotated[str, typer.Option(help="Initial model: folder, hub name, or 'minilm' (bundled, offline).")] = "minilm",
    test: TestOpt = [],  # noqa: B006 - typer passes a new list
    corpus: CorpusOpt = None,
    negatives: Annotated[str, typer.Option(help="bm25 (mined with --miner), qrels (grade 0) or provenance.")] = "bm25",
    miner: Annotated[str, typer.Option(help="Arm whose top-k is mined for negatives, e.g. bm25 or dense:model=minilm.")] = "bm25",
    mine_depth: Annotated[int, typer.Option(help="Mine negatives from this many top documents.")] = 30,
    n_negatives: Annotated[int, typer.Option(help="Negatives per query.")] = 4,
    batch_size: Annotated[int, typer.Option()] = 32,
    epochs: EpochsOpt = 1.0,
    lr: LrOpt = 2e-5,
    warmup: WarmupOpt = 0.1,
    seed: SeedOpt = 0,
    max_length: Annotated[int, typer.Option(help="Tokens per (query, document) pair.")] = 256,
    val_fraction: ValFractionOpt = 0.1,
    evals: EvalsOpt = 3,
    max_steps: MaxStepsOpt = -1,
    bf16: Bf16Opt = False,
    drop_leaks: DropLeaksOpt = False,
    overwrite: OverwriteOpt = False,
    progress: ProgressOpt = True,
) -> None:
    """Fine-tune a cross-encoder reranker (binary cross-entropy over positives and mined negatives)."""
    from ..runner.config import build_arms, parse_arm_spec
    from ..train.finetune import finetune
    from ..train.reranker import RerankerParams

    params = RerankerParams(batch_size=batch_size, epochs=epochs, learning_rate=lr, warmup_ratio=warmup, seed=seed,
                            max_length=max_length, val_fraction=val_fraction, evals=evals, max_steps=max_steps,
                            bf16=bf16)
    rec = finetune("reranker", train, out=out, params=params, base=base, tests=test, corpus=corpus,
                   negatives=negatives, n_negatives=n_negatives, miner=build_arms([parse_arm_spec(miner)])[0],
                   miner_spec=miner, mine_depth=mine_depth, drop_leaks=drop_leaks, overwrite=overwrite,
                   progress=progress)
    _summary(rec)
    typer.echo(f"wrote {out} (use it as --arm rerank:model={out},base=...)")


def _summary(rec: Mapping[str, Any]) -> None:
    typer.echo(json.dumps({k: rec[k] for k in ("trained_on", "n_pairs", "steps", "best_validation_ndcg@10",
                                               "train_time_s", "wall_time_s")}))


#: ``--help`` epilog (``\b``: click keeps its line breaks).
EMBEDDER_EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff finetune embedder --train data/scifact:train --out models/ft \\\n"
    "      --drop-leaks")

#: ``--help`` epilog (``\b``: click keeps its line breaks).
RERANKER_EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff finetune reranker --train data/scifact:train --out models/ce \\\n"
    "      --drop-leaks")


def register(app: typer.Typer) -> None:
    finetune_app.command("embedder", epilog=EMBEDDER_EXAMPLES)(embedder)
    finetune_app.command("reranker", epilog=RERANKER_EXAMPLES)(reranker)
    app.add_typer(finetune_app, name="finetune")
