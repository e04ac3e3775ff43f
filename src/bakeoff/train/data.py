"""Training data for fine-tuning: positives from judgments, hard negatives, a validation slice.

A :class:`TrainingData` holds the training queries (id -> text), their positive
documents (judgment grade >= 1), optional hard negatives per query, and the
corpus. Hard negatives come from (in this order of preference, per query):

* ``qrels``: judgments with grade 0 (``score <= 0`` in the qrels file);
* ``provenance``: the negatives a synthetic set recorded in ``provenance.json``
  beside its queries (read leniently, see :func:`read_provenance_negatives`);
* ``bm25`` (always the fallback when negatives are requested): the BM25 top-``k``
  of the query minus every judged document of that query.

Every list is in a fixed order (sorted ids, or rank order), so the same inputs
give the same rows; the validation slice is drawn with an explicit seed.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..data.datasets import DatasetSpec, open_dataset
from ..data.model import Corpus, Dataset, Qrels, Queries
from ..errors import ConfigError, InputError

__all__ = [
    "TrainingData",
    "load_split",
    "load_training_data",
    "mine_negatives",
    "parse_dataset_spec",
    "read_provenance_negatives",
    "split_validation",
]

log = logging.getLogger("bakeoff")


@dataclass(frozen=True)
class TrainingData:
    """Queries with positives (and optional hard negatives) over one corpus."""

    label: str
    queries: Mapping[str, str]
    positives: Mapping[str, tuple[str, ...]]
    corpus: Corpus
    negatives: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    negatives_source: Mapping[str, int] = field(default_factory=dict)
    source: Mapping[str, Any] = field(default_factory=dict)

    @property
    def n_pairs(self) -> int:
        return sum(len(v) for v in self.positives.values())

    def fingerprint(self) -> str:
        """sha256 over corpus fingerprint, query texts, positives and negatives (sorted)."""
        h = hashlib.sha256(b"bakeoff.training-data\0")
        h.update(self.corpus.fingerprint().encode())
        blob = json.dumps(
            {"q": sorted(self.queries.items()), "p": sorted(self.positives.items()),
             "n": sorted(self.negatives.items())},
            separators=(",", ":"),
        )
        h.update(blob.encode())
        return h.hexdigest()

    def subset(self, qids: Sequence[str]) -> TrainingData:
        keep = set(qids)
        return TrainingData(
            label=self.label,
            queries={q: t for q, t in self.queries.items() if q in keep},
            positives={q: p for q, p in self.positives.items() if q in keep},
            corpus=self.corpus,
            negatives={q: n for q, n in self.negatives.items() if q in keep},
            negatives_source=dict(self.negatives_source),
            source=dict(self.source),
        )


def parse_dataset_spec(spec: str, *, default_split: str) -> tuple[Path, str]:
    """``PATH[:SPLIT]`` -> (path, split). A colon is a split separator only when
    what precedes it is an existing folder (so Windows-like paths still work)."""
    head, sep, tail = spec.rpartition(":")
    if sep and head and tail and "/" not in tail and Path(head).is_dir():
        return Path(head), tail
    return Path(spec), default_split


def load_split(path: Path, split: str, *, corpus: Path | None = None) -> Dataset:
    """A BEIR folder's split as stored (:func:`bakeoff.data.datasets.open_dataset`, ``plain``);
    a folder without ``corpus.jsonl`` (e.g. a synthetic set) takes the corpus from ``corpus``
    (a BEIR folder or a ``corpus.jsonl``).

    ``split`` may join splits with ``+`` (``train+test``): their judgments are merged
    (a query judged in two splits keeps the higher grade per document)."""
    if not path.is_dir():
        raise InputError("not a folder (expected a BEIR folder: queries.jsonl, qrels/<split>.tsv)", path=path)
    if corpus is None and not (path / "corpus.jsonl").exists():
        raise ConfigError(f"{path} has no corpus.jsonl; pass --corpus (a BEIR folder or corpus.jsonl)")
    spec = DatasetSpec(beir=str(path), split=split, corpus=None if corpus is None else str(corpus))
    return open_dataset(spec, plain=True)[0]


def _judged(qrels: Qrels) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    pos: dict[str, tuple[str, ...]] = {}
    zero: dict[str, tuple[str, ...]] = {}
    for qid in sorted(qrels):
        grades = qrels[qid]
        p = tuple(sorted(d for d, g in grades.items() if g >= 1))
        z = tuple(sorted(d for d, g in grades.items() if g <= 0))
        if p:
            pos[qid] = p
        if z:
            zero[qid] = z
    return pos, zero


_QID_KEYS = ("query_id", "qid", "query-id", "id")
_NEG_KEYS = ("negatives", "negative_ids", "hard_negatives", "negative_doc_ids", "negative_docs", "neg_ids")


def _as_ids(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            if isinstance(v, (str, int)):
                out.append(str(v))
            elif isinstance(v, Mapping):
                for k in ("doc_id", "corpus_id", "id", "_id"):
                    if k in v:
                        out.append(str(v[k]))
                        break
        return out
    if isinstance(value, (str, int)):
        return [str(value)]
    return []


def read_provenance_negatives(folder: Path) -> dict[str, list[str]]:
    """Negatives recorded in ``folder/provenance.json``, read leniently.

    Accepted shapes, found anywhere in the JSON tree: a mapping whose key is one
    of ``negatives``/``hard_negatives``/``negative_ids``/... and whose value maps
    query id -> doc ids; or records (dicts) carrying a query id key
    (``query_id``/``qid``/``id``) and a negatives key holding doc ids (strings,
    or dicts with ``doc_id``/``id``). Missing file or unknown shape -> ``{}``.
    """
    path = folder / "provenance.json"
    if not path.exists():
        return {}
    try:
        tree = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        log.warning("ignoring unreadable %s (%s)", path, exc)
        return {}
    out: dict[str, list[str]] = {}

    def visit(node: Any) -> None:
        if isinstance(node, Mapping):
            qid = next((str(node[k]) for k in _QID_KEYS if isinstance(node.get(k), (str, int))), None)
            for k in _NEG_KEYS:
                if k not in node:
                    continue
                val = node[k]
                if qid is not None and isinstance(val, (list, tuple)):
                    out.setdefault(qid, []).extend(_as_ids(val))
                elif isinstance(val, Mapping):
                    for q, ids in val.items():
                        out.setdefault(str(q), []).extend(_as_ids(ids))
            for v in node.values():
                if isinstance(v, (Mapping, list)):
                    visit(v)
        elif isinstance(node, list):
            for v in node:
                visit(v)

    visit(tree)
    return {q: list(dict.fromkeys(ids)) for q, ids in out.items() if ids}


def mine_negatives(
    corpus: Corpus,
    queries: Mapping[str, str],
    exclude: Mapping[str, Sequence[str]],
    *,
    depth: int = 30,
    n: int = 4,
    arm: Any = None,
    ctx: Any = None,
) -> dict[str, tuple[str, ...]]:
    """Per query, the first ``n`` documents of ``arm``'s top-``depth`` (default BM25)
    that are not in ``exclude[qid]`` (its judged documents), in rank order."""
    from ..arms.lexical import BM25Arm
    from ..runner.context import Context

    arm = arm or BM25Arm()
    ctx = ctx or Context(corpus=corpus, progress=False)
    qs = Queries.from_dict(dict(sorted(queries.items())))
    run = ctx.search(arm, qs, k=depth)
    out: dict[str, tuple[str, ...]] = {}
    for qid in qs.ids:
        banned = set(exclude.get(qid, ()))
        negs = [d for d in run.doc_ids(qid) if d not in banned][:n]
        if negs:
            out[qid] = tuple(negs)
    return out


def load_training_data(
    path: Path,
    split: str,
    *,
    corpus: Path | None = None,
    hard_negatives: str = "none",
    n_negatives: int = 1,
    mine_depth: int = 30,
    miner: Any = None,
) -> TrainingData:
    """Load ``path:split`` as training data; ``hard_negatives`` is ``none``, ``qrels``,
    ``provenance`` or ``bm25`` (the first two fall back to mining for queries lacking them).
    ``miner`` is the arm whose top-``mine_depth`` is mined (default BM25)."""
    if hard_negatives not in ("none", "qrels", "provenance", "bm25"):
        raise ConfigError(f"--hard-negatives must be none, qrels, provenance or bm25, got {hard_negatives!r}")
    ds = load_split(path, split, corpus=corpus)
    pos, zero = _judged(ds.qrels)
    qtext = {q: ds.queries[q].text for q in pos if q in ds.queries}
    missing = [q for q in pos if q not in ds.queries]
    if missing:
        log.warning("%d judged queries lack text in queries.jsonl and are skipped", len(missing))
    in_corpus = ds.corpus.position
    pos = {q: tuple(d for d in p if d in in_corpus) for q, p in pos.items() if q in qtext}
    pos = {q: p for q, p in pos.items() if p}
    qtext = {q: qtext[q] for q in pos}
    if not pos:
        raise InputError(f"no query with a relevant judgment in split {split!r}", path=path)
    negatives: dict[str, tuple[str, ...]] = {}
    counts: dict[str, int] = {}
    if hard_negatives != "none":
        given: dict[str, list[str]] = {}
        if hard_negatives == "qrels":
            given = {q: list(z) for q, z in zero.items()}
        elif hard_negatives == "provenance":
            given = read_provenance_negatives(path)
        for q in pos:
            ids = [d for d in given.get(q, ()) if d in in_corpus and d not in set(pos[q])][:n_negatives]
            if ids:
                negatives[q] = tuple(ids)
        if hard_negatives != "bm25":
            counts[hard_negatives] = len(negatives)
        rest = {q: t for q, t in qtext.items() if q not in negatives}
        if rest:
            judged = {q: tuple(ds.qrels.get(q)) for q in rest}
            mined = mine_negatives(ds.corpus, rest, judged, depth=mine_depth, n=n_negatives, arm=miner)
            negatives.update(mined)
            counts["mined:" + (miner.name if miner is not None else "bm25")] = len(mined)
    return TrainingData(
        label=f"{path.name}:{split}",
        queries=qtext,
        positives=pos,
        corpus=ds.corpus,
        negatives=negatives,
        negatives_source=counts,
        source={"path": str(path.resolve()), "split": split, "queries_fingerprint": ds.queries.fingerprint(),
                "qrels_fingerprint": ds.qrels.fingerprint(), "corpus_fingerprint": ds.corpus.fingerprint()},
    )


def split_validation(qids: Sequence[str], *, fraction: float, max_queries: int, seed: int) -> tuple[list[str], list[str]]:
    """(train ids, validation ids): a seeded permutation of the sorted ids; the
    validation slice is its first ``min(max_queries, round(fraction * n))`` ids."""
    ids = sorted(qids)
    n_val = min(max_queries, round(fraction * len(ids)))
    if n_val <= 0 or len(ids) < 2:
        return ids, []
    n_val = min(n_val, len(ids) - 1)
    perm = np.random.default_rng(seed).permutation(len(ids))
    val = sorted(ids[i] for i in perm[:n_val])
    vs = set(val)
    return [q for q in ids if q not in vs], val
