"""Strict reading of a generated truth: a seeded sample of its kept queries beside their documents, with the
verdicts a person gave them, kept in a labels file so that a query read once is never read again.

    python benchmarks/strict_reads.py TRUTH --data DATA --labels benchmarks/strict_reads/cisi.tsv [-n 30]
        [--seed 7] [--append]

``TRUTH`` is a folder ``bakeoff generate`` or ``bakeoff calibrate`` wrote (``queries.jsonl`` whose queries carry
``metadata.source_doc``; a calibration folder's ``truth/`` is found by itself); ``DATA`` holds the corpus
(``corpus.jsonl``). The sample is ``random.Random(seed).sample(queries, n)`` in file order.

The labels file is a TSV with the header ``doc_id verdict query note``; ``verdict`` is ``answered`` or ``miss``
(``?`` while unread). A verdict belongs to one (document, query text) pair, so a regenerated query is read again
and an unchanged one keeps its verdict across runs, models and sessions: the figure moves only with the queries.

**The rule** (the issue's strict reading): a query is *answered* when its document answers it and it makes
sense to someone who has not seen the document. A *miss*: the document does not answer it (a wrong fact, a
question the text raises but does not settle); it restates the title and the text does not answer it; it is a
pasted or garbled passage; it needs the document to make sense ("the references tabulated in Table I").

Prints the sample as a table (number, leak, verdict, query, the first 200 characters of the title and text) and
``strict: A answered of L read (U unread) of N sampled``. ``--append`` adds the unread pairs to the labels file
with the verdict ``?`` (written atomically), ready to be read. Bad input (a missing file, a bad verdict, a query whose source
document is not in the corpus) stops with one line naming the file and exit status 2, before anything is written.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

FIELDS = ("doc_id", "verdict", "query", "note")
VERDICTS = ("answered", "miss", "?")


def _fail(message: str) -> NoReturn:
    """One line on stderr, exit status 2 (bad input)."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


def read_labels(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    """``{(doc_id, query): row}``; a bad verdict stops with the file, line and field."""
    if not path.exists():
        return {}
    out: dict[tuple[str, str], dict[str, str]] = {}
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t")
        if tuple(reader.fieldnames or ()) != FIELDS:
            _fail(f"{path}:1: header must be {' '.join(FIELDS)} (tab-separated)")
        for i, row in enumerate(reader, 2):
            if row["verdict"] not in VERDICTS:
                _fail(f"{path}:{i}: verdict {row['verdict']!r} is not one of {', '.join(VERDICTS)}")
            out[(row["doc_id"], " ".join(row["query"].split()))] = row
    return out


def write_labels(path: Path, rows: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("truth", type=Path)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--labels", type=Path, required=True)
    ap.add_argument("-n", type=int, default=30)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--append", action="store_true")
    a = ap.parse_args()
    truth = a.truth / "truth" if (a.truth / "truth" / "queries.jsonl").exists() else a.truth
    for need in (a.data / "corpus.jsonl", truth / "queries.jsonl"):
        if not need.is_file():
            _fail(f"{need}: no such file")
    corpus = {}
    with (a.data / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            corpus[str(d["_id"])] = f"{d.get('title') or ''} | {d.get('text') or ''}"
    with (truth / "queries.jsonl").open(encoding="utf-8") as f:
        queries = [json.loads(line) for line in f]
    sample = random.Random(a.seed).sample(queries, min(a.n, len(queries)))
    labels = read_labels(a.labels)
    for q in sample:
        doc = str(q["metadata"]["source_doc"])
        if doc not in corpus:
            _fail(f"{truth / 'queries.jsonl'}: query {q['_id']}: metadata.source_doc {doc!r} is not in "
                  f"{a.data / 'corpus.jsonl'}")
    print(f"{truth}: {len(queries)} kept queries, {len(sample)} sampled (random.Random({a.seed})); labels {a.labels}\n")
    print("| # | leak | verdict | query | source (first 200 characters) | note |")
    print("|---|---|---|---|---|---|")
    counts = {v: 0 for v in VERDICTS}
    unread: list[dict[str, str]] = []
    for i, q in enumerate(sample, 1):
        doc = str(q["metadata"]["source_doc"])
        text = " ".join(q["text"].split())
        row = labels.get((doc, text))
        verdict = row["verdict"] if row else "?"
        counts[verdict] += 1
        if row is None:
            unread.append({"doc_id": doc, "verdict": "?", "query": text, "note": ""})
        src = corpus[doc][:200].replace("|", "\\|").replace("\n", " ")
        note = (row or {}).get("note", "").replace("|", "\\|")
        shown = text.replace("|", "\\|")
        print(f"| {i} | {q['metadata'].get('leak', 0):.2f} | {verdict} | {shown} | {src} | {note} |")
    read = counts["answered"] + counts["miss"]
    print(f"\nstrict: {counts['answered']} answered of {read} read ({counts['?']} unread) of {len(sample)} sampled")
    if a.append and unread:
        rows = list(labels.values()) + [u for u in unread if (u["doc_id"], u["query"]) not in labels]
        write_labels(a.labels, rows)
        print(f"appended {len(unread)} unread pairs to {a.labels}")


if __name__ == "__main__":
    main()
