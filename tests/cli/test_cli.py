"""The CLI end to end: run (flags and TOML), eval, results.json, cache, bad input -> exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bakeoff.cli import main
from bakeoff.runner.results import read_results
from tests.data.test_loaders import beir_folder, write


def cli(*args: str, cache_dir: Path | None = None) -> tuple[int, str, str]:
    """Run the real console entry in a subprocess (exit codes and stderr as a user sees them)."""
    extra = ["--cache-dir", str(cache_dir)] if cache_dir and args and args[0] == "run" else []
    proc = subprocess.run([sys.executable, "-m", "bakeoff", *args, *extra], capture_output=True, text=True,
                          timeout=300, check=False)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.slow  # the command line in a subprocess or a served app
def test_run_flags_writes_results_and_runs(tmp_path):
    data = beir_folder(tmp_path / "data")
    out = tmp_path / "out"
    code, stdout, stderr = cli("run", "--beir", str(data), "--arm", "bm25", "--arm", "stem=bm25:stemmer=english",
                               "--arm", "tfidf", "--out", str(out), "--no-progress", cache_dir=tmp_path / "c")
    assert code == 0, stderr
    assert "NDCG@10" in stdout and "stem" in stdout
    res = read_results(out)
    assert res.schema_version == 1 and res.arm_names == ["bm25", "stem", "tfidf"]
    bm25 = res.arms[0]
    # q1 "alpha" -> d1 only; q2 "gamma" -> d2 (grade 2) only: every metric is 1 except precision
    assert bm25.metrics["ndcg@10"] == 1.0 and bm25.metrics["mrr@10"] == 1.0
    assert bm25.metrics["precision@10"] == pytest.approx(0.1)
    assert bm25.per_query["recall@10"] == {"q1": 1.0, "q2": 1.0}
    assert bm25.config["stemmer"] is None and res.arms[1].config["stemmer"] == "english"
    assert (out / str(bm25.run_file)).read_text().splitlines()[0].startswith("q1 Q0 d1 1 ")
    assert res.fingerprints["corpus"] and res.source["beir"] == str(data)
    # second run: every arm comes from the cache
    code, stdout, _ = cli("run", "--beir", str(data), "--arm", "bm25", "--out", str(out), "--no-progress",
                          cache_dir=tmp_path / "c")
    assert code == 0 and read_results(out).arms[0].cached is True


@pytest.mark.slow  # the command line in a subprocess or a served app
def test_run_toml_config(tmp_path):
    beir_folder(tmp_path / "data")
    cfg = write(tmp_path / "bake.toml", """
[dataset]
beir = "data"
split = "test"
[run]
k = 5
out = "res"
cache = "off"
[[arms]]
name = "lex"
type = "bm25"
k1 = 1.2
b = 0.5
""")
    code, _stdout, stderr = cli("run", str(cfg), "--no-progress")
    assert code == 0, stderr
    res = read_results(tmp_path / "res")
    assert res.k == 5 and res.arms[0].config["k1"] == 1.2 and "ndcg@5" in res.arms[0].metrics


def test_eval_json_matches_run(tmp_path):
    data = beir_folder(tmp_path / "data")
    write(tmp_path / "r.trec", "q1 Q0 d2 1 2.0 x\nq1 Q0 d1 2 1.0 x\nq2 Q0 d2 1 1.0 x\n")
    code, stdout, stderr = cli("eval", str(data / "qrels" / "test.tsv"), str(tmp_path / "r.trec"),
                               "--metric", "mrr@10", "--metric", "recall@1", "--json")
    assert code == 0, stderr
    assert json.loads(stdout) == {"mrr@10": 0.75, "recall@1": 0.5}


BAD_CASES = {
    "malformed_jsonl": ({"corpus": '{"_id": "d1", "text": "x"}\n{"_id": "d2", "text": \n'}, r"corpus.jsonl:2: invalid JSON"),
    "qrels_missing_column": ({"qrels": "query-id\tcorpus-id\tscore\nq1\td1\n"}, r"test.tsv:2: field 'score'"),
    "duplicate_ids": ({"corpus": '{"_id": "d1", "text": "x"}\n{"_id": "d1", "text": "y"}\n'}, r"corpus.jsonl:2: field 'id': duplicate"),
    "empty_corpus": ({"corpus": ""}, r"corpus.jsonl: the corpus is empty"),
    "non_utf8": ({"corpus": b'{"_id": "d1", "text": "\xff"}\n'}, r"corpus.jsonl:1: not valid UTF-8"),
}


@pytest.mark.slow  # the command line in a subprocess or a served app
@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input_one_line_exit_2_no_output(tmp_path, case):
    kwargs, expected = BAD_CASES[case]
    data = beir_folder(tmp_path / "data", **kwargs)
    out = tmp_path / "out"
    code, _stdout, stderr = cli("run", "--beir", str(data), "--arm", "bm25", "--out", str(out), "--no-progress",
                               cache_dir=tmp_path / "c")
    assert code == 2
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and expected.replace("\\", "") in lines[0], stderr
    assert "Traceback" not in stderr
    assert not out.exists()


def test_qrels_doc_absent_from_corpus_warns_and_continues(tmp_path):
    data = beir_folder(tmp_path / "data", qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\tghost\t1\n")
    code, _stdout, stderr = cli("run", "--beir", str(data), "--arm", "bm25", "--no-progress", "--cache", "off")
    assert code == 0
    assert "warning: 1 judgments name documents absent from the corpus (e.g. 'ghost')" in stderr


@pytest.mark.slow  # the command line in a subprocess or a served app
def test_config_errors_exit_2(tmp_path):
    data = beir_folder(tmp_path / "data")
    for arm, msg in [("nope", "unknown arm type 'nope'"), ("bm25:k1", "option 'k1' is not key=value"),
                     ("bm25:colour=red", "unknown option 'colour'")]:
        code, _, stderr = cli("run", "--beir", str(data), "--arm", arm, "--cache", "off")
        assert code == 2 and msg in stderr, stderr
    bad = write(tmp_path / "bad.toml", "[dataset\nbeir=1")
    code, _, stderr = cli("run", str(bad))
    assert code == 2 and "invalid TOML" in stderr


def test_main_returns_exit_code_in_process(tmp_path, capsys):
    assert main(["eval", str(tmp_path / "missing.tsv"), str(tmp_path / "r")]) == 2
    assert "missing.tsv: no such file" in capsys.readouterr().err


def test_concurrency_below_one_is_a_usage_error(tmp_path):
    # --concurrency 0 used to fall back to the default silently; now it is refused before any LLM starts.
    data = beir_folder(tmp_path / "data")
    for cmd in (["generate", "describe", "--corpus", str(data), "--out", str(tmp_path / "out")],
                ["assess", str(data)]):
        code, _, stderr = cli(*cmd, "--llm", "local", "--concurrency", "0")
        assert code == 2 and "--concurrency" in stderr and "0" in stderr, stderr
    assert not (tmp_path / "out").exists()


def test_open_llm_refuses_concurrency_below_one():
    from bakeoff.errors import ConfigError
    from bakeoff.truth.llm.open import open_llm

    with pytest.raises(ConfigError, match="--concurrency must be at least 1, got 0"), \
            open_llm("local", cache=None, concurrency=0):
        pass
