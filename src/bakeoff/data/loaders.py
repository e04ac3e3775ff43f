"""Readers: BEIR folders, TREC qrels/runs, JSONL/CSV/Parquet records, text folders, ir_datasets.

Every reader streams its file line by line where the format allows, and turns
bad input into one :class:`~bakeoff.errors.InputError` naming file, line and
field. Conditions where continuing is right (duplicates when deduplicating,
short documents dropped, judgments for documents missing from the corpus,
queries without judgments) are counted in :class:`LoadReport` and logged as
warnings by the caller.

:func:`open_corpus` is the one corpus opener: it decides a corpus's format once (folder, BEIR
``corpus.jsonl``, records) and reads it in the same pass. Commands and modules open datasets through
:func:`bakeoff.data.datasets.open_dataset`, which calls one loader per source kind (:func:`load_beir`,
:func:`load_files`, :func:`load_ir_datasets`) and adds the search mode.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, MissingDependencyError
from .clean import CleanOptions
from .extract import SUFFIXES, ExtractionError, extract
from .ids import check_id, folder_files
from .judgments import is_sqlite, read_judgments
from .model import Corpus, Dataset, Qrels, Queries, Query
from .trec import read_qrels, read_trec_run  # the TREC readers live in .trec (trec_eval's rules)

__all__ = [
    "CorpusBuilder",
    "FieldMap",
    "LoadReport",
    "attach",
    "beir_qrels_path",
    "iter_records",
    "json_lines",
    "load_beir",
    "load_files",
    "load_ir_datasets",
    "open_corpus",
    "read_beir_corpus",
    "read_beir_queries",
    "read_folder",
    "read_qrels",
    "read_records",
    "read_trec_run",
    "text_lines",
]

PathLike = str | os.PathLike[str]


@dataclass
class LoadReport:
    """Counts of what loading skipped or flagged; ``warnings()`` renders them as lines."""

    duplicate_ids: int = 0
    short_dropped: int = 0
    qrels_docs_missing: int = 0
    qrels_docs_missing_example: str | None = None
    queries_without_judgments: int = 0
    judged_queries_missing: int = 0
    empty_documents: int = 0
    empty_documents_example: str | None = None
    #: a folder's files that are not documents (other types), and those whose text cannot be extracted
    #: (``"<file>: <reason>"``)
    other_files: list[str] = field(default_factory=list)
    unreadable_files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def warnings(self) -> list[str]:
        out = [f"{x}; skipped" for x in self.unreadable_files]
        if self.other_files:
            out.append(f"{len(self.other_files)} files of other types skipped (e.g. {self.other_files[0]}); "
                       f"documents are {', '.join(sorted(SUFFIXES))}")
        if self.empty_documents:
            out.append(f"{self.empty_documents} documents have no text nor title (e.g. {self.empty_documents_example!r}); "
                       "text arms can never retrieve them")
        if self.duplicate_ids:
            out.append(f"dropped {self.duplicate_ids} documents with a duplicate id (kept the first)")
        if self.short_dropped:
            out.append(f"dropped {self.short_dropped} documents shorter than the minimum length")
        if self.qrels_docs_missing:
            out.append(
                f"{self.qrels_docs_missing} judgments name documents absent from the corpus "
                f"(e.g. {self.qrels_docs_missing_example!r}); they stay relevant but can never be retrieved"
            )
        if self.queries_without_judgments:
            out.append(
                f"{self.queries_without_judgments} queries have no relevant judgment in this split; "
                "they are excluded from every mean"
            )
        if self.judged_queries_missing:
            out.append(f"{self.judged_queries_missing} judged query ids are absent from the queries file")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "duplicate_ids": self.duplicate_ids,
            "short_dropped": self.short_dropped,
            "qrels_docs_missing": self.qrels_docs_missing,
            "queries_without_judgments": self.queries_without_judgments,
            "judged_queries_missing": self.judged_queries_missing,
            "empty_documents": self.empty_documents,
        }


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, text) of a UTF-8 file, each line with its line ending (a leading BOM dropped).

    A missing file, a folder, an unreadable file or bytes that are not UTF-8 are an
    :class:`~bakeoff.errors.InputError` naming the file (and the line)."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed by the `with fh:` below; opened apart to name each failure
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except IsADirectoryError:
        raise InputError("is a folder, expected a file", path=path) from None
    except OSError as exc:  # permissions, symlink loops, a FIFO that fails ...
        raise InputError(f"cannot read ({exc.strerror or type(exc).__name__})", path=path) from None
    with fh:
        no = 0
        while True:
            try:
                raw = fh.readline()
            except OSError as exc:  # an I/O error, or a special file that cannot be read
                raise InputError(f"cannot read ({exc.strerror or type(exc).__name__})", path=path,
                                 line=no + 1) from None
            if not raw:
                return
            no += 1
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"not valid UTF-8 (byte {exc.start} of the line); re-encode the file as UTF-8",
                    path=path,
                    line=no,
                ) from None
            if no == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield no, text


def json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (1-based line number, object) of a JSONL file, blank lines skipped; a line that is not one JSON
    object is an :class:`~bakeoff.errors.InputError` naming file and line."""
    for no, text in text_lines(path):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=no) from None
        except RecursionError:
            raise InputError("JSON nested too deeply to read", path=path, line=no) from None
        if not isinstance(obj, dict):
            raise InputError("expected a JSON object", path=path, line=no)
        yield no, obj


