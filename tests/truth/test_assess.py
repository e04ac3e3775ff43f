"""`bakeoff assess` against the fake OpenAI server on 127.0.0.1: the UMBRELA-style protocol
(structured 0-3 answer, schema in the request, the key only in the Authorization header),
invalid grades re-asked then counted, a separate assessed qrels file, metrics with and
without the assessed labels (cross-checked with pytrec_eval), no key in any file, and bad
input (no results, unknown arm) giving one line, exit 2 and nothing written."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("httpx")
pytest.importorskip("pydantic")

from bakeoff.cli import main
from bakeoff.data.model import Qrels
from bakeoff.truth.judging.assess import merged_qrels
from tests.support.fake_openai_chat import FakeOpenAI, Reply
from tests.support.report_fixture import run_tiny

KEY = "sk-assess-secret-7731"


def _answer(o: int, m: int = 2, t: int = 3) -> str:
    return json.dumps({"intent_match": m, "trustworthiness": t, "final_score": o})


def responder(body: dict, i: int) -> Reply:
    """Bone marrow (d2) -> 3; Antibiotics (d9) -> always an invalid grade 5;
    Insulin (d7) -> invalid on the first ask, 2 when re-asked (new seed); anything else -> 0."""
    user = body["messages"][-1]["content"]
    passage = user.split("Passage: ", 1)[1]
    if passage.startswith("Bone marrow"):
        return Reply(200, _answer(3), prompt_tokens=100, completion_tokens=20)
    if passage.startswith("Antibiotics"):
        return Reply(200, _answer(5), prompt_tokens=100, completion_tokens=20)
    if passage.startswith("Insulin"):
        return Reply(200, _answer(2) if body["seed"] != 0 else "not json", prompt_tokens=100, completion_tokens=20)
    return Reply(200, _answer(0), prompt_tokens=100, completion_tokens=20)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _holes_of(results: Path, depth: int) -> list[tuple[str, str]]:
    """The unjudged pooled (query, doc) pairs, straight from the TREC runs and the qrels file."""
    qrels: dict[str, set[str]] = {}
    for line in (results.parent / "tiny" / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, _ = line.split("\t")
        qrels.setdefault(q, set()).add(d)
    pool: set[tuple[str, str]] = set()
    res = json.loads((results / "results.json").read_text())
    qids = set(res["arms"][0]["per_query"][res["measures"][0]])
    for arm in res["arms"]:
        rows = [line.split() for line in (results / arm["run_file"]).read_text().splitlines()]
        for q in qids:
            top = sorted((int(r[3]), r[2]) for r in rows if r[0] == q)[:depth]
            pool.update((q, d) for _, d in top if d not in qrels.get(q, set()))
    return sorted(pool)


def test_assess_grades_holes_reasks_invalid_and_writes_a_separate_qrels(tmp_path: Path, monkeypatch) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    results = run_tiny(tmp_path)
    cache_dir = tmp_path / "cache"
    with FakeOpenAI(responder) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        rc, out, err = _run(["assess", str(results), "--llm", "openai:gpt-4o-mini", "--depth", "3",
                             "--cache-dir", str(cache_dir), "--no-progress"])
        reqs = list(srv.requests)
    assert rc == 0, err
    holes = _holes_of(results, 3)
    docs = {q for _, q in holes}
    assert len(holes) == 10 and {"d2", "d9", "d7"} <= docs
    # protocol: chat completions with the rubric, the pair, the 0..3 schema and the key in the header only
    assert all(r["path"] == "/v1/chat/completions" for r in reqs)
    assert all(r["headers"]["Authorization"] == f"Bearer {KEY}" for r in reqs)
    body = reqs[0]["body"]
    assert body["model"] == "gpt-4o-mini" and body["temperature"] == 0.0
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["final_score"]["minimum"] == 0 and schema["properties"]["final_score"]["maximum"] == 3
    assert "0 = the passage has nothing to do with the query" in body["messages"][-1]["content"]
    assert "trustworthy" in body["messages"][-1]["content"]
    # d9 asked 3 times (2 re-asks, still invalid) and d7 twice (valid on the re-ask): 10 + 2 + 1 requests
    n_d9 = sum(1 for _, d in holes if d == "d9")
    n_d7 = sum(1 for _, d in holes if d == "d7")
    assert len(reqs) == len(holes) + 2 * n_d9 + n_d7
    folder = results / "assessed"
    prov = json.loads((folder / "assessment.json").read_text())
    c = prov["counts"]
    assert c["holes"] == 10 and c["asked"] == 10 and c["failed"] == n_d9 and c["assessed"] == 10 - n_d9
    assert c["re_asked"] == 2 * n_d9 + n_d7
    assert f"failed {n_d9}" in out and "$0.00" in out  # gpt-4o-mini list price on 100+20 tokens per request
    expect_cost = len(reqs) * (100 * 0.15 + 20 * 0.60) / 1e6
    assert prov["usage"]["cost_usd"] == pytest.approx(expect_cost)
    # the separate qrels: d2 -> 3, d7 -> 2, others 0, d9 absent (never validated)
    lines = [line.split() for line in (folder / "assessed.qrels").read_text().splitlines()]
    got = {(q, d): int(g) for q, _, d, g in lines}
    want = {(q, d): {"d2": 3, "d7": 2}.get(d, 0) for q, d in holes if d != "d9"}
    assert got == want
    # provenance: model, prompt and its hash, parameters, date
    assert prov["llm"]["model"] == "gpt-4o-mini" and prov["llm"]["api_key_env"] == "OPENAI_API_KEY"
    assert re.fullmatch(r"[0-9a-f]{64}", prov["prompt"]["sha256"]) and "UMBRELA" in prov["prompt"]["method"]
    assert prov["parameters"]["depth"] == 3 and prov["created"][:2] == "20"
    # side by side: original metrics equal results.json; with assessed = pytrec_eval on the merged qrels by hand
    res = json.loads((results / "results.json").read_text())
    qrels_raw: dict[str, dict[str, int]] = {}
    for line in (results.parent / "tiny" / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, g = line.split("\t")
        qrels_raw.setdefault(q, {})[d] = int(g)
    merged = {q: dict(v) for q, v in qrels_raw.items()}
    for (q, d), g in got.items():
        merged.setdefault(q, {})[d] = 1 if g >= 2 else 0  # binary originals: >= 2 is relevant
    qids = list(res["arms"][0]["per_query"]["ndcg@3"])
    for row in prov["metrics"]:
        arm = next(a for a in res["arms"] if a["name"] == row["arm"])
        assert row["original"]["ndcg@3"] == pytest.approx(arm["metrics"]["ndcg@3"], abs=1e-12)
        run: dict[str, dict[str, float]] = {}
        for r in (results / arm["run_file"]).read_text().splitlines():
            q, _, d, _, s, _ = r.split()
            run.setdefault(q, {})[d] = float(s)
        ev = pytrec_eval.RelevanceEvaluator({q: merged[q] for q in qids}, {"ndcg_cut_3", "recall_3"})
        per = ev.evaluate({q: run.get(q, {}) for q in qids})
        for m, key in (("ndcg@3", "ndcg_cut_3"), ("recall@3", "recall_3")):
            want_mean = sum(per[q][key] for q in qids if q in per) / len(qids)
            assert row["with_assessed"][m] == pytest.approx(want_mean, abs=1e-9), (row["arm"], m)
        assert row["with_assessed"]["judged@3"] >= row["original"]["judged@3"]
    # no key in any file written (output folder and the cache)
    for p in [*folder.rglob("*"), *cache_dir.rglob("*")]:
        if p.is_file():
            assert KEY.encode() not in p.read_bytes(), p


def test_cached_second_run_asks_only_the_failures(tmp_path: Path, monkeypatch) -> None:
    results = run_tiny(tmp_path)
    with FakeOpenAI(responder) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        argv = ["assess", str(results), "--llm", "openai:gpt-4o-mini", "--depth", "3", "--cache-dir",
                str(tmp_path / "cache"), "--no-progress", "--arms", "bm25,tfidf", "--out", str(tmp_path / "a")]
        assert _run(argv)[0] == 0
        first = len(srv.requests)
        assert _run(argv)[0] == 0
        second = len(srv.requests) - first
    prov = json.loads((tmp_path / "a" / "assessment.json").read_text())
    assert prov["parameters"]["arms"] == ["bm25", "tfidf"]
    assert second == 3 * prov["counts"]["failed"]  # failures are not cached: asked again, 3 times each
    assert prov["counts"]["cache_hits"] == prov["counts"]["assessed"]


def test_merged_qrels_maps_grades_to_the_original_scale() -> None:
    orig = Qrels({"q": {"a": 1, "b": 0}})
    m = merged_qrels(orig, {"q": {"a": 0, "c": 3, "d": 2, "e": 1}, "r": {"x": 3}}, relevant_from=2)
    assert dict(m["q"]) == {"a": 1, "b": 0, "c": 1, "d": 1, "e": 0}  # originals win, >= 2 -> top grade 1
    assert dict(m["r"]) == {"x": 1}
    graded = merged_qrels(Qrels({"q": {"a": 3}}), {"q": {"c": 2, "d": 1}}, relevant_from=2)
    assert dict(graded["q"]) == {"a": 3, "c": 2, "d": 0}


@pytest.mark.parametrize("case", ["no_results", "unknown_arm", "bad_depth", "bad_baseline"])
def test_bad_input_one_line_exit_2_nothing_written(tmp_path: Path, case: str) -> None:
    if case == "no_results":
        folder = tmp_path / "empty"
        folder.mkdir()
        argv = ["assess", str(folder)]
    else:
        folder = run_tiny(tmp_path)
        argv = {"unknown_arm": ["assess", str(folder), "--arms", "bm25,nosuch"],
                "bad_depth": ["assess", str(folder), "--depth", "0"],
                "bad_baseline": ["assess", str(folder), "--method", "likelihood", "--baseline", "corpus"]}[case]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    rc, _, err = _run([*argv, "--llm", "http://127.0.0.1:9|never", "--no-progress"])
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    if case == "no_results":
        assert str(folder / "results.json") in lines[0]
    if case == "unknown_arm":
        assert "'nosuch'" in lines[0] and "bm25" in lines[0]
    if case == "bad_baseline":
        assert "--baseline must be random or none" in lines[0]
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
