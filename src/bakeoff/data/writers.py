"""Writers for TREC runs/qrels and BEIR folders. Every file is written atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .._io import atomic_open
from .model import Corpus, Qrels, Queries, Run

__all__ = ["write_beir", "write_beir_qrels", "write_trec_qrels", "write_trec_run"]


def write_trec_run(run: Run, path: str | os.PathLike[str], *, tag: str | None = None) -> None:
    """``qid Q0 docid rank score tag``, ranks 1-based in tie-rule order, scores with
    ``repr`` precision so re-reading gives the same ranking."""
    tag = (tag or run.name or "bakeoff").replace(" ", "_")
    with atomic_open(path, "w") as fh:
        for q in run:
            for i, (d, s) in enumerate(run[q], start=1):
                fh.write(f"{q} Q0 {d} {i} {float(s)!r} {tag}\n")


def write_trec_qrels(qrels: Qrels, path: str | os.PathLike[str]) -> None:
    """``qid 0 docid grade`` lines."""
    with atomic_open(path, "w") as fh:
        for q in qrels:
            for d, g in qrels[q].items():
                fh.write(f"{q} 0 {d} {g}\n")


def write_beir_qrels(qrels: Qrels, path: str | os.PathLike[str]) -> None:
    """BEIR TSV with the ``query-id corpus-id score`` header."""
    with atomic_open(path, "w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for q in qrels:
            for d, g in qrels[q].items():
                fh.write(f"{q}\t{d}\t{g}\n")


def write_beir(
    folder: str | os.PathLike[str],
    *,
    corpus: Corpus | None = None,
    queries: Queries | None = None,
    qrels: dict[str, Qrels] | None = None,
) -> None:
    """Write a BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``)."""
    root = Path(folder)
    if corpus is not None:
        with atomic_open(root / "corpus.jsonl", "w") as fh:
            for d in corpus:
                rec = {"_id": d.id, "title": d.title, "text": d.text, "metadata": dict(d.metadata)}
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    if queries is not None:
        with atomic_open(root / "queries.jsonl", "w") as fh:
            for q in queries:
                rec = {"_id": q.id, "text": q.text, "metadata": dict(q.metadata)}
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    for split, qr in (qrels or {}).items():
        write_beir_qrels(qr, root / "qrels" / f"{split}.tsv")
