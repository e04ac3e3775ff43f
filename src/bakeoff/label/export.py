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
  majority, then the lower grade).

The folder has no ``corpus.jsonl``: evaluate with the dataset's own corpus,
``bakeoff run --beir DATASET --queries OUT/queries.jsonl --qrels OUT/qrels/test.tsv``
(or pass the database itself as ``--qrels``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._io import atomic_open, atomic_write_json
from ..data.judgments import read_judgments
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


def export_judgments(db: str | os.PathLike[str], out: str | os.PathLike[str], *, split: str = "test") -> ExportSummary:
    """Write the export folder (module docstring). ``out`` may exist only if empty or an
    earlier export; the database is only read."""
    human = read_judgments(db)
    if not human.qrels.n_judgments():
        raise InputError("no judgments to export yet", path=db)
    target = Path(out)
    if target.exists():
        if not target.is_dir():
            raise InputError("exists and is not a folder", path=target)
        if any(target.iterdir()) and not _is_export(target):
            raise InputError("exists and is not an earlier judgments export; choose another --out", path=target)
    target.parent.mkdir(parents=True, exist_ok=True)
    prov = {**dict(human.provenance), "export": {"at": now(), "split": split,
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
        atomic_write_json(tmp / "provenance.json", prov)
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            os.replace(target, old / "x")
            os.replace(tmp, target)
            shutil.rmtree(old)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportSummary(target, prov)
