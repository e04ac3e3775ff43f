"""``bakeoff finetune embedder|reranker``: train on one split, refuse test-query leaks."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated, Optional

import typer

log = logging.getLogger("bakeoff")

finetune_app = typer.Typer(help="Fine-tune an embedder or a reranker on a training split.", no_args_is_help=True)

TrainOpt = Annotated[str, typer.Option("--train", help="Training data: BEIR folder[:split] (default split: train).")]
OutOpt = Annotated[Path, typer.Option("--out", help="Output model folder (written atomically).")]
TestOpt = Annotated[list[str], typer.Option("--test", help="Held-out FOLDER[:split] whose queries must not be trained on "
                                            "(repeatable; default: the training folder's and --corpus folder's test split).")]
CorpusOpt = Annotated[Optional[Path], typer.Option(help="Corpus for a training folder without corpus.jsonl (e.g. a synthetic set).")]


def _hygiene(train_path: Path, split: str, corpus: Optional[Path], tests: list[str], queries: dict[str, str],
             *, drop: bool) -> tuple[dict, set[str]]:
    """Check the training queries against the held-out splits; returns (record, training ids to drop)."""
    from ..train.data import load_split, parse_dataset_spec
    from ..train.hygiene import check_hygiene

    specs: list[tuple[Path, str]] = [parse_dataset_spec(t, default_split="test") for t in tests]
    if not specs:
        for folder in (train_path, corpus):
            if folder is not None and folder.is_dir() and (folder / "qrels" / "test.tsv").exists():
                specs.append((folder, "test"))
    checked = []
    sets = []
    for folder, sp in specs:
        ds = load_split(folder, sp, corpus=corpus if not (folder / "corpus.jsonl").exists() else None)
        sets.append((f"{folder.name}:{sp}", {q.id: q.text for q in ds.queries}))
        checked.append(f"{folder.name}:{sp}")
    if not sets:
        log.warning("no held-out split found to check training queries against (pass --test FOLDER:split)")
    n, leaks = check_hygiene(queries, sets, drop=drop)
    dropped = sorted({q for q, _, _ in leaks})
    if dropped:
        log.warning("dropped %d training queries equal to held-out queries: %s", len(dropped),
                    ", ".join(f"{q}~{lab}/{t}" for q, lab, t in leaks))
    rec = {"checked_against": checked, "n_test_queries": n, "dropped_leaks": [list(x) for x in leaks],
           "rule": "NFKC, casefold, punctuation/symbols removed, whitespace collapsed; equal texts leak"}
    return rec, set(dropped)


def embedder(
    train: TrainOpt,
    out: OutOpt,
    base: Annotated[str, typer.Option(help="Base model: folder, hub name, or 'minilm' (bundled, offline).")] = "minilm",
    test: TestOpt = [],
    corpus: CorpusOpt = None,
    hard_negatives: Annotated[str, typer.Option(help="none, qrels (grade 0), provenance (synthetic set) or bm25.")] = "none",
    n_negatives: Annotated[int, typer.Option(help="Hard negatives kept per query.")] = 1,
    batch_size: Annotated[int, typer.Option(help="Rows per batch (in-batch negatives).")] = 32,
    epochs: Annotated[float, typer.Option()] = 1.0,
    lr: Annotated[float, typer.Option("--lr", help="Peak learning rate.")] = 2e-5,
    warmup: Annotated[float, typer.Option(help="Warm-up fraction of the steps.")] = 0.1,
    seed: Annotated[int, typer.Option()] = 0,
    cached: Annotated[bool, typer.Option(help="CachedMultipleNegativesRankingLoss (big batches, small memory).")] = False,
    mini_batch_size: Annotated[int, typer.Option(help="Mini-batch of the cached loss.")] = 8,
    max_seq_length: Annotated[Optional[int], typer.Option(help="Truncate texts to this many tokens.")] = None,
    val_fraction: Annotated[float, typer.Option(help="Training queries held out for validation (0: none).")] = 0.1,
    val_corpus_size: Annotated[int, typer.Option(help="Documents ranked during validation.")] = 500,
    evals: Annotated[int, typer.Option(help="Validations (and checkpoints) during training.")] = 3,
    max_steps: Annotated[int, typer.Option(help="Stop after this many steps (-1: epochs decide).")] = -1,
    bf16: Annotated[bool, typer.Option(help="bfloat16 mixed precision (fast on CPUs with AMX; fp32 weights).")] = False,
    drop_leaks: Annotated[bool, typer.Option(help="Drop training queries equal to held-out ones instead of refusing.")] = False,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --out folder.")] = False,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Fine-tune a sentence-transformers embedder (MNRL with in-batch negatives)."""
    from ..train.data import load_training_data, parse_dataset_spec
    from ..train.embedder import EmbedderParams, finetune_embedder

    path, split = parse_dataset_spec(train, default_split="train")
    data = load_training_data(path, split, corpus=corpus, hard_negatives=hard_negatives, n_negatives=n_negatives)
    hyg, drop = _hygiene(path, split, corpus, test, dict(data.queries), drop=drop_leaks)
    if drop:
        data = data.subset([q for q in data.positives if q not in drop])
    params = EmbedderParams(batch_size=batch_size, epochs=epochs, learning_rate=lr, warmup_ratio=warmup, seed=seed,
                            cached=cached, mini_batch_size=mini_batch_size, max_seq_length=max_seq_length,
                            val_fraction=val_fraction, val_corpus_size=val_corpus_size, evals=evals, max_steps=max_steps,
                            bf16=bf16)
    log.info("training on %s: %d queries, %d pairs", data.label, len(data.positives), data.n_pairs)
    rec = finetune_embedder(data, base=base, out=out, params=params, hygiene=hyg, overwrite=overwrite, progress=progress)
    typer.echo(json.dumps({k: rec[k] for k in ("trained_on", "n_pairs", "steps", "best_validation_ndcg@10",
                                               "train_time_s", "wall_time_s")}))
    typer.echo(f"wrote {out} (use it as --arm dense:model={out})")


