"""The command arm: a real executable (a Python script) reading JSONL queries, writing a TREC run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from bakeoff.arms.external import ExternalError
from bakeoff.arms.external.command import CommandArm
from bakeoff.data.model import Corpus, Document, Queries
from bakeoff.runner.context import Context

CORPUS = Corpus.from_documents([Document(d, f"text {d}") for d in ("a", "b", "c", "d")])
QUERIES = Queries.from_dict({"q1": "alpha", "q2": "beta"})

# Scores each document by how many characters of the query text it shares with "abcd"-ish ids:
# q1 -> a:1, b:1 (tie), c:3 ; q2 -> d:2 ; every line echoes the k it was given in the tag.
SCRIPT = r'''
import json, sys
mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
for line in sys.stdin:
    q = json.loads(line)
    if mode == "fail":
        print("index not found: /data/idx", file=sys.stderr)
        sys.exit(3)
    if q["id"] == "q1":
        hits = [("a", 1.0), ("c", 3.0), ("b", 1.0)]
    else:
        hits = [("d", 2.0)]
    for r, (d, s) in enumerate(hits, 1):
        print(f"{q['id']} Q0 {d} {r} {s} k{q['k']}")
if mode == "malformed":
    print("q2 Q0 c 2")
if mode == "badscore":
    print("q2 Q0 c 2 high tag")
if mode == "unknown":
    print("q9 Q0 c 2 1.0 tag")
'''


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    p = tmp_path / "retriever.py"
    p.write_text(SCRIPT)
    return p


def _arm(script: Path, mode: str = "ok") -> CommandArm:
    return CommandArm(name="cmd", command=[sys.executable, str(script), mode])


def test_command_arm_reads_trec_run(script: Path, cache: Any) -> None:
    arm = _arm(script)
    ctx = Context(corpus=CORPUS, cache=cache, progress=False)
    run = ctx.search(arm, QUERIES, k=2)
    assert run["q1"] == (("c", 3.0), ("b", 1.0))  # tie a/b broken by doc id desc, cut at k
    assert run["q2"] == (("d", 2.0),)
    again = Context(corpus=CORPUS, cache=cache, progress=False)
    assert again.search(arm, QUERIES, k=2).ranked == run.ranked and again.from_cache[arm.fingerprint()]


def test_command_arm_string_command_is_split(script: Path) -> None:
    arm = CommandArm(name="cmd", command=f"{sys.executable} {script} ok")
    assert arm.argv == [sys.executable, str(script), "ok"]
    assert Context(corpus=CORPUS, progress=False).search(arm, QUERIES, k=5)["q1"][0] == ("c", 3.0)


@pytest.mark.parametrize(
    ("mode", "pattern"),
    [
        ("fail", r"exited with status 3: index not found: /data/idx"),
        ("malformed", r"stdout line 5: expected 6 fields 'QID Q0 DOCID RANK SCORE TAG', got 4: 'q2 Q0 c 2'"),
        ("badscore", r"stdout line 5: score 'high' is not a number"),
        ("unknown", r"stdout line 5: unknown query id 'q9'"),
    ],
)
def test_command_arm_failures_are_one_line_and_not_cached(script: Path, cache: Any, mode: str, pattern: str) -> None:
    ctx = Context(corpus=CORPUS, cache=cache, progress=False)
    with pytest.raises(ExternalError, match=pattern) as err:
        ctx.search(_arm(script, mode), QUERIES, k=2)
    assert "\n" not in str(err.value) and "command arm 'cmd'" in str(err.value)
    assert not list(cache.root.rglob("*.json"))


def test_command_arm_missing_executable_and_timeout(tmp_path: Path) -> None:
    with pytest.raises(ExternalError, match="executable '/nonexistent/x' not found"):
        Context(corpus=CORPUS, progress=False).search(CommandArm(name="c", command="/nonexistent/x"), QUERIES, k=2)
    slow = CommandArm(name="c", command=[sys.executable, "-c", "import time; time.sleep(5)"], timeout=0.3)
    with pytest.raises(ExternalError, match="timed out after 0.3 s"):
        Context(corpus=CORPUS, progress=False).search(slow, QUERIES, k=2)
