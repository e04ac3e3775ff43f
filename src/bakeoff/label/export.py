"""Export a judgments database as files other tools read.

``OUT/`` gets, atomically (built in a temporary sibling folder, then renamed):

* ``qrels/<split>.tsv``: BEIR qrels (``query-id corpus-id score``);
* ``qrels.trec``: TREC qrels (``qid 0 docid grade``);
* ``queries.jsonl``: the judged queries, BEIR style, with the reviewed text; metadata keeps
  ``original_text`` when a reviewer edited it, the source, status, log count, reviewer;
* ``judgments.jsonl``: every annotator's own judgment (grade, note, time), unresolved;
* ``provenance.json``: ``label_kind = "human"``, annotators (counts, first and last
  dates), pool arms and depth, query source, routing, and the conflicts: how many pairs
  had disagreeing grades and how each was resolved (:func:`~bakeoff.data.judgments.resolve_grades`:
  majority, then the lower grade), and the coverage: per query, the pooled pairs judged
  (``coverage.partial``: the queries with pooled documents nobody judged yet, ``{qid:
  {"judged": j, "pooled": n}}``), the pairs still owed a second judgment, and the pairs an
  annotator could not tell (``coverage.cant_tell``; they are in no qrels file).

A partly judged query is exported by default (its unjudged documents are absent from the
qrels, i.e. unjudged, not non-relevant) and listed; ``complete_only=True`` drops such queries
from every file (``coverage.dropped``).

* ``guidelines.json`` (when the database has guidelines): the grade definitions, general
  text and per-query needs the judges saw, with the sha256 of the file they came from.

The folder has no ``corpus.jsonl``: evaluate with the dataset's own corpus,
``bakeoff run --beir DATASET --queries OUT/queries.jsonl --qrels OUT/qrels/test.tsv``
(or pass the database itself as ``--qrels``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._io import atomic_open, atomic_write_json, replace_folder
from ..data.judgments import HumanJudgments, connect_readonly, read_judgments, read_meta, resolve_grades
from ..data.model import Qrels
from ..data.writers import write_beir, write_trec_qrels
from ..errors import InputError
from .store import now

__all__ = ["ExportSummary", "export_judgments"]


@dataclass(frozen=True)
class ExportSummary:
    out: Path
    provenance: dict[str, Any]


def _is_export(folder: Path) -> bool:
    try:
        return json.loads((folder / "provenance.json").read_text("utf-8")).get("label_kind") == "human"
    except (OSError, ValueError, AttributeError):
        return False


def _counts(raw: tuple[tuple[str, str, str, int, str, str], ...], before: dict[str, Any]) -> dict[str, Any]:
    """The provenance counts of the rows kept (as :func:`~bakeoff.data.judgments.read_judgments` counts)."""
    grades: dict[tuple[str, str], list[int]] = {}
    for q, d, _who, g, _n, _at in raw:
        grades.setdefault((q, d), []).append(int(g))
    how = Counter(resolve_grades(gs)[1] for gs in grades.values())
    return {**before, "queries": len({q for q, _ in grades}), "pairs": len(grades), "judgments": len(raw),
            "pairs_judged_twice_or_more": sum(1 for gs in grades.values() if len(gs) > 1),
            "conflicts": how["majority"] + how["lower"], "resolved_by_majority": how["majority"],
            "resolved_by_lower_grade": how["lower"]}


def _guidelines(db: str | os.PathLike[str]) -> dict[str, Any] | None:
    conn = connect_readonly(Path(db))
    try:
        g = read_meta(conn).get("guidelines")
    finally:
        conn.close()
    return dict(g) if isinstance(g, dict) else None


def _cant_tell(db: str | os.PathLike[str]) -> list[dict[str, str]]:
    """The pairs an annotator said "can't tell" for (and has not judged since)."""
    conn = connect_readonly(Path(db))
    try:
        rows = conn.execute(
            "SELECT DISTINCT e.qid, e.doc_id, e.annotator FROM events e WHERE e.kind = 'skip' AND e.note = 'cant_tell' "
            "AND e.undone = 0 AND NOT EXISTS (SELECT 1 FROM judgments j WHERE j.qid = e.qid AND j.doc_id = e.doc_id "
            "AND j.annotator = e.annotator) ORDER BY e.qid, e.doc_id, e.annotator").fetchall()
    finally:
        conn.close()
    return [{"query-id": q, "corpus-id": d, "annotator": a} for q, d, a in rows]


def _coverage(db: str | os.PathLike[str], judged: dict[str, int]) -> tuple[dict[str, dict[str, int]], int]:
    """(partly judged queries ``{qid: {"judged", "pooled"}}``, pairs owed a second judgment)."""
    conn = connect_readonly(Path(db))
    try:
        pooled = dict(conn.execute("SELECT qid, pool_size FROM queries"))
        owed = conn.execute("SELECT coalesce(sum(q.required - j.n), 0) FROM (SELECT qid, doc_id, count(*) AS n "
                            "FROM judgments GROUP BY qid, doc_id) j JOIN queries q ON q.qid = j.qid "
                            "WHERE j.n < q.required").fetchone()[0]
    finally:
        conn.close()
    partial = {q: {"judged": n, "pooled": int(pooled.get(q, 0))} for q, n in judged.items() if n < pooled.get(q, 0)}
    return partial, int(owed)


def export_judgments(db: str | os.PathLike[str], out: str | os.PathLike[str], *, split: str = "test",
                     complete_only: bool = False) -> ExportSummary:
    """Write the export folder (module docstring). ``out`` may exist only if empty or an
    earlier export; the database is only read."""
    human = read_judgments(db)
    if not human.qrels.n_judgments():
        raise InputError("no judgments to export yet", path=db)
    partial, owed = _coverage(db, {q: len(human.qrels[q]) for q in human.qrels})
    dropped = sorted(partial, key=human.queries.position.__getitem__) if complete_only else []
    if dropped:
        keep = [q for q in human.queries.ids if q not in set(dropped)]
        if not keep:
            raise InputError(f"every judged query is only partly judged ({len(dropped)}); nothing to export with "
                             "--complete-only", path=db)
        raw = tuple(r for r in human.raw if r[0] not in set(dropped))
        human = HumanJudgments(Qrels({q: dict(human.qrels[q]) for q in keep}), human.queries.subset(keep),
                               {**human.provenance, "counts": _counts(raw, human.provenance["counts"])}, raw)
    target = Path(out)
    if target.exists():
        if not target.is_dir():
            raise InputError("exists and is not a folder", path=target)
        if any(target.iterdir()) and not _is_export(target):
            raise InputError("exists and is not an earlier judgments export; choose another --out", path=target)
    target.parent.mkdir(parents=True, exist_ok=True)
    coverage = {"queries": len(human.qrels) + len(dropped), "partial": partial, "dropped": dropped,
                "pairs_owed_second_judgment": owed, "cant_tell": _cant_tell(db)}
    guide = _guidelines(db)
    prov = {**dict(human.provenance), "coverage": coverage, "export": {"at": now(), "split": split,
                                                  "files": [f"qrels/{split}.tsv", "qrels.trec", "queries.jsonl",
                                                            "judgments.jsonl", "provenance.json"]}}
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        write_beir(tmp, queries=human.queries, qrels={split: human.qrels})
        write_trec_qrels(human.qrels, tmp / "qrels.trec")
        with atomic_open(tmp / "judgments.jsonl", "w") as fh:
            for qid, doc, who, grade, note, at in human.raw:
                fh.write(json.dumps({"query-id": qid, "corpus-id": doc, "annotator": who, "grade": grade,
                                     "note": note, "judged_at": at}, ensure_ascii=False) + "\n")
        if guide is not None:
            atomic_write_json(tmp / "guidelines.json", guide)
            prov["guidelines"] = {"file": "guidelines.json", "sha256": guide.get("sha256"), "title": guide.get("title")}
            prov["export"]["files"].append("guidelines.json")
        atomic_write_json(tmp / "provenance.json", prov)
        replace_folder(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportSummary(target, prov)
