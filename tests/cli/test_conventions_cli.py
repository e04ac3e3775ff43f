"""The averaging rule and the relevance level as a user sets them: ``eval --averaging``, ``run --averaging
--relevance-level`` with a ``(rel=N)`` measure, stored in results.json and printed above the table; ``compare``
and the gate refuse result sets computed differently; the API's ``compare`` under trec_eval's rule."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import bakeoff
from bakeoff.cli import main
from bakeoff.data.model import Qrels, Run

from .test_eval_cli import files


def _eval(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "bakeoff", "eval", *args], capture_output=True, text=True,
                          timeout=120, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def test_eval_averaging_names_the_same_rules_as_trec_eval_flags(tmp_path: Path) -> None:
    q, r = files(tmp_path)
    # bakeoff: 0.5 over q1, q3 (q2 judged only 0: out); trec_eval: q1, q2 -> 0.5; -c: q1, q2, q3 -> 1/3
    for flags, want, n, rule in ((["--averaging", "bakeoff"], 0.5, 2, "bakeoff"),
                                 (["--averaging", "trec_eval"], 0.5, 2, "trec_eval"),
                                 (["--averaging", "intersection"], 0.5, 2, "trec_eval"),
                                 (["--averaging", "trec_eval-c"], 1 / 3, 3, "trec_eval-c")):
        code, out, err = _eval(q, r, "-m", "mrr", *flags)
        assert code == 0, err
        lines = dict(line.split("\tall\t") for line in out.splitlines())
        assert float(lines["mrr"]) == pytest.approx(want, abs=1e-6) and lines["queries"] == str(n)
        assert lines["averaging"] == rule
    code, _, err = _eval(q, r, "--averaging", "bakeoff", "--trec-eval")
    assert code == 2 and err.strip() == "error: --averaging bakeoff contradicts --trec-eval"
    code, _, err = _eval(q, r, "--averaging", "median")
    assert code == 2 and "unknown averaging rule 'median'" in err


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    """A BEIR folder with graded judgments: q1's grade-2 document is d2, q2 has grade 1 only."""
    root = tmp_path_factory.mktemp("graded")
    docs = {"d1": "apple banana", "d2": "apple cherry", "d3": "banana cherry", "d4": "durian"}
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": "", "text": t}) + "\n"
                                               for i, t in docs.items()))
    (root / "queries.jsonl").write_text('{"_id": "q1", "text": "apple"}\n{"_id": "q2", "text": "banana"}\n')
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\nq2\td3\t1\n")
    return root


def _run(args: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(args)
    return rc, buf.getvalue()


def test_run_stores_and_prints_the_conventions(graded: Path, tmp_path: Path) -> None:
    base = ["run", "--beir", str(graded), "--arm", "bm25", "--cache", "off", "--no-progress", "--latency-sample", "0",
            "--k", "2", "--measure", "P@2", "--measure", "P(rel=2)@2", "--measure", "recall@2(rel=2)"]
    rc, out = _run([*base, "--out", str(tmp_path / "l2"), "--averaging", "trec_eval-c", "--relevance-level", "2"])
    assert rc == 0
    assert "averaging: trec_eval-c (every judged query, judged-0-only and missing queries as 0); relevant: grade " \
           ">= 2; own-id documents kept" in out
    res = json.loads((tmp_path / "l2" / "results.json").read_text())
    assert res["averaging"] == "trec_eval-c" and res["relevance_level"] == 2 and res["depth"] == 1000
    assert res["measures"] == ["precision@2", "precision@2(rel=2)", "recall@2(rel=2)"]
    pq = res["arms"][0]["per_query"]
    # q2 has no grade-2 document: counted (trec_eval -c) with 0 on every binary measure at level 2
    assert set(pq["precision@2"]) == {"q1", "q2"} and pq["precision@2"]["q2"] == 0.0
    assert pq["precision@2"] == pq["precision@2(rel=2)"]  # the run's level and the measure's level agree
    rc, _ = _run([*base, "--out", str(tmp_path / "l1")])  # defaults: bakeoff's rule, level 1
    assert rc == 0
    l1 = json.loads((tmp_path / "l1" / "results.json").read_text())
    assert l1["averaging"] == "bakeoff" and l1["relevance_level"] == 1
    assert l1["arms"][0]["per_query"]["precision@2"]["q2"] == 0.5  # d3 (grade 1) is relevant at level 1
    # compare and the gate refuse sets computed differently
    rc, _ = _run(["compare", str(tmp_path / "l1"), str(tmp_path / "l2"), "--no-progress", "--resamples", "100"])
    assert rc == 2
    rc, _ = _run(["compare", str(tmp_path / "l1"), str(tmp_path / "l2"), "--fail-if-worse", "precision@2",
                  "--no-progress", "--resamples", "100"])
    assert rc == 2


def test_api_compare_under_trec_eval_pairs_the_common_queries() -> None:
    qrels = Qrels({"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}})
    full = Run.from_scores("full", {"q1": {"a": 1.0}, "q2": {"x": 1.0}, "q3": {"c": 1.0}})
    part = Run.from_scores("part", {"q1": {"a": 1.0}, "q3": {"x": 1.0}})  # q2 unanswered
    rep = bakeoff.compare(qrels, [full, part], "P@1", averaging="trec_eval", n_resamples=100)
    assert rep.evaluations["full"].means["precision@1"] == pytest.approx(2 / 3)
    assert rep.evaluations["part"].means["precision@1"] == pytest.approx(1 / 2)  # trec_eval: over q1, q3
    assert rep.report["n_queries"] == 2 and "over the 2 queries every arm answered" in rep.report["note"]
    assert rep.report["averaging"] == "trec_eval" and "averaging: trec_eval (" in rep.to_table()
    c = bakeoff.compare(qrels, [full, part], "P@1", averaging="trec_eval-c", n_resamples=100)
    assert c.report["n_queries"] == 3 and c.mean("part", "P@1") == pytest.approx(1 / 3)


def test_an_arm_answering_nothing_is_broken_under_trec_eval_too(graded: Path) -> None:
    """trec_eval's rule skips unanswered queries, so the empty-run guard counts every judged query instead."""
    from bakeoff.arms.base import Arm
    from bakeoff.data import load_beir
    from bakeoff.runner.run import run_bakeoff

    class Silent(Arm):
        type = "silent"

        def config(self) -> dict:
            return {}

        def index(self, corpus, *, ctx) -> None:
            pass

        def search(self, queries, *, k, ctx, mask=None) -> Run:
            return Run.from_ranked(self.name, {q: () for q in queries.ids})

    ds = load_beir(graded, split="test")
    res = run_bakeoff(ds, [Silent(name="silent"), "bm25"], k=2, cache=None, progress=False, latency_sample=0,
                      averaging="trec_eval")
    silent, bm25 = res.arms
    assert silent.evaluation.query_ids == () and silent.extra["empty"]["broken"] is True
    assert silent.extra["empty"]["n"] == 2 and bm25.extra["empty"]["broken"] is False