def _field_str(obj: Mapping[str, Any], key: str, *, path: Path, line: int, required: bool = True) -> str:
    if key not in obj or obj[key] is None:
        if required:
            raise InputError("missing", path=path, line=line, field=key)
        return ""
    value = obj[key]
    if isinstance(value, (dict, list)):
        raise InputError(f"expected a string, got {type(value).__name__}", path=path, line=line, field=key)
    return str(value)


class CorpusBuilder:
    """Accumulates documents read from ``path`` into a :class:`~bakeoff.data.model.Corpus`, applying
    :class:`~bakeoff.data.clean.CleanOptions` and counting what it drops in ``report``.

    :meth:`add` checks the id (:func:`~bakeoff.data.ids.check_id`); a repeated id is an InputError naming
    both lines, or with ``dedupe`` the first is kept (``duplicate_ids``); cleaned text shorter than
    ``min_chars`` is dropped (``short_dropped``); a document with neither text nor title is kept and counted
    (``empty_documents``). :meth:`build` refuses an empty corpus."""

    def __init__(self, path: Path, clean: CleanOptions, report: LoadReport) -> None:
        self.path, self.clean, self.report = path, clean, report
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.titles: list[str] = []
        self.meta: list[Mapping[str, Any]] = []
        self.first_line: dict[str, int] = {}

    def add(self, doc_id: str, title: str, text: str, meta: Mapping[str, Any], line: int, *,
            field: str = "id") -> None:
        check_id(doc_id, path=self.path, line=line, field=field)
        if doc_id in self.first_line:
            if not self.clean.dedupe:
                raise InputError(
                    f"duplicate document id {doc_id!r} (first on line {self.first_line[doc_id]}); "
                    "pass --dedupe to keep the first",
                    path=self.path,
                    line=line,
                    field="id",
                )
            self.report.duplicate_ids += 1
            return
        self.first_line[doc_id] = line
        text = self.clean.text(text)
        title = self.clean.text(title)
        if self.clean.min_chars and len(text) < self.clean.min_chars:
            self.report.short_dropped += 1
            return
        if not text.strip() and not title.strip():
            self.report.empty_documents += 1
            self.report.empty_documents_example = self.report.empty_documents_example or doc_id
        self.ids.append(doc_id)
        self.titles.append(title)
        self.texts.append(text)
        self.meta.append(meta)

    def build(self) -> Corpus:
        if not self.ids:
            why = " after cleaning" if self.first_line else ""
            raise InputError(f"the corpus is empty{why}", path=self.path)
        return Corpus(tuple(self.ids), tuple(self.texts), tuple(self.titles), tuple(self.meta))


def read_beir_corpus(
    path: PathLike, *, clean: CleanOptions = CleanOptions(), report: LoadReport | None = None
) -> Corpus:
    """Read a BEIR ``corpus.jsonl``: ``{"_id", "title", "text", "metadata"}`` per line."""
    path = Path(path)
    b = CorpusBuilder(path, clean, report if report is not None else LoadReport())
    add = _beir_document(b)
    for no, obj in json_lines(path):
        add(no, obj)
    return b.build()


