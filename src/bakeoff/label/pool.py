"""Pooling: the documents a person judges for a query are the union of the pool arms' top
``depth`` (TREC-style depth-k pooling, :func:`bakeoff.data.pool.pool`), shown in a seeded random order so that the order
does not reveal which arm found a document or how high it ranked.

Per query: the union of each arm's first ``depth`` documents (package tie rule order),
sorted by document id, then permuted with ``numpy.random.default_rng(s)`` where ``s`` is the
first 8 bytes of sha256(``"{seed}:pool:{qid}"``) — so a query's order depends only on the
seed, the query id and its pooled set. Each pooled document records, for provenance only,
the 1-based rank at which each arm retrieved it (never shown to annotators).

Runs come from :class:`~bakeoff.runner.context.Context` (memoised, cached and timed like
any bake-off run), so pooling after ``bakeoff run`` with the same arms re-searches nothing.

**From a bake-off's output** (``bakeoff label --from``, :func:`pool_from_results`): a results
folder gives the union of its arms' stored runs' top ``depth`` (no search at all); a
``holes.tsv`` written by ``bakeoff report`` gives exactly its (query, document) pairs. Either
way, pairs the dataset's qrels already judge are left out (:func:`ranked_pool`'s ``known``),
and queries left with no pair are not judged. The display order is the same seeded shuffle.

**Known answers** (:func:`with_gold`): every pooled pair the dataset's qrels judge carries
its known grade (``ranks["gold"]``, never shown); with ``gold=N``, up to N more such pairs
per query (drawn with the query's seed from the qrels' documents not yet pooled) are mixed
into the pool as check items. ``label agreement`` compares each annotator with them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.model import Qrels, Queries, Run
from ..data.pool import pool
from ..errors import InputError

if TYPE_CHECKING:
    from ..arms.base import Arm
    from ..runner.context import Context
    from ..runner.results import StoredResults

__all__ = ["PooledDoc", "ResultsPool", "pool_from_results", "pool_queries", "ranked_pool", "read_holes", "shuffle_seed",
           "shuffled", "with_gold"]


@dataclass(frozen=True)
class PooledDoc:
    """A pooled document: its id and the rank each arm retrieved it at."""

    doc_id: str
    ranks: Mapping[str, int]


def shuffle_seed(seed: int, qid: str) -> int:
    """The per-query shuffle seed (see module docstring)."""
    return int.from_bytes(hashlib.sha256(f"{seed}:pool:{qid}".encode()).digest()[:8], "big")


def shuffled(qid: str, union: Mapping[str, Mapping[str, int]], *, seed: int) -> list[PooledDoc]:
    """One query's pooled documents ``{doc: {arm: rank}}`` in display order (sorted by id,
    then the per-query seeded permutation)."""
    ids = sorted(union)
    perm = np.random.default_rng(shuffle_seed(seed, qid)).permutation(len(ids))
    return [PooledDoc(ids[i], union[ids[i]]) for i in perm]


def ranked_pool(runs: Sequence[tuple[str, Run]], query_ids: Sequence[str], *, depth: int, seed: int,
                known: Qrels | None = None) -> dict[str, list[PooledDoc]]:
    """qid -> the union of the runs' top ``depth`` in display order, without the pairs
    ``known`` already judges; a query left with nothing is absent."""
    out: dict[str, list[PooledDoc]] = {}
    pooled = pool(dict(runs), k=depth, query_ids=query_ids)
    for qid in query_ids:
        judged = known.get(qid) if known is not None and qid in known else {}
        union = {d: ranks for d, ranks in pooled[qid].items() if d not in judged}
        if union or known is None:
            out[qid] = shuffled(qid, union, seed=seed)
    return out


def with_gold(pools: Mapping[str, Sequence[PooledDoc]], qrels: Qrels, *, per_query: int,
              seed: int) -> dict[str, list[PooledDoc]]:
    """``pools`` with known grades marked and up to ``per_query`` known-answer pairs added
    per query (module docstring); a query's order is reshuffled only when something is added."""
    out: dict[str, list[PooledDoc]] = {}
    for qid, docs in pools.items():
        known = qrels.get(qid)
        marked = [PooledDoc(d.doc_id, {**d.ranks, "gold": int(known[d.doc_id])} if d.doc_id in known else d.ranks)
                  for d in docs]
        have = {d.doc_id for d in docs}
        extra = sorted(d for d in known if d not in have)
        if per_query and extra and docs:
            rng = np.random.default_rng(shuffle_seed(seed, f"gold:{qid}"))
            chosen = [extra[i] for i in sorted(rng.choice(len(extra), size=min(per_query, len(extra)), replace=False))]
            union = {d.doc_id: d.ranks for d in marked} | {d: {"gold": int(known[d])} for d in chosen}
            out[qid] = shuffled(qid, union, seed=seed)
        else:
            out[qid] = marked
    return out


