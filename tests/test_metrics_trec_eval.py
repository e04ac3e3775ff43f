"""bakeoff eval against trec_eval's own test files (usnistgov/trec_eval 10.0, test/; see
tests/fixtures/trec_eval/README.md): every ALL and per-query value of a measure both tools compute.

trec_eval prints 4 decimals (``%6.4f``), so a value agrees when it is within half a unit of the
4th decimal (5e-5, plus float slack). In trec_eval mode there must be **no** difference; in
bakeoff's default mode the only differences are the documented ones (its query rule)."""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bakeoff.metrics import evaluate_files, parse_measure

FIX = Path(__file__).parent / "fixtures" / "trec_eval"
TOL = 5e-5 + 1e-9

#: trec_eval measure names bakeoff computes (everything else in the expected files is skipped).
_SUPPORTED = re.compile(r"^(map|Rprec|bpref|recip_rank|ndcg|(P|recall|ndcg_cut|map_cut|success)_\d+)$")

# (expected output, qrels, run, trec_eval options) — the Makefile's quicktest lines we can reproduce
CASES = {
    "out.test": ("qrels.test", "results.test", {}),
    "out.test (qrels with comments)": ("qrels.test.with-comments", "results.test", {}),
    "out.comment.test": ("qrels.comment.test", "results.comment.test", {}),
    "out.test.aq": ("qrels.test", "results.test", {}),
    "out.test.aqc": ("qrels.test", "results.trunc", {"complete": True}),
    "out.test.aqcM": ("qrels.test", "results.trunc", {"complete": True, "max_docs": 100}),
    "out.test.aql": ("qrels.rel_level", "results.test", {"relevance_level": 2}),
    "out.test.meas_params": ("qrels.test", "results.test", {}),
}


def expected_values(name: str) -> dict[tuple[str, str], float]:
    """``{(trec measure, qid or 'all'): value}`` for the measures bakeoff supports."""
    out = {}
    for line in (FIX / name.split(" ")[0]).read_text().splitlines():
        meas, qid, value = line.split("\t")
        meas = meas.strip()
        if _SUPPORTED.match(meas):
            out[(meas, qid)] = float(value)
    return out


def fixture(name: str, tmp: Path) -> Path:
    if (FIX / name).exists():
        return FIX / name
    out = tmp / name  # the 2.8 MB run is stored gzipped
    out.write_bytes(gzip.decompress((FIX / f"{name}.gz").read_bytes()))
    return out


def ours(case: str, tmp: Path, *, trec_eval: bool) -> tuple[dict[tuple[str, str], float], dict]:
    qrels, run, opts = CASES[case]
    want = expected_values(case)
    measures = sorted({m for m, _ in want})
    if not trec_eval:
        opts = {k: v for k, v in opts.items() if k != "complete"}
    done = evaluate_files(fixture(qrels, tmp), fixture(run, tmp), [parse_measure(m) for m in measures],
                          trec_eval=trec_eval, **opts)
    ev = done.evaluation
    got = {}
    for m in measures:
        key = str(parse_measure(m))
        got[(m, "all")] = ev.means[key]
        for q, v in ev.per_query[key].items():
            got[(m, q)] = v
    return got, {"evaluation": ev, "warnings": done.warnings}


@pytest.fixture(scope="module")
def tally():
    counts = {"compared": 0, "cases": 0}
    yield counts
    print(f"\ntrec_eval files: {counts['compared']} values compared over {counts['cases']} cases, 0 differences")


@pytest.mark.parametrize("case", list(CASES))
def test_trec_eval_mode_reproduces_every_value(case, tmp_path, tally):
    want = expected_values(case)
    got, _ = ours(case, tmp_path, trec_eval=True)
    per_query_expected = {k for k in want if k[1] != "all"}
    if case in ("out.test", "out.test (qrels with comments)", "out.comment.test"):
        assert not per_query_expected  # summary-only outputs
    compared = 0
    diffs = []
    for key, value in want.items():
        assert key in got, f"{case}: bakeoff has no value for {key}"
        compared += 1
        if abs(got[key] - value) > TOL:
            diffs.append((key, got[key], value))
    assert diffs == [], f"{case}: {len(diffs)} of {compared} values differ: {diffs[:5]}"
    # and no per-query value that trec_eval does not print
    assert {k for k in got if k[1] != "all"} == per_query_expected or not per_query_expected
    tally["compared"] += compared
    tally["cases"] += 1


