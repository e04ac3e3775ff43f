"""Every bad input a user can write gets ONE line on stderr, exit code 2, no traceback, nothing written.

The cases are generated from the declared schemas wherever one exists, so a newly declared option
or key is covered without touching this file:

* TOML bake-off files: every key of every table (:class:`bakeoff.runner.config.ConfigFile` and the
  tables below it) with values of the wrong type and out of range, unknown keys and tables;
* every arm type's options (:func:`bakeoff.arms.registry.options_schema`), in TOML ``[[arms]]`` and
  on the command line (``--arm``): wrong type, out of range, ``nan``/``inf``, unknown, missing;
* pattern files (:class:`bakeoff.truth.citations.patterns.PatternFile`) and ``results.json`` read back by
  ``report`` (:class:`bakeoff.runner.results.StoredResults`, :func:`bakeoff.runner.results.read_results`);

plus hand-written tables of command-line flags and broken data files. Each case runs the real
command line (:func:`bakeoff.cli.main` in process; a sample also as ``python -m bakeoff``) on tiny
files; validation happens before anything heavy, so no model is ever loaded.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel

from bakeoff.arms.registry import REFERENCE_OPTIONS, arm_types, options_schema
from bakeoff.cli import main
from bakeoff.runner.config import ConfigFile
from bakeoff.runner.results import StoredArm, StoredResults
from bakeoff.truth.citations.patterns import PatternFile

# --- tiny valid inputs ---------------------------------------------------------------------------

CORPUS = [{"_id": "d1", "title": "", "text": "alpha beta"}, {"_id": "d2", "title": "", "text": "gamma delta"}]
QUERIES = [{"_id": "q1", "text": "alpha"}, {"_id": "q2", "text": "gamma"}]
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n"


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def make_beir(folder: Path, *, corpus: str | None = None, queries: str | None = None, qrels: str | None = None) -> Path:
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text(_jsonl(CORPUS) if corpus is None else corpus, encoding="utf-8")
    (folder / "queries.jsonl").write_text(_jsonl(QUERIES) if queries is None else queries, encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text(QRELS if qrels is None else qrels, encoding="utf-8")
    return folder


# --- TOML writing ----------------------------------------------------------------------------------


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def to_toml(doc: dict[str, Any]) -> str:
    """Scalars first, then tables (one level of sub-tables), then arrays of tables."""
    lines = [f"{k} = {toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)
             and not (isinstance(v, list) and v and all(isinstance(x, dict) for x in v))]
    for name, table in doc.items():
        if isinstance(table, dict):
            lines.append(f"[{name}]")
            lines += [f"{k} = {toml_value(v)}" for k, v in table.items() if not isinstance(v, dict)]
            for sub, inner in table.items():
                if isinstance(inner, dict):
                    lines.append(f"[{name}.{sub}]")
                    lines += [f"{k} = {toml_value(v)}" for k, v in inner.items()]
    for name, arr in doc.items():
        if isinstance(arr, list) and arr and all(isinstance(x, dict) for x in arr):
            for table in arr:
                lines.append(f"[[{name}]]")
                lines += [f"{k} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def base_config() -> dict[str, Any]:
    return {
        "dataset": {"beir": "data", "split": "test", "fields": {"id": "id"}, "clean": {"min_chars": 0}},
        "run": {"k": 5, "cache": "off", "out": "out"},
        "arms": [{"name": "lex", "type": "bm25"}],
    }


# --- bad values from a declared type -----------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    types: frozenset[Any]
    literals: tuple[Any, ...]
    bounds: tuple[Any, ...]


def kind_of(annotation: Any) -> Kind:
    """Base types, literal choices and numeric bounds (``Ge``/``Gt``/``Le``/``Lt``) of an annotation."""
    found: set[Any] = set()
    literals: list[Any] = []
    bounds: list[Any] = []

    def walk(a: Any) -> None:
        origin = typing.get_origin(a)
        if origin is Annotated:
            inner, *meta = typing.get_args(a)
            for m in meta:
                bounds.extend(x for x in getattr(m, "metadata", [m]) if isinstance(x, (Ge, Gt, Le, Lt)))
            walk(inner)
        elif origin in (typing.Union, types.UnionType):
            for x in typing.get_args(a):
                walk(x)
        elif origin is Literal:
            literals.extend(typing.get_args(a))
            found.add(Literal)
        elif origin is not None:
            found.add(origin)
        elif a is not type(None):
            found.add(a)

    walk(annotation)
    return Kind(frozenset(found), tuple(literals), tuple(bounds))


def field_kind(field: Any) -> Kind:
    k = kind_of(field.annotation)
    extra = tuple(m for m in field.metadata if isinstance(m, (Ge, Gt, Le, Lt)))
    return Kind(k.types, k.literals, k.bounds + extra)


def out_of_range(kind: Kind) -> Iterator[tuple[str, Any]]:
    integer = int in kind.types and float not in kind.types
    for b in kind.bounds:
        if isinstance(b, Ge):
            yield f"below {b.ge}", (int(b.ge) - 1 if integer else float(b.ge) - 0.5)
            yield "negative", (-5 if integer else -5.5)
        elif isinstance(b, Gt):
            yield f"equal to the exclusive bound {b.gt}", (int(b.gt) if integer else float(b.gt))
        elif isinstance(b, Le):
            yield f"above {b.le}", (int(b.le) + 1 if integer else float(b.le) + 0.5)
        elif isinstance(b, Lt):
            yield f"equal to the exclusive bound {b.lt}", (int(b.lt) if integer else float(b.lt))


def bad_toml_values(kind: Kind, *, text_takes_numbers: bool) -> Iterator[tuple[str, Any]]:
    """Values a TOML file can hold that ``kind`` must refuse."""
    t = kind.types
    if Any in t or object in t:
        return
    has_list = list in t or tuple in t or typing.Sequence in t or __import__("collections.abc").abc.Sequence in t
    has_map = dict in t or __import__("collections.abc").abc.Mapping in t
    if Literal in t:
        yield "not a choice", "bogus-choice"
        yield "a number", 7
    if int in t and float not in t:
        yield "text", "ten"
        yield "fractional", 2.5
        yield "boolean", True
    if float in t:
        yield "text", "abc"
        yield "boolean", True
        yield "nan", float("nan")
        yield "inf", float("inf")
        yield "-inf", float("-inf")
    if t == {bool}:
        yield "text", "maybe"
        yield "number", 5
    if str in t and not (t & {int, float, bool}):
        if not text_takes_numbers:
            yield "a number", 5
        yield "boolean", True
    if not has_list and not has_map:
        yield "a list", [1, 2]
    elif has_list and str not in t:
        yield "a string for a list", "one"
        yield "a list of numbers", [1, 2]
    if has_map and not has_list:
        yield "a number for a table", 5
    yield from out_of_range(kind)


def bad_cli_values(kind: Kind) -> Iterator[tuple[str, str]]:
    """``--arm`` texts that ``kind`` must refuse (everything on a command line is text)."""
    t = kind.types
    if Any in t or object in t:
        return
    if Literal in t:
        yield "not a choice", "bogus-choice"
    if int in t and float not in t:
        yield "text", "ten"
        yield "fractional", "2.5"
        yield "boolean", "true"
    if float in t:
        yield "text", "abc"
        yield "boolean", "true"
        yield "nan", "nan"
        yield "inf", "inf"
        yield "-inf", "-inf"
    if t == {bool}:
        yield "text", "maybe"
        yield "number", "5"
    for label, v in out_of_range(kind):
        yield label, repr(v) if isinstance(v, float) else str(v)


def valid_for(kind: Kind, name: str) -> Any:
    """A value the option accepts (for required options around the one under test)."""
    if name in REFERENCE_OPTIONS:
        return "lex+lex" if name == "arms" else "lex"
    if name == "url":
        return "http://127.0.0.1:9/search"
    if kind.literals:
        return kind.literals[0]
    return "x"


# --- the cases -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    build: Callable[[Path], list[str]]  # writes the case's files into the folder, returns the argv
    expect: tuple[str, ...] = ()  # substrings the error line must contain ("{dir}" = the case folder)


CASES: list[Case] = []


def case(id: str, *expect: str) -> Callable[[Callable[[Path], list[str]]], Callable[[Path], list[str]]]:
    def deco(fn: Callable[[Path], list[str]]) -> Callable[[Path], list[str]]:
        CASES.append(Case(id, fn, expect))
        return fn

    return deco


def toml_case(id: str, mutate: Callable[[dict[str, Any]], None], *expect: str) -> None:
    def build(d: Path) -> list[str]:
        make_beir(d / "data")
        doc = base_config()
        mutate(doc)
        (d / "bake.toml").write_text(to_toml(doc), encoding="utf-8")
        return ["run", str(d / "bake.toml")]

    CASES.append(Case(f"toml/{id}", build, ("{dir}/bake.toml", *expect)))


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        node = doc
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value

    return mutate


# TOML tables: every key of every table, from the schema
TABLES: dict[tuple[str, ...], type[BaseModel]] = {}


def _tables(model: type[BaseModel], prefix: tuple[str, ...]) -> None:
    for name, field in model.model_fields.items():
        for t in kind_of(field.annotation).types:
            if isinstance(t, type) and issubclass(t, BaseModel) and name not in ("arms", "arm"):
                TABLES[(*prefix, name)] = t
                _tables(t, (*prefix, name))


_tables(ConfigFile, ())
for table_path, model in TABLES.items():
    prefix = ["engine"] if table_path == ("engine",) else []
    for key, field in model.model_fields.items():
        kind = field_kind(field)
        if any(isinstance(t, type) and issubclass(t, BaseModel) for t in kind.types):
            continue
        for label, value in bad_toml_values(kind, text_takes_numbers=False):
            def mutate(doc: dict[str, Any], p: tuple[str, ...] = (*table_path, key), v: Any = value,
                       engine: bool = bool(prefix)) -> None:
                if engine:
                    doc["engine"] = {"ray": "local"}
                _set(p, v)(doc)

            toml_case(f"{'.'.join(table_path)}.{key}={label}", mutate, key)
    toml_case(f"{'.'.join(table_path)}/unknown-key", lambda doc, p=table_path: (
        _set(p, {"ray": "local"})(doc) if p == ("engine",) else None, _set((*p, "zzkey"), 1)(doc)), "zzkey")
    first = next(iter(model.model_fields))
    toml_case(f"{'.'.join(table_path)}/misspelt-{first}", lambda doc, p=table_path, k=first: (
        _set(p, {"ray": "local"})(doc) if p == ("engine",) else None, _set((*p, k + "x"), 1)(doc)),
        f"{first}x", f"did you mean '{first}'")

for table in ("runn", "datasett", "engin", "armz", "report"):
    toml_case(f"unknown-table-{table}", _set((table,), {"k": 1}), table)
toml_case("engine=5", _set(("engine",), 5), "engine")
toml_case("engine=bogus", _set(("engine",), "bogus"), "engine")
toml_case("engine-without-ray", _set(("engine",), {"actors": 2}), "ray")
toml_case("arms-as-a-table", lambda doc: doc.update(arms={"type": "bm25"}), "arms")
toml_case("arms=5", lambda doc: doc.update(arms=5), "arms")
toml_case("arms-empty", lambda doc: doc.update(arms=[]), "no [[arms]]")
toml_case("arm-without-type", lambda doc: doc.update(arms=[{"name": "x"}]), "type")
toml_case("arm-type=5", lambda doc: doc.update(arms=[{"type": 5}]), "type")
toml_case("arm-unknown-type", lambda doc: doc.update(arms=[{"type": "bm52"}]), "did you mean 'bm25'")
toml_case("no-dataset", lambda doc: doc.pop("dataset"), "dataset")
toml_case("dataset=5", _set(("dataset",), 5), "dataset")
toml_case("dataset-no-source", _set(("dataset",), {"split": "test"}), "dataset")
toml_case("dataset-beir-missing", _set(("dataset", "beir"), "nowhere"), "nowhere")
toml_case("fields.text-empty", _set(("dataset", "fields", "text"), []), "text")
toml_case("measures=string", _set(("run", "measures"), "ndcg@10"), "measures")
for bad in ("foo@10", "ndcg@0", "ndcg@x", "", "recall@-1"):
    toml_case(f"measures=[{bad}]", _set(("run", "measures"), [bad]), "measures")
toml_case("out-is-a-file", lambda doc: doc["run"].update(out="data/corpus.jsonl"), "out")
toml_case("chunk-unknown-key", _set(("dataset", "chunk"), {"tokenz": 5}), "chunk")
toml_case("chunk-two-units", _set(("dataset", "chunk"), {"tokens": 5, "sentences": 2}), "chunk")

# every arm type's options, in TOML [[arms]] and on the command line
for type_name, factory in sorted(arm_types().items()):
    schema = options_schema(factory)
    required = {n: valid_for(field_kind(f), n) for n, f in schema.model_fields.items() if f.is_required()}
    for key, field in schema.model_fields.items():
        kind = field_kind(field)
        others = {n: v for n, v in required.items() if n != key}
        for label, value in bad_toml_values(kind, text_takes_numbers=True):
            toml_case(f"arm-{type_name}.{key}={label}",
                      lambda doc, t=type_name, o=others, k=key, v=value: doc["arms"].append(
                          {"name": "x", "type": t, **o, k: v}), f"({type_name} 'x')", key)
        for label, text in bad_cli_values(kind):
            spec = f"{type_name}:" + ",".join([*(f"{n}={v}" for n, v in others.items()), f"{key}={text}"])

            def build(d: Path, spec: str = spec) -> list[str]:
                make_beir(d / "data")
                return ["run", "--beir", str(d / "data"), "--cache", "off", "--out", str(d / "out"), "--arm", "bm25",
                        "--arm", spec]

            CASES.append(Case(f"arm/{spec}", build, ("--arm", key)))
    unknown = f"{type_name}:" + ",".join([*(f"{n}={v}" for n, v in required.items()), "zzopt=1"])
    CASES.append(Case(f"arm/{unknown}", lambda d, s=unknown: (make_beir(d / "data"), [
        "run", "--beir", str(d / "data"), "--cache", "off", "--out", str(d / "out"), "--arm", s])[1],
        ("zzopt",)))  # dense passes unknown keys to its encoder backend, which names them
    for missing in required:
        spec = f"{type_name}:" + ",".join(f"{n}={v}" for n, v in required.items() if n != missing)
        CASES.append(Case(f"arm/{spec}-without-{missing}", lambda d, s=spec: (make_beir(d / "data"), [
            "run", "--beir", str(d / "data"), "--cache", "off", "--out", str(d / "out"), "--arm", s])[1],
            (missing,)))

# --arm grammar
for spec, expect in [("", "TYPE"), (":", "TYPE"), ("9bm25", "TYPE"), ("bm25:k1", "key=value"),
                     ("bm25:=1", "key=value"), ("bm25:k1=1,k1=2", "twice"), ("=bm25", "NAME"),
                     ("bm52", "did you mean 'bm25'"), ("BM25:k1=abc", "k1"), ("rrf:arms=nope+lex", "nope"),
                     ("rerank:base=nope", "nope")]:
    CASES.append(Case(f"arm-grammar/{spec or 'empty'}", lambda d, s=spec: (make_beir(d / "data"), [
        "run", "--beir", str(d / "data"), "--cache", "off", "--out", str(d / "out"), "--arm", "lex=bm25",
        "--arm", s])[1], (expect,)))


# command-line flags
def run_flags(*flags: str) -> Callable[[Path], list[str]]:
    def build(d: Path) -> list[str]:
        make_beir(d / "data")
        (d / "afile").write_text("x")
        return ["run", "--beir", str(d / "data"), "--arm", "bm25", "--cache", "off",
                *[f.replace("{dir}", str(d)) for f in flags]]

    return build


RUN_FLAGS = [
    (("--k", "0"), "--k"), (("--k", "-5"), "--k"), (("--k", "ten"), "--k"), (("--k", "2.5"), "--k"),
    (("--depth", "0"), "--depth"), (("--depth", "x"), "--depth"),
    (("--measure", "foo@10"), "foo@10"), (("--measure", "ndcg@0"), "ndcg@0"), (("--measure", "ndcg@x"), "--measure"),
    (("--measure", ""), "--measure"), (("--measure", "ndcg@10", "--measure", "P"), "precision"),
    (("--out", "{dir}/afile"), "--out"), (("--out", "{dir}/afile/sub"), "--out"),
    (("--cache-dir", "{dir}/afile"), "--cache-dir"), (("--cache", "sometimes"), "--cache"),
    (("--hourly-rate", "-1"), "--hourly-rate"), (("--hourly-rate", "cheap"), "--hourly-rate"),
    (("--hourly-rate", "inf"), "--hourly-rate"), (("--hourly-rate", "nan"), "--hourly-rate"),
    (("--latency-sample", "-1"), "--latency-sample"), (("--latency-sample", "x"), "--latency-sample"),
    (("--min-chars", "-1"), "--min-chars"), (("--split", "dev"), "dev"), (("--engine", "spark"), "spark"),
    (("--chunk", "tokens=x"), "tokens"), (("--aggregate", "maxp"), "--chunk"), (("--chunk", "words=5"), "words"),
    (("--bogus",), "--bogus"), (("--k",), "--k"), (("--as-of", "x"), "x"),
]
for flags, expect in RUN_FLAGS:
    CASES.append(Case(f"run-flag/{' '.join(flags)}", run_flags(*flags), (expect,)))
for argv, expect in [(["run"], "--arm"), (["run", "--arm", "bm25"], "dataset"), (["runn"], "runn"),
                     (["run", "{dir}/none.toml"], "none.toml"), (["run", "{dir}"], "folder")]:
    CASES.append(Case(f"cli/{' '.join(argv)}", lambda d, a=argv: [x.replace("{dir}", str(d)) for x in a], (expect,)))


# broken data files (through run's flags)
def data_case(id: str, *expect: str, corpus: str | None = None, queries: str | None = None,
              qrels: str | None = None, files: dict[str, str | bytes] | None = None,
              flags: tuple[str, ...] = ("--beir", "{dir}/data")) -> None:
    def build(d: Path) -> list[str]:
        make_beir(d / "data", corpus=corpus, queries=queries, qrels=qrels)
        for rel, content in (files or {}).items():
            p = d / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if rel.endswith("@link"):
                os.symlink(str(content).replace("{dir}", str(d)), d / rel.removesuffix("@link"))
            elif isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content, encoding="utf-8")
        return ["run", *[f.replace("{dir}", str(d)) for f in flags], "--arm", "bm25", "--cache", "off",
                "--out", str(d / "out")]

    CASES.append(Case(f"data/{id}", build, expect))


BAD_IDS = {"empty": "", "space": "a b", "tab": "a\tb", "newline": "a\nb", "nul": "a\x00b", "ctrl": "a\x1fb",
           "nbsp": "a\u00a0b", "line-sep": "a\u2028b", "only-space": " "}
for label, bad in BAD_IDS.items():
    data_case(f"beir-doc-id-{label}", "corpus.jsonl:2", "_id",
              corpus=_jsonl([CORPUS[0], {"_id": bad, "text": "x"}, CORPUS[1]]))
    data_case(f"beir-query-id-{label}", "queries.jsonl:1", "_id",
              queries=_jsonl([{"_id": bad, "text": "alpha"}, QUERIES[1]]))
    data_case(f"records-id-{label}", "docs.jsonl:2", "id",
              files={"docs.jsonl": _jsonl([{"id": "d1", "text": "alpha"}, {"id": bad, "text": "x"}])},
              flags=("--corpus", "{dir}/docs.jsonl", "--queries", "{dir}/data/queries.jsonl",
                     "--qrels", "{dir}/data/qrels/test.tsv"))
for label, line in {"invalid-json": "{not json", "array": "[1, 2]", "no-id": '{"text": "x"}',
                    "no-text": '{"_id": "d3"}', "text-list": '{"_id": "d3", "text": ["x"]}',
                    "id-object": '{"_id": {"a": 1}, "text": "x"}', "deep": "[" * 100000 + "]" * 100000,
                    "dup-id": '{"_id": "d1", "text": "again"}'}.items():
    data_case(f"beir-corpus-{label}", "corpus.jsonl:3", corpus=_jsonl(CORPUS) + line + "\n")
data_case("beir-corpus-not-utf8", "corpus.jsonl:3", files={"data/corpus.jsonl": (_jsonl(CORPUS) + '{"_id": "d3", '
                                                                              '"text": "caf\xe9"}\n').encode("latin-1")})
data_case("beir-corpus-empty", "corpus.jsonl", corpus="")
data_case("beir-queries-empty", "queries.jsonl", queries="")
data_case("beir-queries-dup", "queries.jsonl:3", queries=_jsonl([*QUERIES, QUERIES[0]]))
data_case("beir-qrels-grade", "test.tsv:2", qrels="query-id\tcorpus-id\tscore\nq1\td1\thigh\n")
data_case("beir-qrels-columns", "test.tsv:2", qrels="query-id\tcorpus-id\tscore\nq1\td1\n")
data_case("beir-no-split", "dev", flags=("--beir", "{dir}/data", "--split", "dev"))
data_case("beir-missing", "nowhere", flags=("--beir", "{dir}/nowhere"))
data_case("beir-is-a-file", "corpus.jsonl", flags=("--beir", "{dir}/data/corpus.jsonl"))
RECORD_FLAGS = ("--queries", "{dir}/data/queries.jsonl", "--qrels", "{dir}/data/qrels/test.tsv")
for label, text in {"unclosed-quote": 'id,text\nd1,"alpha\nd2,gamma\n',
                    "unclosed-quote-mid": 'id,text\nd1,"alpha beta"\nd2,"gamma\nd3,delta\n',
                    "quote-garbage": 'id,text\nd1,"alpha"beta\n',
                    "extra-column": "id,text\nd1,alpha,beta\n",
                    "no-id-column": "name,text\nd1,alpha\n",
                    "empty-id": "id,text\n,alpha\n",
                    "space-id": "id,text\nd 1,alpha\n"}.items():
    data_case(f"csv-{label}", "docs.csv", files={"docs.csv": text}, flags=("--corpus", "{dir}/docs.csv", *RECORD_FLAGS))
data_case("csv-huge-field-then-bad-row", "docs.csv:3", files={"docs.csv": "id,text\nd1," + "x" * 200_000 + "\n,y\n"},
          flags=("--corpus", "{dir}/docs.csv", *RECORD_FLAGS))
data_case("records-unknown-format", "docs.xml", files={"docs.xml": "<docs/>"},
          flags=("--corpus", "{dir}/docs.xml", *RECORD_FLAGS))
data_case("records-missing", "nope.jsonl", flags=("--corpus", "{dir}/nope.jsonl", *RECORD_FLAGS))
data_case("records-text-field-missing", "docs.jsonl:1", files={"docs.jsonl": _jsonl([{"id": "d1", "body": "x"}])},
          flags=("--corpus", "{dir}/docs.jsonl", *RECORD_FLAGS))
data_case("records-symlink-loop", "loop.jsonl", files={"loop.jsonl@link": "{dir}/loop.jsonl"},
          flags=("--corpus", "{dir}/loop.jsonl", *RECORD_FLAGS))
data_case("folder-symlink-loop", "loop.txt", files={"docs/a.txt": "alpha", "docs/loop.txt@link": "{dir}/docs/loop.txt"},
          flags=("--corpus", "{dir}/docs", *RECORD_FLAGS))
data_case("folder-broken-link", "gone.txt", files={"docs/a.txt": "alpha", "docs/gone.txt@link": "{dir}/nothing"},
          flags=("--corpus", "{dir}/docs", *RECORD_FLAGS))
# A folder file that cannot be read or decoded is skipped and named in the load report, as `ingest files` does
# (tests/data/test_loaders.py::test_folder_skips_and_names_unreadable_files).
data_case("folder-empty", "docs", files={"docs/readme.bin": "x"}, flags=("--corpus", "{dir}/docs", *RECORD_FLAGS))
data_case("queries-tsv-no-tab", "q.tsv:1", files={"q.tsv": "q1 alpha\n"},
          flags=("--beir", "{dir}/data", "--queries", "{dir}/q.tsv"))
data_case("queries-tsv-space-id", "q.tsv:1", files={"q.tsv": "q 1\talpha\n"},
          flags=("--beir", "{dir}/data", "--queries", "{dir}/q.tsv"))


# results.json read back by report and compare
def results_case(id: str, mutate: Callable[[dict[str, Any]], Any] | None, *expect: str, raw: str | None = None,
                 command: tuple[str, ...] = ("report",)) -> None:
    def build(d: Path) -> list[str]:
        folder = d / "res"
        folder.mkdir()
        (folder / "runs").mkdir()
        (folder / "runs" / "lex.trec").write_text("q1 Q0 d1 1 1.0 lex\nq2 Q0 d2 1 1.0 lex\n")
        make_beir(d / "data")
        obj = valid_results(d / "data")
        if mutate is not None:
            obj = mutate(obj) or obj
        (folder / "results.json").write_text(raw if raw is not None else json.dumps(obj), encoding="utf-8")
        extra = [str(folder)] if command[0] == "compare" else []
        return [*command, str(folder), *extra, "--no-html", "--resamples", "50", "--no-progress"]

    CASES.append(Case(f"results/{' '.join(command)}/{id}", build, expect))


def valid_results(data: Path) -> dict[str, Any]:
    per_query = {"ndcg@5": {"q1": 1.0, "q2": 1.0}}
    return {"schema": "bakeoff.results", "schema_version": 1, "k": 5, "depth": 100, "measures": ["ndcg@5"],
            "dataset": {"name": "data", "split": "test", "source": {"beir": str(data), "split": "test"},
                        "fingerprints": {}},
            "queries": {"evaluated": 2, "excluded": {}},
            "arms": [{"name": "lex", "type": "bm25", "metrics": {"ndcg@5": 1.0}, "per_query": per_query,
                      "run_file": "runs/lex.trec", "timing": {}}]}


def _drop(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], None]:
    def mutate(obj: dict[str, Any]) -> None:
        node: Any = obj
        for p in path[:-1]:
            node = node[p]
        node.pop(path[-1])

    return mutate


def _put(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(obj: dict[str, Any]) -> None:
        node: Any = obj
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value

    return mutate


#: Required in the schema but filled in from another key when absent (a file without ``depth``: ``k``).
FILLED = {"depth"}
for model, at in ((StoredResults, ()), (StoredArm, ("arms", 0))):
    for key, field in model.model_fields.items():
        path = (*at, key)
        if field.is_required() and key not in FILLED:
            results_case(f"without-{'.'.join(map(str, path))}", _drop(path), "results.json", key)
        for label, value in bad_toml_values(field_kind(field), text_takes_numbers=False):
            if isinstance(value, float) and not math.isfinite(value):
                continue  # not JSON
            results_case(f"{'.'.join(map(str, path))}={label}", _put(path, value), "results.json", key)
for id, mutate, expect in [
    ("measure-without-per-query", _put(("measures",), ["ndcg@5", "recall@5"]), "recall@5"),
    ("per-query-not-number", _put(("arms", 0, "per_query", "ndcg@5", "q1"), "high"), "per_query"),
    ("two-arms-same-name", lambda o: o["arms"].append(dict(o["arms"][0])), "lex"),
    ("schema-other", _put(("schema",), "something.else"), "schema"),
    ("schema-newer", _put(("schema_version",), 99), "schema_version"),
    ("run-file-missing", _put(("arms", 0, "run_file"), "runs/gone.trec"), "lex"),
    ("dataset-gone", _put(("dataset", "source"), {"beir": "/nonexistent/bakeoff/data", "split": "test"}), "gone"),
    ("a-list", lambda o: [o], "schema"),
    ("a-string", lambda o: "results", "schema"),
]:
    results_case(id, mutate, "gone.trec" if id == "run-file-missing" else "results.json", expect)
results_case("invalid-json", None, "results.json:1", raw="{oops")
results_case("deep-json", None, "results.json", "nested", raw='{"a": ' + "[" * 200_000 + "]" * 200_000 + "}")
results_case("empty-file", None, "results.json", raw="")
for flags, expect in [(("--resamples", "0"), "--resamples"), (("--resamples", "-1"), "--resamples"),
                      (("--resamples", "many"), "--resamples"), (("--alpha", "2"), "--alpha"),
                      (("--alpha", "0"), "--alpha"), (("--alpha", "1"), "--alpha"), (("--alpha", "-0.5"), "--alpha"),
                      (("--alpha", "nan"), "--alpha"), (("--alpha", "x"), "--alpha"), (("--out", "{dir}/afile"), "--out"),
                      (("--delta", "lex..nope"), "nope"), (("--seed", "x"), "--seed")]:
    for command in ("report", "compare"):
        def build(d: Path, flags: tuple[str, ...] = flags, command: str = command) -> list[str]:
            (d / "afile").write_text("x")
            folder = d / "res"
            folder.mkdir()
            (folder / "runs").mkdir()
            (folder / "runs" / "lex.trec").write_text("q1 Q0 d1 1 1.0 lex\nq2 Q0 d2 1 1.0 lex\n")
            make_beir(d / "data")
            (folder / "results.json").write_text(json.dumps(valid_results(d / "data")))
            two = [str(folder)] if command == "compare" else []
            return [command, str(folder), *two, "--no-html", "--no-progress",
                    *[f.replace("{dir}", str(d)) for f in flags]]

        CASES.append(Case(f"{command}-flag/{' '.join(flags)}", build, (expect,)))


def _compare_case(id: str, mutate: Callable[[dict[str, Any]], None], expect: str) -> None:
    def build(d: Path) -> list[str]:
        make_beir(d / "data")
        folders = []
        for name, change in (("a", None), ("b", mutate)):
            folder = d / name
            (folder / "runs").mkdir(parents=True)
            (folder / "runs" / "lex.trec").write_text("q1 Q0 d1 1 1.0 lex\nq2 Q0 d2 1 1.0 lex\n")
            obj = valid_results(d / "data")
            if change is not None:
                change(obj)
            (folder / "results.json").write_text(json.dumps(obj))
            folders.append(str(folder))
        return ["compare", *folders, "--no-html", "--no-progress", "--resamples", "50"]

    CASES.append(Case(f"compare/{id}", build, (expect,)))


_compare_case("other-split", _put(("dataset", "split"), "dev"), "split")
_compare_case("other-measures", lambda o: (o.update(measures=["ndcg@5", "recall@5"]),
                                           o["arms"][0]["per_query"].update({"recall@5": {"q1": 1.0, "q2": 1.0}})),
              "measures")
_compare_case("other-k", _put(("k",), 3), "cutoffs")
_compare_case("other-corpus", _put(("dataset", "fingerprints"), {"corpus": "abc"}), "fingerprints")


# citation pattern files (bakeoff mine citations)
def pattern_case(id: str, doc: dict[str, Any] | str, *expect: str) -> None:
    def build(d: Path) -> list[str]:
        text = doc if isinstance(doc, str) else to_toml(doc)
        (d / "p.toml").write_text(text, encoding="utf-8")
        return ["mine", "citations", "--targets", str(d / "targets.jsonl"), "--sources", str(d / "sources.jsonl"),
                "--patterns", str(d / "p.toml"), "--out", str(d / "out"), "--no-progress"]

    CASES.append(Case(f"patterns/{id}", build, ("{dir}/p.toml", *expect)))


for key, field in PatternFile.model_fields.items():
    for label, value in bad_toml_values(field_kind(field), text_takes_numbers=False):
        if key in ("pattern", "patterns") and isinstance(value, list):
            continue  # a list of numbers is caught as a list of tables below
        pattern_case(f"{key}={label}", {"law": ["Ley X"], key: value}, key)
    pattern_case(f"misspelt-{key}", {"law": ["Ley X"], key + "x": 1}, f"{key}x")
pattern_case("pattern-unknown-key", {"law": ["Ley X"], "pattern": [{"name": "a", "regexx": "x"}]}, "regexx", "regex")
pattern_case("pattern-kind-number", {"law": ["Ley X"], "pattern": [{"name": "a", "kind": 3}]}, "kind")
pattern_case("invalid-toml", "law = [\n", "invalid TOML")
pattern_case("extends-unknown", {"law": ["Ley X"], "extends": "fr"}, "extends")
pattern_case("no-law", {"extends": "es"}, "law")


# --- running them ----------------------------------------------------------------------------------


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for p in folder.rglob("*"):
        st = p.lstat()
        out[p.relative_to(folder).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def check(c: Case, folder: Path, code: int, stderr: str, before: dict[str, tuple[int, int]]) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2, f"exit {code}, stderr: {stderr[-2000:]}"
    assert "Traceback" not in stderr
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith("error: "), line
    for want in c.expect:
        want = want.replace("{dir}", str(folder))
        assert want in line, f"{want!r} not in {line!r}"
    assert _snapshot(folder) == before, "files were written or changed"


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_exit_2_nothing_written(c: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAKEOFF_CACHE_DIR", str(tmp_path / "cache-never-written"))
    folder = tmp_path / "case"
    folder.mkdir()
    argv = c.build(folder)
    before = _snapshot(folder)
    capsys.readouterr()
    code = main(argv)
    check(c, folder, code, capsys.readouterr().err, before)
    assert not (tmp_path / "cache-never-written").exists()


SAMPLE = CASES[:: max(1, len(CASES) // 12)]


@pytest.mark.parametrize("c", SAMPLE, ids=[c.id for c in SAMPLE])
def test_bad_input_through_the_console_entry(c: Case, tmp_path: Path) -> None:
    """A sample of the cases as a user runs them: ``python -m bakeoff`` in a subprocess."""
    folder = tmp_path / "case"
    folder.mkdir()
    argv = c.build(folder)
    before = _snapshot(folder)
    env = {**os.environ, "BAKEOFF_CACHE_DIR": str(tmp_path / "cache-never-written"),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-m", "bakeoff", *argv], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    check(c, folder, proc.returncode, proc.stderr, before)


def test_the_suite_is_large() -> None:
    """The generated table stays in the hundreds (a schema change that silently drops cases fails here)."""
    assert len(CASES) >= 400, len(CASES)
