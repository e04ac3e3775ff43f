"""The 11-point interpolated P-R curve against trec_eval 10.0's own output file (the default) and pytrec_eval's
``iprec_at_recall`` (trec_eval 9's C code: ``legacy=True``), per query. The two tools round a recall level to a
number of relevant documents differently (trec_eval 10: ``lround(l * R)``; 9: ``(long)(l * R + 0.9)``)."""

from __future__ import annotations

import math
import random

import pytest

from bakeoff.data.model import Qrels, Run
from bakeoff.data.trec import read_qrels, read_run_table
from bakeoff.metrics import RECALL_LEVELS, pr_curve

from .test_conventions_reference import _random_case
from .test_metrics_trec_eval import FIX

pytrec_eval = pytest.importorskip("pytrec_eval")

KEYS = [f"iprec_at_recall_{lv:.2f}" for lv in RECALL_LEVELS]


def test_hand_computed() -> None:
    # relevant d1, d3, d9 (never retrieved): the 1st relevant at precision 1, the 2nd at 2/3. trec_eval 10's
    # level-to-count rule round(l * 3): levels 0-0.4 need 1 document (0 counts as 1), 0.5-0.8 need 2 (1.5
    # rounds up), 0.9-1.0 need 3; trec_eval 9's floor(l * 3 + 0.9): 0-0.3 need 1, 0.4-0.7 need 2, 0.8-1.0 need 3
    q = Qrels({"a": {"d1": 1, "d3": 1, "d9": 1, "d2": 0}})
    run = Run.from_scores("r", {"a": {"d1": 5, "d2": 4, "d3": 3, "d4": 2}})
    c = pr_curve(run, q)
    assert c.per_query["a"] == (1, 1, 1, 1, 1, 2 / 3, 2 / 3, 2 / 3, 2 / 3, 0, 0)
    assert pr_curve(run, q, legacy=True).per_query["a"] == (1, 1, 1, 1, 2 / 3, 2 / 3, 2 / 3, 2 / 3, 0, 0, 0)
    assert c.mean == c.per_query["a"] and c.levels == RECALL_LEVELS


@pytest.mark.parametrize("seed", range(20))
def test_equals_pytrec_eval_per_query(seed) -> None:
    qrels, run = _random_case(random.Random(seed))
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall"}).evaluate(run)
    c = pr_curve(Run.from_scores("r", run), Qrels(qrels), averaging="trec_eval", legacy=True)
    assert set(c.query_ids) == set(ref)
    for q in ref:
        assert c.per_query[q] == pytest.approx([ref[q][k] for k in KEYS], abs=1e-12), q
    for j, k in enumerate(KEYS):
        assert c.mean[j] == pytest.approx(math.fsum(ref[q][k] for q in ref) / len(ref), abs=1e-12)


def test_equals_trec_eval_output_file() -> None:
    """trec_eval 10.0 -q on qrels.test / results.test prints iprec_at_recall per query (out.test.aq); the
    legacy rounding misses one of its values (query 301, level 0.1: 0.2096 vs 0.2098)."""
    want: dict[tuple[str, str], float] = {}
    for line in (FIX / "out.test.aq").read_text().splitlines():
        m, q, v = (x.strip() for x in line.split("\t"))
        if m.startswith("iprec_at_recall_"):
            want[(m, q)] = float(v)
    assert len(want) > 11
    c = pr_curve(read_run_table(FIX / "results.test"), read_qrels(FIX / "qrels.test"), averaging="trec_eval")
    for (m, q), v in want.items():
        j = KEYS.index(m)
        got = c.mean[j] if q == "all" else c.per_query[q][j]
        assert abs(got - v) <= 5e-5 + 1e-9, (m, q, got, v)
    old = pr_curve(read_run_table(FIX / "results.test"), read_qrels(FIX / "qrels.test"), averaging="trec_eval",
                   legacy=True)
    assert abs(old.per_query["301"][1] - want[("iprec_at_recall_0.10", "301")]) > 1e-4


def test_relevance_level_2_equals_pytrec_eval() -> None:
    qrels = read_qrels(FIX / "qrels.rel_level")
    table = read_run_table(FIX / "results.test")
    run = table.to_run()
    as_dict = {q: {d: float(s) for d, s in run.get(q)} for q in run}
    ref = pytrec_eval.RelevanceEvaluator({q: dict(qrels.get(q)) for q in qrels}, {"iprec_at_recall"},
                                         relevance_level=2).evaluate(as_dict)
    c = pr_curve(run, qrels, relevance_level=2, averaging="trec_eval", legacy=True)
    for q in ref:
        assert c.per_query[q] == pytest.approx([ref[q][k] for k in KEYS], abs=1e-12), q
