"""`bakeoff eval` as a user runs it: trec_eval mode and options, warnings with counts, bad input -> one line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the command line in a subprocess or a served app


def cli(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "bakeoff", "eval", *args], capture_output=True, text=True, timeout=120,
                          check=False)
    return proc.returncode, proc.stdout, proc.stderr


def files(tmp_path: Path) -> tuple[str, str]:
    q = tmp_path / "q.txt"
    q.write_text("# judged by hand\nq1 0 a 2\nq1 0 b 1\nq2 0 c 0\nq3 0 d 1\n")
    r = tmp_path / "r.trec"
    r.write_text("q1 Q0 a 1 1.0 run extra\nq1 Q0 b 2 inf run\nq2 Q0 c 1 0.5 run\nqx Q0 a 1 1.0 run\n")
    return str(q), str(r)


def test_default_and_trec_eval_rules(tmp_path):
    q, r = files(tmp_path)
    code, out, err = cli(q, r, "-m", "mrr", "--json")
    assert code == 0, err
    # bakeoff: q1 (b first: inf) rr 1, q3 missing -> 0, q2 (only grade 0) excluded: mean 0.5
    assert json.loads(out) == {"mrr": 0.5}
    assert "1 of 3 judged queries have no results in the run (scored 0; e.g. 'q3')" in err
    assert "1 judged queries have no relevant document" in err and "1 run queries have no judgments" in err
    assert "1 lines have columns after the sixth; ignored" in err
    code, out, err = cli(q, r, "-m", "recip_rank", "--trec-eval")
    assert code == 0, err
    # trec_eval: run ∩ qrels = q1, q2 -> (1 + 0) / 2
    assert out.splitlines() == ["num_q                 \tall\t2", "recip_rank            \tall\t0.5000"]
    code, out, err = cli(q, r, "-m", "recip_rank", "--trec-eval", "-c", "-q")
    assert out.splitlines()[-2:] == ["num_q                 \tall\t3", "recip_rank            \tall\t0.3333"]
    code, out, err = cli(q, r, "-m", "P_1", "--trec-eval", "-l", "2", "-M", "1")
    assert out.splitlines()[-1] == "P_1                   \tall\t0.0000"  # b (grade 1) first, not relevant at -l2


def test_bad_input_is_one_line_exit_2(tmp_path):
    q, r = files(tmp_path)
    nan = tmp_path / "nan.trec"
    nan.write_text("q1 Q0 a 1 1.0 run\nq1 Q0 b 2 NaN run\n")
    dup = tmp_path / "dup.txt"
    dup.write_text("q1 0 a 1\nq1 0 a 0\n")
    cases = [
        ((q, str(nan)), f"error: {nan}:2: field 'score': score is NaN"),
        ((str(dup), r), f"error: {dup}:2: field 'doc id': query 'q1', document 'a' is judged twice (lines 1 and 2)"),
        ((q, r, "-c"), "error: --complete (-c) is trec_eval's rule"),
        ((q, r, "-m", "foo@10"), "error: unknown measure 'foo@10'"),
        ((q, r, "-m", "bpref@10"), "error: bpref takes no cutoff"),
    ]
    for args, start in cases:
        code, out, err = cli(*args)
        assert code == 2 and out == "" and err.startswith(start), (args, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    code, out, err = cli(str(dup), r, "--allow-duplicate-judgments", "-m", "ndcg@10")
    assert code == 0 and "1 repeated judgments overridden (the last one wins)" in err
