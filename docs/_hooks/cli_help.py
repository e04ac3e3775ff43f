"""MkDocs hook: ``<!-- bakeoff-help: generate describe -->`` in a page becomes the ``--help`` text of that
command (``<!-- bakeoff-help: -->`` for the top level), printed by the installed command line itself, so the
option lists of the manual are the program's own and cannot drift from it.

The help is rendered as plain text (``TYPER_USE_RICH=0``) at :data:`WIDTH` columns, in one subprocess for all
the commands the pages name.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

_MARKER = re.compile(r"<!--\s*bakeoff-help:\s*([a-z -]*?)\s*-->")
#: Columns of the rendered help (what fits the page's code column).
WIDTH = 88

# Runs in the subprocess: each command's --help through the CLI's entry point, stdout captured.
_RENDER = """
import contextlib, io, json, sys
from bakeoff.cli import main
out = {}
for command in json.loads(sys.argv[1]):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main([*command.split(), "--help"])
    out[command] = [code, buf.getvalue()]
print(json.dumps(out))
"""

_helps: dict[str, str] = {}


def render_help(commands: list[str]) -> dict[str, str]:
    """``{command: help text}`` for each command (``""`` = the top level); a command whose ``--help``
    fails raises ``RuntimeError`` naming it."""
    env = {**os.environ, "TYPER_USE_RICH": "0", "COLUMNS": str(WIDTH), "NO_COLOR": "1", "TERM": "dumb"}
    proc = subprocess.run([sys.executable, "-c", _RENDER, json.dumps(commands)], capture_output=True, text=True,
                          env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"rendering --help failed: {proc.stderr.strip()}")
    helps = {}
    for command, (code, text) in json.loads(proc.stdout).items():
        if code != 0:
            raise RuntimeError(f"`bakeoff {command} --help` exited {code}")
        helps[command] = "\n".join(line.rstrip() for line in text.strip("\n").splitlines())
    return helps


def _command(match: re.Match[str]) -> str:
    return " ".join(match.group(1).split())


def on_files(files, config):
    """Render the help of every command any page names, once per build."""
    wanted = set()
    for file in files.documentation_pages():
        text = Path(file.abs_src_path).read_text(encoding="utf-8")
        wanted.update(_command(m) for m in _MARKER.finditer(text))
    _helps.clear()
    if wanted:
        _helps.update(render_help(sorted(wanted)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    def render(match: re.Match[str]) -> str:
        command = _command(match)
        if command not in _helps:
            _helps.update(render_help([command]))
        shown = " ".join(["bakeoff", *command.split(), "--help"])
        return f"```text\n$ {shown}\n{_helps[command]}\n```"

    return _MARKER.sub(render, markdown)
