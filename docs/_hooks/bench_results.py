"""MkDocs hook: ``<!-- bakeoff-bench: NAME -->`` in a page becomes the last recorded run of that benchmark,
read from ``benchmarks/records/NAME.json`` (written by ``python benchmarks/run.py``): when, where, with what,
the exact command, and what it printed. The figures on the page are the benchmark's own output.

A benchmark never recorded renders as a note saying how to record it; a failed run shows its error.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "records"
_MARKER = re.compile(r"<!--\s*bakeoff-bench:\s*([a-z0-9_]+)\s*-->")
#: Libraries shown in the summary line (all recorded versions are in the details).
_KEY_LIBS = ("numpy", "torch", "bm25s", "sentence-transformers", "openvino", "pytrec-eval-terrier")


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}text\n{text}\n{ticks}"


def render(record: dict[str, Any]) -> str:
    """The Markdown of one record."""
    m = record.get("machine", {})
    v = dict(record.get("versions", {}))
    when = dt.datetime.fromisoformat(record["date"]).strftime("%Y-%m-%d %H:%M UTC")
    sha = record.get("commit")
    at = f" at `{sha[:10]}`{' with uncommitted changes' if record.get('dirty') else ''}" if sha else ""
    load = ""
    if isinstance(m.get("load1_before"), (int, float)):
        load = f", load {m['load1_before']:.1f} → {m.get('load1_after', float('nan')):.1f}"
    libs = ", ".join(f"{k} {v[k]}" for k in _KEY_LIBS if k in v)
    lines = [
        (f"Recorded **{when}**{' (quick sizes)' if record.get('quick') else ''} in {record['wall_s']:.0f} s: "
         f"`{record['command']}`"),
        "",
        f"{html.escape(str(m.get('cpu', '?')))}, {m.get('cores', '?')} logical cores{load}; "
        f"bakeoff {v.get('bakeoff', '?')}{at}; Python {v.get('python', '?')}" + (f", {libs}" if libs else "") + ".",
        "",
    ]
    if record.get("returncode", 0) != 0:
        lines += [f'!!! failure "This run failed (exit code {record["returncode"]})"', "",
                  *("    " + line for line in _fence(record.get("error", "")).splitlines()), ""]
    lines += [_fence(record.get("output", "")), ""]
    others = {k: val for k, val in v.items() if k not in ("python", "bakeoff")}
    if others:
        lines += ['??? info "All recorded versions"', "",
                  "    " + ", ".join(f"{k} {val}" for k, val in sorted(others.items())), ""]
    return "\n".join(lines)


def _replace(match: re.Match[str]) -> str:
    name = match.group(1)
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return (f'!!! note "Not recorded yet"\n    Record it with `python benchmarks/run.py {name}`; '
                "this page shows its output then.\n")
    return render(json.loads(path.read_text(encoding="utf-8")))


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return _MARKER.sub(_replace, markdown)
