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

``label_kind = "citation"`` tells the runner that labels are lower bounds:
Recall@k and MRR (and Hit@k) only; precision, MAP and NDCG — which read
unjudged documents as wrong — are refused (:func:`citation_measures`).

:func:`load_mined` reads the folder back with a search mode: ``as_of``
(each query sees the versions in force on its date(s)) or ``latest`` (every
query sees each unit's latest version; positives move to that version).
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

import numpy as np

from .._io import atomic_open, atomic_write_json
from ..data.loaders import load_beir, read_beir_queries
from ..data.model import Corpus, Dataset, Qrels, Queries, Query
from ..data.writers import write_beir
from ..errors import ConfigError, InputError
from ..metrics import Measure, parse_measures
from ..progress import progress_bar
from .citations import MinedQuery, MineOptions, NgramIndex, mine_source
from .patterns import PatternSet
from .sources import Source
from ..data.versions import TargetVersion, Versions, as_of_masks

__all__ = [
    "LOWER_BOUND_MEASURES",
    "SEARCH_MODES",
    "MinedSet",
    "citation_measures",
    "is_citation",
    "load_mined",
    "mine_citations",
    "prepare_dataset",
    "read_provenance",
    "targets_corpus",
    "write_mined",
]

LOWER_BOUND_MEASURES = ("recall", "mrr", "hit")
SEARCH_MODES = ("as_of", "latest")


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
    """Mine one query per citing source (see :mod:`bakeoff.truth.citations`)."""
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
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, old / "x")
            os.replace(tmp, out)
            shutil.rmtree(old)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def read_provenance(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    p = Path(path) / "provenance.json"
    if not p.is_file():
        return None
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"invalid JSON ({exc})", path=p) from None
    return obj if isinstance(obj, dict) else None


def is_citation(path_or_info: Any) -> bool:
    """True for a mined folder (path) or a dataset info / results dataset dict marked citation."""
    if isinstance(path_or_info, (str, os.PathLike)):
        prov = read_provenance(path_or_info)
    else:
        prov = (path_or_info or {}).get("provenance")
    return isinstance(prov, dict) and prov.get("label_kind") == "citation"


def citation_measures(k: int, depth: int, requested: Iterable[str | Measure] | None) -> tuple[Measure, ...]:
    """Measures allowed on citation-mined labels: Recall@k, MRR@k (+ Recall@depth) by default;
    any measure needing judged negatives raises :class:`ConfigError`."""
    if requested is None:
        names = [f"recall@{k}", f"mrr@{k}"] + ([f"recall@{depth}"] if depth > k else [])
        return parse_measures(names)
    ms = parse_measures(requested)
    bad = [str(m) for m in ms if m.name not in LOWER_BOUND_MEASURES]
    if bad:
        raise ConfigError(
            f"{', '.join(bad)} cannot be computed on citation-mined labels: only cited targets are known "
            "relevant and everything else is unknown, not wrong; use recall@k, mrr@k or hit@k (lower bounds)")
    return ms


def load_mined(path: str | os.PathLike[str], *, mode: str = "as_of", only_single: bool = False,
               unmasked: bool = False) -> tuple[Dataset, dict[str, np.ndarray]]:
    """Read a mined folder as a dataset plus the per-query row masks of ``mode``.

    ``as_of``: mask = versions in force on the query's dates; qrels as mined.
    ``latest``: mask = each unit's latest version; positives mapped to it.
    ``only_single`` keeps queries with exactly one positive; ``unmasked`` swaps
    in the control queries.
    """
    if mode not in SEARCH_MODES:
        raise ConfigError(f"search mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
    root = Path(path)
    prov = read_provenance(root)
    ds = load_beir(root, split="test")
    queries = ds.queries
    if unmasked:
        qpath = root / "queries.unmasked.jsonl"
        if not qpath.is_file():
            raise InputError("no unmasked control queries in this folder", path=qpath)
        queries = read_beir_queries(qpath).subset(set(queries.ids))
    if only_single:
        queries = queries.subset({q.id for q in queries if int(q.metadata.get("n_targets", 0)) == 1})
        if not len(queries):
            raise InputError("no query cites exactly one target", path=root)
    versions = Versions.from_corpus(ds.corpus)
    qrels = ds.qrels
    if mode == "as_of":
        masks = as_of_masks(versions, queries)
    else:
        latest = versions.latest()
        masks = {q: latest for q in queries.ids}
        qrels = versions.to_latest(qrels)
    compact = {k: v for k, v in (prov or {}).items() if k in ("label_kind", "note", "counts")}
    info = {**dict(ds.info), "provenance": compact, "search_mode": mode, "only_single": only_single,
            "queries_variant": "unmasked" if unmasked else "masked"}
    name = root.name + ("/unmasked" if unmasked else "") + ("/single" if only_single else "")
    return Dataset(ds.corpus, queries, qrels, name=name, split=mode, info=info), masks


def prepare_dataset(spec: Any, *, as_of: bool | None = None, only_single: bool = False,
                    unmasked: bool = False) -> tuple[Dataset, dict[str, np.ndarray] | None]:
    """Load a :class:`~bakeoff.runner.config.DatasetSpec` for ``bakeoff run`` with its search mode.

    A mined citation folder (``provenance.json`` with ``label_kind = "citation"``)
    goes through :func:`load_mined` (``as_of`` defaults to True). Any other
    versioned corpus (metadata ``valid_from``) gets as-of masks from the
    queries' dates when ``as_of`` is not False, the latest versions otherwise.
    Unversioned data with ``--as-of/--latest``, ``--only-single`` or
    ``--unmasked`` is a :class:`ConfigError`.
    """
    beir = getattr(spec, "beir", None)
    if beir and is_citation(beir):
        mode = "latest" if as_of is False else "as_of"
        ds, masks = load_mined(beir, mode=mode, only_single=only_single, unmasked=unmasked)
        if getattr(spec, "name", None):
            ds = Dataset(ds.corpus, ds.queries, ds.qrels, name=spec.name, split=ds.split, info=ds.info)
        return ds, masks
    if only_single or unmasked:
        raise ConfigError("--only-single and --unmasked apply to citation-mined folders (bakeoff mine citations)")
    ds = spec.load()
    if not Versions.is_versioned(ds.corpus):
        if as_of is not None:
            raise ConfigError("--as-of/--latest need a versioned corpus (document metadata valid_from/valid_to)")
        return ds, None
    versions = Versions.from_corpus(ds.corpus)
    if as_of is False:
        latest = versions.latest()
        info = {**dict(ds.info), "search_mode": "latest"}
        return Dataset(ds.corpus, ds.queries, versions.to_latest(ds.qrels), name=ds.name, split=ds.split,
                       info=info), {q: latest for q in ds.queries.ids}
    info = {**dict(ds.info), "search_mode": "as_of"}
    return (Dataset(ds.corpus, ds.queries, ds.qrels, name=ds.name, split=ds.split, info=info),
            as_of_masks(versions, ds.queries))