def _beir_document(b: CorpusBuilder) -> Callable[[int, Mapping[str, Any]], None]:
    """Adds one BEIR corpus record (``_id``, ``text``, optional ``title`` and ``metadata``) to ``b``."""
    path = b.path

    def add(no: int, obj: Mapping[str, Any]) -> None:
        doc_id = _field_str(obj, "_id", path=path, line=no)
        text = _field_str(obj, "text", path=path, line=no)
        title = _field_str(obj, "title", path=path, line=no, required=False)
        meta = obj.get("metadata") or {}
        b.add(doc_id, title, text, meta if isinstance(meta, dict) else {"metadata": meta}, no, field="_id")

    return add


def read_beir_queries(path: PathLike) -> Queries:
    """Read a BEIR ``queries.jsonl`` (``_id``, ``text``, optional ``metadata``) or a
    two-column ``id<TAB>text`` TSV."""
    path = Path(path)
    qs: list[Query] = []
    seen: dict[str, int] = {}

    def add(qid: str, text: str, meta: Mapping[str, Any], no: int) -> None:
        check_id(qid, path=path, line=no, field="_id")
        if qid in seen:
            raise InputError(f"duplicate query id {qid!r} (first on line {seen[qid]})", path=path, line=no, field="_id")
        seen[qid] = no
        qs.append(Query(qid, text, meta))

    if path.suffix.lower() in (".tsv", ".txt"):
        for no, line in text_lines(path):
            if not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 2:
                raise InputError("expected 'id<TAB>text'", path=path, line=no, field="text")
            add(cols[0], cols[1], {}, no)
    else:
        for no, obj in json_lines(path):
            meta = obj.get("metadata") or {}
            extra = {k: v for k, v in obj.items() if k not in ("_id", "text", "metadata")}
            add(
                _field_str(obj, "_id", path=path, line=no),
                _field_str(obj, "text", path=path, line=no),
                {**(meta if isinstance(meta, dict) else {}), **extra},
                no,
            )
    if not qs:
        raise InputError("no queries", path=path)
    return Queries.from_queries(qs)


@dataclass(frozen=True, kw_only=True)
class FieldMap:
    """Which record fields make a document.

    ``text`` may name several fields: each non-empty one becomes its own
    document with id ``<id>_<field>`` (e.g. ``case1_facts``, ``case1_conclusion``).
    ``metadata`` lists fields copied into the document metadata (``None`` = all
    remaining fields).
    """

    id: str = "id"
    text: tuple[str, ...] = ("text",)
    title: str | None = "title"
    metadata: tuple[str, ...] | None = None


def iter_records(path: Path, fmt: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (number, record) of a records file in ``fmt``: ``jsonl`` (:func:`json_lines`; the number is the
    line), ``csv`` (CSV/TSV with a header, strictly parsed; the number is the line) or ``parquet`` (the
    1-based row; needs pyarrow)."""
    if fmt == "jsonl":
        yield from json_lines(path)
    elif fmt == "csv":
        yield from _csv_records(path)
    elif fmt == "parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise MissingDependencyError("pyarrow", None, "reading Parquet") from None
        try:
            pf = pq.ParquetFile(path)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for bad files
            raise InputError(f"not a readable Parquet file ({exc})", path=path) from None
        row_no = 0
        for batch in pf.iter_batches(batch_size=4096):
            for rec in batch.to_pylist():
                row_no += 1
                yield row_no, rec
    else:  # pragma: no cover - guarded by caller
        raise ValueError(fmt)


#: Largest CSV field read (characters); Python's default (131,072) is smaller than many documents.
CSV_FIELD_LIMIT = min(sys.maxsize, 2**31 - 1)


@contextlib.contextmanager
def _csv_field_limit(limit: int) -> Iterator[None]:
    old = csv.field_size_limit(limit)
    try:
        yield
    finally:
        csv.field_size_limit(old)


def _csv_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a CSV/TSV file with a header, strictly parsed: a quote left open (which would
    swallow the following rows) or any malformed quoting is an InputError naming the line where
    the bad row starts. Fields may be as long as :data:`CSV_FIELD_LIMIT`."""
    stream = (t for _, t in text_lines(path))
    first = next(stream, "")
    delimiter = "\t" if path.suffix.lower() == ".tsv" or first.count("\t") > first.count(",") else ","
    with _csv_field_limit(CSV_FIELD_LIMIT):
        reader = csv.DictReader(itertools.chain([first], stream), delimiter=delimiter, strict=True)
        try:
            _ = reader.fieldnames  # reads the header
        except csv.Error as exc:
            raise InputError(f"malformed CSV header: {exc}", path=path, line=1) from None
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                msg = str(exc)
                if "end of data" in msg or "EOF" in msg:
                    msg = "a quoted field opened on this line is never closed (it swallows every later line)"
                raise InputError(f"malformed CSV: {msg}", path=path, line=start) from None
            if None in row:
                raise InputError("more columns than the header", path=path, line=start)
            yield start, dict(row)


def read_records(
    path: PathLike,
    *,
    fields: FieldMap = FieldMap(),
    fmt: str | None = None,
    clean: CleanOptions = CleanOptions(),
    report: LoadReport | None = None,
) -> Corpus:
    """Read a corpus from JSONL, CSV/TSV or Parquet records with a :class:`FieldMap`.

    For Parquet the "line" in error messages is the 1-based row number.
    """
    path = Path(path)
    records = iter_records(path, _record_format(path, fmt))
    b = CorpusBuilder(path, clean, report if report is not None else LoadReport())
    add = _mapped_record(b, fields)
    for no, rec in records:
        add(no, rec)
    return b.build()


#: Record formats by file suffix (:func:`read_records`, :func:`open_corpus`).
_RECORD_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "csv",
                    ".parquet": "parquet", ".pq": "parquet"}


