"""Where the queries to judge come from: a dataset's queries, a synthetic set to review, or a
query log. Each source gives a :class:`QuerySet` (the queries, in the order they are to be
judged, and counts describing how they were chosen).

**Query logs** (:func:`read_query_log`): a text file with one query per line, or JSONL with
one object per line, ``{"query": TEXT, "count": N}`` (``text`` or ``q`` are accepted for
``query``; ``count`` defaults to 1 and must be a positive integer). Queries are
deduplicated after :func:`~bakeoff.data.clean.normalise_query` (NFKC, casefold, punctuation
and symbols dropped, whitespace collapsed), their counts summed; each kept query shows the
surface form seen most often (first seen on a tie) and gets the id ``log-`` + the first 12
hex digits of sha256(normalised text), stable across files and runs.

**Sampling** (:func:`sample_indices`): ``sample=None`` keeps every query in source order.
Otherwise ``sample`` queries are drawn without replacement with the given
``numpy.random.Generator``: uniformly, or frequency-weighted (successive draws with
probability proportional to the count among the queries not yet drawn, numpy's
``Generator.choice(replace=False, p=...)``); they are judged in the order drawn, so a
partly labelled set is itself a random sample.

**Routing** (:func:`routed_twice`): a query is judged by two annotators when
``u(seed, qid) < overlap``, ``u`` being the first 8 bytes of sha256(``"{seed}:route:{qid}"``)
read as an integer / 2**64 — independent of the order and number of queries.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..data.clean import normalise_query as normalise
from ..data.model import Dataset
from ..errors import ConfigError, InputError

__all__ = ["QuerySet", "SourceQuery", "dataset_queries", "log_queries", "read_query_log", "routed_twice",
           "sample_indices", "synthetic_queries", "unit_hash"]


@dataclass(frozen=True)
class SourceQuery:
    """One query to judge. ``status`` is ``ready`` (judge it) or ``pending`` (review it first)."""

    qid: str
    text: str
    source: str
    count: int = 1
    status: str = "ready"
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class QuerySet:
    """Queries in judging order and ``info`` (kind, path, counts, sampling) for provenance."""

    queries: tuple[SourceQuery, ...]
    info: Mapping[str, Any]


def unit_hash(*parts: object) -> float:
    """A number in [0, 1) from sha256 of the parts joined by ``:`` (first 8 bytes / 2**64)."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def routed_twice(qid: str, *, overlap: float, seed: int) -> bool:
    """Whether ``qid`` goes to a second annotator (see module docstring)."""
    return unit_hash(seed, "route", qid) < overlap


def sample_indices(n: int, *, sample: int | None, rng: np.random.Generator,
                   weights: Sequence[float] | None = None) -> list[int]:
    """Indices of the queries to keep, in judging order (see module docstring)."""
    if sample is None:
        return list(range(n))
    if sample < 1:
        raise ConfigError(f"--sample must be at least 1, got {sample}")
    size = min(sample, n)
    p = None
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)
        p = w / w.sum()
    return [int(i) for i in rng.choice(n, size=size, replace=False, p=p)]


def dataset_queries(ds: Dataset, *, sample: int | None, rng: np.random.Generator) -> QuerySet:
    """The dataset's queries (those of its split), optionally a uniform sample."""
    idx = sample_indices(len(ds.queries), sample=sample, rng=rng)
    qs = tuple(SourceQuery(ds.queries.ids[i], ds.queries.texts[i], "dataset", metadata=_need(ds.queries.metadata[i]))
               for i in idx)
    return QuerySet(qs, {"kind": "dataset", "name": ds.name, "split": ds.split,
                         "counts": {"available": len(ds.queries), "sampled": len(qs)},
                         "sample": sample})


def _need(metadata: Mapping[str, Any]) -> dict[str, str]:
    """The fields of a query's metadata that describe the need behind it (kept for the judge)."""
    return {k: str(v) for k, v in metadata.items() if k in ("description", "narrative", "need") and v}


