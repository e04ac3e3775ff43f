"""The CLI stays a thin face: building it imports no command's machinery, and no command module
imports another command module or anything heavy at top level (``bakeoff eval --help`` is fast)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import bakeoff.cli
from bakeoff.cli import COMMAND_MODULES
from bakeoff.cli._common import DEFAULT_RESAMPLES
from bakeoff.stats import DEFAULT_RESAMPLES as STATS_RESAMPLES

CLI = Path(bakeoff.cli.__file__).parent
#: What a command module may import at top level: the standard library bits it needs, typer (and click,
#: which typer is built on), the CLI's shared option modules (_common; _generator, the generator's options) and
#: the error types.
HELPERS = {"_common", "_generator"}
ALLOWED = {"__future__", "collections", "json", "logging", "pathlib", "typing", "click", "typer", "errors", *HELPERS}


def _top_level_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module.split(".")[0] if node.level == 0 else (node.module or "."))
    return names


def test_command_modules_import_only_typer_and_common_at_top_level():
    for name in COMMAND_MODULES:
        assert _top_level_imports(CLI / f"{name}.py") <= ALLOWED, name


def test_building_the_app_loads_only_cli_modules():
    code = ("import sys, bakeoff; before = set(sys.modules); "
            "from bakeoff.cli import build_app; build_app(); "
            "print(sorted(m for m in set(sys.modules) - before if m.startswith('bakeoff')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = ast.literal_eval(out)  # a printed list of module names
    assert loaded and all(m.startswith("bakeoff.cli") or m == "bakeoff.errors" for m in loaded), loaded


def test_no_command_imports_another_command():
    for name in COMMAND_MODULES:
        tree = ast.parse((CLI / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                assert node.module in HELPERS, (name, node.module)


def test_the_written_out_default_is_the_statistics_default():
    assert DEFAULT_RESAMPLES == STATS_RESAMPLES


def test_the_written_out_filter_defaults_are_the_truth_defaults():
    from bakeoff.cli import _generator
    from bakeoff.truth.filters import thresholds

    assert _generator.LEAK_THRESHOLD == thresholds.LEAK_THRESHOLD
    assert _generator.ANSWERABILITY_ALPHA == thresholds.REFERENCE_ALPHA
    assert _generator.ANSWERABILITY_REFERENCES == thresholds.REFERENCE_DOCUMENTS


def test_eval_help_runs(capsys):
    from bakeoff.cli import main

    assert main(["eval", "--help"]) == 0
    assert "--metric" in capsys.readouterr().out