def _record_format(path: Path, fmt: str | None = None) -> str:
    """``fmt``, else the format of ``path``'s suffix; an InputError naming the file when it is none of
    ``jsonl``, ``csv``, ``parquet``."""
    fmt = fmt or _RECORD_SUFFIXES.get(path.suffix.lower(), "")
    if fmt not in ("jsonl", "csv", "parquet"):
        raise InputError("unknown record format; use .jsonl, .csv, .tsv or .parquet", path=path)
    return fmt


def _mapped_record(b: CorpusBuilder, fields: FieldMap) -> Callable[[int, Mapping[str, Any]], None]:
    """Adds the document(s) one record makes under ``fields`` (see :class:`FieldMap`) to ``b``."""
    path = b.path
    multi = len(fields.text) > 1
    used = {fields.id, *fields.text, *(() if fields.title is None else (fields.title,))}

    def add(no: int, rec: Mapping[str, Any]) -> None:
        base = _field_str(rec, fields.id, path=path, line=no)
        check_id(base, path=path, line=no, field=fields.id)
        title = _field_str(rec, fields.title, path=path, line=no, required=False) if fields.title else ""
        keys = fields.metadata if fields.metadata is not None else [k for k in rec if k not in used]
        meta = {k: rec[k] for k in keys if k in rec}
        present = [f for f in fields.text if f in rec]
        if not present:
            raise InputError("missing", path=path, line=no, field=fields.text[0])
        for f in fields.text:
            text = _field_str(rec, f, path=path, line=no, required=not multi)
            if multi and not text.strip():
                continue
            b.add(f"{base}_{f}" if multi else base, title, text, {**meta, **({"field": f} if multi else {})}, no,
                  field=fields.id)

    return add


def open_corpus(
    path: PathLike,
    *,
    fields: FieldMap = FieldMap(),
    clean: CleanOptions = CleanOptions(),
    report: LoadReport | None = None,
) -> Corpus:
    """Read a corpus from whatever ``path`` is: the one corpus opener (the format is decided here, once,
    and the file is read in the same pass).

    * a folder holding ``corpus.jsonl``: that BEIR corpus;
    * any other folder: one document per PDF, DOCX, HTML, Markdown or text file, with the ids ``bakeoff ingest
      files`` gives (:func:`read_folder`);
    * a ``.jsonl`` file whose first record has ``_id`` and not ``fields.id``: a BEIR corpus
      (:func:`read_beir_corpus`);
    * else JSONL/CSV/TSV/Parquet records mapped by ``fields`` (:func:`read_records`).

    Bad input is the readers' :class:`~bakeoff.errors.InputError` (file, line, field).
    """
    path = Path(path)
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    if path.is_dir():
        beir = path / "corpus.jsonl"
        if beir.exists():
            return read_beir_corpus(beir, clean=clean, report=report)
        return read_folder(path, clean=clean, report=report)
    fmt = _record_format(path)
    b = CorpusBuilder(path, clean, report if report is not None else LoadReport())
    add = None
    for no, rec in iter_records(path, fmt):
        if add is None:  # the first record decides: BEIR (``_id`` and not the field map's id) or mapped records
            beir_record = path.suffix.lower() == ".jsonl" and "_id" in rec and fields.id not in rec
            add = _beir_document(b) if beir_record else _mapped_record(b, fields)
        add(no, rec)
    return b.build()


