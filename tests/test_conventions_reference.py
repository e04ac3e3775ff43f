"""The averaging rules and the relevance level against the reference tools' own code, on the same runs.

* ``averaging="trec_eval"`` / ``"trec_eval-c"`` against trec_eval 10.0's own outputs without and with ``-c``
  (tests/fixtures/trec_eval: ``out.test.aq`` and ``out.test.aqc``) and against pytrec_eval (trec_eval's C code)
  on random runs with judged-0-only queries, missing queries and run queries without judgments;
* the relevance level (``relevance_level=2``, ``P(rel=2)@5``, ``map@100-l2``) against trec_eval ``-l2``'s own
  output (``out.test.aql``) and ir_measures on trec_eval's graded ``qrels.rel_level`` (grades -1 to 4);
* all three against trec_eval 10.0's binary run on a run bakeoff wrote (without ``-c``, with ``-c``, ``-l2``;
  tests/fixtures/trec_eval_bakeoff), P-R curve values included.
"""

from __future__ import annotations

import math
import random

import pytest

from bakeoff.data.model import Qrels, Run
from bakeoff.data.trec import read_qrels, read_run_table
from bakeoff.metrics import AVERAGING, evaluate_files, parse_measure, score_run

from .test_metrics_trec_eval import FIX, TOL, expected_values, fixture

pytrec_eval = pytest.importorskip("pytrec_eval")


# --- averaging: trec_eval's own outputs ---------------------------------------------------------------------

@pytest.mark.parametrize("averaging,case,run", [
    ("trec_eval", "out.test.aq", "results.test"),        # trec_eval -a (no -c)
    ("intersection", "out.test.aq", "results.test"),     # the same rule under its pytrec_eval/BEIR name
    ("trec_eval-c", "out.test.aqc", "results.trunc"),    # trec_eval -a -c on a run missing queries
])
def test_averaging_names_reproduce_trec_eval_outputs(averaging, case, run, tmp_path):
    want = expected_values(case)
    measures = sorted({m for m, _ in want})
    ev = evaluate_files(FIX / "qrels.test", fixture(run, tmp_path), [parse_measure(m) for m in measures],
                        averaging=averaging).evaluation
    diffs = []
    for (m, q), value in want.items():
        key = str(parse_measure(m))
        got = ev.means[key] if q == "all" else ev.per_query[key][q]
        if abs(got - value) > TOL:
            diffs.append((m, q, got, value))
    assert len(want) > 100 and diffs == []
    assert ev.rule == {"intersection": "trec_eval"}.get(averaging, averaging)


def test_trec_eval_with_and_without_c_differ_on_a_truncated_run(tmp_path):
    """results.trunc answers fewer queries than qrels.test judges: without -c the mean is over the answered
    ones, with -c over all 50 (the missing ones 0); -c's mean is the other's x answered/50 (both printed by
    trec_eval: out.test.aqc is -c)."""
    qrels = read_qrels(FIX / "qrels.test")
    table = read_run_table(fixture("results.trunc", tmp_path))
    plain = score_run(table, qrels, ["map", "P@10"], averaging="trec_eval")
    comp = score_run(table, qrels, ["map", "P@10"], averaging="trec_eval-c")
    n, n_c = len(plain.query_ids), len(comp.query_ids)
    assert n < n_c == len(qrels)
    assert comp.means["map"] == pytest.approx(plain.means["map"] * n / n_c, abs=1e-12)
    assert comp.means["map"] == pytest.approx(expected_values("out.test.aqc")[("map", "all")], abs=TOL)


# --- averaging: pytrec_eval on random runs -----------------------------------------------------------------

def _random_case(rng: random.Random) -> tuple[dict, dict]:
    docs = [f"d{i}" for i in range(30)]
    qrels: dict[str, dict[str, int]] = {}
    for q in range(12):
        judged = rng.sample(docs, rng.randint(1, 10))
        only_zero = q % 5 == 0  # judged, but nothing relevant
        qrels[f"q{q}"] = {d: (0 if only_zero else rng.choice([0, 0, 1, 2])) for d in judged}
    run: dict[str, dict[str, float]] = {}
    for q in range(14):  # q12, q13: run queries nobody judged
        if q % 4 == 3:
            continue  # judged queries missing from the run
        run[f"q{q}"] = {d: float(rng.randint(0, 5)) for d in rng.sample(docs, rng.randint(1, 20))}  # ties
    return qrels, run


