"""TREC run and qrels files, read the way trec_eval reads them (usnistgov/trec_eval 10.0,
``get_trec_results.c`` and ``get_qrels.c``), with one line naming file, line and field for bad input.

**Run** lines are ``qid Q0 docid rank score tag``: fields separated by runs of ASCII
whitespace (bytes ``\\t \\n \\v \\f \\r`` and space, C's ``isspace``, as trec_eval);
columns after the sixth are ignored (trec_eval ignores them; counted in
:attr:`TrecReadReport.extra_columns`); the rank column is ignored, the order comes
from the scores through :func:`bakeoff.data.ranking.rank_rows` (the tie rule).
A document twice for one query is an error naming both lines (trec_eval stops too).

**Qrels** are TREC (``qid iter docid grade``, exactly 4 fields) or BEIR TSV
(``query-id corpus-id score``, tab-separated, header optional). The format is
decided by the first line that is neither blank nor a comment: a header whose first
field is ``query-id``/``query_id``/``qid``/``query``, or 3 fields, means BEIR; 4
fields mean TREC. Grades are integers (``1.0`` reads as 1) from ``-GRADE_LIMIT`` to
``GRADE_LIMIT`` (1000: the exponential gain ``2**grade - 1`` and sums of it stay finite
float64 values); a negative grade is "judged as unjudged" as in trec_eval. A judgment repeated for one (query, document)
is an error naming both lines; with ``allow_duplicates=True`` the last one wins and
the overrides are counted in :attr:`TrecReadReport.duplicate_judgments`. A
``bakeoff label`` SQLite database (recognised by its header) gives its resolved
human judgments.

**Both**: a line whose first non-blank character is ``#`` is a comment; blank lines
are skipped (both counted); a comment never decides the format. Files are UTF-8 (a
BOM is dropped). **Scores** are decimal numbers or ``±inf``/``±infinity`` (ordered as
numbers); NaN, and a decimal beyond float64's range (``1e400``, which would silently
become infinite), are errors naming file and line. **Ids** that the TREC format cannot
carry are refused: control characters (NUL, C0, DEL, C1) and Unicode whitespace
(:func:`bakeoff.data.ids.check_id`, the one id rule), so whatever bakeoff reads it can also write and
read back.

Speed: a well-formed run (one kind of separator, used singly; no comments) is parsed
by pyarrow's multi-threaded CSV reader when pyarrow is installed, and checked for
everything above with vectorised operations; any doubt (or any error) falls back
to the line-by-line reader, which defines the behaviour and words the error.
"""

from __future__ import annotations

import io
import math
import os
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .ids import check_id
from .judgments import GRADE_LIMIT, is_sqlite, read_judgments
from .model import Qrels, Run
from .ranking import rank_rows

__all__ = ["RunTable", "TrecReadReport", "hash_strings", "pair_keys", "read_qrels", "read_run_table",
           "read_trec_run", "string_list_layout"]

PathLike = str | os.PathLike[str]

RUN_FIELDS = ("query id", "Q0", "doc id", "rank", "score", "tag")
TREC_QRELS_FIELDS = ("query id", "iteration", "doc id", "grade")
BEIR_QRELS_FIELDS = ("query-id", "corpus-id", "score")
_BEIR_HEADER = ("query-id", "query_id", "qid", "query")

_NUMBER = re.compile(rb"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf(?:inity)?)", re.IGNORECASE)
_INF = re.compile(rb"[+-]?inf(?:inity)?", re.IGNORECASE)
_NAN = re.compile(rb"[+-]?nan", re.IGNORECASE)


@dataclass
class TrecReadReport:
    """What reading skipped or overrode; :meth:`warnings` words the counts."""

    comment_lines: int = 0
    blank_lines: int = 0
    extra_columns: int = 0
    duplicate_judgments: int = 0
    lines: int = 0

    def warnings(self, what: str = "file") -> list[str]:
        out = []
        if self.duplicate_judgments:
            out.append(f"{what}: {self.duplicate_judgments} repeated judgments overridden (the last one wins)")
        if self.extra_columns:
            out.append(f"{what}: {self.extra_columns} lines have columns after the sixth; ignored (as trec_eval)")
        return out


def _read_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except IsADirectoryError:
        raise InputError("is a folder, expected a file", path=path) from None
    except PermissionError:
        raise InputError("permission denied", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from None
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data


def _text(tok: bytes, path: Path, no: int, name: str) -> str:
    try:
        s = tok.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte {exc.start} of the field); re-encode the file as UTF-8",
                         path=path, line=no, field=name) from None
    return s


