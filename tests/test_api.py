"""The short public API (``bakeoff.evaluate``, ``compare``, ``fuse``; :mod:`bakeoff.verbs`) against
independent implementations: pytrec_eval and ranx for the measures, ranx's ``fuse`` for fusion,
scipy and an enumeration of every sign pattern for the paired tests, on real SciFact runs."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

import bakeoff
from bakeoff.arms.lexical import BM25Arm, TfidfArm
from bakeoff.errors import ConfigError
from bakeoff.runner.context import Context

pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec_eval (test extra) is the reference")
ranx = pytest.importorskip("ranx", reason="ranx (test extra) is the reference")


@pytest.fixture(scope="module")
def runs(scifact, shared_cache):
    """Top-100 BM25, BM25+stemmer and TF-IDF runs on the 300 SciFact test queries."""
    arms = [BM25Arm(name="bm25"), BM25Arm(name="stem", stemmer="english"), TfidfArm(name="tfidf")]
    ctx = Context(corpus=scifact.corpus, cache=shared_cache, progress=False)
    return {a.name: ctx.search(a, scifact.queries, k=100) for a in arms}


def as_dict(run):
    return {q: dict(run.get(q)) for q in run}


def qrels_dict(qrels):
    return {q: dict(qrels[q]) for q in qrels}


@pytest.mark.slow  # SciFact, real models
def test_evaluate_takes_qrels_first_and_equals_pytrec_eval_per_query(scifact, runs):
    qrels = qrels_dict(scifact.qrels)
    measures = {"ndcg@10": "ndcg_cut_10", "recall@100": "recall_100", "precision@5": "P_5", "mrr": "recip_rank",
                "map": "map", "rprec": "Rprec", "bpref": "bpref"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "P.5", "recip_rank", "map", "Rprec",
                                                 "bpref"}).evaluate(as_dict(runs["bm25"]))
    for given in (runs["bm25"], as_dict(runs["bm25"])):  # a Run or pytrec_eval's dict
        ev = bakeoff.evaluate(qrels, given, list(measures))
        assert sorted(ev.query_ids) == sorted(ref)
        for ours, theirs in measures.items():
            for q in ref:
                assert ev.per_query[ours][q] == pytest.approx(ref[q][theirs], abs=1e-12), (ours, q)
    assert bakeoff.evaluate(qrels, runs["bm25"], "ndcg@10").means["ndcg@10"] == pytest.approx(0.6617, abs=5e-5)


@pytest.mark.slow  # SciFact, real models
def test_evaluate_equals_ranx(scifact, runs):
    qrels = qrels_dict(scifact.qrels)
    for name, run in runs.items():
        theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(as_dict(run)), ["ndcg@10", "recall@100", "mrr@10",
                                                                             "precision@5", "map@100", "hit_rate@10"])
        ours = bakeoff.evaluate(scifact.qrels, run, ["ndcg@10", "recall@100", "mrr@10", "precision@5", "map@100",
                                                     "hit@10"]).means
        assert ours["ndcg@10"] == pytest.approx(theirs["ndcg@10"], abs=1e-9), name
        assert ours["recall@100"] == pytest.approx(theirs["recall@100"], abs=1e-9), name
        assert ours["mrr@10"] == pytest.approx(theirs["mrr@10"], abs=1e-9), name
        assert ours["precision@5"] == pytest.approx(theirs["precision@5"], abs=1e-9), name
        assert ours["map@100"] == pytest.approx(theirs["map@100"], abs=1e-9), name
        assert ours["hit@10"] == pytest.approx(theirs["hit_rate@10"], abs=1e-9), name


def test_a_run_given_first_is_refused_with_the_order():
    run = bakeoff.Run.from_scores("r", {"q": {"a": 1.0}})
    qrels = bakeoff.Qrels({"q": {"a": 1}})
    with pytest.raises(TypeError, match=r"evaluate\(qrels, run, measures\)"):
        bakeoff.evaluate(run, qrels, ["ndcg@10"])


def exact_sign_flip_p(d: np.ndarray) -> float:
    """Two-sided p of the paired randomization test by enumerating all 2**n sign patterns."""
    obs = abs(d.mean())
    hits = total = 0
    for signs in itertools.product((1.0, -1.0), repeat=d.size):
        total += 1
        hits += abs((d * np.array(signs)).mean()) >= obs - 1e-12
    return hits / total


def holm_reference(p):
    """Holm by its textbook definition (not bakeoff's implementation)."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


@pytest.mark.slow  # SciFact, real models
def test_compare_statistics_equal_independent_computations(scifact, runs):
    from scipy import stats

    qids = [q for q in scifact.qrels][:12]  # 2**12 = 4096 sign patterns <= n_resamples: the exact test
    rep = bakeoff.compare(scifact.qrels, runs, ["ndcg@10"], query_ids=qids, n_resamples=5000)
    per = {n: bakeoff.evaluate(scifact.qrels, r, "ndcg@10", query_ids=qids).per_query["ndcg@10"]
           for n, r in runs.items()}
    x = {n: np.array([v[q] for q in qids]) for n, v in per.items()}
    pairs = list(itertools.combinations(runs, 2))
    raw = []
    for a, b in pairs:
        p = rep.pair(a, b, "ndcg@10")
        assert (p.a, p.b) == (a, b) and p.exact
        assert p.diff == pytest.approx(float(np.mean(x[a] - x[b])), abs=1e-12)
        assert p.p_ttest == pytest.approx(stats.ttest_rel(x[a], x[b]).pvalue, rel=1e-9)
        assert p.p_perm == pytest.approx(exact_sign_flip_p(x[a] - x[b]), abs=1e-12)
        raw.append(p.p_perm)
    for (a, b), h in zip(pairs, holm_reference(raw)):
        assert rep.pair(a, b, "ndcg@10").p_perm_holm == pytest.approx(h, abs=1e-12)
    for n in runs:
        assert rep.mean(n, "ndcg@10") == pytest.approx(float(np.mean(x[n])), abs=1e-12)


@pytest.mark.slow  # SciFact, real models
def test_compare_t_test_equals_ranx_student(scifact, runs):
    names = ["bm25", "stem", "tfidf"]
    rx = ranx.compare(ranx.Qrels(qrels_dict(scifact.qrels)),
                      [ranx.Run(as_dict(runs[n]), name=n) for n in names], ["ndcg@10"], stat_test="student")
    theirs = rx.to_dict()
    rep = bakeoff.compare(scifact.qrels, [runs[n] for n in names], "ndcg@10", n_resamples=200)
    for a, b in itertools.combinations(names, 2):
        assert rep.pair(a, b, "ndcg@10").p_ttest == pytest.approx(theirs[a]["comparisons"][b]["ndcg@10"], rel=1e-6)
        assert rep.mean(a, "ndcg@10") == pytest.approx(theirs[a]["scores"]["ndcg@10"], abs=1e-9)


@pytest.mark.slow  # SciFact, real models
def test_report_renderers(scifact, runs, tmp_path):
    evil = runs["tfidf"].renamed("<b>tf&idf</b>")
    rep = bakeoff.compare(scifact.qrels, {"bm25": runs["bm25"], "<b>tf&idf</b>": evil}, ["ndcg@10", "recall@100"],
                          n_resamples=500)
    table = rep.to_table()
    lines = table.splitlines()
    assert lines[0].startswith("300 queries;")
    row = next(line for line in lines if line.startswith("a  bm25"))
    assert f"{rep.mean('bm25', 'ndcg@10'):.4f}" in row and f"{rep.mean('bm25', 'recall@100'):.4f}" in row
    assert "ndcg@10:" in table and "recall@100:" in table and str(rep) == table
    for suffix in ("json", "html", "tex", "txt"):
        path = rep.save(tmp_path / f"r.{suffix}")
        assert path.stat().st_size > 0
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["schema"] == "bakeoff.report" and [a["name"] for a in data["arms"]] == ["bm25", "<b>tf&idf</b>"]
    page = (tmp_path / "r.html").read_text()
    assert "&lt;b&gt;tf&amp;idf&lt;/b&gt;" in page and "<b>tf&idf</b>" not in page.split("<script")[0]
    assert "\\toprule" in (tmp_path / "r.tex").read_text()
    with pytest.raises(ConfigError, match="suffix"):
        rep.save(tmp_path / "r.docx")


def ranx_run(run):
    from tests.arms.test_fusion_ranx import to_ranx

    return to_ranx(run, list(run))


@pytest.mark.slow  # SciFact, real models
@pytest.mark.parametrize(("method", "norm", "params", "ours"), [
    ("rrf", None, {"k": 60}, {}),
    ("rrf", None, {"k": 10}, {"rank_constant": 10}),
    ("wsum", "min-max", {"weights": [0.7, 0.3]}, {"method": "sum", "norm": "minmax", "weights": [0.7, 0.3]}),
    ("mnz", "zmuv", None, {"method": "mnz", "norm": "zscore"}),
    ("max", "sum", None, {"method": "max", "norm": "sum"}),
    ("isr", None, None, {"method": "isr"}),
    ("bordafuse", None, None, {"method": "borda"}),
])
def test_fuse_equals_ranx_fuse(runs, method, norm, params, ours):
    """Run-level fusion = ranx's fuse (inputs given to ranx in bakeoff's tie-rule order, see
    tests/arms/test_fusion_ranx.py), every document's score within 1e-9."""
    inputs = [runs["bm25"], runs["tfidf"]]
    fused = bakeoff.fuse(inputs, **ours)
    assert fused.name == "bm25+tfidf"
    theirs = ranx.fuse([ranx_run(r) for r in inputs], norm=norm, method=method, params=params).to_dict()
    assert set(fused) == set(theirs)
    for q in theirs:
        mine = dict(fused[q])
        assert set(mine) == set(theirs[q])
        for d, s in theirs[q].items():
            assert mine[d] == pytest.approx(s, abs=1e-9)


@pytest.mark.slow  # SciFact, real models
def test_fuse_equals_the_fusion_arm(scifact, runs, shared_cache):
    """The run-level verb and the arm compute the same fused ranking (depth 50 of each input)."""
    from bakeoff.arms.fusion import FuseArm

    arm = FuseArm(name="f", arms=[BM25Arm(name="bm25"), TfidfArm(name="tfidf")], method="mnz", depth=50)
    ctx = Context(corpus=scifact.corpus, cache=shared_cache, progress=False)
    by_arm = ctx.search(arm, scifact.queries, k=100)
    by_verb = bakeoff.fuse({"bm25": runs["bm25"], "tfidf": runs["tfidf"]}, method="mnz", depth=50, name="f")
    for q in scifact.queries.ids:
        assert [d for d, _ in by_verb[q][:100]] == [d for d, _ in by_arm[q]]


def test_fuse_convex_and_refusals():
    a = bakeoff.Run.from_scores("a", {"q": {"x": 3.0, "y": 1.0}})
    b = bakeoff.Run.from_scores("b", {"q": {"y": 2.0, "z": 0.0}})
    # minmax: a: x 1, y 0, (z missing: 0); b: y 1, z 0, (x missing: 0) -> 0.75/0.25 weights
    fused = bakeoff.fuse([a, b], method="convex", weights=[0.75, 0.25])
    assert dict(fused["q"]) == {"x": 0.75, "y": 0.25, "z": 0.0}
    rrf = bakeoff.fuse({"a": {"q": {"x": 3.0, "y": 1.0}}, "b": {"q": {"y": 2.0, "z": 0.0}}})
    assert dict(rrf["q"]) == pytest.approx({"x": 1 / 61, "y": 1 / 62 + 1 / 61, "z": 1 / 62})
    with pytest.raises(ConfigError, match="norm is for methods"):
        bakeoff.fuse([a, b], method="rrf", norm="minmax")
    with pytest.raises(ConfigError, match="rank_constant is the RRF constant"):
        bakeoff.fuse([a, b], method="sum", rank_constant=60)
    with pytest.raises(ConfigError, match="at least two runs"):
        bakeoff.fuse([a])
    with pytest.raises(ConfigError, match="two runs are named"):
        bakeoff.fuse([a, a])
    assert dict(a["q"]) == {"x": 3.0, "y": 1.0}  # inputs untouched


def test_the_face_is_short_lazy_and_has_no_old_names():
    assert len(bakeoff.__all__) <= 16
    assert {"evaluate", "compare", "fuse", "run_bakeoff", "load_beir", "read_qrels", "read_trec_run",
            "read_results", "open_dataset"} <= set(bakeoff.__all__)
    assert "Context" not in bakeoff.__all__ and "Context" not in dir(bakeoff)
    for old in ("BM25Arm", "Context", "compare_arms", "StoredResults", "Measure"):  # names of the pre-release face
        with pytest.raises(AttributeError):
            getattr(bakeoff, old)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bakeoff.evaluate.__module__ == "bakeoff.verbs"
    with pytest.raises(AttributeError):
        bakeoff.no_such_name  # noqa: B018
    code = ("import sys, bakeoff; before = set(sys.modules); bakeoff.evaluate; "
            "print(sorted(m for m in sys.modules if m.startswith('bakeoff.') and m not in before))")
    loaded = subprocess.run([sys.executable, "-c", ("import sys, bakeoff; "
                             "print(sorted(m for m in sys.modules if m.startswith('bakeoff')))")],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "['bakeoff', 'bakeoff._lazy']"
    assert "bakeoff.arms.dense" not in subprocess.run([sys.executable, "-c", code], capture_output=True,
                                                       text=True, check=True).stdout


@pytest.mark.parametrize("face", ["bakeoff", "bakeoff.arms", "bakeoff.data", "bakeoff.report", "bakeoff.train",
                                  "bakeoff.truth", "bakeoff.tune"])
def test_each_lazy_face_lists_exactly_its_exports(face):
    import importlib

    module = importlib.import_module(face)
    assert sorted(module.__all__) == sorted(module._EXPORTS)
