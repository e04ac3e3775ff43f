"""``bakeoff tune`` end to end on SciFact: dev scores, the choice, the test evaluation and the
cache, checked against an independent computation (bm25 runs searched directly, scored by
pytrec_eval, trec_eval's C code)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from bakeoff.arms.lexical import BM25Arm
from bakeoff.cache import Cache
from bakeoff.data import load_beir
from bakeoff.errors import ConfigError
from bakeoff.runner.config import DEFAULT_DEPTH
from bakeoff.runner.context import Context
from bakeoff.runner.results import read_results
from bakeoff.tune.inputs import tune_from_inputs

pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier is a test dependency")

pytestmark = pytest.mark.slow
LEAKS = {"871", "1291"}  # SciFact train queries whose text equals a test query's (870, 1292)


def ndcg10(run, ds, qids):
    """Per-query nDCG@10 by pytrec_eval."""
    qrels = {q: {d: int(g) for d, g in ds.qrels.get(q).items()} for q in qids}
    runs = {q: {d: float(s) for d, s in run.get(q)} or {"__none__": 0.0} for q in qids}
    out = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(runs)
    return {q: out[q]["ndcg_cut_10"] for q in qids}


def judged(ds):
    return [q for q in ds.queries.ids if any(g > 0 for g in ds.qrels.get(q).values())]


def run_tune(tmp_path, cache, **kw):
    base = {"config": None, "beir": Path(kw.pop("beir")), "arms": ["bm25"], "cache": cache, "progress": False,
                "n_resamples": 2000, "latency_sample": 0}
    return tune_from_inputs(**{**base, **kw})


def test_bm25_on_train_matches_an_independent_sweep(tmp_path, scifact_path):
    cache = Cache(tmp_path / "cache")
    params = ["k1=0.9,1.5", "b=0.5,0.75"]
    # the train split shares two near-duplicate queries with test: refused, nothing written
    with pytest.raises(ConfigError, match="shares 2 queries with the test split.*--drop-leaks"):
        run_tune(tmp_path, cache, beir=scifact_path, params=params, dev="train", out=tmp_path / "out")
    assert not (tmp_path / "out").exists()

    out = run_tune(tmp_path, cache, beir=scifact_path, params=params, dev="train", drop_leaks=True,
                   out=tmp_path / "out")
    t = out.tune
    train = load_beir(scifact_path, split="train")
    test = load_beir(scifact_path, split="test")
    dev_ids = [q for q in judged(train) if q not in LEAKS]
    assert t["dev"]["n_queries"] == len(dev_ids) == 807
    # independent sweep: each setting searched directly, scored by pytrec_eval on the dev queries
    ctx = Context(corpus=train.corpus, progress=False)
    want = []
    for k1 in (0.9, 1.5):
        for b in (0.5, 0.75):
            run = ctx.search(BM25Arm(k1=k1, b=b), train.queries, k=100)
            want.append(((k1, b), float(np.mean(list(ndcg10(run, train, dev_ids).values())))))
    got = [((x["params"]["k1"], x["params"]["b"]), x["dev"]) for x in t["trials"]]
    assert [g[0] for g in got] == [w[0] for w in want]  # grid order
    for (_, g), (_, w) in zip(got, want):
        assert g == pytest.approx(w, abs=1e-12)
    best = max(range(4), key=lambda i: (want[i][1], -i))
    assert t["chosen"]["index"] == best and t["chosen"]["params"] == dict(zip(("k1", "b"), want[best][0]))
    # the test split: defaults (k1=1.5, b=0.75) and the choice, scored independently
    test_ids = judged(test)
    tctx = Context(corpus=test.corpus, progress=False)
    d_vals = ndcg10(tctx.search(BM25Arm(), test.queries, k=100), test, test_ids)
    c_vals = ndcg10(tctx.search(BM25Arm(k1=want[best][0][0], b=want[best][0][1]), test.queries, k=100), test,
                    test_ids)
    r = t["result"]
    assert t["test"]["n_queries"] == 300 and t["defaults"] == {"k1": 1.5, "b": 0.75}
    assert r["defaults"]["mean"] == pytest.approx(np.mean(list(d_vals.values())), abs=1e-12)
    assert r["tuned"]["mean"] == pytest.approx(np.mean(list(c_vals.values())), abs=1e-12)
    assert r["diff"] == pytest.approx(r["tuned"]["mean"] - r["defaults"]["mean"], abs=1e-12)
    assert r["defaults"]["ci_low"] < r["defaults"]["mean"] < r["defaults"]["ci_high"]
    assert 0.0 < r["p_perm"] <= 1.0 and r["significant"] == (r["p_perm"] < 0.05)
    # results.json renders like any bake-off and carries the sweep
    res = read_results(tmp_path / "out")
    assert [a.name for a in res.arms] == ["bm25", "bm25-tuned"] and res.tune is not None and res.tune["chosen"] == t["chosen"]
    assert json.loads((tmp_path / "out" / "tune.json").read_text())["trials"] == t["trials"]
    # re-sweep: every trial comes from the cache, same numbers
    again = run_tune(tmp_path, cache, beir=scifact_path, params=params, dev="train", drop_leaks=True, out=None)
    assert again.tune["timing"]["trials_from_cache"] == 4
    assert [x["dev"] for x in again.tune["trials"]] == [x["dev"] for x in t["trials"]]
    assert again.tune["result"] == t["result"]


def test_ties_go_to_the_first_setting_and_slices_hold_queries_apart(tmp_path, scifact_path):
    # delta has no effect on method=lucene: three identical runs, so the first in grid order wins
    out = run_tune(tmp_path, Cache(tmp_path / "cache"), beir=scifact_path, params=["delta=2.0,0.5,1.0"],
                   dev="slice:0.5", seed=3)
    t = out.tune
    devs = [x["dev"] for x in t["trials"]]
    assert devs[0] == devs[1] == devs[2] and t["chosen"]["index"] == 0 and t["chosen"]["params"] == {"delta": 2.0}
    assert t["dev"]["n_dev"] + t["dev"]["n_test"] == 300 and t["test"]["n_queries"] == t["dev"]["n_test"]
    assert t["dev"]["n_queries"] == t["dev"]["n_dev"]
    test_q = set(out.results.arms[0].evaluation.query_ids)
    assert len(test_q) == t["dev"]["n_test"]
    # same setting twice: the paired difference is exactly 0 and the test says so
    assert t["result"]["diff"] == 0.0 and t["result"]["p_perm"] == 1.0 and not t["result"]["significant"]


def test_kfold_each_query_gets_the_setting_chosen_without_its_fold(tmp_path, scifact_path):
    out = run_tune(tmp_path, Cache(tmp_path / "cache"), beir=scifact_path,
                   arms=["bm25", "tfidf", "h=rrf:arms=bm25+tfidf"],
                   tune_arm="h", params=["rank_constant=1,60"], dev="kfold:3", seed=0)
    t = out.tune
    test = load_beir(scifact_path, split="test")
    ids = judged(test)
    from bakeoff.tune.devsplit import assign_folds

    folds = assign_folds(ids, dict(zip(test.queries.ids, test.queries.texts)), folds=3, seed=0)
    from bakeoff.arms.fusion import RRFArm
    from bakeoff.arms.lexical import TfidfArm

    ctx = Context(corpus=test.corpus, progress=False)
    a, b = BM25Arm(name="bm25"), TfidfArm(name="tfidf")
    runs = {c: ctx.search(RRFArm(arms=[a, b], rank_constant=c), test.queries, k=DEFAULT_DEPTH) for c in (1, 60)}
    vals = {k: ndcg10(r, test, ids) for k, r in runs.items()}
    cv = next(x for x in out.results.arms if x.name == "h-tuned")
    for f, pick in enumerate(t["chosen"]["per_fold"]):
        others = [q for q in ids if folds[q] != f]
        means = {k: float(np.mean([vals[k][q] for q in others])) for k in (1, 60)}
        want = 1 if means[1] >= means[60] else 60  # ties -> first in grid order (k=1)
        assert pick["params"] == {"rank_constant": want} and pick["dev"] == pytest.approx(means[want], abs=1e-12)
        for q in (q for q in ids if folds[q] == f):
            assert cv.run.get(q) == runs[want].get(q)
    assert t["result"]["tuned"]["mean"] == pytest.approx(
        np.mean([vals[t["chosen"]["per_fold"][folds[q]]["params"]["rank_constant"]][q] for q in ids]), abs=1e-12)
    assert not math.isnan(t["result"]["p_perm"])