def _id(tok: bytes, path: Path, no: int, name: str) -> str:
    return check_id(_text(tok, path, no, name), path=path, line=no, field=name)


def _score(tok: bytes, path: Path, no: int) -> float:
    if _NUMBER.fullmatch(tok):
        value = float(tok)
        if math.isinf(value) and not _INF.fullmatch(tok):
            raise InputError(f"score {tok.decode()} is beyond float64's range (about ±1.8e308); "
                             "write inf or -inf if that is meant", path=path, line=no, field="score")
        return value
    if _NAN.fullmatch(tok):
        raise InputError("score is NaN; NaN cannot be ranked (fix the system that wrote this run)",
                         path=path, line=no, field="score")
    raise InputError(f"score must be a number, got {_text(tok, path, no, 'score')!r}",
                     path=path, line=no, field="score")


_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_MIX = np.uint64(0x9E3779B97F4A7C15)


def hash_strings(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """64-bit FNV-1a of each string of an Arrow-style layout (``data[offsets[i]:offsets[i+1]]``
    are the UTF-8 bytes of string ``i``), vectorised: one pass per byte position over the
    strings at least that long, so the work is the total number of bytes. Used to find
    candidate duplicates and matches, which are then confirmed on the strings themselves."""
    n = offsets.size - 1
    h = np.full(n, _FNV_OFFSET, dtype=np.uint64)
    if n == 0:
        return h
    starts = offsets[:-1].astype(np.int64)
    lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    shortest, longest = int(lengths.min()), int(lengths.max())
    with np.errstate(over="ignore"):
        if shortest == longest:  # ids of one length (common): strided columns, no gathering
            first = int(starts[0])
            matrix = data[first: first + n * longest].reshape(n, longest)
            for j in range(longest):
                h ^= matrix[:, j]
                h *= _FNV_PRIME
            return h
        for j in range(shortest):
            h ^= data[starts + j]
            h *= _FNV_PRIME
        by_len = np.argsort(-lengths, kind="stable")
        sorted_len = lengths[by_len]
        for j in range(shortest, longest):
            active = by_len[: int(np.searchsorted(-sorted_len, -j, side="left"))]
            h[active] = (h[active] ^ data[starts[active] + j].astype(np.uint64)) * _FNV_PRIME
    return h


def _arrow_layout(strings: Any) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, bytes) of a pyarrow StringArray without copying."""
    import pyarrow as pa

    _validity, offs, values = strings.buffers()
    width = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    off = np.frombuffer(offs, dtype=width)[strings.offset: strings.offset + len(strings) + 1]
    data = np.frombuffer(values, dtype=np.uint8) if values is not None else np.zeros(0, dtype=np.uint8)
    return off, data


def string_list_layout(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, bytes) of a list of str encoded as UTF-8: string ``i`` is ``bytes[offsets[i]:offsets[i + 1]]``,
    the layout :func:`hash_strings` reads (``offsets`` int64, one longer than ``strings``)."""
    encoded = [x.encode("utf-8") for x in strings]
    off = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=off[1:])
    return off, np.frombuffer(b"".join(encoded), dtype=np.uint8)


def pair_keys(query: np.ndarray, doc_hash: np.ndarray) -> np.ndarray:
    """One uint64 per (query code, doc hash) pair: equal pairs give equal keys."""
    with np.errstate(over="ignore"):
        return doc_hash ^ (query.astype(np.uint64) * _MIX + np.uint64(1))


