"""``bakeoff tune`` as a user runs it: a [tune] TOML table end to end on a small folder, and bad
input refused in one line with exit 2 and nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.data.test_loaders import beir_folder, write


def cli(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "bakeoff", "tune", *args], capture_output=True, text=True,
                          timeout=600, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def folder(tmp_path: Path) -> Path:
    """Six documents, a train split (q1-q3) and a test split (q4-q6)."""
    corpus = "".join(json.dumps({"_id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(
        ["alpha beta", "beta gamma gamma", "gamma delta", "delta epsilon", "epsilon zeta alpha", "zeta"], 1))
    queries = "".join(json.dumps({"_id": f"q{i}", "text": t}) + "\n" for i, t in enumerate(
        ["alpha", "gamma delta", "zeta", "alpha gamma", "epsilon", "delta zeta"], 1))
    root = beir_folder(tmp_path / "data", corpus=corpus, queries=queries,
                       qrels="query-id\tcorpus-id\tscore\nq4\td2\t1\nq5\td4\t1\nq6\td6\t1\n")
    write(root / "qrels" / "train.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\nq3\td6\t1\n")
    return root


def config(tmp_path: Path, tune: str) -> Path:
    data = folder(tmp_path)
    p = tmp_path / "tune.toml"
    p.write_text(f'[dataset]\nbeir = "{data}"\n\n[[arms]]\nname = "bm25"\ntype = "bm25"\n\n{tune}\n')
    return p


@pytest.mark.slow  # the command line in a subprocess or a served app
def test_toml_tune_table_end_to_end(tmp_path):
    cfg = config(tmp_path, '[tune]\narm = "bm25"\ndev = "train"\nmeasure = "mrr@10"\n'
                           '[tune.params]\nk1 = [0.5, 1.5]\nmethod = ["lucene", "robertson"]')
    out = tmp_path / "out"
    code, stdout, stderr = cli(str(cfg), "--out", str(out), "--no-progress", "--cache-dir", str(tmp_path / "c"),
                               "--resamples", "200", "--latency-sample", "0")
    assert code == 0, stderr
    t = json.loads((out / "tune.json").read_text())
    assert [x["params"] for x in t["trials"]] == [{"k1": 0.5, "method": "lucene"}, {"k1": 0.5, "method": "robertson"},
                                                  {"k1": 1.5, "method": "lucene"}, {"k1": 1.5, "method": "robertson"}]
    assert t["dev"]["n_queries"] == 3 and t["test"]["n_queries"] == 3 and t["measure"] == "mrr@10"
    # every train query's only relevant document is BM25's top hit for any setting: all trials tie at 1.0
    assert [x["dev"] for x in t["trials"]] == [1.0] * 4 and t["chosen"]["index"] == 0
    assert "chosen: #0 k1=0.5, method=lucene" in stdout and "tuned - defaults" in stdout
    assert "  averaging: bakeoff (" in stdout and t["averaging"] == "bakeoff" and t["relevance_level"] == 1
    results = json.loads((out / "results.json").read_text())
    assert [a["name"] for a in results["arms"]] == ["bm25", "bm25-tuned"] and results["tune"] == t


@pytest.mark.parametrize("args,tune,message", [
    (["--param", "k2=1,2"], "", "arm 'bm25' (bm25) has no parameter 'k2'; did you mean 'k1'?"),
    (["--param", "k1="], "", "parameter 'k1' has no values (an empty grid)"),
    (["--param", "k1=1,2", "--dev", "test"], "", "--dev 'test' shares the split 'test' with the test split"),
    (["--param", "k1=1,2", "--tune", "bm52"], "", "arm 'bm52' is not an arm of the bake-off; did you mean 'bm25'?"),
    ([], '[tune]\narm = "bm25"\nmeasures = "ndcg@10"\n[tune.params]\nb = [0.5]',
     "unknown key 'measures'; did you mean 'measure'?"),
    ([], '[tune]\narm = "bm25"\nsearch = "random"\n[tune.params]\nb = [0.5]', "random search needs trials >= 1"),
    (["--param", "method=lucene,bm26"], "", "bm25 method must be one of"),
])
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, args, tune, message):
    cfg = config(tmp_path, tune)
    out = tmp_path / "out"
    code, stdout, stderr = cli(str(cfg), *args, "--out", str(out), "--no-progress", "--cache-dir", str(tmp_path / "c"))
    assert code == 2, (stdout, stderr)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], stderr
    assert not out.exists()


@pytest.mark.slow  # SciFact
def test_dev_split_sharing_test_queries_is_refused(tmp_path, scifact_path):
    """SciFact's train split holds two queries whose text equals a test query's: refused like the
    fine-tuning hygiene, one line naming them; --drop-leaks is the way out."""
    out = tmp_path / "out"
    code, _, stderr = cli("--beir", str(scifact_path), "--arm", "bm25", "--param", "k1=1.2", "--dev", "train",
                          "--out", str(out), "--no-progress", "--cache-dir", str(tmp_path / "c"))
    assert code == 2 and len(stderr.strip().splitlines()) == 1
    assert "--dev train shares 2 queries with the test split 'test' (e.g. dev '1291' ~ test '1292'" in stderr
    assert not out.exists()
