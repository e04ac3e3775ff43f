"""Citation-mined datasets: mine a BEIR-like folder, load it back for as-of search.

Folder layout written by :func:`write_mined` (``bakeoff mine citations``)::

    corpus.jsonl            one document per target version, id <unit>@<valid_from>,
                            metadata {unit, valid_from, valid_to}
    queries.jsonl           masked queries; metadata {date, as_of: [dates], url, n_targets}
    queries.unmasked.jsonl  the control: same paragraphs, nothing masked
    qrels/test.tsv          cited versions, grade 1 (everything else is *unknown*, not negative)
    audit.jsonl             one line per source: status, citations, windows, masked strings,
                            dropped paragraphs (with overlap ratio), problems
    provenance.json         {"label_kind": "citation", counts, options, input fingerprints, ...}

``label_kind = "citation"`` makes the dataset say its labels are lower bounds
(:attr:`bakeoff.data.model.Dataset.label_kind`): Recall@k and MRR (and Hit@k)
only; precision, MAP and NDCG — which read unjudged documents as wrong — are
refused by the measure policy (:func:`bakeoff.metrics.measures_for`).

Reading the folder back (with a search mode: ``as_of``, each query sees the
versions in force on its date(s), or ``latest``) is opening a dataset:
:func:`bakeoff.data.datasets.open_dataset` / :func:`bakeoff.data.datasets.load_mined`.
This module holds the mining only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..._io import atomic_open, atomic_write_json, replace_folder, staged_as
from ...data.datasets import is_citation
from ...data.model import Corpus, Qrels, Queries, Query
from ...data.versions import TargetVersion, Versions, read_targets
from ...data.writers import write_beir
from ...errors import InputError
from ...progress import progress_bar
from .mining import MinedQuery, MineOptions, NgramIndex, mine_source
from .patterns import PatternSet, load_patterns
from .sources import Source, read_sources

__all__ = ["MinedSet", "mine_citations", "mine_folder", "targets_corpus", "write_mined"]

@dataclass
class MinedSet:
    """Everything :func:`mine_citations` produced, before writing."""

    corpus: Corpus
    queries: Queries
    unmasked: Queries
    qrels: Qrels
    audits: list[dict[str, Any]]
    counts: dict[str, int]
    problems: list[str]
    provenance: dict[str, Any] = field(default_factory=dict)


def targets_corpus(targets: Sequence[TargetVersion]) -> Corpus:
    """One document per version, id ``<unit>@<valid_from>``, dates in the metadata."""
    return Corpus(
        ids=tuple(t.id for t in targets),
        texts=tuple(t.text for t in targets),
        titles=tuple(t.title for t in targets),
        metadata=tuple({**dict(t.metadata), "unit": t.unit, "valid_from": t.valid_from.isoformat(),
                        "valid_to": t.valid_to.isoformat() if t.valid_to else None} for t in targets),
    )


def mine_citations(targets: Sequence[TargetVersion], sources: Iterable[Source], pset: PatternSet, *,
                   options: MineOptions | None = None, progress: bool = True) -> MinedSet:
    """Mine one query per citing source (see :mod:`bakeoff.truth.citations.mining`)."""
    options = options or MineOptions()
    corpus = targets_corpus(targets)
    versions = Versions.from_targets(targets)
    units = {t.unit for t in targets}
    index = NgramIndex((t.text for t in targets), n=options.ngram)
    sources = list(sources)
    counts: dict[str, int] = {"sources": len(sources), "queries": 0, "malformed_patterns": len(pset.problems),
                              "no_date": 0, "no_citation": 0, "unknown_article": 0, "not_in_force": 0,
                              "no_known_target": 0, "empty_after_drop": 0, "dropped_paragraphs": 0,
                              "masked_strings": 0, "pattern_problems": 0}
    problems = list(pset.problems)
    qs, us, audits = [], [], []
    judg: dict[str, dict[str, int]] = {}
    for src in progress_bar(sources, desc="mine citations", enabled=progress, unit="source"):
        mq: MinedQuery = mine_source(src, pset=pset, versions=versions, units=units, index=index, options=options)
        for k, v in mq.counts.items():
            counts[k] = counts.get(k, 0) + v
        problems.extend(mq.audit.get("problems", []))
        audits.append(mq.audit)
        if mq.text is None:
            continue
        counts["queries"] += 1
        qs.append(Query(src.id, mq.text, mq.metadata))
        us.append(Query(src.id, mq.unmasked or "", mq.metadata))
        judg[src.id] = {d: 1 for d in mq.positives}
    if not qs:
        raise InputError("no source cites the target law: check the patterns' law names and the sources",
                         path="sources")
    prov = {
        "label_kind": "citation",
        "note": "positives are the cited target versions; uncited targets are unknown, not negative: "
                "Recall@k and MRR are lower bounds, precision is undefined",
        "patterns": {"name": pset.name, "law": list(pset.law), "decree": list(pset.decree),
                     "target_id": pset.target_id, "placeholder": pset.placeholder,
                     "patterns": [{"name": p.name, "kind": p.kind, "regex": p.template} for p in pset.patterns]},
        "options": asdict(options),
        "counts": counts,
    }
    return MinedSet(corpus, Queries.from_queries(qs), Queries.from_queries(us), Qrels(judg), audits, counts,
                    problems, prov)


def _sha(path: Path) -> str | None:
    if not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_mined(out: str | os.PathLike[str], mined: MinedSet, *, inputs: dict[str, str] | None = None) -> Path:
    """Write the folder atomically: built in a temporary sibling and renamed into place.
    An existing ``out`` is replaced only if it is empty or a mined folder itself."""
    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise InputError("exists and is not a folder", path=out)
        if any(out.iterdir()) and not is_citation(out):
            raise InputError("exists and is not a mined citation folder; choose another --out", path=out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    with staged_as(tmp, out):  # an error names the file as it will be called in out
        try:
            write_beir(tmp, corpus=mined.corpus, queries=mined.queries, qrels={"test": mined.qrels})
            with atomic_open(tmp / "queries.unmasked.jsonl", "w") as fh:
                for q in mined.unmasked:
                    fh.write(json.dumps({"_id": q.id, "text": q.text, "metadata": dict(q.metadata)},
                                        ensure_ascii=False) + "\n")
            with atomic_open(tmp / "audit.jsonl", "w") as fh:
                for a in mined.audits:
                    fh.write(json.dumps(a, ensure_ascii=False, sort_keys=True) + "\n")
            prov = dict(mined.provenance)
            if inputs:
                prov["inputs"] = {k: {"path": v, "sha256": _sha(Path(v))} for k, v in inputs.items()}
            atomic_write_json(tmp / "provenance.json", prov)
            replace_folder(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return out


def mine_folder(*, targets: str | os.PathLike[str], sources: str | os.PathLike[str],
                patterns: str | os.PathLike[str], out: str | os.PathLike[str], options: MineOptions | None = None,
                progress: bool = True) -> tuple[MinedSet, Path]:
    """``bakeoff mine citations``: read the target versions, the sources and the pattern file,
    mine, and write the folder ``out`` (recording the inputs' paths and sha256).
    Returns the mined set (counts, problems) and the folder written."""
    pset = load_patterns(Path(patterns))
    mined = mine_citations(read_targets(Path(targets)), read_sources(Path(sources)), pset, options=options, progress=progress)
    path = write_mined(out, mined, inputs={"targets": str(targets), "sources": str(sources),
                                           "patterns": str(patterns)})
    return mined, path
