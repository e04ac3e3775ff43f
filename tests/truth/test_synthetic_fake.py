"""Describe and cluster modes end to end against the fake server on 127.0.0.1: leak filter
and regeneration, repairs of hallucinated ids / duplicate ranks / omissions, graded qrels,
hard negatives, the BEIR output and `bakeoff generate` + `bakeoff run` on it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("httpx")
pytest.importorskip("pydantic")

from bakeoff.cli import main
from bakeoff.data import load_beir
from bakeoff.data.model import Corpus
from bakeoff.truth.generation.clusters import ClusterOptions, cluster_truth
from bakeoff.truth.generation.describe import DescribeOptions, describe_truth
from bakeoff.truth.generation.repair import GradeMap
from bakeoff.truth.llm.client import LLMClient, LLMConfig
from tests.support.fake_openai_chat import FakeOpenAI, Reply

DOCS = {
    "a": "Glycolysis converts glucose into pyruvate inside the cytoplasm.",
    "b": "Photosynthesis captures sunlight in chloroplasts of green plants.",
    "c": "Tectonic plates drift slowly and trigger earthquakes along faults.",
}


#: The old rule these tests pin down: leak cut at 0.35 (regenerated), zero-shot throughout (no pilot round), no
#: masked view.
CUT = {"leak_mode": "cut", "bootstrap": 0, "mask_share": 0.0}
CUT_ARGS = ("--leak-mode", "cut", "--bootstrap", "0", "--mask-share", "0")


def _corpus() -> Corpus:
    return Corpus(tuple(DOCS), tuple(DOCS.values()), tuple("" for _ in DOCS), tuple({} for _ in DOCS))


def describe_responder(body: dict, i: int) -> Reply:
    """Doc a: a leaky query on the first seed (leak 2/2 = 1.0), a clean one after; others clean."""
    text = body["messages"][-1]["content"]
    first_round = body["seed"] == 0
    if "Glycolysis" in text:
        q = "glycolysis pyruvate please" if first_round else "how do cells break down sugar"
    elif "Photosynthesis" in text:
        q = "how do leaves turn light into food"
    else:
        q = "why does the ground shake"
    return Reply(200, json.dumps({"query": q}), prompt_tokens=40, completion_tokens=8)


def test_describe_mode_filters_leaks_and_regenerates() -> None:
    with FakeOpenAI(describe_responder) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        truth = describe_truth(_corpus(), client, options=DescribeOptions(n=3, seed=0, **CUT), progress=False)
    by_doc = {m["source_doc"]: (t, m) for t, m in zip(truth.queries.texts, truth.queries.metadata)}
    assert set(by_doc) == {"a", "b", "c"}
    assert by_doc["a"][0] == "how do cells break down sugar" and by_doc["a"][1]["attempt"] == 1
    prov = truth.provenance
    # 4 scored generations (3 + 1 regeneration), 1 rejected (leak 1.0 > 0.35)
    assert prov["counts"]["scored"] == 4 and prov["counts"]["rejected"] == 1
    assert prov["leak"]["rejection_rate"] == pytest.approx(0.25)
    assert prov["leak"]["all_generations"]["histogram"]["0.90-1.00"] == 1
    assert prov["leak"]["kept"]["mean"] == 0.0
    assert prov["usage"]["prompt_tokens"] == 4 * 40 and prov["usage"]["cost_usd"] == 0.0
    for qid in truth.queries.ids:
        assert dict(truth.qrels[qid]) == {truth.queries[qid].metadata["source_doc"]: 1}


def test_describe_drops_a_document_after_n_regenerations() -> None:
    def always_leaky(body: dict, i: int) -> Reply:
        return Reply(200, json.dumps({"query": "tectonic plates earthquakes faults"}))

    corpus = Corpus(("c",), (DOCS["c"],), ("",), ({},))
    with FakeOpenAI(always_leaky) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        truth = describe_truth(corpus, client, options=DescribeOptions(n=1, max_regenerations=2, **CUT), progress=False)
        assert len(srv.requests) == 3
    assert len(truth.queries) == 0 and truth.provenance["counts"]["dropped_docs"] == 1
    assert truth.provenance["leak"]["rejection_rate"] == 1.0


def _cluster_answer(body: dict, i: int) -> Reply:
    listing = body["messages"][-1]["content"]
    labels = [ln.split("]")[0][1:] for ln in listing.splitlines() if ln.startswith("[D")]
    assert labels == ["D1", "D2", "D3", "D4"]
    answer = {"questions": [
        {"question": "which docs are about energy in cells?", "judgments": [
            {"id": "D1", "relevant": True, "rank": 1, "reason": "glycolysis"},
            {"id": "D2", "relevant": True, "rank": 1, "reason": "photosynthesis"},   # duplicate rank
            {"id": "D7", "relevant": True, "rank": 2, "reason": "made up"},          # hallucinated id
            {"id": "D3", "relevant": False, "rank": 3, "reason": "geology"}]},      # D4 left out
        {"question": "  ", "judgments": []},                                           # empty question
    ]}
    return Reply(200, json.dumps(answer), prompt_tokens=300, completion_tokens=120)


def test_cluster_mode_repairs_grades_and_hard_negatives(tmp_path: Path) -> None:
    ids = ("g1", "g2", "g3", "g4")
    corpus = Corpus(ids, (DOCS["a"], DOCS["b"], DOCS["c"], "Volcanoes erupt molten rock."),
                    ("", "", "", ""), tuple({} for _ in ids))
    vectors = np.array([[1, 0], [1, 0.1], [0.9, 0.2], [1, 0.05]], dtype=np.float32)  # one cluster of 4
    with FakeOpenAI(_cluster_answer) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        opts = ClusterOptions(n=5, cluster_size=4, questions_per_cluster=3, grade_map=GradeMap((3, 2), 1),
                              test_fraction=1.0)
        truth = cluster_truth(corpus, client, vectors=vectors, options=opts, progress=False)
        assert srv.requests[0]["body"]["response_format"]["type"] == "json_schema"
    prov = truth.provenance
    assert prov["repairs"] == {"empty_question": 1, "hallucinated_id": 1, "duplicate_id": 0, "duplicate_rank": 1,
                               "irrelevant_above_relevant": 0, "left_out": 1, "no_relevant": 0,
                               "copied_example": 0}
    assert truth.queries.texts == ("which docs are about energy in cells?",)
    qid = truth.queries.ids[0]
    assert dict(truth.qrels[qid]) == {"g1": 3, "g2": 2}
    assert prov["hard_negatives"] == {qid: ["g3", "g4"]}
    assert truth.queries.metadata[0]["ranking"] == ["g1", "g2", "g3", "g4"]
    out = truth.write(tmp_path / "truth", corpus=corpus)
    ds = load_beir(out, split="test")
    assert dict(ds.qrels[qid]) == {"g1": 3, "g2": 2} and len(ds.corpus) == 4
    assert json.loads((out / "provenance.json").read_text())["split"]["n_test"] == 1
    assert main(["run", "--beir", str(out), "--arm", "bm25", "--no-progress", "--cache", "off"]) == 0


#: Of the kind the bundled 0.5B wrote for clusters of CISI and SciFact: the JSON shape's placeholder, the task
#: asked back, a question about "this document", and one need.
_CLUSTER_JUNK = ("...", "What would a user might ask? For every question judge every document by its id",
                 "What does the title of this document tell you about the book?",
                 "which docs are about energy in cells?")


def _junk_answer(body: dict, i: int) -> Reply:
    judged = [{"id": "D1", "relevant": True, "rank": 1, "reason": ""}, {"id": "D2", "relevant": True, "rank": 2,
              "reason": ""}, {"id": "D3", "relevant": False, "rank": 3, "reason": ""},
              {"id": "D4", "relevant": False, "rank": 4, "reason": ""}]
    return Reply(200, json.dumps({"questions": [{"question": q, "judgments": judged} for q in _CLUSTER_JUNK]}))


def test_cluster_mode_runs_describe_modes_text_filters() -> None:
    """A placeholder, an echo of the prompt and a query about "this document" are dropped under their reasons,
    and the health check says how few of the questions asked were kept."""
    ids = ("g1", "g2", "g3", "g4")
    corpus = Corpus(ids, (DOCS["a"], DOCS["b"], DOCS["c"], "Volcanoes erupt molten rock."),
                    ("", "", "", ""), tuple({} for _ in ids))
    vectors = np.array([[1, 0], [1, 0.1], [0.9, 0.2], [1, 0.05]], dtype=np.float32)
    with FakeOpenAI(_junk_answer) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        opts = ClusterOptions(n=4, cluster_size=4, questions_per_cluster=4, test_fraction=1.0, specificity=None,
                              answerability=None)
        truth = cluster_truth(corpus, client, vectors=vectors, options=opts, progress=False)
    counts = truth.provenance["counts"]
    assert truth.queries.texts == (_CLUSTER_JUNK[3],)
    assert (counts["too_short"], counts["echoes_prompt"], counts["refers_to_document"]) == (1, 1, 1)
    assert counts["questions_dropped"] == 3 and counts["kept"] == 1
    health = truth.provenance["health"]
    assert health["kept_share"] == 0.25 and not health["ok"]
    assert health["line"].startswith("warning: the generated truth is too weak to decide on: only 1 of 4 questions "
                                     "asked were kept (25%) (most rejected: ")


def test_generate_cli_describe_then_run(tmp_path: Path, capsys) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                                              for k, v in DOCS.items()))
    out = tmp_path / "gen"
    with FakeOpenAI(describe_responder) as srv:
        rc = main(["generate", "describe", "--corpus", str(src), "--llm", f"{srv.base_url}|fake", "-n", "3",
                   "--out", str(out), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
                   "--test-fraction", "1.0", "--min-doc-chars", "0", "--specificity", "off", "--answerability", "off",
                   *CUT_ARGS])
    assert rc == 0
    printed = capsys.readouterr().out
    assert ("kept 3 of 3 sampled documents; mean leak 0.000 (leak mode cut; kept per leak bin [3, 0, 0, 0, 0]); "
            "examples: none") in printed
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["mode"] == "describe" and prov["split"]["n_test"] == 3 and prov["llm"]["model"] == "fake"
    assert main(["run", "--beir", str(out), "--arm", "bm25", "--no-progress", "--cache", "off"]) == 0
    # a second identical run is served from the cache: the server is gone, nothing fails
    rc = main(["generate", "describe", "--corpus", str(src), "--llm", "http://127.0.0.1:9/v1|fake", "-n", "3",
               "--out", str(tmp_path / "gen2"), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
               "--test-fraction", "1.0", "--min-doc-chars", "0", "--specificity", "off", "--answerability", "off",
               *CUT_ARGS])
    assert rc == 0
    assert (tmp_path / "gen2" / "queries.jsonl").read_text() == (out / "queries.jsonl").read_text()
    assert f"wrote {out} (run it: bakeoff run --beir {out} --arm bm25 ...)" in printed


def test_generate_cli_says_when_no_query_was_kept(tmp_path: Path, capsys) -> None:
    """Every answer invalid: the truth folder is written, but the CLI does not point at `bakeoff run` (which
    would only say the qrels hold no judgments); it says why there is nothing and what to change."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                                              for k, v in DOCS.items()))
    out = tmp_path / "gen"
    with FakeOpenAI(lambda body, i: Reply(200, "no JSON here", prompt_tokens=40, completion_tokens=4)) as srv:
        rc = main(["generate", "describe", "--corpus", str(src), "--llm", f"{srv.base_url}|fake", "-n", "3",
                   "--out", str(out), "--cache", "off", "--no-progress", "--regenerations", "0",
                   "--test-fraction", "1.0", "--min-doc-chars", "0", "--specificity", "off", "--answerability", "off"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "kept 0 of 3 sampled documents" in printed and "run it:" not in printed
    assert f"wrote {out}, but with no query kept there is nothing to evaluate; see the rejections above" in printed
    assert (out / "queries.jsonl").read_text() == ""


@pytest.mark.slow
def test_generate_cli_clusters_embeds_with_the_dense_arm(tmp_path: Path, capsys) -> None:
    """`bakeoff generate clusters`: vectors from the offline MiniLM through the dense arm's cache, then the LLM."""
    src = tmp_path / "corpus.jsonl"
    texts = (DOCS["a"], DOCS["b"], DOCS["c"], "Volcanoes erupt molten rock.")
    src.write_text("".join(json.dumps({"_id": f"g{i}", "text": t}) + "\n" for i, t in enumerate(texts, 1)))
    args = ["generate", "clusters", "--corpus", str(src), "--out", str(tmp_path / "out"), "-n", "3",
            "--cluster-size", "4", "--questions-per-cluster", "3", "--test-fraction", "1.0",
            "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--specificity", "off", "--answerability", "off"]
    with FakeOpenAI(_cluster_answer) as srv:
        assert main([*args, "--llm", f"{srv.base_url}|fake"]) == 0
    printed = capsys.readouterr().out
    assert "kept 1 questions from 1 clusters; repairs: empty_question 1, hallucinated_id 1, duplicate_rank 1" in printed
    prov = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert "sentence-transformers" in prov["encoder"] and prov["counts"]["kept"] == 1
    assert list((tmp_path / "cache").rglob("*dense-doc*")), "corpus vectors are cached as the dense arm's"


def test_generate_truth_is_the_public_entry(tmp_path: Path) -> None:
    """The function behind `bakeoff generate` (and the demo): describe mode, written with its source."""
    from bakeoff.errors import ConfigError
    from bakeoff.truth.generation.generate import generate_truth

    with FakeOpenAI(describe_responder) as srv:
        done = generate_truth(_corpus(), options=DescribeOptions(n=3, test_fraction=1.0, **CUT), out=tmp_path / "t",
                              source="three docs", llm=f"{srv.base_url}|fake", progress=False,
                              answerability="off")
    assert done.folder == tmp_path / "t" and done.batch_requests == 0 and done.ingested is None
    prov = json.loads((tmp_path / "t" / "provenance.json").read_text())
    assert prov["corpus"]["source"] == "three docs" and prov["counts"]["kept"] == 3
    assert done.usage.requests == 4  # three documents, one regenerated (the leaky first answer)
    assert load_beir(tmp_path / "t").queries.ids == done.truth.queries.ids
    # refused before any server is contacted or started
    for kwargs, msg in (({"options": DescribeOptions(n=0)}, "-n must be >= 1"),
                        ({"options": DescribeOptions(test_fraction=2.0)}, "--test-fraction"),
                        ({"options": DescribeOptions(), "batch_out": tmp_path / "b.jsonl"}, "need the cache"),
                        ({"options": ClusterOptions()}, "cluster mode needs document vectors")):
        with pytest.raises(ConfigError, match=msg):
            generate_truth(_corpus(), out=None, source="x", llm="local", **kwargs)


def test_generate_cli_bad_input_exits_2(tmp_path: Path, capsys) -> None:
    assert main(["generate", "sideways", "--corpus", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert main(["generate", "describe", "--corpus", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o"),
                 "--llm", "openai:gpt-5-mini"]) == 2
    err = capsys.readouterr().err
    assert "mode must be describe or clusters" in err and "missing.jsonl" in err
    # a bad --llm is refused at the command line, before the corpus is read
    assert main(["generate", "describe", "--corpus", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o"),
                 "--llm", "openai:"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: --llm must be local[:NAME|PATH.gguf], openai:<model>, ollama:<model> or <base_url>|<model>, "
                   "got 'openai:'")
    assert not (tmp_path / "o").exists()


def test_generate_cli_batch_out_then_batch_in(tmp_path: Path, capsys) -> None:
    """The OpenAI batch path: round 1 is written as a batch file; its results are ingested; the leaky
    answer triggers a round-2 batch; after those results the dataset is written without any server."""
    src = tmp_path / "corpus.jsonl"
    src.write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in DOCS.items()))
    common = ["generate", "describe", "--corpus", str(src), "--llm", "http://127.0.0.1:9/v1|fake", "-n", "3",
              "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
              "--min-doc-chars", "0", "--specificity", "off", "--answerability", "off", "--leak-mode", "cut"]

    def answer(batch: Path, results: Path) -> int:
        lines = [json.loads(x) for x in batch.read_text().splitlines()]
        with results.open("w") as fh:
            for line in lines:
                reply = describe_responder(line["body"], 0)
                body = {"choices": [{"message": {"content": reply.content}}],
                        "usage": {"prompt_tokens": 40, "completion_tokens": 8}}
                fh.write(json.dumps({"custom_id": line["custom_id"], "response": {"status_code": 200, "body": body},
                                     "error": None}) + "\n")
        return len(lines)

    assert main(common + ["--batch-out", str(tmp_path / "b1.jsonl")]) == 0
    assert not (tmp_path / "out").exists()
    assert answer(tmp_path / "b1.jsonl", tmp_path / "r1.jsonl") == 3
    assert main(common + ["--batch-in", str(tmp_path / "r1.jsonl"), "--batch-out", str(tmp_path / "b2.jsonl")]) == 0
    assert answer(tmp_path / "b2.jsonl", tmp_path / "r2.jsonl") == 1          # only the leaky document
    assert main(common + ["--batch-in", str(tmp_path / "r2.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "wrote 3 requests" in out and "wrote 1 requests" in out and "examples: none" in out
    assert len((tmp_path / "out" / "queries.jsonl").read_text().splitlines()) == 3


def test_describe_stratified_sample_reports_the_mix() -> None:
    texts = [f"Document number {i} about topic {'x' if i < 6 else 'y'}" for i in range(8)]
    corpus = Corpus(tuple(f"d{i}" for i in range(8)), tuple(texts), tuple("" for _ in texts),
                    tuple({"topic": "x" if i < 6 else "y"} for i in range(8)))

    def ok(body: dict, i: int) -> Reply:
        return Reply(200, json.dumps({"query": "something plain to look for"}))

    with FakeOpenAI(ok) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        truth = describe_truth(corpus, client, options=DescribeOptions(n=4, stratify_by="topic", bootstrap=0), progress=False)
    mix = truth.provenance["sampled_mix"]
    assert {g: m["sampled"] for g, m in mix.items()} == {"x": 3, "y": 1}       # 4 * 6/8 = 3, 4 * 2/8 = 1
    assert mix["x"]["corpus_share"] == 0.75 and mix["y"]["sampled_share"] == 0.25
    assert truth.provenance["kept_mix"]["x"]["sampled"] == 3


def test_masked_view_hides_rare_words_of_the_planned_documents() -> None:
    """Documents drawn for the masked view (``default_rng([seed, row, 17]).random() < share``) reach the model with a
    drawn half of their rare words replaced by "…" (the words it then cannot copy); the others as written."""
    from bakeoff.truth.filters.leak import mask_rare_terms, rare_terms
    from bakeoff.truth.generation.describe import masked_plan

    shown: dict[str, str] = {}

    def reply(body: dict, i: int) -> Reply:
        text = body["messages"][-1]["content"]
        key = "a" if "converts" in text else "b" if "captures" in text else "c"
        shown[key] = text
        return Reply(200, json.dumps({"query": "how does this process work in nature"}))

    opts = DescribeOptions(n=3, seed=4, mask_share=0.5, mask_terms=0.5, answerability=None)
    plan = masked_plan([0, 1, 2], opts)
    assert plan == {r for r in range(3) if np.random.default_rng([4, r, 17]).random() < 0.5}
    assert 0 < len(plan) < 3  # this seed plans some documents, not all: both views are exercised
    with FakeOpenAI(reply) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        truth = describe_truth(_corpus(), client, options=opts, progress=False)
    ids = list(DOCS)
    for r, d in enumerate(ids):
        if r in plan:
            rng = np.random.default_rng([4, r, 5])
            hidden = {w for w in sorted(rare_terms(DOCS[d])) if rng.random() < 0.5}
            assert hidden and shown[d].endswith(mask_rare_terms(DOCS[d], share=0.5, rng=np.random.default_rng([4, r, 5])))
            assert "…" in shown[d] and not any(w in shown[d].lower().split() for w in hidden)
        else:
            assert shown[d].endswith(DOCS[d])
    assert truth.provenance["masked"]["documents"] == sorted(ids[r] for r in plan)
    assert truth.provenance["masked"]["share"] == 0.5


def test_mask_rare_terms_by_hand() -> None:
    from bakeoff.truth.filters.leak import mask_rare_terms, rare_terms

    class Draws:  # a generator stand-in with known draws: mask the 1st and 3rd rare word (in sorted order)
        def __init__(self, values):
            self.values = list(values)

        def random(self):
            return self.values.pop(0)

    text = "Glycolysis converts glucose into pyruvate; glycolysis is ancient."
    # rare words, sorted: converts, glucose, glycolysis, pyruvate ("ancient" is a common word, "into" too short)
    assert sorted(rare_terms(text)) == ["converts", "glucose", "glycolysis", "pyruvate"]
    out = mask_rare_terms(text, share=0.5, rng=Draws([0.1, 0.9, 0.2, 0.9]))
    assert out == "… … glucose into pyruvate; … is ancient."  # every occurrence, any case
    assert mask_rare_terms(text, share=0.0, rng=np.random.default_rng(0)) == text
