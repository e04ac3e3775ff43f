"""Latency and cost: one-time vs per-query timings, single-query p50/p95 of plain and
composite arms, $/1k queries, API usage through Arm.usage (real HTTP fake on 127.0.0.1),
results.json keys, the terminal columns, and the CLI flags."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bakeoff.cache import Cache
from bakeoff.data.model import Corpus, Dataset, Document, Qrels, Queries, Query
from bakeoff.report.terminal import table_rows
from bakeoff.runner.config import build_arms, parse_arm_spec
from bakeoff.runner.context import Context
from bakeoff.runner.results import read_results
from bakeoff.runner.run import run_bakeoff
from tests.cli.test_cli import cli
from tests.data.test_loaders import beir_folder

DOCS = ["cats sat on the mat", "dogs and cats are friends", "a cat chased a cat", "nothing here",
        "stock markets fell sharply", "the mat was red"]


def dataset() -> Dataset:
    corpus = Corpus.from_documents([Document(f"d{i}", t) for i, t in enumerate(DOCS)])
    queries = Queries.from_queries([Query(f"q{i}", t) for i, t in enumerate(["cat mat", "dogs", "markets", "red cat"])])
    qrels = Qrels({"q0": {"d0": 1}, "q1": {"d1": 1}, "q2": {"d4": 2}, "q3": {"d5": 1}})
    return Dataset(corpus, queries, qrels, name="tiny")


def test_latency_fields_sane_for_plain_and_composite_arms(tmp_path):
    arms = build_arms([parse_arm_spec(s) for s in ["bm25", "s=bm25:stemmer=english", "h=rrf:arms=bm25+s"]])
    cache = Cache(tmp_path / "c")
    res = run_bakeoff(dataset(), arms, cache=cache, progress=False, latency_sample=3, latency_seed=7, hourly_rate=3.6)
    d = res.to_dict()
    for a in d["arms"]:
        t, lat, cost = a["timing"], a["timing"]["latency"], a["cost"]
        assert lat["method"] == "single-query" and lat["n"] == 3 and lat["sample"] == 3 and lat["seed"] == 7
        assert 0 < lat["p50_ms"] <= lat["p95_ms"] < 10_000 and lat["mean_ms"] > 0
        # the timed queries' own times, from which the figures above are computed (numpy's percentiles)
        assert len(lat["samples_ms"]) == 3 and lat["blas_threads"] == 1
        assert lat["p50_ms"] == pytest.approx(float(np.percentile(lat["samples_ms"], 50)), abs=1e-3)
        assert lat["mean_ms"] == pytest.approx(float(np.mean(lat["samples_ms"])), abs=1e-3)
        assert 0 < lat["own_mean_ms"] <= lat["mean_ms"]
        assert t["index_s"] >= 0 and t["search_s"] > 0 and t["n_queries"] == 4
        # $/1k q = rate/3600 * mean_ms (3.6 $/h -> 0.001 $ per second -> 1e-3 * mean_ms/1000 * 1000)
        assert cost["usd_per_1k_queries"] == pytest.approx(3.6 / 3600 * lat["mean_ms"])
        assert cost["api_usd_per_1k_queries"] == 0 and cost["hourly_rate_usd"] == 3.6
    bm25, s, h = d["arms"]
    # composite: one-time cost includes both inputs' index builds; own index is ~0
    assert h["timing"]["index_total_s"] == pytest.approx(bm25["timing"]["index_s"] + s["timing"]["index_s"]
                                                         + h["timing"]["index_s"])
    assert h["cost"]["one_time_s"] == h["timing"]["index_total_s"]
    # end-to-end latency of the fusion includes searching both inputs: own time is a small part
    assert h["timing"]["latency"]["own_mean_ms"] < h["timing"]["latency"]["mean_ms"]
    assert h["timing"]["search_total_s"] >= h["timing"]["own_search_s"]
    # warm run: everything from the cache, latency restored (not re-measured), same figures
    res2 = run_bakeoff(dataset(), build_arms([parse_arm_spec(x) for x in ["bm25", "s=bm25:stemmer=english",
                                                                          "h=rrf:arms=bm25+s"]]),
                       cache=cache, progress=False, latency_sample=3, latency_seed=7, hourly_rate=3.6)
    d2 = res2.to_dict()
    assert all(a["cached"] for a in d2["arms"])
    assert [a["timing"]["latency"] for a in d2["arms"]] == [a["timing"]["latency"] for a in d["arms"]]
    header, rows = table_rows(res2.stored())
    assert header[-6:] == ["p50 ms", "p95 ms", "$/1k q", "model MB", "mem MB", "cached"] and all(r[-1] == "yes" for r in rows)


def test_composite_latency_is_re_measured_when_an_input_is(tmp_path):
    """A fusion's end-to-end latency includes its inputs': when an input is measured again (here its
    cached run was lost, as after a crash or a refresh), the fusion's stored latency is stale and is
    measured again too, while an untouched input keeps its measurement."""
    specs = ["bm25", "s=bm25:stemmer=english", "h=rrf:arms=bm25+s"]
    ds, cache = dataset(), Cache(tmp_path / "c")

    def bakeoff():
        arms = build_arms([parse_arm_spec(x) for x in specs])
        ctx = Context(corpus=ds.corpus, cache=cache, progress=False)
        res = run_bakeoff(ds, arms, cache=cache, ctx=ctx, progress=False, latency_sample=3, latency_seed=7)
        stamps = {a.name: ctx.latency_stamps[a.fingerprint()] for a in arms}
        return {a.name: a.fingerprint() for a in arms}, ctx, res, stamps

    fps, ctx1, res1, first = bakeoff()
    assert len({first[n]["id"] for n in first}) == 3
    assert first["h"]["inputs"] == {fps["bm25"]: first["bm25"]["id"], fps["s"]: first["s"]["id"]}
    assert first["bm25"]["inputs"] == {} and first["s"]["inputs"] == {}
    # warm re-run: every latency restored from the cache with its stamp, nothing measured again
    _, _, res2, warm = bakeoff()
    assert warm == first
    assert [a.timing["latency"] for a in res2.arms] == [a.timing["latency"] for a in res1.arms]
    # the input's cached run is lost: it is searched and measured again, and so is the fusion
    s_arm = build_arms([parse_arm_spec(x) for x in specs])[1]
    cache.path("run", ctx1.run_key(s_arm, ds.queries, k=res1.depth), "json").unlink()
    _, _, res3, third = bakeoff()
    assert not res3.arms[1].cached and res3.arms[0].cached and res3.arms[2].cached
    lat1, lat3 = ([a.timing["latency"] for a in r.arms] for r in (res1, res3))
    assert lat3[0] == lat1[0] and lat3[1] != lat1[1]
    assert lat3[2] != lat1[2]  # before the fix: the fusion kept its old figures (which include the old input's)
    assert third["bm25"] == first["bm25"]
    assert third["s"]["id"] != first["s"]["id"]
    assert third["h"]["id"] != first["h"]["id"]
    assert third["h"]["inputs"] == {fps["bm25"]: first["bm25"]["id"], fps["s"]: third["s"]["id"]}
    # and the new measurement is what the cached fusion run now carries
    _, _, res4, fourth = bakeoff()
    assert fourth == third and res4.arms[2].timing["latency"] == res3.arms[2].timing["latency"]


def test_latency_sample_is_seeded_and_can_be_skipped():
    ds = dataset()
    (arm,) = build_arms([parse_arm_spec("bm25")])
    ctx = Context(corpus=ds.corpus, progress=False)
    ctx.search(arm, ds.queries, k=10)
    assert ctx.measure_latency(arm, ds.queries, k=10, sample=0) == {}
    lat = ctx.measure_latency(arm, ds.queries, k=10, sample=100, seed=1)
    assert lat["n"] == len(ds.queries)  # capped at the number of queries
    res = run_bakeoff(ds, [arm], progress=False, latency_sample=0)
    assert "latency" not in res.arms[0].timing and res.arms[0].extra["cost"]["basis"] == "batch mean"
    assert table_rows(res.stored())[1][0][-6].startswith("~")  # batch figure, marked


@pytest.mark.slow  # a real model
def test_api_usage_tokens_and_cost(tmp_path, monkeypatch):
    from tests.support.fake_openai import FakeOpenAI

    monkeypatch.setenv("FAKE_EMBED_KEY", "sk-test-123")
    corpus = Corpus.from_documents([Document(f"d{i}", t) for i, t in enumerate(DOCS)])
    queries = Queries.from_queries([Query("q1", "cat mat"), Query("q2", "stock markets fell")])
    ds = Dataset(corpus, queries, Qrels({"q1": {"d0": 1}, "q2": {"d4": 1}}), name="api")
    with FakeOpenAI(api_key="sk-test-123") as server:
        spec = (f"api=dense:model=openai:fake-embed,base_url={server.base_url},api_key_env=FAKE_EMBED_KEY,"
                "price_per_1k_tokens=0.5,batch_size=4")
        arms = build_arms([parse_arm_spec(spec), parse_arm_spec("bm25"), parse_arm_spec("h=rrf:arms=api+bm25")])
        res = run_bakeoff(ds, arms, cache=Cache(tmp_path / "c"), progress=False, latency_sample=5, hourly_rate=0.0)
        n_requests = len(server.requests)
    api, _bm25, h = res.to_dict()["arms"]
    doc_tokens = sum(len(t.split()) for t in DOCS)  # the fake counts whitespace words
    query_tokens = 2 + 3
    usage = api["cost"]["usage"]
    assert usage["index"]["tokens"] == doc_tokens and usage["search"]["tokens"] == query_tokens
    assert usage["index"]["cost_usd"] == pytest.approx(doc_tokens / 1000 * 0.5)
    assert usage["search"]["cost_usd"] == pytest.approx(query_tokens / 1000 * 0.5)
    assert api["cost"]["api_usd_per_1k_queries"] == pytest.approx(1000 * query_tokens / 1000 * 0.5 / 2)
    assert api["cost"]["tokens_per_query"] == 2.5 and api["cost"]["machine_usd_per_1k_queries"] == 0
    assert api["cost"]["one_time_usd"] == pytest.approx(doc_tokens / 1000 * 0.5)
    # a paid API is not probed query by query: latency is the batch mean, no extra requests
    assert api["timing"]["latency"]["method"] == "batch-mean" and h["timing"]["latency"]["method"] == "batch-mean"
    assert n_requests == 3  # 2 corpus batches of 4 rows + 1 query batch
    # the fusion's cost includes its API input
    assert h["cost"]["api_usd_per_1k_queries"] == pytest.approx(api["cost"]["api_usd_per_1k_queries"])


@pytest.mark.slow  # the command line in a subprocess or a served app
def test_cli_rate_latency_flags_and_fused_arms(tmp_path):
    data = beir_folder(tmp_path / "data")
    out = tmp_path / "out"
    code, stdout, stderr = cli("run", "--beir", str(data), "--arm", "bm25", "--arm", "s=bm25:stemmer=english",
                               "--arm", "h=rrf:arms=bm25+s,rank_constant=10", "--arm", "c=convex:arms=bm25+s,weight=0.3,norm=zscore",
                               "--hourly-rate", "7.2", "--latency-sample", "2", "--out", str(out), "--no-progress",
                               cache_dir=tmp_path / "c")
    assert code == 0, stderr
    assert "p50 ms" in stdout and "$/1k q" in stdout
    res = read_results(out)
    h = res.arm("h")
    assert h.type == "rrf" and h.config == {"k_rrf": 10.0, "depth": 100}
    assert h.cost is not None and h.cost["hourly_rate_usd"] == 7.2 and h.timing["latency"]["n"] == 2
    assert json.dumps(res.to_dict())  # plain JSON
    code, _, stderr = cli("run", "--beir", str(data), "--arm", "bm25", "--arm", "h=rrf:arms=bm25",
                          "--no-progress", cache_dir=tmp_path / "c")
    assert code == 2 and "at least two arms" in stderr and len(stderr.strip().splitlines()) == 1


@pytest.mark.slow  # the command line in a subprocess or a served app
def test_toml_fusion_and_run_keys(tmp_path):
    beir_folder(tmp_path / "data")
    (tmp_path / "bake.toml").write_text("""
