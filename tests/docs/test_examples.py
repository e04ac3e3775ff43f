"""Every Python example of the README and the docs pages runs, and an example followed by a ``text``
block prints exactly that block (the figures a page shows are the figures the code computes).

Each ```python block is run as a script in a fresh namespace, in a temporary working folder, with
warnings as errors (an example must not use a deprecated name); the data path the examples use,
``../shared/data/scifact``, is pointed at the test data."""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
EXAMPLE_DATA = "../shared/data/scifact"


def examples() -> list[tuple[str, str, str | None]]:
    out = []
    for page in PAGES:
        blocks = list(FENCE.finditer(page.read_text(encoding="utf-8")))
        n = 0
        for this, after in zip(blocks, [*blocks[1:], None]):
            if this["lang"] != "python":
                continue
            n += 1  # the output: a text block right after, with at most one paragraph of prose between
            gap = "" if after is None else after.string[this.end():after.start()]
            printed = after["body"] if after is not None and after["lang"] == "text" and "\n\n\n" not in gap \
                and gap.strip().count("\n\n") == 0 else None
            out.append((f"{page.relative_to(ROOT)}#{n}", this["body"], printed))
    return out


EXAMPLES = examples()


def test_the_pages_have_examples() -> None:
    names = [e[0] for e in EXAMPLES]
    assert "README.md#1" in names and "docs/api.md#1" in names
    assert {n: o for n, _, o in EXAMPLES}["docs/api.md#1"] is not None  # its output is checked


@pytest.mark.slow  # SciFact
@pytest.mark.parametrize(("where", "code", "expected"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_example_runs(where: str, code: str, expected: str | None, tmp_path: Path, monkeypatch, scifact_path) -> None:
    if EXAMPLE_DATA in code:
        code = code.replace(EXAMPLE_DATA, str(scifact_path))
    monkeypatch.chdir(tmp_path)
    buf = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(buf):
        warnings.simplefilter("error", DeprecationWarning)
        exec(compile(code, where, "exec"), {"__name__": f"example_{where}"})  # noqa: S102 - the docs' own code
    if expected is not None:
        assert buf.getvalue().rstrip("\n") == expected.rstrip("\n")
