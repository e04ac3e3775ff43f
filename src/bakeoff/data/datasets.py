"""Opening a dataset: the one place every command and module goes through.

A :class:`DatasetSpec` says where a dataset comes from, exactly one of:

* ``beir``: a BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).
  ``split`` may join splits with ``+`` (``train+dev``: judgments merged, a document judged
  in two splits keeps its higher grade). ``corpus`` beside ``beir`` replaces the folder's
  corpus (a folder without ``corpus.jsonl``, e.g. a synthetic set, takes it from there);
* ``irds``: an ir_datasets id (``beir/scifact/test``);
* ``corpus`` + ``queries`` + ``qrels``: files; the corpus is anything
  :func:`~bakeoff.data.loaders.open_corpus` reads (records with a
  :class:`~bakeoff.data.loaders.FieldMap`, a BEIR ``corpus.jsonl`` or folder, a folder of
  text files).

:func:`open_dataset` returns the :class:`~bakeoff.data.model.Dataset` and, for versioned
corpora, the per-query row masks of the search mode (``None`` otherwise):

* a **citation-mined folder** (``provenance.json`` with ``label_kind = "citation"``,
  written by ``bakeoff mine citations``) is read by :func:`load_mined`: ``as_of``
  (default) or ``latest`` search, optionally only single-citation queries or the
  unmasked control queries; its labels are lower bounds (``Dataset.label_kind``);
* any other **versioned corpus** (every document's metadata has ``valid_from``, see
  :mod:`bakeoff.data.versions`) gets as-of masks from the queries' dates, or with
  ``as_of=False`` each unit's latest version (positives mapped to it);
* unversioned data with a search option is a :class:`~bakeoff.errors.ConfigError`.

``plain=True`` skips the search-mode step and returns the data as stored (training).

Each source kind is one call of a loader (:func:`~bakeoff.data.loaders.load_beir`,
:func:`~bakeoff.data.loaders.load_files`, :func:`~bakeoff.data.loaders.load_ir_datasets`); a corpus alone
(commands that need no queries) is :func:`bakeoff.data.loaders.open_corpus`, where its format is decided.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, InputError
from .chunking import ChunkSpec
from .clean import CleanOptions
from .loaders import FieldMap, load_beir, load_files, load_ir_datasets, read_beir_queries
from .model import Dataset, Qrels, label_kind_of
from .versions import Versions, as_of_masks

__all__ = [
    "SEARCH_MODES",
    "DatasetSpec",
    "Masks",
    "is_citation",
    "load_mined",
    "open_dataset",
    "read_provenance",
]

#: qid -> boolean row mask over the corpus (rows a query may retrieve).
Masks = dict[str, np.ndarray]

#: Search modes of a versioned corpus: versions in force on the query's date(s), or today's text.
SEARCH_MODES = ("as_of", "latest")

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class DatasetSpec:
    """Where a dataset comes from (see the module docstring); ``name`` renames it."""

    beir: str | None = None
    irds: str | None = None
    corpus: str | None = None
    queries: str | None = None
    qrels: str | None = None
    split: str = "test"
    fields: FieldMap = FieldMap()
    clean: CleanOptions = CleanOptions()
    name: str | None = None
    #: Passage chunking, applied by the runner (:mod:`bakeoff.runner.passages`), not here: the dataset
    #: stays document-level so its qrels keep their meaning.
    chunk: ChunkSpec | None = None

    def as_dict(self) -> dict[str, Any]:
        """The source as recorded in ``results.json`` (``dataset.source``); unset keys omitted."""
        keys = ("beir", "irds", "corpus", "queries", "qrels", "split", "name")
        out = {k: getattr(self, k) for k in keys if getattr(self, k) is not None}
        if self.chunk is not None:
            out["chunk"] = self.chunk.as_dict()
        return out


# citation-mined folders --------------------------------------------------------------------------


def read_provenance(path: PathLike) -> dict[str, Any] | None:
    """``path/provenance.json`` as a dict, ``None`` when absent (invalid JSON is an InputError)."""
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
        return label_kind_of({"provenance": read_provenance(path_or_info)}) == "citation"
    return label_kind_of(path_or_info) == "citation"


def load_mined(path: PathLike, *, mode: str = "as_of", only_single: bool = False,
               unmasked: bool = False) -> tuple[Dataset, Masks]:
    """Read a citation-mined folder as a dataset plus the per-query row masks of ``mode``.

    ``as_of``: mask = versions in force on the query's dates; qrels as mined.
    ``latest``: mask = each unit's latest version; positives mapped to it.
    ``only_single`` keeps queries with exactly one positive; ``unmasked`` swaps
    in the control queries (``queries.unmasked.jsonl``).
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


