"""The demo corpus: docstrings of the Python standard library (present on every Python install).

One document per public module, class, function and method with a docstring,
from an explicit list of modules that are safe to import (no side effects such
as opening windows or browsers: ``antigravity``, ``this``, ``idlelib``,
``tkinter``, ``turtle`` and test modules are never imported). Extraction runs
in a **subprocess**, so even an unexpected import-time effect cannot touch the
calling process. Id and title = qualified name (``json.dumps``,
``collections.OrderedDict.move_to_end``); text = signature (when inspectable)
plus the cleaned docstring (:func:`inspect.getdoc`). Objects are taken only
where they are defined (``obj.__module__`` inside the listed module), names
starting with ``_`` are skipped, memory addresses (``<object object at
0x7f..>`` in signatures) are removed, and documents are sorted by id, so the corpus
is deterministic for a given Python version (recorded in each document's
metadata).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

from .data.model import Corpus

__all__ = ["SAFE_MODULES", "extract", "stdlib_corpus"]

#: Standard-library modules imported for the demo corpus (sorted; all import without side effects).
SAFE_MODULES: tuple[str, ...] = (
    "abc", "argparse", "array", "ast", "asyncio", "base64", "bisect", "bz2", "calendar", "cmath", "codecs",
    "collections", "collections.abc", "colorsys", "concurrent.futures", "configparser", "contextlib", "copy",
    "csv", "dataclasses", "datetime", "decimal", "difflib", "dis", "email.message", "email.utils", "enum",
    "filecmp", "fnmatch", "fractions", "ftplib", "functools", "getopt", "gettext", "glob", "graphlib", "gzip",
    "hashlib", "heapq", "hmac", "html", "html.parser", "http.client", "http.cookies", "imaplib", "inspect",
    "io", "ipaddress", "itertools", "json", "keyword", "linecache", "locale", "logging", "logging.handlers",
    "lzma", "mailbox", "math", "mimetypes", "operator", "os", "os.path", "pathlib", "pickle", "pkgutil",
    "platform", "plistlib", "pprint", "queue", "quopri", "random", "re", "reprlib", "sched", "secrets",
    "selectors", "shelve", "shlex", "shutil", "smtplib", "socket", "sqlite3", "statistics", "string",
    "struct", "subprocess", "tarfile", "tempfile", "textwrap", "threading", "time", "timeit", "tokenize",
    "trace", "traceback", "types", "typing", "unicodedata", "urllib.parse", "urllib.request", "uuid",
    "warnings", "wave", "weakref", "xml.dom.minidom", "xml.etree.ElementTree", "zipfile", "zlib", "zoneinfo",
)

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")

_EXTRACT = r'''
import importlib, inspect, json, sys
mods = json.loads(sys.stdin.read())
out = {}
def sig(obj):
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""
def add(qual, obj, kind):
    doc = inspect.getdoc(obj)
    if not doc or not doc.strip() or qual in out:
        return
    s = sig(obj) if kind in ("function", "method", "class") else ""
    head = qual.rsplit(".", 1)[-1] + s if s else ""
    out[qual] = {"kind": kind, "text": (head + "\n" + doc).strip() if head else doc.strip()}
def own(obj, modname):
    m = getattr(obj, "__module__", None) or ""
    return m == modname or m.startswith(modname + ".") or m.lstrip("_") == modname
for name in mods:
    try:
        mod = importlib.import_module(name)
    except Exception:
        continue
    add(name, mod, "module")
    for attr in sorted(vars(mod)):
        if attr.startswith("_"):
            continue
        obj = getattr(mod, attr)
        if inspect.isclass(obj) and own(obj, name):
            add(f"{name}.{attr}", obj, "class")
            for meth in sorted(vars(obj)):
                if meth.startswith("_"):
                    continue
                m = vars(obj)[meth]
                if isinstance(m, (staticmethod, classmethod)):
                    m = m.__func__
                if inspect.isfunction(m) or inspect.ismethoddescriptor(m) or inspect.isbuiltin(m):
                    add(f"{name}.{attr}.{meth}", m, "method")
        elif (inspect.isfunction(obj) or inspect.isbuiltin(obj)) and own(obj, name):
            add(f"{name}.{attr}", obj, "function")
json.dump(out, sys.stdout)
'''


def extract(modules: tuple[str, ...] = SAFE_MODULES, *, python: str | None = None) -> dict[str, dict[str, Any]]:
    """qualified name -> ``{"kind", "text"}``, extracted in a subprocess of ``python``."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.run([python or sys.executable, "-I", "-c", _EXTRACT], input=json.dumps(list(modules)),
                          capture_output=True, text=True, timeout=300, check=True, env=env)
    docs = json.loads(proc.stdout)
    for rec in docs.values():  # default values such as <object object at 0x7f..> differ per process
        rec["text"] = _ADDRESS.sub("", rec["text"])
    return docs


def stdlib_corpus(*, modules: tuple[str, ...] = SAFE_MODULES, min_chars: int = 40) -> Corpus:
    """The demo corpus (see the module docstring); documents shorter than ``min_chars`` are skipped."""
    docs = extract(modules)
    version = ".".join(map(str, sys.version_info[:3]))
    ids, texts, titles, metas = [], [], [], []
    for qual in sorted(docs):
        text = docs[qual]["text"]
        if len(text) < min_chars:
            continue
        ids.append(qual)
        titles.append(qual)
        texts.append(text)
        metas.append({"kind": docs[qual]["kind"], "module": _module_of(qual, modules), "python": version})
    return Corpus(tuple(ids), tuple(texts), tuple(titles), tuple(metas))


def _module_of(qual: str, modules: tuple[str, ...]) -> str:
    best = ""
    for m in modules:
        if (qual == m or qual.startswith(m + ".")) and len(m) > len(best):
            best = m
    return best