[dataset]
beir = "data"
[run]
cache = "off"
out = "res"
hourly_rate = 0.5
latency_sample = 1
[[arms]]
name = "bm25"
type = "bm25"
[[arms]]
name = "stem"
type = "bm25"
stemmer = "english"
[[arms]]
name = "hyb"
type = "rrf"
arms = ["bm25", "stem"]
depth = 20
""", encoding="utf-8")
    code, _, stderr = cli("run", str(tmp_path / "bake.toml"), "--no-progress")
    assert code == 0, stderr
    res = read_results(tmp_path / "res")
    hyb = res.arms[2]
    assert hyb.config["depth"] == 20 and hyb.cost is not None and hyb.cost["hourly_rate_usd"] == 0.5
    assert hyb.timing["latency"]["n"] == 1


def test_single_queries_are_timed_with_one_blas_thread(monkeypatch) -> None:
    """The timed searches run with numpy's BLAS limited to one thread; the arm's own run and what follows keep
    the process's setting."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads() -> set[int]:
        return {int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"}

    arm = build_arms([parse_arm_spec("bm25")])[0]
    seen: list[set[int]] = []
    search = type(arm).search

    def recording(self, queries, **kw):
        seen.append(blas_threads())
        return search(self, queries, **kw)

    monkeypatch.setattr(type(arm), "search", recording)
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        res = run_bakeoff(dataset(), [arm], cache=None, progress=False, latency_sample=3, latency_seed=0)
        after = blas_threads()
    assert before == after == {2}
    assert seen[0] == {2}  # the run itself: all four queries at once
    assert seen[1:] == [{1}] * 4  # the warm-up and three timed queries
    assert res.to_dict()["arms"][0]["timing"]["latency"]["blas_threads"] == 1



def test_embeddings_restored_from_the_cache_count_what_computing_them_took(tmp_path):
    """A warm cache restores the dense arm's document embeddings in milliseconds; its index time is still what
    building the index takes (the recorded encode time), so the verdict cannot call it faster to index than BM25."""
    from bakeoff.report.verdict import costs_of

    cache = Cache(tmp_path / "c")
    specs = ["bm25", "dense", "h=rrf:arms=bm25+dense"]
    cold = run_bakeoff(dataset(), build_arms([parse_arm_spec(s) for s in specs]), cache=cache, progress=False,
                       latency_sample=0).to_dict()
    # other queries over the same corpus: the runs are new, the document embeddings come from the cache
    ds = dataset()
    other = Dataset(ds.corpus, Queries.from_queries([Query("q9", "red mat")]), Qrels({"q9": {"d5": 1}}), name="tiny")
    warm = run_bakeoff(other, build_arms([parse_arm_spec(s) for s in specs]), cache=cache, progress=False,
                       latency_sample=0).to_dict()
    cold_d, warm_d = cold["arms"][1]["timing"], warm["arms"][1]["timing"]
    assert cold_d["doc_cached"] == 0.0 and "index_cached_total_s" not in cold_d
    assert warm_d["doc_cached"] == 1.0
    # the restored work is the encode time the cold run measured, and the cold index time contains it
    assert warm_d["index_cached_total_s"] == pytest.approx(cold_d["doc_encode_s"]) == warm_d["doc_encode_s"]
    assert cold_d["index_s"] >= cold_d["doc_encode_s"] > warm_d["index_s"]
    # one-time cost and the verdict's index time: this run's index time plus the restored work
    assert warm["arms"][1]["cost"]["one_time_s"] == pytest.approx(warm_d["index_s"] + cold_d["doc_encode_s"])
    assert costs_of(warm["arms"][1])["index_s"] == pytest.approx(warm_d["index_total_s"] + cold_d["doc_encode_s"])
    # the fusion carries its dense input's restored work; bm25 restores nothing
    fused = warm["arms"][2]
    assert fused["timing"]["index_cached_total_s"] == pytest.approx(cold_d["doc_encode_s"])
    assert "index_cached_total_s" not in warm["arms"][0]["timing"]
    assert costs_of(warm["arms"][0])["index_s"] == warm["arms"][0]["timing"]["index_total_s"]


def test_a_timing_stored_before_index_cached_s_still_counts_the_restored_encoding():
    """A cached run's timing written before ``index_cached_s`` existed holds the dense arm's ``doc_cached`` and
    ``doc_encode_s``: the build time is read from them (the CISI calibration's human side was such a run)."""
    from bakeoff.runner.costs import arm_timing

    arms = build_arms([parse_arm_spec(s) for s in ["bm25", "dense", "h=rrf:arms=bm25+dense"]])
    ctx = Context(corpus=dataset().corpus, progress=False)
    bm25, dense, fused = arms
    ctx.timings[bm25.fingerprint()] = {"index_s": 0.1}
    ctx.timings[dense.fingerprint()] = {"index_s": 0.002, "doc_cached": 1.0, "doc_encode_s": 31.7}
    ctx.timings[fused.fingerprint()] = {"index_s": 0.0}
    t = arm_timing(fused, ctx)
    assert t["index_total_s"] == pytest.approx(0.102) and t["index_cached_total_s"] == pytest.approx(31.7)
    ctx.timings[dense.fingerprint()]["index_cached_s"] = 30.0  # the key, when present, is the record
    assert arm_timing(dense, ctx)["index_cached_total_s"] == 30.0
    ctx.timings[dense.fingerprint()] = {"index_s": 31.8, "doc_cached": 0.0, "doc_encode_s": 31.7}
    assert "index_cached_total_s" not in arm_timing(dense, ctx)