def read_folder(
    path: PathLike,
    *,
    clean: CleanOptions = CleanOptions(),
    report: LoadReport | None = None,
) -> Corpus:
    """One document per file below ``path`` (recursive, sorted by relative path), read as
    ``bakeoff ingest files`` reads it, with the same ids.

    The id is the file id of :mod:`bakeoff.data.ids`; text, title and the metadata ``format`` and ``pages``
    come from :func:`bakeoff.data.extract.extract`, and the metadata ``path`` is the original relative path.
    Files of other types, and files whose text cannot be extracted (with the reason), are counted in
    ``report`` and warned about; a symbolic link that leads nowhere is an error.
    """
    root = Path(path)
    report = report if report is not None else LoadReport()
    b = CorpusBuilder(root, clean, report)
    for i, (f, doc_id) in enumerate(folder_files(root).items(), start=1):
        rel = f.relative_to(root).as_posix()
        if f.is_symlink() and not f.exists():
            raise InputError("a symbolic link that leads nowhere (broken, or a loop)", path=f)
        if f.suffix.lower() not in SUFFIXES or not f.is_file():
            report.other_files.append(rel)
            continue
        try:
            got = extract(f)
        except ExtractionError as exc:
            report.unreadable_files.append(f"{f}: {exc}")
            continue
        b.add(doc_id, got.title, got.text, {"path": rel, **got.metadata}, i, field="id")
    return b.build()


def attach(
    corpus: Corpus,
    queries: Queries,
    qrels: Qrels,
    *,
    name: str,
    split: str,
    report: LoadReport | None = None,
    qrels_path: PathLike | None = None,
    other_splits: Mapping[str, Qrels] | None = None,
) -> Dataset:
    """Cross-check queries, judgments and corpus, count problems, build a Dataset.

    The evaluated queries are the judged ones (in queries-file order); query
    ids judged but absent from the queries file, and judgments naming absent
    documents, are counted in ``report``. ``other_splits`` (``{split: qrels}``): the note on the queries left
    out says how many of them another split judges.
    """
    report = report if report is not None else LoadReport()
    human = None
    if qrels_path is not None and is_sqlite(qrels_path):  # human judgments: their queries, corpus checked
        human = read_judgments(qrels_path, corpus_fingerprint=corpus.fingerprint())
        queries, qrels = human.queries, human.qrels
    judged = [q for q in queries.ids if q in qrels]
    report.judged_queries_missing = sum(1 for q in qrels if q not in queries)
    report.queries_without_judgments = sum(
        1 for q in judged if not any(g > 0 for g in qrels[q].values())
    )
    for q in qrels:
        for d in qrels[q]:
            if d not in corpus:
                report.qrels_docs_missing += 1
                report.qrels_docs_missing_example = report.qrels_docs_missing_example or d
    unjudged = len(queries) - len(judged)
    if unjudged:
        note = f"{unjudged} queries in the queries file have no judgments in split {split!r}; not evaluated"
        left = [q for q in queries.ids if q not in qrels]
        elsewhere = [(name, sum(1 for q in left if q in other)) for name, other in sorted((other_splits or {}).items())]
        elsewhere = [(name, n) for name, n in elsewhere if n]
        if elsewhere:
            note += (" (" + ", ".join(f"{n} of them judged in split {name!r}" for name, n in elsewhere)
                     + "; --split chooses the split evaluated)")
        report.notes.append(note)
    info = {"load_report": report.as_dict(), "warnings": report.warnings(), "notes": list(report.notes)}
    if qrels_path is not None:
        info["qrels_path"] = str(qrels_path)
    if human is not None:
        info["provenance"] = dict(human.provenance)
    return Dataset(corpus, queries.subset(judged), qrels, name=name, split=split, info=info)