# datasets ---------------------------------------------------------------------------------------


def _open_beir(root: Path, *, split: str, corpus: str | None, clean: CleanOptions,
               queries: str | None = None, qrels: str | None = None) -> Dataset:
    """A BEIR folder's split (``a+b`` merges splits), optionally with a corpus from elsewhere, or with
    ``queries``/``qrels`` files replacing the folder's (e.g. a ``bakeoff label`` judgments database)."""
    if queries or qrels:
        if corpus is not None or "+" in split:
            raise ConfigError("dataset: a BEIR folder with queries=/qrels= takes neither corpus= nor a split a+b")
        return load_beir(root, split=split, clean=clean, queries_file=queries, qrels_file=qrels)
    if "+" in split:
        parts = [_open_beir(root, split=s, corpus=corpus, clean=clean) for s in split.split("+") if s]
        merged: dict[str, dict[str, int]] = {}
        for part in parts:
            for q in part.qrels:
                for d, g in part.qrels[q].items():
                    merged.setdefault(q, {})[d] = max(g, merged.get(q, {}).get(d, g))
        first = parts[0]
        allq = read_beir_queries(root / "queries.jsonl")
        judged = allq.subset([q for q in sorted(merged) if q in allq])
        return Dataset(first.corpus, judged, Qrels(merged), name=first.name, split=split, info=first.info)
    return load_beir(root, split=split, clean=clean, corpus_file=corpus)


def _open_source(spec: DatasetSpec) -> Dataset:
    if spec.beir:
        ds = _open_beir(Path(spec.beir), split=spec.split, corpus=spec.corpus, clean=spec.clean,
                        queries=spec.queries, qrels=spec.qrels)
    elif spec.irds:
        ds = load_ir_datasets(spec.irds, clean=spec.clean)
    elif spec.corpus and spec.queries and spec.qrels:
        ds = load_files(spec.corpus, spec.queries, spec.qrels, fields=spec.fields, clean=spec.clean,
                        name=spec.name, split=spec.split)
    else:
        raise ConfigError("dataset: give beir=PATH, irds=NAME, or corpus=, queries= and qrels=")
    return _renamed(ds, spec.name)


def _renamed(ds: Dataset, name: str | None) -> Dataset:
    return Dataset(ds.corpus, ds.queries, ds.qrels, name=name, split=ds.split, info=ds.info) if name else ds


def open_dataset(
    spec: DatasetSpec,
    *,
    as_of: bool | None = None,
    only_single: bool = False,
    unmasked: bool = False,
    plain: bool = False,
) -> tuple[Dataset, Masks | None]:
    """Read the dataset ``spec`` names, with the row masks of its search mode.

    ``as_of``: ``None`` = the dataset's default (as-of search on versioned corpora),
    ``True``/``False`` = as-of / latest search (versioned corpora only). ``only_single``
    and ``unmasked`` apply to citation-mined folders. ``plain`` reads the data as stored
    (no search mode, no masks). Bad input raises :class:`~bakeoff.errors.InputError`,
    contradictory options :class:`~bakeoff.errors.ConfigError`.
    """
    if plain:
        return _open_source(spec), None
    if spec.beir and is_citation(spec.beir):
        mode = "latest" if as_of is False else "as_of"
        ds, masks = load_mined(spec.beir, mode=mode, only_single=only_single, unmasked=unmasked)
        return _renamed(ds, spec.name), masks
    if only_single or unmasked:
        raise ConfigError("--only-single and --unmasked apply to citation-mined folders (bakeoff mine citations)")
    ds = _open_source(spec)
    if not Versions.is_versioned(ds.corpus):
        if as_of is not None:
            raise ConfigError("--as-of/--latest need a versioned corpus (document metadata valid_from/valid_to)")
        return ds, None
    versions = Versions.from_corpus(ds.corpus)
    if as_of is False:
        latest = versions.latest()
        info = {**dict(ds.info), "search_mode": "latest"}
        return (Dataset(ds.corpus, ds.queries, versions.to_latest(ds.qrels), name=ds.name, split=ds.split,
                        info=info), {q: latest for q in ds.queries.ids})
    info = {**dict(ds.info), "search_mode": "as_of"}
    return (Dataset(ds.corpus, ds.queries, ds.qrels, name=ds.name, split=ds.split, info=info),
            as_of_masks(versions, ds.queries))