def test_total_number_of_values_compared():
    n = sum(len(expected_values(c)) for c in CASES)
    assert n == 787  # every supported ALL and per-query value of the 8 outputs (printed by the tally above)


def test_default_mode_differs_only_by_the_documented_query_rule(tmp_path):
    """qrels.comment.test judges one query (2024-36302) with grade 0 only: trec_eval averages it as 0
    over 31 queries, bakeoff's rule excludes it (30 queries), so every bakeoff mean is trec_eval's x 31/30
    (recip_rank 0.8595 -> 0.8881, +0.029; P_10 0.7710 -> 0.7967, +0.026, as the issue measured)."""
    want = expected_values("out.comment.test")
    got, info = ours("out.comment.test", tmp_path, trec_eval=False)
    ev = info["evaluation"]
    assert len(ev.query_ids) == 30 and ev.excluded["no_relevant"] == ("2024-36302",)
    assert any("1 judged queries have no relevant document" in w for w in info["warnings"])
    for (m, q), value in want.items():
        assert q == "all"
        assert got[(m, q)] == pytest.approx(value * 31 / 30, abs=TOL * 31 / 30)
    assert got[("recip_rank", "all")] - want[("recip_rank", "all")] == pytest.approx(0.0286, abs=2e-4)
    assert got[("P_10", "all")] - want[("P_10", "all")] == pytest.approx(0.0257, abs=2e-4)


@pytest.mark.parametrize("case", ["out.test", "out.test.aq", "out.test.aqc", "out.test.meas_params"])
def test_default_mode_equals_trec_eval_when_every_query_has_a_relevant_document(case, tmp_path):
    """On qrels.test every judged query has relevant documents, and bakeoff's rule scores a judged query
    missing from the run 0 (what -c does): the default mode gives trec_eval's numbers (-c included)."""
    want = expected_values(case)
    got, _ = ours(case, tmp_path, trec_eval=False)
    diffs = [(k, got[k], v) for k, v in want.items() if abs(got[k] - v) > TOL]
    assert diffs == []


def test_default_mode_at_relevance_level_2_excludes_queries_without_grade_2(tmp_path):
    """qrels.rel_level with -l2: a query with no document of grade >= 2 counts (as 0 on binary measures)
    for trec_eval, is excluded by bakeoff's rule — the only differences, per query there are none."""
    want = expected_values("out.test.aql")
    got, info = ours("out.test.aql", tmp_path, trec_eval=False)
    ev = info["evaluation"]
    excluded = set(ev.excluded["no_relevant"])
    for (m, q), v in want.items():
        if q != "all" and q not in excluded:
            assert got[(m, q)] == pytest.approx(v, abs=TOL)
    # trec_eval's mean over 3 queries vs bakeoff's over the others
    n_all, n_ours = 3, 3 - len(excluded)
    for (m, q), v in want.items():
        if q == "all" and m not in ("ndcg", ) and not m.startswith("ndcg_cut"):
            zeros = sum(want[(m, x)] for x in excluded)
            assert got[(m, q)] == pytest.approx((v * n_all - zeros) / n_ours, abs=TOL * n_all)


def test_cli_prints_trec_eval_lines_byte_for_byte(tmp_path):
    measures = ["map", "Rprec", "bpref", "recip_rank", "P_5", "P_10", "P_1000"]
    args = [sys.executable, "-m", "bakeoff", "eval", str(FIX / "qrels.test"), str(FIX / "results.test"), "--trec-eval"]
    for m in measures:
        args += ["-m", m]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    expected = [line for line in (FIX / "out.test").read_text().splitlines()
                if line.split("\t")[0].strip() in ("num_q", *measures)]
    assert proc.stdout.splitlines() == expected