def reranker(
    train: TrainOpt,
    out: OutOpt,
    base: Annotated[str, typer.Option(help="Initial model: folder, hub name, or 'minilm' (bundled, offline).")] = "minilm",
    test: TestOpt = [],
    corpus: CorpusOpt = None,
    negatives: Annotated[str, typer.Option(help="bm25 (mined with --miner), qrels (grade 0) or provenance.")] = "bm25",
    miner: Annotated[str, typer.Option(help="Arm whose top-k is mined for negatives, e.g. bm25 or dense:model=minilm.")] = "bm25",
    mine_depth: Annotated[int, typer.Option(help="Mine negatives from this many top documents.")] = 30,
    n_negatives: Annotated[int, typer.Option(help="Negatives per query.")] = 4,
    batch_size: Annotated[int, typer.Option()] = 32,
    epochs: Annotated[float, typer.Option()] = 1.0,
    lr: Annotated[float, typer.Option("--lr", help="Peak learning rate.")] = 2e-5,
    warmup: Annotated[float, typer.Option(help="Warm-up fraction of the steps.")] = 0.1,
    seed: Annotated[int, typer.Option()] = 0,
    max_length: Annotated[int, typer.Option(help="Tokens per (query, document) pair.")] = 256,
    val_fraction: Annotated[float, typer.Option(help="Training queries held out for validation (0: none).")] = 0.1,
    evals: Annotated[int, typer.Option(help="Validations (and checkpoints) during training.")] = 3,
    max_steps: Annotated[int, typer.Option(help="Stop after this many steps (-1: epochs decide).")] = -1,
    bf16: Annotated[bool, typer.Option(help="bfloat16 mixed precision (fast on CPUs with AMX; fp32 weights).")] = False,
    drop_leaks: Annotated[bool, typer.Option(help="Drop training queries equal to held-out ones instead of refusing.")] = False,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --out folder.")] = False,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Fine-tune a cross-encoder reranker (binary cross-entropy over positives and mined negatives)."""
    from ..runner.config import build_arms, parse_arm_spec
    from ..train.data import load_training_data, parse_dataset_spec
    from ..train.reranker import RerankerParams, finetune_reranker

    path, split = parse_dataset_spec(train, default_split="train")
    miner_arm = build_arms([parse_arm_spec(miner)])[0]
    data = load_training_data(path, split, corpus=corpus, hard_negatives=negatives, n_negatives=n_negatives,
                              mine_depth=mine_depth, miner=miner_arm)
    hyg, drop = _hygiene(path, split, corpus, test, dict(data.queries), drop=drop_leaks)
    if drop:
        data = data.subset([q for q in data.positives if q not in drop])
    params = RerankerParams(batch_size=batch_size, epochs=epochs, learning_rate=lr, warmup_ratio=warmup, seed=seed,
                            max_length=max_length, val_fraction=val_fraction, evals=evals, max_steps=max_steps,
                            bf16=bf16)
    log.info("training on %s: %d queries, %d positives, %d with mined negatives", data.label, len(data.positives),
             data.n_pairs, len(data.negatives))
    rec = finetune_reranker(data, base=base, out=out, params=params, hygiene=hyg, overwrite=overwrite, progress=progress,
                            miner={"arm": miner, "depth": mine_depth, "n_negatives": n_negatives, "source": negatives})
    typer.echo(json.dumps({k: rec[k] for k in ("trained_on", "n_pairs", "steps", "best_validation_ndcg@10",
                                               "train_time_s", "wall_time_s")}))
    typer.echo(f"wrote {out} (use it as --arm rerank:model={out},base=...)")


def register(app: typer.Typer) -> None:
    finetune_app.command("embedder")(embedder)
    finetune_app.command("reranker")(reranker)
    app.add_typer(finetune_app, name="finetune")
