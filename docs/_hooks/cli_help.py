"""MkDocs hook: ``<!-- bakeoff-help: generate describe -->`` (``<!-- bakeoff-help: -->`` for the top level) in a page becomes the ``--help`` text of that
command, rendered by the installed ``bakeoff`` command line, so the option lists in the manual are the
program's own and cannot drift from it."""

from __future__ import annotations

import re
from functools import cache

_MARKER = re.compile(r"<!--\s*bakeoff-help:\s*([a-z -]*?)\s*-->")
#: Columns of the rendered help (rich draws its option table to this width).
WIDTH = 100


@cache
def _help(command: str) -> str:
    import os

    from typer.testing import CliRunner

    from bakeoff.cli import build_app

    os.environ["TERMINAL_WIDTH"] = str(WIDTH)  # typer's rich help reads it for the table width
    runner = CliRunner()
    result = runner.invoke(build_app(), [*command.split(), "--help"], prog_name="bakeoff",
                           env={"NO_COLOR": "1", "TERMINAL_WIDTH": str(WIDTH), "COLUMNS": str(WIDTH)})
    if result.exit_code != 0:
        raise RuntimeError(f"`bakeoff {command} --help` exited {result.exit_code}: {result.output.strip()}")
    return "\n".join(line.rstrip() for line in result.output.strip("\n").splitlines())


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 - mkdocs' hook signature
    def render(match: re.Match[str]) -> str:
        command = " ".join(match.group(1).split())
        shown = " ".join(["bakeoff", *command.split(), "--help"])
        return f"```text\n$ {shown}\n{_help(command)}\n```"

    return _MARKER.sub(render, markdown)
