"""Helpers shared by CLI commands: the cache option, the options ``report`` and ``compare`` share, and the
help formatter every command's ``--help`` goes through (:func:`plain_help`).

Command modules import only typer and this module at top level (``bakeoff eval --help``
stays fast); everything else is imported inside the command functions.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from ..cache import Cache
    from ..report.gate import GateResult
    from ..report.write import ReportOutput

#: Bootstrap resamples by default; equals :data:`bakeoff.stats.DEFAULT_RESAMPLES` (a test checks),
#: written out so that building the CLI does not import the statistics module.
DEFAULT_RESAMPLES = 10_000

def open_fraction(value: float | None) -> float | None:
    """Callback of options that are a level strictly between 0 and 1 (``--alpha``)."""
    if value is not None and not 0.0 < value < 1.0:
        raise typer.BadParameter(f"must lie strictly between 0 and 1, got {value}")
    return value


def finite(value: float | None) -> float | None:
    """Callback of number options that must be finite (no ``inf``, ``nan``)."""
    import math

    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, got {value}")
    return value


def measure_names(values: list[str] | None) -> list[str] | None:
    """Callback of ``--measure``: each must parse (``ndcg@10``, ``recall@100`` ...; cutoffs >= 1)."""
    from ..metrics import parse_measure

    for v in values or []:
        try:
            parse_measure(v)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
    return values


def folder_path(value: Path | None) -> Path | None:
    """Callback of options naming an output or cache folder: it may not exist yet, but it may not be a
    file, nor lie below one."""
    if value is None:
        return value
    for p in (value, *value.parents):
        if p.exists() or p.is_symlink():
            if not p.is_dir():
                what = "is" if p == value else f"lies below {str(p)!r}, which is"
                raise typer.BadParameter(f"{str(value)!r} {what} a file, not a folder")
            break
    return value


def averaging_name(value: str | None) -> str | None:
    """Callback of ``--averaging``: bakeoff, trec_eval (alias intersection) or trec_eval-c."""
    if value is None:
        return value
    from ..metrics import averaging_rule

    try:
        return averaging_rule(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


AveragingOpt = Annotated[str | None, typer.Option(
    "--averaging", callback=averaging_name, help="Which queries a mean is over: bakeoff (default), trec_eval "
    "(run and qrels both, as pytrec_eval, BEIR, MTEB) or trec_eval-c.")]
RelevanceLevelOpt = Annotated[int | None, typer.Option(
    "--relevance-level", "-l", help="Minimum grade binary measures count as relevant (trec_eval -l; default 1).")]
ResamplesOpt = Annotated[int, typer.Option(min=1, help="Bootstrap resamples and permutations (>= 1).")]
SeedOpt = Annotated[int, typer.Option(help="Seed of the resampling.")]
AlphaOpt = Annotated[float, typer.Option(callback=open_fraction, help="Significance level after Holm correction, "
                                         "in (0, 1).")]
DeltaOpt = Annotated[list[str], typer.Option("--delta", help="A..B: also decompose mean(A)-mean(B) by buckets.")]
ProgressOpt = Annotated[bool, typer.Option(help="Show progress bars.")]


def make_cache(policy: str, cache_dir: Path | None) -> Cache | None:
    """The cache of ``--cache use|refresh|off`` in ``--cache-dir`` (default ``$BAKEOFF_CACHE_DIR``)."""
    from ..cache import Cache, default_cache_dir
    from ..errors import ConfigError

    if policy not in ("use", "refresh", "off"):
        raise ConfigError(f"--cache must be use, refresh or off, got {policy!r}")
    if policy == "off":
        return None
    folder = cache_dir or default_cache_dir()
    try:
        folder_path(folder)
    except typer.BadParameter as exc:
        raise ConfigError(f"cache folder: {exc.format_message()}") from None
    return Cache(folder, policy=policy)  # type: ignore[arg-type]


def output_format(value: str) -> str:
    """Callback of ``--format`` / ``--summary``: ``text`` (the terminal tables) or ``md`` (Markdown)."""
    v = value.strip().lower()
    v = {"markdown": "md", "gfm": "md", "txt": "text"}.get(v, v)
    if v not in ("text", "md"):
        raise typer.BadParameter(f"must be text or md, got {value!r}")
    return v


def show_report(done: ReportOutput, *, fmt: str = "text", gate: GateResult | None = None) -> None:
    """Print the report (terminal tables, or GitHub-flavoured Markdown with ``fmt="md"``: the whole of
    stdout is then the Markdown, the files written go to stderr) and the files written."""
    if fmt == "md":
        from ..report.markdown import render_markdown

        typer.echo(render_markdown(done.report, gate=gate), nl=False)
        if done.written:
            typer.echo(f"wrote {', '.join(done.written)} in {done.folder}", err=True)
        return
    from ..report.terminal import print_report

    print_report(done.report)
    if done.written:
        typer.echo(f"wrote {', '.join(done.written)} in {done.folder}")


def finish_gate(gate: GateResult | None, *, err: bool = False) -> None:
    """Print a CI gate's lines (``gate: ...``; on stderr with ``err``, when stdout holds a Markdown
    summary) and exit 1 when it failed (``compare --fail-if-worse``, ``run --fail-under``)."""
    if gate is None:
        return
    for line in gate.lines:
        typer.echo(f"gate: {line}", err=err)
    if gate.failed:
        raise typer.Exit(1)


def warn_all(lines: list[str]) -> None:
    """Each line as a ``warning:`` on stderr (through the ``bakeoff`` logger)."""
    import logging

    log = logging.getLogger("bakeoff")
    for line in lines:
        log.warning(line)


def write_staged(out: Path, write: Callable[[Path], Path]) -> Path:
    """Run ``write(folder) -> main file`` into a fresh hidden folder inside ``out``, then move each file
    into place, the main file last; return the main file's final path.

    Nothing half-written: when ``write`` fails (disk full, permissions ...) the staging folder is
    removed, files already in ``out`` are untouched, and ``out`` itself (with any parent folders) is
    removed if this call created it. Moves are renames within one file system (atomic per file).
    """
    from .._io import staged_as

    out = Path(out)
    created = None
    for p in (out, *out.parents):
        if p.exists():
            break
        created = p
    try:
        out.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=".bakeoff-writing-", dir=out))
        try:
            with staged_as(stage, out):  # an error names the file as it would be called in out
                main_file = write(stage)
            rel_main = main_file.relative_to(stage)
            files = sorted((f for f in stage.rglob("*") if f.is_file()), key=lambda f: f.relative_to(stage) == rel_main)
            for f in files:
                target = out / f.relative_to(stage)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(f, target)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    except BaseException as exc:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        if isinstance(exc, OSError) and exc.filename is None:  # a failed write() names no file: name the folder
            exc.filename = str(out)
        raise
    return out / rel_main


#: Widest first column of an option list; a longer option name puts its help on the next line.
HELP_TERM_COLUMNS = 28
#: Indent of a help text under a long option name.
HELP_HANGING_INDENT = 8


def _unescape(text: str) -> str:
    """Help texts escape ``[`` for Rich markup (``\\[report]``); plain text shows the bracket."""
    return text.replace("\\[", "[")


#: click's help formatter, as typer ships it (typer >= 0.20 vendors click): the base of :class:`HelpFormatter`.
_ClickHelpFormatter: Any = typer.Context.formatter_class


class HelpFormatter(_ClickHelpFormatter):
    """``--help`` as plain text that reads at 80 columns (wider terminals use up to 100).

    Options are a two-column list: the option and its metavar, then its help, wrapped to the width.
    An option whose name is longer than :data:`HELP_TERM_COLUMNS` gets a line of its own and its help
    below, indented by :data:`HELP_HANGING_INDENT`, instead of being squeezed into a narrow column.
    Long explanations belong in the docs' command pages, examples in a command's epilog (a paragraph
    starting with click's ``\\b`` marker keeps its line breaks).
    """

    def __init__(self, indent_increment: int = 2, width: int | None = None, max_width: int | None = None) -> None:
        super().__init__(indent_increment=indent_increment, width=width, max_width=max_width or 100)

    def write_text(self, text: str) -> None:
        super().write_text(_unescape(text))

    def write_dl(self, rows: Any, col_max: int = HELP_TERM_COLUMNS, col_spacing: int = 2) -> None:
        rows = [(str(term), _unescape(str(text or ""))) for term, text in rows]
        indent = " " * self.current_indent
        first = min(max((len(term) for term, _ in rows), default=0), col_max)
        for term, text in rows:
            if not text:
                self.write(f"{indent}{term}\n")
                continue
            if len(term) <= first:
                lead = f"{indent}{term:<{first}}{' ' * col_spacing}"
                rest = " " * len(lead)
                self.write(textwrap.fill(text, width=max(self.width, len(lead) + 20), initial_indent=lead,
                                         subsequent_indent=rest, break_on_hyphens=False) + "\n")
            else:
                hang = " " * (self.current_indent + HELP_HANGING_INDENT)
                self.write(f"{indent}{term}\n")
                self.write(textwrap.fill(text, width=max(self.width, len(hang) + 20), initial_indent=hang,
                                         subsequent_indent=hang, break_on_hyphens=False) + "\n")


class _HelpContext(typer.Context):
    formatter_class = HelpFormatter


def plain_help(command: Any) -> Any:
    """Route ``command``'s and every subcommand's ``--help`` through :class:`HelpFormatter`: plain
    text (no Rich panels, which wrap each option over several lines at 80 columns). Returns ``command``."""
    if hasattr(command, "rich_markup_mode"):
        command.rich_markup_mode = None
    command.context_class = _HelpContext
    for sub in getattr(command, "commands", {}).values():
        plain_help(sub)
    return command
