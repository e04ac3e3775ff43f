"""``--help`` reads at 80 columns: plain text through the shared formatter (cli/_common.py), every line
within the width, an option's help beside it or, for a long option name, below it with a hanging indent."""

from __future__ import annotations

import contextlib
import io

import pytest

from bakeoff.cli import main
from bakeoff.cli._common import HELP_HANGING_INDENT, HELP_TERM_COLUMNS, HelpFormatter

COMMANDS = ["", "run", "eval", "report", "compare", "tune", "generate describe", "mine citations", "assess",
            "label serve", "ingest files", "ingest api", "finetune embedder", "demo"]


def help_text(command: str, monkeypatch: pytest.MonkeyPatch, columns: int = 80) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main([*command.split(), "--help"]) == 0
    return buf.getvalue()


@pytest.mark.parametrize("command", COMMANDS)
def test_help_fits_80_columns_in_plain_text(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = help_text(command, monkeypatch)
    assert text.startswith("Usage: bakeoff")
    assert max(len(line) for line in text.splitlines()) <= 80
    assert not set("╭╮╰╯│─") & set(text)  # no Rich panels


def test_generate_help_is_less_than_half_of_rich_panels(monkeypatch: pytest.MonkeyPatch) -> None:
    """The longest help: at 80 columns Rich's panels took 292 lines, the formatter about 125."""
    lines = help_text("generate describe", monkeypatch).splitlines()
    options = [ln for ln in lines if ln.startswith("  -")]
    assert len(options) >= 30
    assert len(lines) <= 4.2 * len(options)  # a few lines per option on average, not 5-8


def test_formatter_layout() -> None:
    f = HelpFormatter(width=60)
    f.write_dl([("--short <int>", "A short help text that is long enough to wrap onto a second line here."),
                ("--a-really-long-option-name <str>", "Help under the name."), ("--flag", "")])
    lines = f.getvalue().splitlines()
    column = HELP_TERM_COLUMNS + 2  # the names column is as wide as the longest name that fits in it
    assert lines[0] == f"{'--short <int>':<{column}}A short help text that is long"
    assert lines[1:3] == [" " * column + "enough to wrap onto a second", " " * column + "line here."]
    assert lines[3] == "--a-really-long-option-name <str>"
    assert lines[4] == " " * HELP_HANGING_INDENT + "Help under the name."
    assert lines[5:] == ["--flag"]