def synthetic_queries(ds: Dataset, *, sample: int | None, rng: np.random.Generator) -> QuerySet:
    """A synthetic set's queries for review: each starts ``pending``; its metadata keeps the
    documents it was written from (the set's own positive judgments) for the reviewer."""
    idx = sample_indices(len(ds.queries), sample=sample, rng=rng)
    qs = []
    for i in idx:
        qid = ds.queries.ids[i]
        written_from = sorted(d for d, g in ds.qrels.get(qid).items() if g > 0)
        meta = {k: v for k, v in dict(ds.queries.metadata[i]).items() if isinstance(v, (str, int, float, bool))}
        qs.append(SourceQuery(qid, ds.queries.texts[i], "synthetic", status="pending",
                              metadata={**meta, "written_from": written_from}))
    return QuerySet(tuple(qs), {"kind": "synthetic", "name": ds.name, "split": ds.split,
                                "counts": {"available": len(ds.queries), "sampled": len(qs)},
                                "sample": sample})


def read_query_log(path: str | os.PathLike[str]) -> tuple[list[tuple[str, int, int]], dict[str, int]]:
    """Parse a query log into ``(text, count, line)`` rows and line counts.

    JSONL when the suffix is ``.jsonl``/``.ndjson`` or the first non-blank line starts
    with ``{``; plain text (one query per line) otherwise. Bad rows raise
    :class:`~bakeoff.errors.InputError` naming file, line and field.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=p) from None
    except IsADirectoryError:
        raise InputError("is a folder, expected a query log file", path=p) from None
    rows: list[tuple[str, int, int]] = []
    blank = 0
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    first = next((ln.strip() for ln in lines if ln.strip()), b"")
    jsonl = p.suffix.lower() in (".jsonl", ".ndjson") or first.startswith(b"{")
    for no, bline in enumerate(lines, start=1):
        try:
            line = bline.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            raise InputError(f"not valid UTF-8 (byte {exc.start} of the line)", path=p, line=no) from None
        if no == 1:
            line = line.lstrip("\ufeff")
        if not line.strip():
            blank += 1
            continue
        if not jsonl:
            rows.append((line.strip(), 1, no))
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=p, line=no) from None
        if not isinstance(obj, dict):
            raise InputError("expected a JSON object", path=p, line=no)
        key = next((k for k in ("query", "text", "q") if k in obj), None)
        if key is None or not isinstance(obj[key], str):
            raise InputError("missing or not a string", path=p, line=no, field="query")
        count = obj.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InputError(f"must be a positive integer, got {count!r}", path=p, line=no, field="count")
        rows.append((obj[key].strip(), count, no))
    if not rows:
        raise InputError("no queries in the log", path=p)
    return rows, {"lines": len(lines), "blank_lines": blank, "rows": len(rows)}


def log_queries(path: str | os.PathLike[str], *, sample: int | None, weighted: bool,
                rng: np.random.Generator) -> QuerySet:
    """Queries from a log: deduplicated after normalisation, counted, sampled (module docstring)."""
    rows, counts = read_query_log(path)
    groups: dict[str, Counter[str]] = {}
    order: list[str] = []
    empty = 0
    for text, count, _line in rows:
        key = normalise(text)
        if not key:
            empty += count
            continue
        if key not in groups:
            groups[key] = Counter()
            order.append(key)
        groups[key][text] += count
    if not order:
        raise InputError("every query is empty after normalisation", path=path)
    totals = [sum(groups[k].values()) for k in order]
    idx = sample_indices(len(order), sample=sample, rng=rng, weights=totals if weighted else None)
    qs = []
    for i in idx:
        key = order[i]
        surface = max(groups[key].items(), key=lambda kv: kv[1])[0]  # most frequent; first seen on ties
        qid = "log-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
        qs.append(SourceQuery(qid, surface, "log", count=totals[i],
                              metadata={"variants": len(groups[key])} if len(groups[key]) > 1 else {}))
    surface_forms = sum(len(g) for g in groups.values())
    info = {
        "kind": "log", "path": str(Path(path).resolve()), "sample": sample,
        "sampling": "frequency-weighted" if weighted else "uniform",
        "counts": {**counts, "total_count": sum(c for _t, c, _l in rows), "distinct_texts": surface_forms,
                   "unique_after_normalisation": len(order), "merged_by_normalisation": surface_forms - len(order),
                   "empty_after_normalisation": empty, "sampled": len(qs),
                   "sampled_count": sum(q.count for q in qs)},
    }
    return QuerySet(tuple(qs), info)
