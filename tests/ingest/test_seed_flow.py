"""Seed 000's flow, smaller: ``bakeoff ingest api`` from the Oyez-shaped server -> ``bakeoff generate
clusters`` -> ``bakeoff run`` with TF-IDF, BM25 and dense arms, all through the real CLI.

The LLM here is the OpenAI-compatible fake on 127.0.0.1 (real HTTP, real wire protocol) answering
from the documents in its prompt, so the test is deterministic; the same flow with the local
Gemma 3 270M (llama.cpp) was run by hand and is reported in the ingest notes (the 270M model
copies the prompt's example in clusters mode)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bakeoff.cli import main
from tests.support.fake_openai_chat import FakeOpenAI, Reply
from tests.support.oyez_api import OyezServer
from tests.support.oyez_cases import CASES

pytestmark = pytest.mark.slow  # a real model

pytest.importorskip("jmespath")
pytest.importorskip("pydantic")
pytest.importorskip("sentence_transformers")


def cluster_answer(body: dict, i: int) -> Reply:
    """A question about the first listed document, using two words of its text that are not the
    title's; D1 relevant (rank 1), the others judged not relevant."""
    prompt = body["messages"][-1]["content"] if "messages" in body else body["prompt"]
    docs = re.findall(r"^\[(D\d+)\] (.*)$", prompt, flags=re.MULTILINE)
    docs = [d for d in docs if "Vitamin D" not in d[1] and "walking" not in d[1] and "Calcium" not in d[1]]
    label, text = docs[0]
    words = [w.strip(".,;").lower() for w in text.split() if len(w) > 6][:3]
    question = f"which case involved {' and '.join(words)}?"
    judgments = [{"id": label, "relevant": True, "rank": 1, "reason": "it is about this"}]
    judgments += [{"id": d, "relevant": False, "rank": k + 2, "reason": "other topic"}
                  for k, (d, _) in enumerate(docs[1:])]
    return Reply(200, json.dumps({"questions": [{"question": question, "judgments": judgments}]}),
                 prompt_tokens=400, completion_tokens=60)


def test_ingest_generate_clusters_run(tmp_path: Path, capsys) -> None:
    corpus = tmp_path / "oyez.jsonl"
    with OyezServer(CASES) as api:
        assert main(["ingest", "api", api.base_url + "/cases", "--out", str(corpus), "--per-page", "10",
                     "--start-page", "0", "--detail-field", "href", "--id", "ID", "--title", "name",
                     "--text", "facts_of_the_case", "--text", "conclusion",
                     "--field", "winner=decisions[0].winning_party", "--strip-html", "--normalize-space",
                     "--rate", "0", "--no-progress"]) == 0
    truth = tmp_path / "truth"
    # the fake's questions copy words of their document on purpose (so lexical arms find it): the leak
    # and specificity filters, which would rightly reject them, are opened wide here
    with FakeOpenAI(cluster_answer) as llm:
        assert main(["generate", "clusters", "--corpus", str(corpus), "--out", str(truth), "--llm",
                     f"{llm.base_url}|fake", "-n", "8", "--cluster-size", "5", "--questions-per-cluster", "1",
                     "--test-fraction", "1.0", "--cache-dir", str(tmp_path / "cache"), "--no-progress",
                     "--leak-threshold", "1.0", "--specificity", "off", "--answerability", "off"]) == 0
        n_requests = len(llm.requests)
    out = capsys.readouterr().out
    assert re.search(r"kept \d+ questions from 7 clusters", out), out
    prov = json.loads((truth / "provenance.json").read_text())
    assert prov["counts"]["clusters"] == n_requests == 7
    queries = [json.loads(x) for x in (truth / "queries.jsonl").read_text().splitlines()]
    assert len(queries) == prov["counts"]["kept"] >= 6
    docs = {json.loads(x)["_id"]: json.loads(x) for x in (truth / "corpus.jsonl").read_text().splitlines()}
    assert len(docs) == 35 and all("<" not in d["text"] for d in docs.values())
    assert docs["50000"]["metadata"]["winner"] == "Ernesto A. Miranda"
    results = tmp_path / "results"
    assert main(["run", "--beir", str(truth), "--arm", "tfidf", "--arm", "bm25", "--arm", "dense", "--out",
                 str(results), "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--latency-sample", "5"]) == 0
    res = json.loads((results / "results.json").read_text())
    assert [a["name"] for a in res["arms"]] == ["tfidf", "bm25", "dense"]
    # the questions reuse words of their document, so lexical arms find it near the top
    for a in res["arms"]:
        assert a["metrics"]["recall@10"] >= 0.8, (a["name"], a["metrics"])
    assert res["dataset"]["n_docs"] == 35 and res["queries"]["evaluated"] == len(queries)