@dataclass(frozen=True, eq=False)
class RunTable:
    """A run as columns, in file order: row ``i`` is query ``query_ids[query[i]]``, document
    ``docs[i]``, score ``scores[i]``. ``query_ids`` are in first-appearance order; ``docs``
    is a list of str, or a pyarrow string array when the fast reader made the table (use
    :meth:`doc_ids` to read it).

    The compact form that :func:`bakeoff.metrics.score_run` scores without making one Python
    object per line; :meth:`to_run` gives the :class:`~bakeoff.data.model.Run`."""

    name: str
    query_ids: tuple[str, ...]
    query: np.ndarray
    docs: Any
    scores: np.ndarray
    report: TrecReadReport = field(default_factory=TrecReadReport)

    def __len__(self) -> int:
        return int(self.scores.shape[0])

    def doc_ids(self, rows: np.ndarray) -> list[str]:
        """The doc ids of ``rows``."""
        if isinstance(self.docs, list):
            docs = self.docs
            return [docs[i] for i in np.asarray(rows).tolist()]
        offsets, data = _arrow_layout(self.docs)
        return [data[offsets[i]: offsets[i + 1]].tobytes().decode("utf-8") for i in np.asarray(rows).tolist()]

    @cached_property
    def doc_hash(self) -> np.ndarray:
        """:func:`hash_strings` of every row's doc id."""
        layout = string_list_layout(self.docs) if isinstance(self.docs, list) else _arrow_layout(self.docs)
        return hash_strings(*layout)

    def order(self) -> np.ndarray:
        """Row indices in ranking order: query by query (in :attr:`query_ids` order), each by the tie rule."""
        return rank_rows(self.query, self.scores, self.doc_ids)

    def to_run(self) -> Run:
        order = self.order()
        q = self.query[order]
        bounds = np.flatnonzero(q[1:] != q[:-1]) + 1
        starts = [0, *bounds.tolist()]
        ends = [*bounds.tolist(), int(order.size)]
        pairs = list(zip(self.doc_ids(order), self.scores[order].tolist(), strict=True))
        ranked = {self.query_ids[int(q[a])]: tuple(pairs[a:b]) for a, b in zip(starts, ends, strict=True)
                  } if order.size else {}
        return Run.from_ranked(self.name, ranked)


def read_trec_run(path: PathLike, *, name: str | None = None) -> Run:
    """Read a TREC run into a :class:`~bakeoff.data.model.Run` (see the module docstring)."""
    return read_run_table(path, name=name).to_run()


def read_run_table(path: PathLike, *, name: str | None = None, fast: bool = True) -> RunTable:
    """Read a TREC run into a :class:`RunTable` (see the module docstring). ``fast=False``
    forces the line-by-line reader (the reference the fast path is tested against)."""
    path = Path(path)
    data = _read_bytes(path)
    name = name or path.stem
    table = _run_fast(data, name) if fast else None
    return table if table is not None else _run_lines(data, path, name)


def _run_lines(data: bytes, path: Path, name: str) -> RunTable:
    report = TrecReadReport()
    qindex: dict[str, int] = {}
    qcol, scol = array("q"), array("d")
    docs: list[str] = []
    seen: dict[tuple[int, str], int] = {}
    # ASCII without control characters (CRLF allowed): ids need no per-field check
    plain = _plain_ascii(data.replace(b"\r\n", b"\n") if b"\r" in data else data, allowed_controls=b"\t\n")
    no = 0
    for no, raw in enumerate(io.BytesIO(data), start=1):
        cols = raw.split()
        if len(cols) != 6 or cols[0][:1] == b"#":
            if not cols:
                report.blank_lines += 1
                continue
            if cols[0].startswith(b"#"):
                report.comment_lines += 1
                continue
            if len(cols) < 6:
                raise InputError(f"expected 6 columns (qid Q0 docid rank score tag), got {len(cols)}",
                                 path=path, line=no, field=RUN_FIELDS[len(cols)])
            report.extra_columns += 1
        if plain:
            qid, did = cols[0].decode(), cols[2].decode()
        else:
            qid, did = _id(cols[0], path, no, "query id"), _id(cols[2], path, no, "doc id")
        tok = cols[4]
        try:
            score = float(tok)
        except ValueError:
            score = _score(tok, path, no)
        if math.isnan(score) or b"_" in tok or math.isinf(score):
            # NaN, digits Python's float() accepts but trec_eval does not, or an infinity (spelt, or an overflow)
            score = _score(tok, path, no)
        q = qindex.setdefault(qid, len(qindex))
        first = seen.setdefault((q, did), no)
        if first != no:
            raise InputError(f"document {did!r} appears twice for query {qid!r} (lines {first} and {no})",
                             path=path, line=no, field="doc id")
        qcol.append(q)
        docs.append(did)
        scol.append(score)
    report.lines = no
    return RunTable(name, tuple(qindex), np.frombuffer(qcol, dtype=np.int64), docs,
                    np.frombuffer(scol, dtype=np.float64), report)


def _plain_ascii(data: bytes, *, allowed_controls: bytes) -> bool:
    """True when ``data`` is ASCII without control characters but ``allowed_controls``: the control
    bytes are counted block by block (cache-sized numpy passes) and compared with the allowed ones'."""
    if not data.isascii() or b"\x7f" in data:
        return False
    arr = np.frombuffer(data, dtype=np.uint8)
    block = 1 << 22
    controls = sum(int(np.count_nonzero(arr[i: i + block] < 32)) for i in range(0, arr.size, block))
    return controls == sum(data.count(bytes([c])) for c in allowed_controls)


