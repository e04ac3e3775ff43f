"""LLM-written ground truth, as both modes return it (:mod:`~bakeoff.truth.generation.describe`,
:mod:`~bakeoff.truth.generation.clusters`), and the document text the generator is shown.

Output: :class:`SyntheticTruth`, written by :meth:`SyntheticTruth.write` as a
BEIR folder (``corpus.jsonl`` copy, ``queries.jsonl``, ``qrels/train.tsv``,
``qrels/test.tsv`` — deterministic split by query id, see
:func:`~bakeoff.truth.generation.sampling.split_of`) plus ``provenance.json``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._io import atomic_write_json, staged_as
from ...data.model import Corpus, Qrels, Queries
from ...data.writers import write_beir
from .sampling import split_of

__all__ = ["SyntheticTruth", "doc_text"]


@dataclass
class SyntheticTruth:
    """Generated queries + qrels, their split, and everything needed to audit them."""

    queries: Queries
    qrels: Qrels
    provenance: dict[str, Any]
    test_fraction: float = 0.5
    split_seed: int = 0

    def splits(self) -> dict[str, Qrels]:
        parts: dict[str, dict[str, dict[str, int]]] = {"train": {}, "test": {}}
        for qid in self.queries.ids:
            if qid in self.qrels:
                parts[split_of(qid, test_fraction=self.test_fraction, seed=self.split_seed)][qid] = dict(self.qrels[qid])
        return {name: Qrels(j) for name, j in parts.items()}

    def write(self, out: str | os.PathLike[str], *, corpus: Corpus) -> Path:
        """Write the BEIR folder. Files are staged in a temporary sibling folder and moved in only
        when all are complete, so a crash leaves no half-written dataset."""
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        splits = self.splits()
        stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        with staged_as(stage, out):  # an error names the file as it will be called in out
            try:
                write_beir(stage, corpus=corpus, queries=self.queries, qrels=splits)
                prov = dict(self.provenance)
                prov["split"] = {"test_fraction": self.test_fraction, "seed": self.split_seed,
                                 "n_train": len(splits["train"]), "n_test": len(splits["test"]),
                                 "rule": "test iff sha256(f'{seed}\\0{qid}')[:16] / 2**64 < test_fraction"}
                prov["corpus"] = {**prov.get("corpus", {}), "fingerprint": corpus.fingerprint(), "n_docs": len(corpus),
                                  "copied": "corpus.jsonl"}
                atomic_write_json(stage / "provenance.json", prov)
                out.mkdir(parents=True, exist_ok=True)
                (out / "qrels").mkdir(exist_ok=True)
                for rel in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv", "provenance.json"):
                    os.replace(stage / rel, out / rel)
            finally:
                shutil.rmtree(stage, ignore_errors=True)
        return out


def doc_text(corpus: Corpus, row: int, max_chars: int, *, title: bool = True) -> str:
    """The document as the generator sees it: title (unless ``title`` is false) and text, whitespace collapsed,
    cut at a word boundary before ``max_chars`` characters with " ..." appended."""
    head, text = corpus.titles[row], corpus.texts[row]
    full = f"{head}\n{text}" if head and title else text
    full = " ".join(full.split())
    return full if len(full) <= max_chars else full[:max_chars].rsplit(" ", 1)[0] + " ..."