def beir_qrels_path(root: Path, split: str) -> Path:
    """``root/qrels/<split>.tsv``; an InputError naming the splits present when it is missing."""
    if not root.is_dir():
        raise InputError("not a BEIR folder (expected corpus.jsonl, queries.jsonl, qrels/)", path=root)
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.exists():
        have = sorted(p.stem for p in (root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
        raise InputError(f"no qrels for split {split!r} (have: {', '.join(have) or 'none'})", path=qrels_path)
    return qrels_path


def load_beir(
    path: PathLike,
    *,
    split: str = "test",
    clean: CleanOptions = CleanOptions(),
    report: LoadReport | None = None,
    corpus_file: PathLike | None = None,
    queries_file: PathLike | None = None,
    qrels_file: PathLike | None = None,
) -> Dataset:
    """Load a BEIR folder: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

    ``corpus_file`` (anything :func:`open_corpus` reads) replaces the folder's corpus (a folder without
    ``corpus.jsonl``, e.g. a synthetic set, takes it from there); ``queries_file``/``qrels_file`` replace
    the folder's queries and judgments (e.g. a judgments database)."""
    root = Path(path)
    if qrels_file:
        qrels_path = Path(qrels_file)
        if not qrels_path.exists():
            raise InputError("no such file", path=qrels_path)
    else:
        qrels_path = beir_qrels_path(root, split)
    report = report if report is not None else LoadReport()
    qrels = read_qrels(qrels_path)
    queries = read_beir_queries(queries_file or root / "queries.jsonl")
    corpus = (open_corpus(corpus_file, clean=clean, report=report) if corpus_file is not None
              else read_beir_corpus(root / "corpus.jsonl", clean=clean, report=report))
    others: dict[str, Qrels] = {}
    if not qrels_file and any(q not in qrels for q in queries.ids):  # for the note on the queries left out
        for other in sorted((root / "qrels").glob("*.tsv")):
            if other.stem != split:
                with contextlib.suppress(InputError):  # a broken file of another split is not this run's problem
                    others[other.stem] = read_qrels(other)
    return attach(corpus, queries, qrels, name=root.name, split=split, report=report, qrels_path=qrels_path,
                  other_splits=others)


def load_files(
    corpus: PathLike,
    queries: PathLike,
    qrels: PathLike,
    *,
    fields: FieldMap = FieldMap(),
    clean: CleanOptions = CleanOptions(),
    name: str | None = None,
    split: str = "test",
) -> Dataset:
    """A dataset from three files: the corpus (anything :func:`open_corpus` reads, records mapped by
    ``fields``), the queries (:func:`read_beir_queries`) and the judgments (TREC qrels, or a ``bakeoff
    label`` judgments database). ``name`` defaults to the corpus file's stem."""
    report = LoadReport()
    src = Path(corpus)
    return attach(open_corpus(src, fields=fields, clean=clean, report=report), read_beir_queries(queries),
                  read_qrels(qrels), name=name or src.stem, split=split, report=report, qrels_path=qrels)


def load_ir_datasets(name: str, *, clean: CleanOptions = CleanOptions()) -> Dataset:
    """Load a dataset by its ir_datasets id (e.g. ``beir/scifact/test``).

    Needs the ``ir_datasets`` package and, the first time, network access to
    download the data; offline, the error says so.
    """
    try:
        import ir_datasets
    except ImportError:
        raise MissingDependencyError("ir_datasets", "irds", "loading ir_datasets names") from None
    try:
        ds = ir_datasets.load(name)
    except KeyError:
        raise InputError(f"unknown ir_datasets id {name!r}", path=f"irds:{name}") from None
    report = LoadReport()
    try:
        b = CorpusBuilder(Path(f"irds:{name}"), clean, report)
        for i, doc in enumerate(ds.docs_iter(), start=1):
            title = getattr(doc, "title", "") or ""
            text = getattr(doc, "text", None) or getattr(doc, "body", "") or ""
            b.add(doc.doc_id, title, text, {}, i)
        corpus = b.build()
        queries = Queries.from_queries(
            Query(q.query_id, str(getattr(q, "text", None) or getattr(q, "title", "") or ""))
            for q in ds.queries_iter()
        )
        judg: dict[str, dict[str, int]] = {}
        for qr in ds.qrels_iter():
            judg.setdefault(qr.query_id, {})[qr.doc_id] = int(qr.relevance)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - network/download failures come in many types
        raise InputError(
            f"could not fetch this dataset ({type(exc).__name__}: {str(exc)[:200]}); "
            "ir_datasets downloads on first use and needs network access — use a local BEIR folder offline",
            path=f"irds:{name}",
        ) from None
    return attach(corpus, queries, Qrels(judg), name=name, split=name.rsplit("/", 1)[-1], report=report)