@pytest.mark.parametrize("seed", range(20))
def test_trec_eval_averaging_is_pytrec_eval_over_its_queries(seed):
    """pytrec_eval evaluates the run's queries that have judgments (BEIR and MTEB then average over exactly
    those): ``averaging="trec_eval"`` has the same queries and the same per-query values."""
    qrels, run = _random_case(random.Random(seed))
    pairs = {"P_5": "P@5", "recall_10": "recall@10", "map": "map", "ndcg_cut_10": "ndcg@10",
             "recip_rank": "mrr", "Rprec": "rprec", "bpref": "bpref"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"P.5", "recall.10", "map", "ndcg_cut.10", "recip_rank",
                                                 "Rprec", "bpref"}).evaluate(run)
    ev = score_run(Run.from_scores("r", run), Qrels(qrels), list(pairs.values()), averaging="trec_eval")
    assert set(ev.query_ids) == set(ref)
    assert any(all(g == 0 for g in qrels[q].values()) for q in ref)  # a judged-0-only query is averaged
    for trec, ours in pairs.items():
        key = str(parse_measure(ours))
        for q in ref:
            assert ev.per_query[key][q] == pytest.approx(ref[q][trec], abs=1e-9), (trec, q)
        assert ev.means[key] == pytest.approx(math.fsum(ref[q][trec] for q in ref) / len(ref), abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_the_three_rules_differ_only_in_their_query_sets(seed):
    qrels, run = _random_case(random.Random(seed))
    r, q = Run.from_scores("r", run), Qrels(qrels)
    evs = {a: score_run(r, q, ["P@5"], averaging=a) for a in AVERAGING}
    answered = {x for x in run if x in qrels}
    with_rel = {x for x in qrels if any(g >= 1 for g in qrels[x].values())}
    assert set(evs["trec_eval"].query_ids) == answered
    assert set(evs["trec_eval-c"].query_ids) == set(qrels)
    assert set(evs["bakeoff"].query_ids) == with_rel
    for a, ev in evs.items():  # a query's value does not depend on the rule
        for x in ev.query_ids:
            assert ev.per_query["precision@5"][x] == evs["trec_eval-c"].per_query["precision@5"][x], (a, x)


# --- relevance level: trec_eval -l2 and ir_measures on graded judgments ----------------------------------

@pytest.mark.parametrize("spelling", ["level", "measure"])
def test_relevance_level_2_reproduces_trec_eval_l2(spelling, tmp_path):
    """trec_eval -l2's own output (out.test.aql on qrels.rel_level, grades -1 to 4): every binary measure at
    level 2, given as ``relevance_level=2`` or in each measure (``P(rel=2)@5``, ``map(rel=2)``)."""
    want = expected_values("out.test.aql")
    names = sorted({m for m, _ in want if not m.startswith("ndcg")})  # nDCG takes no level
    qrels = read_qrels(FIX / "qrels.rel_level")
    table = read_run_table(FIX / "results.test")
    if spelling == "level":
        measures = [parse_measure(m) for m in names]
        ev = score_run(table, qrels, measures, relevance_level=2, averaging="trec_eval")
    else:
        measures = [parse_measure(f"{parse_measure(m)}(rel=2)") for m in names]
        ev = score_run(table, qrels, measures, averaging="trec_eval")
    checked = 0
    for (m, q), value in want.items():
        if m.startswith("ndcg"):
            continue
        i = names.index(m)
        key = str(measures[i])
        got = ev.means[key] if q == "all" else ev.per_query[key][q]
        assert abs(got - value) <= TOL, (key, q, got, value)
        checked += 1
    assert checked > 50


def test_relevance_level_2_equals_ir_measures_on_graded_qrels():
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import AP, RR, P, R, Rprec, Success, nDCG

    qrels_file = FIX / "qrels.rel_level"
    run_file = FIX / "results.test"
    refs = {"P(rel=2)@5": P(rel=2) @ 5, "RR(rel=2)@10": RR(rel=2) @ 10, "R(rel=2)@100": R(rel=2) @ 100,
            "AP(rel=2)": AP(rel=2), "Rprec(rel=2)": Rprec(rel=2), "Success(rel=2)@10": Success(rel=2) @ 10,
            "map@100-l2": AP(rel=2) @ 100, "nDCG@10": nDCG @ 10}
    qrels_ir = list(ir_measures.read_trec_qrels(str(qrels_file)))
    run_ir = list(ir_measures.read_trec_run(str(run_file)))
    want = ir_measures.calc_aggregate(list(refs.values()), qrels_ir, run_ir)
    per_query: dict = {}
    for m in ir_measures.iter_calc(list(refs.values()), qrels_ir, run_ir):
        per_query.setdefault(m.measure, {})[m.query_id] = m.value
    qrels = read_qrels(qrels_file)
    table = read_run_table(run_file)
    ours = {text: parse_measure(text) for text in refs}
    ev = score_run(table, qrels, list(ours.values()), averaging="trec_eval")
    for text, ref in refs.items():
        key = str(ours[text])
        assert ev.means[key] == pytest.approx(want[ref], abs=1e-9), (text, key)
        for q, v in per_query[ref].items():
            assert ev.per_query[key][q] == pytest.approx(v, abs=1e-9), (text, q)
    # and ir_measures' spellings print as bakeoff's
    assert [str(ours[t]) for t in ("P(rel=2)@5", "RR(rel=2)@10", "map@100-l2")] == \
        ["precision@5(rel=2)", "mrr@10(rel=2)", "map@100(rel=2)"]


@pytest.mark.parametrize("text,canonical", [
    ("P(rel=2)@5", "precision@5(rel=2)"), ("precision@5(rel=2)", "precision@5(rel=2)"),
    ("P@5-l2", "precision@5(rel=2)"), ("recall@100(rel=2)", "recall@100(rel=2)"), ("AP(rel=3)", "map(rel=3)"),
    ("mrr-l2", "mrr(rel=2)"), ("nDCG@10", "ndcg@10"), ("R@1000", "recall@1000"),
])
def test_measure_spellings_round_trip(text, canonical):
    m = parse_measure(text)
    assert str(m) == canonical and parse_measure(str(m)) == m


@pytest.mark.parametrize("text", ["ndcg@10(rel=2)", "nDCG(rel=2)@10", "judged@10(rel=2)", "P(rel=2)@5(rel=3)"])
def test_measures_refusing_a_level(text):
    with pytest.raises(ValueError):
        parse_measure(text)


def test_a_measure_level_beats_the_evaluation_level():
    qrels = Qrels({"q": {"a": 2, "b": 1}})
    run = Run.from_scores("r", {"q": {"a": 1.0, "b": 2.0}})
    ev = score_run(run, qrels, ["P@1", "P(rel=1)@1", "P(rel=2)@1"], relevance_level=2)
    assert ev.means == {"precision@1": 0.0, "precision@1(rel=1)": 1.0, "precision@1(rel=2)": 0.0}


# --- trec_eval 10.0's binary on a run bakeoff wrote (tests/fixtures/trec_eval_bakeoff) --------------------

BAKEOFF_RUN = FIX.parent / "trec_eval_bakeoff"


def _trec_out(name: str) -> dict[tuple[str, str], float]:
    import gzip
    import re

    supported = re.compile(r"^(num_q|map|Rprec|bpref|recip_rank|ndcg|iprec_at_recall_\d\.\d\d|"
                           r"(P|recall|ndcg_cut|map_cut|success)_\d+)$")
    out = {}
    for line in gzip.decompress((BAKEOFF_RUN / name).read_bytes()).decode().splitlines():
        meas, qid, value = (x.strip() for x in line.split("\t"))
        if supported.match(meas):
            out[(meas, qid)] = float(value)
    return out


def _bakeoff_file(tmp_path, name: str):
    import gzip

    path = tmp_path / name.removesuffix(".gz")
    path.write_bytes(gzip.decompress((BAKEOFF_RUN / name).read_bytes()))
    return path


@pytest.mark.parametrize("case,run,averaging,level", [
    ("out.full.gz", "run.full.gz", "trec_eval", 1),      # no -c: a judged-0-only query and an unjudged run query
    ("out.cut.c.gz", "run.cut.gz", "trec_eval-c", 1),    # -c: three judged queries unanswered, one never retrieved
    ("out.full.l2.gz", "run.full.gz", "trec_eval", 2),   # -l2 on grades -1 to 2
])
def test_trec_eval_binary_on_a_bakeoff_run(case, run, averaging, level, tmp_path):
    from bakeoff.metrics import RECALL_LEVELS, pr_curve

    want = _trec_out(case)
    qrels = read_qrels(BAKEOFF_RUN / "qrels")
    if averaging == "trec_eval":  # trec_eval 10 needs -c when a judged query has no result: t99 is left out
        qrels = Qrels({q: dict(qrels.get(q)) for q in qrels if q != "t99"})
    table = read_run_table(_bakeoff_file(tmp_path, run))
    names = sorted({m for m, _ in want if m != "num_q" and not m.startswith("iprec")})
    measures = [parse_measure(m) for m in names]
    ev = score_run(table, qrels, measures, averaging=averaging, relevance_level=level)
    curve = pr_curve(table, qrels, averaging=averaging, relevance_level=level)
    assert want[("num_q", "all")] == len(ev.query_ids) == len(curve.query_ids)
    keys = [f"iprec_at_recall_{lv:.2f}" for lv in RECALL_LEVELS]
    checked = 0
    for (m, q), value in want.items():
        if m == "num_q":
            continue
        if m.startswith("iprec"):
            j = keys.index(m)
            got = curve.mean[j] if q == "all" else curve.per_query[q][j]
        else:
            key = str(measures[names.index(m)])
            got = ev.means[key] if q == "all" else ev.per_query[key][q]
        assert abs(got - value) <= TOL, (case, m, q, got, value)
        checked += 1
    assert checked > 1000