#: Runs smaller than this (about 50,000 lines) are read line by line (pyarrow's import alone takes longer).
_FAST_MIN_BYTES = 2 << 20


def _empty_fields(data: bytes, sep: int) -> bool:
    """True when a line of ``data`` has an empty field: a separator doubled, or at the start or end
    of a line (blank lines are fine). Vectorised, block by block."""
    if data[:1] == bytes([sep]) or data[-1:] == bytes([sep]):
        return True
    arr = np.frombuffer(data, dtype=np.uint8)
    block = 1 << 22
    for i in range(0, arr.size, block):
        b = arr[max(0, i - 1): i + block]
        s, n = b == sep, b == 10
        if (s[1:] & (s[:-1] | n[:-1])).any() or (n[1:] & s[:-1]).any():
            return True
    return False


def _run_fast(data: bytes, name: str) -> RunTable | None:
    """pyarrow's multi-threaded CSV reader on a run it can split exactly as trec_eval does;
    ``None`` (use the line reader, which words any error) when pyarrow is missing or the file
    has anything unusual: not plain ASCII, comments, an empty field (doubled, leading or
    trailing separators), a column count other than 6, a NaN or a repeated document."""
    if len(data) < _FAST_MIN_BYTES:
        return None  # below this, importing pyarrow costs more than reading line by line
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:
        return None
    head = data[: data.find(b"\n")] if b"\n" in data else data
    sep = b"\t" if b"\t" in head else b" "
    if not _plain_ascii(data, allowed_controls=b"\n\t" if sep == b"\t" else b"\n"):
        return None  # (a space-separated file with a tab is not plain here either)
    if sep == b"\t" and b" " in data:
        return None
    if _empty_fields(data, sep[0]):
        return None
    names = ["q", "i", "d", "r", "s", "t"]
    try:
        table = pacsv.read_csv(
            pa.py_buffer(data),
            read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 24),
            parse_options=pacsv.ParseOptions(delimiter=sep.decode(), quote_char=False, escape_char=False,
                                             newlines_in_values=False, ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(column_types={"q": pa.string(), "d": pa.string(), "s": pa.float64()},
                                                 include_columns=["q", "d", "s"], null_values=[],
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    n = table.num_rows
    if n == 0 or table.column("s").null_count:
        return None
    scores = np.concatenate([_values_of(c, np.float64) for c in table.column("s").chunks])
    if np.isnan(scores).any():
        return None
    if np.isinf(scores).any() and not _spelt_infinities(data, sep, np.flatnonzero(np.isinf(scores))):
        return None  # a decimal beyond float64's range read as infinite: the line reader words the error
    qenc = _one_array(table.column("q")).dictionary_encode()
    query_ids = tuple(qenc.dictionary.to_pylist())
    if any(q.startswith("#") for q in query_ids):
        return None  # comment lines: the line reader skips and counts them
    docs = _one_array(table.column("d"))
    query = _codes(qenc)
    run = RunTable(name, query_ids, query, docs, scores,
                   TrecReadReport(lines=data.count(b"\n") + (not data.endswith(b"\n"))))
    keys = np.sort(pair_keys(query, run.doc_hash))
    if (keys[1:] == keys[:-1]).any():
        return None  # a repeated document (or a hash collision): the line reader decides and words it
    return run


def _spelt_infinities(data: bytes, sep: bytes, rows: np.ndarray) -> bool:
    """Whether the score field of each of ``rows`` (0-based data rows, blank lines skipped as the
    fast reader skips them) is spelt ``inf``/``infinity``, not a decimal that overflowed."""
    wanted = set(rows.tolist())
    for row, line in enumerate(line for line in data.split(b"\n") if line):
        if row in wanted and not _INF.fullmatch(line.split(sep)[4].strip()):
            return False
    return True


def _one_array(column: Any) -> Any:
    """One string array from a chunked column (64-bit offsets past 2 GiB of text)."""
    import pyarrow as pa

    try:
        return column.combine_chunks()
    except (pa.ArrowInvalid, pa.ArrowCapacityError):  # more than 2 GiB of ids: 32-bit offsets overflow
        return column.cast(pa.large_string()).combine_chunks()


def _values_of(arr: Any, dtype: Any) -> np.ndarray:
    """The values of a null-free pyarrow numeric array, read from its buffer (``to_numpy`` would
    import pandas)."""
    return np.frombuffer(arr.buffers()[1], dtype=dtype)[arr.offset: arr.offset + len(arr)]


def _codes(enc: Any) -> np.ndarray:
    """The int64 codes of a pyarrow DictionaryArray."""
    return _values_of(enc.indices, np.dtype(f"int{enc.indices.type.bit_width}")).astype(np.int64)


def read_qrels(path: PathLike, *, allow_duplicates: bool = False, report: TrecReadReport | None = None) -> Qrels:
    """Read judgments: TREC qrels, BEIR TSV or a ``bakeoff label`` database (see the module docstring)."""
    path = Path(path)
    if is_sqlite(path):
        return read_judgments(path).qrels
    report = report if report is not None else TrecReadReport()
    data = _read_bytes(path)
    out: dict[str, dict[str, int]] = {}
    fmt: str | None = None
    # ASCII with no control character but tab and newline (CRLF allowed): no id can hold a bad character
    plain = _plain_ascii(data.replace(b"\r\n", b"\n") if b"\r" in data else data, allowed_controls=b"\t\n")
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    no = 0
    for no, raw in enumerate(lines, start=1):
        tabbed = b"\t" in raw
        cols = [c.strip(b" \r") for c in raw.split(b"\t")] if tabbed else raw.split()
        if fmt == "trec" and plain and len(cols) == 4 and not tabbed and cols[0][:1] != b"#":
            # the common line, checked by the file-wide test above: no per-field checks needed
            qid, did, gtok = cols[0].decode(), cols[2].decode(), cols[3]
        else:
            if not raw.strip():
                report.blank_lines += 1
                continue
            if raw.lstrip().startswith(b"#"):
                report.comment_lines += 1
                continue
            if fmt is None:
                if cols[0].decode("utf-8", "replace").lower() in _BEIR_HEADER:
                    fmt = "beir"
                    continue
                fmt = "trec" if len(cols) == 4 else "beir"
            if fmt == "trec":
                if len(cols) != 4:
                    raise InputError(f"expected 4 columns (qid iter docid grade), got {len(cols)}",
                                     path=path, line=no, field=TREC_QRELS_FIELDS[min(len(cols), 3)])
                qtok, dtok, gtok = cols[0], cols[2], cols[3]
            else:
                if len(cols) != 3:
                    raise InputError(f"expected 3 columns (query-id corpus-id score), got {len(cols)}",
                                     path=path, line=no, field=BEIR_QRELS_FIELDS[min(len(cols), 2)])
                qtok, dtok, gtok = cols
            if plain and qtok and dtok and not (tabbed and (b" " in qtok or b" " in dtok)):
                qid, did = qtok.decode(), dtok.decode()
            else:
                qid, did = _id(qtok, path, no, "query id"), _id(dtok, path, no, "doc id")
        grade = int(gtok) if gtok.isdigit() and len(gtok) < 4 else _grade(gtok, path, no)
        judged = out.get(qid)
        if judged is None:
            judged = out[qid] = {}
        elif did in judged:
            if not allow_duplicates:
                first = _first_line(lines[: no - 1], qid, did)
                raise InputError(f"query {qid!r}, document {did!r} is judged twice (lines {first} and {no}); "
                                 "fix the file, or allow repeats (the last one wins)",
                                 path=path, line=no, field="doc id")
            report.duplicate_judgments += 1
        judged[did] = grade
    report.lines = no
    if not out:
        raise InputError("no judgments", path=path)
    return Qrels(out)


def _first_line(lines: Sequence[bytes], qid: str, did: str) -> int:
    """1-based number of the first of ``lines`` judging (qid, did) (error path only)."""
    q, d = qid.encode(), did.encode()
    for no, raw in enumerate(lines, start=1):
        cols = [c.strip(b" \r") for c in raw.split(b"\t")] if b"\t" in raw else raw.split()
        if len(cols) >= 3 and cols[0] == q and cols[-2] == d:
            return no
    return 0  # pragma: no cover - the caller saw it


def _grade(tok: bytes, path: Path, no: int) -> int:
    try:
        value = float(tok) if _NUMBER.fullmatch(tok) else None
    except ValueError:  # pragma: no cover - the pattern only admits numbers
        value = None
    if value is None or not value.is_integer():
        raise InputError(f"grade must be an integer, got {_text(tok, path, no, 'grade')!r}",
                         path=path, line=no, field="grade")
    if abs(value) > GRADE_LIMIT:
        raise InputError(f"grade {tok.decode()} is out of range (-{GRADE_LIMIT} to {GRADE_LIMIT})",
                         path=path, line=no, field="grade")
    return int(value)
