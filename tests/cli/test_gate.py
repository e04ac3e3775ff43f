"""CI gates and guards through the real CLI on a real (tiny) BEIR folder: exit 0 / 1 / 2.

BASE is BM25; NEW is the same arm name served by a deliberately broken retriever (a
``command`` arm that answers every query with the same irrelevant document), an arm that
prints nothing (the empty-run guard), or BM25 again (no change).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bakeoff.cli import main
from bakeoff.runner.results import read_results
from tests.support.report_fixture import write_tiny_beir

pytestmark = pytest.mark.slow  # the command line in a subprocess or a served app

SAME_DOC = """import json, sys
for line in sys.stdin:
    q = json.loads(line)
    print(q["id"], "Q0", "d2", 1, 1.0, "same")
"""
NOTHING = "import sys\nsys.stdin.read()\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gate")
    data = write_tiny_beir(root / "tiny")
    (root / "same_doc.py").write_text(SAME_DOC)
    (root / "nothing.py").write_text(NOTHING)
    specs = {
        "base": "search=bm25",
        "again": "search=bm25",
        "bad": f"search=command:command={sys.executable} {root / 'same_doc.py'}",
        "empty": f"search=command:command={sys.executable} {root / 'nothing.py'}",
    }
    out = {"data": data}
    for label, spec in specs.items():
        folder = root / label
        rc = main(["run", "--beir", str(data), "--arm", spec, "--out", str(folder), "--cache", "off", "--no-progress",
                   "--latency-sample", "0"])
        assert rc == 0
        out[label] = folder
    return out


def _compare(base: Path, new: Path, *extra: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "bakeoff", "compare", str(base), str(new), "--no-progress",
                           "--resamples", "2000", *extra], capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def test_empty_run_guard_flags_the_arm(runs, capsys) -> None:
    res = read_results(runs["empty"])
    arm = res.arms[0]
    assert arm.empty == {"queries": 10, "n": 10, "share": 1.0, "max_share": 0.5, "broken": True} and arm.broken
    assert read_results(runs["base"]).arms[0].broken is False
    rc = main(["run", "--beir", str(runs["data"]), "--arm", "bm25", "--arm",
               f"dead=command:command={sys.executable} {runs['data'].parent / 'nothing.py'}", "--cache", "off",
               "--no-progress", "--latency-sample", "0"])
    text = capsys.readouterr().out
    assert rc == 0 and "dead BROKEN (empty for 100% of queries)" in text
    assert "BROKEN: dead returned an empty ranking for 10 of 10 queries (more than 50%)" in text


def test_gate_passes_when_nothing_changed(runs) -> None:
    code, out, err = _compare(runs["base"], runs["again"], "--fail-if-worse", "ndcg@10")
    assert code == 0, err
    mean = read_results(runs["base"]).arms[0].metrics["ndcg@10"]
    assert (f"gate: ok   ndcg@10 search: not worse by more than the margin 0.0 (NEW {mean:.4f} vs BASE {mean:.4f}, "
            "diff +0.0000 [+0.0000, +0.0000], Holm p=1, 10 queries)") in out


def test_gate_fails_on_a_significantly_worse_arm(runs) -> None:
    arm = read_results(runs["base"]).arms[0]
    base = arm.metrics["ndcg@10"]
    code, out, err = _compare(runs["base"], runs["bad"], "--fail-if-worse", "ndcg@10", "--fail-if-worse", "mrr@10")
    assert code == 1, err
    lines = [line for line in out.splitlines() if line.startswith("gate: ")]
    assert len(lines) == 2 and all(line.startswith("gate: FAIL ") for line in lines)
    # NEW scores 0 everywhere: every query BM25 finds drops, none rises; with n such queries the exact
    # two-sided sign-flip p is 2 / 2**n (by hand), and Holm over one pair leaves it unchanged
    n = sum(1 for v in arm.per_query["ndcg@10"].values() if v > 0)
    assert n == 6
    assert lines[0] == (f"gate: FAIL ndcg@10 search: significantly worse (NEW 0.0000 vs BASE {base:.4f}, diff "
                        f"{-base:+.4f} [" + lines[0].split("[", 1)[1].split("]", 1)[0] + f"], Holm p={2 / 2**n:.3g}, "
                        "10 queries; alpha 0.05, margin 0.0)")
    # a margin larger than the drop passes
    code, out, _ = _compare(runs["base"], runs["bad"], "--fail-if-worse", "ndcg@10", "--margin", "0.9")
    assert code == 0 and "gate: ok   ndcg@10 search: not worse by more than the margin 0.9" in out


def test_gate_fails_on_a_broken_new_arm(runs) -> None:
    code, out, err = _compare(runs["base"], runs["empty"], "--fail-if-worse", "ndcg@10")
    assert code == 1, err
    assert "gate: FAIL ndcg@10: NEW arm search is broken (empty ranking for 10 of 10 queries (100%))" in out
    assert "Broken, left out of the ranking and the tests: empty/search" in out  # the report, too


def test_fail_under(runs, tmp_path, capsys) -> None:
    args = ["run", "--beir", str(runs["data"]), "--arm", "bm25", "--cache", "off", "--no-progress",
            "--latency-sample", "0"]
    mean = read_results(runs["base"]).arms[0].metrics["ndcg@10"]
    assert main([*args, "--fail-under", "ndcg@10=0.1"]) == 0
    assert f"gate: ok   ndcg@10 bm25: {mean:.4f} >= 0.1" in capsys.readouterr().out
    out = tmp_path / "written"
    assert main([*args, "--fail-under", "ndcg@10=0.99", "--out", str(out)]) == 1
    assert f"gate: FAIL ndcg@10 bm25: {mean:.4f} < 0.99" in capsys.readouterr().out
    assert (out / "results.json").exists()  # the results are written all the same
    assert main([*args, "--fail-under", "bm25:mrr@10=0.99"]) == 1


def test_bad_input_is_one_line_exit_2(runs, tmp_path) -> None:
    # a gate on mismatched query sets (another dataset): exit 2 before any statistics
    other = tmp_path / "other"
    data2 = write_tiny_beir(tmp_path / "elsewhere" / "tiny")  # same name, different judgments
    qrels = data2 / "qrels" / "test.tsv"
    qrels.write_text("\n".join(qrels.read_text().splitlines()[:-2]) + "\n")  # two judgments fewer
    assert main(["run", "--beir", str(data2), "--arm", "search=bm25", "--out", str(other), "--cache", "off",
                 "--no-progress", "--latency-sample", "0"]) == 0
    code, out, err = _compare(runs["base"], other, "--fail-if-worse", "ndcg@10")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "BASE and NEW are on different data: their queries fingerprints differ" in err and str(other / "results.json") in err
    # a different split name
    res = json.loads((runs["again"] / "results.json").read_text())
    res["dataset"]["split"] = "train"
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "results.json").write_text(json.dumps(res))
    code, _, err = _compare(runs["base"], tmp_path / "train", "--fail-if-worse", "ndcg@10")
    assert code == 2 and "BASE split 'test', NEW 'train'" in err and err.count("\n") == 1
    # a measure that is not in the results, an unknown measure, nothing to pair
    code, _, err = _compare(runs["base"], runs["again"], "--fail-if-worse", "ndcg@5")
    assert code == 2 and "BASE has no ndcg@5" in err
    code, _, err = _compare(runs["base"], runs["again"], "--fail-if-worse", "bogus@10")
    assert code == 2 and "unknown measure 'bogus@10'" in err
    # --fail-under: a bad spec or a measure the run does not compute: nothing written
    out = tmp_path / "never"
    for spec, msg in (("ndcg@10", "expected [ARM:]MEASURE=VALUE"), ("ndcg@10=high", "'high' is not a number"),
                      ("recall@7=0.5", "the run did not compute recall@7")):
        proc = subprocess.run([sys.executable, "-m", "bakeoff", "run", "--beir", str(runs["data"]), "--arm", "bm25",
                               "--cache", "off", "--no-progress", "--latency-sample", "0", "--out", str(out),
                               "--fail-under", spec], capture_output=True, text=True, timeout=300, check=False)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
        assert proc.returncode == 2 and len(errors) == 1 and msg in errors[0], proc.stderr
        assert not out.exists()