def pool_queries(arms: Sequence[Arm], queries: Queries, *, ctx: Context, depth: int,
                 seed: int) -> dict[str, list[PooledDoc]]:
    """qid -> the pooled documents in display order (module docstring)."""
    if not arms:
        raise ValueError("pooling needs at least one arm")
    runs = [(arm.name, ctx.search(arm, queries, k=depth)) for arm in arms]
    return ranked_pool(runs, queries.ids, depth=depth, seed=seed)


def read_holes(path: Path) -> dict[str, dict[str, dict[str, int]]]:
    """``holes.tsv`` (``bakeoff report``) as ``{qid: {doc: {arm: best_rank}}}`` (the file
    gives each hole's best rank and the arms that have it in their top k)."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the holes file ({exc})", path=path) from None
    head = lines[0].split("\t") if lines else []
    if head[:6] != ["query_id", "doc_id", "best_rank", "n_arms", "disputed", "arms"]:
        raise InputError("not a holes.tsv written by bakeoff report (header query_id, doc_id, best_rank, n_arms, "
                         "disputed, arms, ...)", path=path, line=1)
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) < 6 or not cols[2].isdigit():
            raise InputError("expected query_id, doc_id, best_rank (a number), n_arms, disputed, arms", path=path,
                             line=n, field="best_rank" if len(cols) >= 6 else None)
        out.setdefault(cols[0], {})[cols[1]] = {arm: int(cols[2]) for arm in cols[5].split(",") if arm}
    return out


@dataclass(frozen=True)
class ResultsPool:
    """What ``--from`` pools: the dataset folder, the pools, and a description for the database."""

    dataset: Path
    pools: dict[str, list[PooledDoc]]
    info: dict[str, Any]


def pool_from_results(source: Path, *, depth: int, seed: int, dataset: Path | None = None) -> ResultsPool:
    """Pool a results folder's runs, or a ``holes.tsv`` (module docstring). The dataset is the
    one recorded in ``results.json`` (its folder beside a holes file), unless ``dataset``."""
    from ..data.datasets import DatasetSpec, open_dataset
    from ..runner.reopen import load_dataset, load_runs, results_path
    from ..runner.results import read_results

    holes_file = source if source.is_file() and source.suffix == ".tsv" else None
    folder = source.parent if holes_file is not None else source
    if holes_file is not None and dataset is not None:  # a holes file with its dataset named: no results needed
        ds, _ = open_dataset(DatasetSpec(beir=str(dataset)), plain=True)
        res_path, recorded = holes_file, dataset
    else:
        if holes_file is not None and not (folder / "results.json").exists():
            raise InputError("no results.json beside this holes file (bakeoff report --out elsewhere?); give the "
                             "dataset folder as the first argument", path=holes_file)
        res_path = results_path(folder)
        results = read_results(res_path)
        ds = load_dataset(results, path=res_path, data=dataset)
        recorded = _dataset_folder(results, res_path) if dataset is None else dataset
    if holes_file is not None:
        holes = read_holes(holes_file)
        unknown = sorted(q for q in holes if q not in ds.queries)
        if unknown:
            raise InputError(f"query {unknown[0]!r} of the holes file is not in the dataset's queries", path=holes_file)
        pools = {}
        skipped: dict[str, int] = {}
        for qid in ds.queries.ids:
            judged = ds.qrels.get(qid) if qid in ds.qrels else {}
            union = {d: r for d, r in holes.get(qid, {}).items() if d not in judged}
            skipped[qid] = len(holes.get(qid, {})) - len(union)
            if union:
                pools[qid] = shuffled(qid, union, seed=seed)
        info = {"kind": "holes", "path": str(holes_file.resolve()), "pairs_in_file": sum(map(len, holes.values())),
                "already_judged_by_query": {q: n for q, n in skipped.items() if n}}
    else:
        runs = load_runs(results, folder=res_path.parent)
        if not runs:
            raise InputError("results.json lists no arm with a run file; nothing to pool", path=res_path)
        pools = ranked_pool(list(runs.items()), ds.queries.ids, depth=depth, seed=seed, known=ds.qrels)
        full = ranked_pool(list(runs.items()), ds.queries.ids, depth=depth, seed=seed)
        info = {"kind": "runs", "arms": list(runs), "depth": depth,
                "already_judged_by_query": {q: len(full[q]) - len(pools.get(q, ())) for q in full
                                            if len(full[q]) > len(pools.get(q, ()))}}
    return ResultsPool(recorded, pools, {**info, "results": str(res_path.resolve())})


def _dataset_folder(results: StoredResults, path: Path) -> Path:
    src = results.source  # bakeoff demo records a label, no specification
    if src.get("beir"):
        return Path(str(src["beir"]))
    if results.dataset.truth:  # bakeoff demo: the BEIR folder of its generated truth
        truth = Path(results.dataset.truth)
        return truth if truth.exists() or not (path.parent / "truth").is_dir() else path.parent / "truth"
    raise InputError("results.json records no BEIR folder; give the dataset folder as the first argument",
                     path=path, field="dataset.source")
