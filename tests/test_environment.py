"""Environment variables: declared once (bakeoff.environment), read only there and only when asked, shown on one
docs page that cannot drift from the declarations, a bad value one line naming the variable, secrets never quoted."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bakeoff import environment
from bakeoff.environment import GROUPS, VARIABLES, Variable, read_secret
from bakeoff.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "bakeoff"
PAGE = ROOT / "docs" / "environment.md"

#: Modules that touch os.environ without reading a variable by name, and why (the module docstring says the same).
NOT_READS = {
    "stdlib_corpus.py": "hands the whole environment to its subprocess",
    "progress.py": "sets the libraries' progress-bar switches (writes, reads none)",
}


def _table(group: str) -> str:
    rows = ["| variable | takes | default | what it sets |", "|---|---|---|---|"]
    rows += [f"| `{v.name}` | {v.takes} | {v.default} | {v.meaning} |" for v in VARIABLES if v.group == group]
    return "\n".join(rows)


def test_the_docs_page_shows_every_declaration_as_declared() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert {v.group for v in VARIABLES} == set(GROUPS)
    assert len({v.name for v in VARIABLES}) == len(VARIABLES)
    for group in GROUPS:
        assert f"## {group}\n" in page
        assert _table(group) + "\n" in page, f"docs/environment.md, {group}: the table should read\n{_table(group)}"
    mkdocs = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "environment.md" in mkdocs


def test_every_bakeoff_variable_is_declared_or_listed_for_development() -> None:
    declared = {v.name for v in VARIABLES}
    in_src = {m for p in SRC.rglob("*.py") for m in re.findall(r"\bBAKEOFF_[A-Z0-9_]+", p.read_text(encoding="utf-8"))}
    assert in_src <= declared, f"undeclared in bakeoff.environment: {sorted(in_src - declared)}"
    page = PAGE.read_text(encoding="utf-8")
    dev = page[page.index("## Development only"):]
    read_elsewhere: set[str] = set()
    reads = re.compile(r"""environ(?:\.get)?\(\s*["'](BAKEOFF_\w+)|environ\[["'](BAKEOFF_\w+)|\$\{(BAKEOFF_\w+)|"""
                       r"""\b(BAKEOFF_\w+)=\S""")
    for folder in ("tests", "benchmarks", "scripts"):
        for p in (ROOT / folder).rglob("*"):
            if p.suffix in (".py", ".sh") and p.is_file():
                read_elsewhere |= {n for m in reads.findall(p.read_text(encoding="utf-8")) for n in m if n}
    read_elsewhere |= {n for m in reads.findall((ROOT / "Makefile").read_text(encoding="utf-8")) for n in m if n}
    missing = {n for n in read_elsewhere - declared if f"`{n}`" not in dev}
    assert not missing, f"read by the checkout but not on the docs page's development table: {sorted(missing)}"
    on_page = set(re.findall(r"\bBAKEOFF_[A-Z0-9_]+", page))
    assert on_page <= declared | set(re.findall(r"`(BAKEOFF_\w+)`", dev))


def _environ_uses(tree: ast.AST) -> list[ast.AST]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb") and \
                isinstance(node.value, ast.Name) and node.value.id == "os":
            out.append(node)
        if isinstance(node, ast.ImportFrom) and node.module == "os" and \
                any(a.name in ("environ", "getenv", "environb") for a in node.names):
            out.append(node)
    return out


def test_the_environment_is_read_in_one_module_and_only_inside_functions() -> None:
    readers = {}
    for p in SRC.rglob("*.py"):
        uses = _environ_uses(ast.parse(p.read_text(encoding="utf-8")))
        if uses:
            readers[p.relative_to(SRC).as_posix()] = uses
    assert set(readers) == {"environment.py", *NOT_READS}, sorted(readers)
    tree = ast.parse((SRC / "environment.py").read_text(encoding="utf-8"))
    at_import = [n for stmt in tree.body if not isinstance(stmt, (ast.FunctionDef, ast.ClassDef))
                 for n in _environ_uses(stmt)]
    assert not at_import  # no module-level read: importing bakeoff.environment reads nothing


def test_importing_reads_nothing_and_a_bad_value_is_one_line_when_asked() -> None:
    """Every variable set to text none of them takes: importing every module of the package is fine; the first
    read is one ConfigError line naming the variable."""
    env = {v.name: "not-a-value!" for v in VARIABLES}
    code = ("import importlib, pkgutil, bakeoff\n"
            "for m in pkgutil.walk_packages(bakeoff.__path__, 'bakeoff.'):\n"
            "    if not m.name.endswith('__main__'):\n"
            "        importlib.import_module(m.name)\n"
            "from bakeoff.progress import progress_bar\n"
            "try:\n    progress_bar(total=1)\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n")
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ConfigError BAKEOFF_PROGRESS_INTERVAL must be a number of seconds, got 'not-a-value!'\n"


@pytest.mark.parametrize(("variable", "value", "want"), [
    (environment.PROGRESS_INTERVAL, " 2.5 ", 2.5),
    (environment.PROGRESS_INTERVAL, "-1", 0.0),
    (environment.PROGRESS_INTERVAL, "", 30.0),
    (environment.LLAMA_SLOTS, "64", 64),
    (environment.LLM_SERVERS, "", None),
    (environment.LLAMA_REPACK, "1", True),
    (environment.LLAMA_REPACK, "0", False),
    (environment.LLAMA_REPACK, "  ", False),
    (environment.PG_SHARED_BUFFERS_MB, "4", 16),
    (environment.CACHE_DIR, "/tmp/c", Path("/tmp/c")),
    (environment.OLLAMA_HOST, "", "http://127.0.0.1:11434"),
])
def test_values_defaults_and_blanks(monkeypatch: pytest.MonkeyPatch, variable: Variable[object], value: str,
                                    want: object) -> None:
    monkeypatch.setenv(variable.name, value)
    assert variable.get() == want
    monkeypatch.delenv(variable.name)
    assert variable.get() == variable.fallback


@pytest.mark.parametrize(("variable", "value", "message"), [
    (environment.PROGRESS_INTERVAL, "30s", "BAKEOFF_PROGRESS_INTERVAL must be a number of seconds, got '30s'"),
    (environment.LLAMA_SLOTS, "65", "BAKEOFF_LLAMA_SLOTS must be a positive integer in 1..64, got '65'"),
    (environment.LLM_THREADS, "0", "BAKEOFF_LLM_THREADS must be a positive integer, got '0'"),
    (environment.LLAMA_REPACK, "yes", "BAKEOFF_LLAMA_REPACK must be 1 or 0, got 'yes'"),
    (environment.PG_SHARED_BUFFERS_MB, "2GB",
     "BAKEOFF_PG_SHARED_BUFFERS_MB must be a whole number of megabytes, got '2GB'"),
])
def test_a_value_that_does_not_parse_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch,
                                                                   variable: Variable[object], value: str,
                                                                   message: str) -> None:
    monkeypatch.setenv(variable.name, value)
    with pytest.raises(ConfigError) as err:
        variable.get()
    assert str(err.value) == message


def test_secrets_are_read_when_asked_and_never_quoted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "sk-very-secret")
    assert read_secret("MY_SERVICE_TOKEN") == "sk-very-secret"
    monkeypatch.setenv("MY_SERVICE_TOKEN", "")
    assert read_secret("MY_SERVICE_TOKEN") is None
    assert environment.OPENAI_API_KEY.secret

    def refuse(raw: str) -> str:
        raise ValueError(raw)

    key = Variable("MY_SERVICE_TOKEN", "a key of 40 characters", "unset", "a token", "Remote models and services",
                   refuse, None, secret=True)
    monkeypatch.setenv("MY_SERVICE_TOKEN", "sk-very-secret")
    with pytest.raises(ConfigError) as err:
        key.get()
    assert str(err.value) == "MY_SERVICE_TOKEN must be a key of 40 characters" and "sk-" not in str(err.value)
