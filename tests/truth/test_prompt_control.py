"""Prompt control (style, language, persona, preset, instruction), reasoning-model request
parameters and keys, against protocol-faithful fake OpenAI servers on 127.0.0.1; the document
length floor of sampling."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("httpx")
pytest.importorskip("pydantic")

from bakeoff.cli import main
from bakeoff.data.leak_bins import leak_bin
from bakeoff.data.model import Corpus
from bakeoff.errors import ConfigError
from bakeoff.truth.generation.describe import DescribeOptions, describe_truth
from bakeoff.truth.generation.leak_target import leak_quota
from bakeoff.truth.generation.prompts import (
    PRESETS,
    PromptControl,
    describe_completion,
    describe_messages,
    describe_schema,
    read_examples,
    shot_queries,
)
from bakeoff.truth.generation.sampling import eligible_rows, sample_rows
from bakeoff.truth.llm.client import ChatRequest, LLMClient, LLMConfig, is_reasoning_model
from tests.support.fake_openai_chat import FakeOpenAI, Reply

KEY = "sk-test-reasoning-4711"
GOOD = json.dumps({"query": "how do I pause my program for a while"})
DOC = "time.sleep(secs)\nSuspend execution of the calling thread for the given number of seconds."


# -- prompts -------------------------------------------------------------------------------

def test_spanish_prompt_is_zero_shot_with_spanish_labels_and_instruction() -> None:
    c = PromptControl(lang="es")
    prompt, prefill = describe_completion("texto del documento", c)
    assert prompt.startswith("Registro de búsquedas: cada documento y lo que una persona no experta escribió")
    assert "Escribe una pregunta que este documento responde" in prompt and "Document:" not in prompt
    # zero-shot: the document is the only one in the log
    assert prompt.count("Documento: ") == 1 and "aspirina" not in prompt
    assert prompt.endswith("\n\nDocumento: texto del documento\nBúsqueda: ") and prefill == '{"query": "'
    msgs = describe_messages("texto", c)
    assert [m["role"] for m in msgs] == ["system", "user"]
    # the chat form frames the question as a searcher's need; keyword queries keep the answering rule
    assert msgs[0]["content"].startswith("Alguien necesita la información de este documento pero no lo ha visto.")
    assert "solo nombra el documento o su título" not in msgs[0]["content"]
    assert "solo nombra el documento o su título" in describe_messages("texto", PromptControl(lang="es", style="keywords"))[0]["content"]
    assert msgs[1]["content"] == "Documento:\ntexto"


def test_style_persona_preset_and_instruction_reach_the_prompt() -> None:
    c = PromptControl(style="keywords", persona="a nurse on a night shift", preset="seed000",
                      instruction="Ask about dosage only.")
    assert c.preset == "need-not-document"  # the old name is an alias
    prompt, _ = describe_completion("doc", c)
    header = prompt.split("\n\n", 1)[0]
    assert "what a nurse on a night shift typed" in header and "short keyword query (2 to 5 words)" in header
    assert PRESETS["need-not-document"]["en"] in header and header.endswith("Ask about dosage only.")
    system = describe_messages("doc", c)[0]["content"]
    assert "short keyword query (2 to 5 words)" in system and "The searcher is a nurse on a night shift." in system
    assert "Pretend you do not know which document answers" in system and "no statute or section numbers" in system
    assert "its title is not answered by it" in system and system.endswith('Answer as JSON: {"query": "..."}')
    assert shot_queries(PromptControl(style="typos")) == frozenset()
    for bad in ({"style": "shouting"}, {"lang": "fr"}, {"preset": "nope"}):
        with pytest.raises(ConfigError):
            PromptControl(**bad)  # type: ignore[arg-type]


def test_describe_rejects_copies_of_the_users_examples() -> None:
    corpus = Corpus(("t",), (DOC,), ("",), ({},))
    answers = [json.dumps({"query": "texto a mayúsculas ya"}), json.dumps({"query": "pausar el programa un rato"})]
    shots = (("str.upper(): Devuelve una copia en mayúsculas.", "texto a mayúsculas ya"),)
    with FakeOpenAI([Reply(200, a) for a in answers]) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        opts = DescribeOptions(mask_share=0.0, n=1, prompt=PromptControl(style="keywords", lang="es", examples=shots), lang="es",
                               leak_mode="record")
        truth = describe_truth(corpus, client, options=opts, progress=False)
        msgs = srv.requests[0]["body"]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert "palabras clave" in msgs[0]["content"] and msgs[-1]["content"].startswith("Documento:")
    assert json.loads(msgs[2]["content"]) == {"query": "texto a mayúsculas ya"}
    assert truth.provenance["rejections"]["copied_example"] == 1
    assert truth.queries.texts == ("pausar el programa un rato",)
    assert truth.provenance["prompts"]["control"]["lang"] == "es" and truth.provenance["prompts"]["examples"] == "user"


def test_examples_file_is_read_and_bad_lines_name_file_line_and_field(tmp_path: Path) -> None:
    f = tmp_path / "ex.jsonl"
    f.write_text(json.dumps({"document": "Doc  one\ntext", "query": "what is one"}) + "\n\n"
                 + json.dumps({"document": "Doc two", "query": "what is two"}) + "\n")
    assert read_examples(f) == (("Doc one text", "what is one"), ("Doc two", "what is two"))
    cases = {'{"document": "d"}\n': "ex.jsonl:1: field 'query' must be non-empty text",
             '{"document": "d", "query": "q"}\nnot json\n': "ex.jsonl:2: not JSON",
             '[1, 2]\n': "ex.jsonl:1: expected an object", "\n": "no examples"}
    for text, msg in cases.items():
        f.write_text(text)
        with pytest.raises(ConfigError, match=msg):
            read_examples(f)
    src = tmp_path / "corpus.jsonl"
    src.write_text(json.dumps({"_id": "t", "text": DOC}) + "\n")
    f.write_text('{"document": "d", "query": 3}\n')
    rc = main(["generate", "describe", "--corpus", str(src), "--out", str(tmp_path / "out"), "-n", "1",
               "--llm", "http://127.0.0.1:9/v1|fake", "--examples", str(f), "--answerability", "off",
               "--mask-share", "0"])
    assert rc == 2 and not (tmp_path / "out").exists()


def test_pilot_rounds_best_queries_become_the_examples_of_the_rest() -> None:
    """Bootstrapping: a zero-shot pilot over the first sampled documents; its kept query is shown as
    the example of every later request, with its document cut to ``example_doc_chars``."""
    texts = ("The kettle boils water in two minutes when it is full.",
             "Cats sleep for about fifteen hours each day, mostly in daylight.",
             "Bridges expand in summer heat, so engineers leave joints between sections.")
    corpus = Corpus(("k", "c", "b"), texts, ("",) * 3, ({},) * 3)
    answers = {"kettle": "how long until my full kettle is hot",
               "Cats": "how many hours a day does a cat nap",
               "Bridges": "why do bridges have gaps between their parts"}

    def reply(body: dict, i: int) -> Reply:
        doc = body["messages"][-1]["content"]
        return Reply(200, json.dumps({"query": next(v for k, v in answers.items() if k in doc)}))

    with FakeOpenAI(reply) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake", concurrency=1))
        opts = DescribeOptions(mask_share=0.0, n=3, seed=1, bootstrap=1, bootstrap_pilot=1, leak_mode="record", example_doc_chars=20)
        truth = describe_truth(corpus, client, options=opts, progress=False)
        bodies = [r["body"] for r in srv.requests]
    assert len(bodies) == 3 and len(bodies[0]["messages"]) == 2  # the pilot: system + document
    pilot_doc = bodies[0]["messages"][1]["content"]
    pilot_query = next(v for k, v in answers.items() if k in pilot_doc)
    for b in bodies[1:]:
        roles = [m["role"] for m in b["messages"]]
        assert roles == ["system", "user", "assistant", "user"]
        assert json.loads(b["messages"][2]["content"]) == {"query": pilot_query}
        assert len(b["messages"][1]["content"]) <= len("Document:\n") + 20 + 4
    prov = truth.provenance
    assert prov["prompts"]["examples"] == "bootstrapped" and prov["prompts"]["bootstrapped"][0]["query"] == pilot_query
    assert sorted(truth.queries.texts) == sorted(answers.values())


def test_leak_target_quota_regenerates_over_quota_queries_and_waives_it_in_the_last_round() -> None:
    corpus = Corpus(("t",), (DOC,), ("",), ({},))
    copy = json.dumps({"query": "suspend execution of the calling thread for given seconds"})
    with FakeOpenAI([Reply(200, copy)] * 4) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake", concurrency=1))
        opts = DescribeOptions(mask_share=0.0, n=1, leak_target=(1, 0, 0, 0, 0), leak_slack=1.0, max_regenerations=2, bootstrap=0,
                               leak_mode="target")
        truth = describe_truth(corpus, client, options=opts, progress=False)
        n_requests = len(srv.requests)
    prov = truth.provenance
    # the copy's leak is 1.0: over quota (0 in the top bin) in rounds 1 and 2, kept in the last (3rd) round
    assert truth.queries.metadata[0]["leak"] == 1.0
    assert n_requests == 3 and prov["rejections"]["leak_quota"] == 2
    assert prov["leak"]["quota"] == [1, 0, 0, 0, 0] and prov["leak"]["kept_by_bin"] == [0, 0, 0, 0, 1]
    with pytest.raises(ConfigError):
        DescribeOptions(leak_mode="nope")
    with pytest.raises(ConfigError):
        DescribeOptions(leak_target=(0, 0, 0, 0, 0))
    assert leak_quota(100, (0.2,) * 5, 1.25) == [25] * 5 and [leak_bin(x) for x in (0, 0.2, 0.59, 0.8, 1)] == [0, 1, 2, 4, 4]


def test_leak_quota_is_waived_once_steered_regenerations_keep_landing_in_full_bins() -> None:
    n = 25
    corpus = Corpus(tuple(f"t{i}" for i in range(n)), (DOC,) * n, ("",) * n, ({},) * n)
    copy = json.dumps({"query": "suspend execution of the calling thread for given seconds"})
    with FakeOpenAI(lambda body, i: Reply(200, copy)) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake", concurrency=1))
        opts = DescribeOptions(mask_share=0.0, n=n, leak_target=(1, 0, 0, 0, 0), leak_slack=1.0, max_regenerations=3, bootstrap=0,
                               leak_mode="target")
        truth = describe_truth(corpus, client, options=opts, progress=False)
        n_requests = len(srv.requests)
    lk = truth.provenance["leak"]
    # round 0: 25 over quota (top bin's quota is 0); round 1: 25 steered regenerations, none reached a bin with
    # room (0 < 0.1 * 25) -> waived after round 1; round 2 keeps all 25; round 3 (the last) is never needed
    assert lk["steered"] == {"reached_room": 0, "judged": 25} and lk["quota_waived_after_round"] == 1
    assert n_requests == 3 * n and truth.provenance["rejections"]["leak_quota"] == 2 * n
    assert len(truth.queries.ids) == n and {g["round"] for g in truth.provenance["generations"]
                                            if g["outcome"] == "kept"} == {2}


# -- reasoning models --------------------------------------------------------------------------

@pytest.mark.parametrize(("model", "reasoning"), [
    ("gpt-5", True), ("gpt-5-mini", True), ("gpt-5-nano-2025-08-07", True), ("o3", True), ("o4-mini", True),
    ("o1-preview", True), ("openai/gpt-5-mini", True), ("gpt-5-chat-latest", False), ("gpt-4o-mini", False),
    ("gpt-4.1", False), ("o3x", False), ("qwen2.5:7b", False)])
def test_reasoning_model_names(model: str, reasoning: bool) -> None:
    assert is_reasoning_model(model) is reasoning


def test_reasoning_model_request_parameters_and_price(monkeypatch) -> None:
    monkeypatch.setenv("FAKE_REASONING_KEY", KEY)
    req = ChatRequest(({"role": "user", "content": "doc"},), describe_schema(),
                      {"temperature": 0.8, "max_tokens": 64, "seed": 3, "top_p": 0.9})
    with FakeOpenAI([Reply(200, GOOD, prompt_tokens=1000, completion_tokens=3000)]) as srv:
        cfg = LLMConfig(base_url=srv.base_url, model="gpt-5-mini", reasoning_effort="low",
                        api_key_env="FAKE_REASONING_KEY")
        client = LLMClient(cfg)
        g = client.generate(req)
        plain = LLMClient(LLMConfig(base_url=srv.base_url, model="gpt-4o-mini"))
        plain.generate(req)
        body, body_plain = srv.requests[0]["body"], srv.requests[1]["body"]
        assert srv.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert g.ok
    assert "temperature" not in body and "top_p" not in body and "max_tokens" not in body
    assert body["max_completion_tokens"] == 2048 and body["reasoning_effort"] == "low" and body["seed"] == 3
    assert body_plain["temperature"] == 0.8 and body_plain["max_tokens"] == 64
    assert "max_completion_tokens" not in body_plain and "reasoning_effort" not in body_plain
    # gpt-5-mini list price: $0.25 / $2.00 per 1M tokens (reasoning tokens are completion tokens)
    assert client.usage.cost_usd == pytest.approx((1000 * 0.25 + 3000 * 2.00) / 1e6)
    assert LLMConfig(base_url="x", model="gpt-5-nano-2025-08-07").resolved_price().completion_usd_per_1m == 0.40
    # the effort is part of the cache identity: another effort is another answer
    other = LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="gpt-5-mini", reasoning_effort="high"))
    assert other.request_key(req) != client.request_key(req)


def test_generate_cli_reasoning_model_sends_the_key_and_writes_it_nowhere(tmp_path: Path, monkeypatch) -> None:
    src = tmp_path / "corpus.jsonl"
    src.write_text(json.dumps({"_id": "t", "text": DOC}) + "\n")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAI([Reply(200, GOOD)]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        rc = main(["generate", "describe", "--corpus", str(src), "--out", str(tmp_path / "out"), "-n", "1",
                   "--llm", "openai:gpt-5-nano", "--reasoning-effort", "minimal", "--specificity", "off", "--answerability", "off",
                   "--min-doc-chars", "0", "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
        assert rc == 0
        req = srv.requests[0]
    assert req["headers"]["Authorization"] == f"Bearer {KEY}"
    assert req["body"]["reasoning_effort"] == "minimal" and "temperature" not in req["body"]
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f
    prov = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert prov["llm"]["api_key_env"] == "OPENAI_API_KEY" and prov["llm"]["reasoning_effort"] == "minimal"
    assert main(["generate", "describe", "--corpus", str(src), "--out", str(tmp_path / "o2"),
                 "--llm", "openai:gpt-5-nano", "--reasoning-effort", "extreme"]) == 2
    assert not (tmp_path / "o2").exists()


@pytest.mark.slow
def test_generate_clusters_openai_encoder_sends_the_key(tmp_path: Path, monkeypatch) -> None:
    """`generate clusters --encoder openai:...` reads OPENAI_API_KEY (the bug: no key was sent)."""
    from tests.support.fake_openai import FakeOpenAI as FakeEmbeddings
    from tests.truth.test_synthetic_fake import DOCS, _cluster_answer

    src = tmp_path / "corpus.jsonl"
    texts = (DOCS["a"], DOCS["b"], DOCS["c"], "Volcanoes erupt molten rock.")
    src.write_text("".join(json.dumps({"_id": f"g{i}", "text": t}) + "\n" for i, t in enumerate(texts, 1)))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeEmbeddings(api_key=KEY) as emb, FakeOpenAI(_cluster_answer) as chat:
        monkeypatch.setenv("OPENAI_BASE_URL", emb.base_url)
        rc = main(["generate", "clusters", "--corpus", str(src), "--out", str(tmp_path / "out"), "-n", "3",
                   "--cluster-size", "4", "--questions-per-cluster", "3", "--test-fraction", "1.0",
                   "--encoder", "openai:text-embedding-3-small", "--llm", f"{chat.base_url}|fake",
                   "--specificity", "off", "--answerability", "off", "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
        assert rc == 0
        assert emb.requests and all(r["auth"] == f"Bearer {KEY}" for r in emb.requests)
        assert "Authorization" not in chat.requests[0]["headers"]
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f


# -- sampling --------------------------------------------------------------------------------

def test_documents_too_short_are_never_sampled() -> None:
    texts = ("short", "x" * 50, "a  b " * 30, "y" * 200, "z" * 119)
    corpus = Corpus(tuple("abcde"), texts, ("",) * 5, ({},) * 5)
    # whitespace collapses before counting: "a b a b ..." is 30 * 4 - 1 = 119 characters
    assert eligible_rows(corpus, min_chars=119).tolist() == [2, 3, 4]
    assert eligible_rows(corpus, min_chars=120).tolist() == [3]
    assert eligible_rows(corpus, min_chars=0).tolist() == [0, 1, 2, 3, 4]
    for seed in range(5):
        rows = sample_rows(corpus, 5, rng=np.random.default_rng(seed), eligible=eligible_rows(corpus, min_chars=60))
        assert sorted(rows.tolist()) == [2, 3, 4]
        # no floor: exactly the old sampling
        assert (sample_rows(corpus, 3, rng=np.random.default_rng(seed), eligible=eligible_rows(corpus)).tolist()
                == np.random.default_rng(seed).choice(5, size=3, replace=False).tolist())


# -- cluster mode with a base model (completion prompt) ------------------------------------------

def test_cluster_completion_prompt_for_base_models() -> None:
    """Base models (prompt_style=completion, e.g. the local Gemma) get one question per request from
    a zero-shot completion prompt; answers become graded qrels, unknown labels are repaired."""
    from bakeoff.truth.generation.clusters import ClusterOptions, cluster_truth
    from bakeoff.truth.generation.repair import GradeMap

    tails = ['what happens inside a cell to sugar", "answers": ["D1"]}',
             'which rocks come out of volcanoes", "answers": ["D4", "D3", "D9"]}']

    def answer(body: dict, i: int) -> Reply:
        return Reply(200, tails[i % 2])

    texts = ("Glycolysis splits glucose.", "Photosynthesis stores light.", "Faults slip in earthquakes.",
             "Volcanoes erupt molten rock.")
    corpus = Corpus(("g1", "g2", "g3", "g4"), texts, ("",) * 4, ({},) * 4)
    vectors = np.array([[1, 0], [1, 0.1], [0.9, 0.2], [1, 0.05]], dtype=np.float32)
    with FakeOpenAI(answer) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake", prompt_style="completion", concurrency=1))
        opts = ClusterOptions(n=5, cluster_size=4, questions_per_cluster=2, grade_map=GradeMap((3, 2), 1),
                              test_fraction=1.0, specificity=None)
        truth = cluster_truth(corpus, client, vectors=vectors, options=opts, progress=False)
        bodies = [r["body"] for r in srv.requests]
        paths = [r["path"] for r in srv.requests]
    assert paths == ["/v1/completions", "/v1/completions"]
    assert [b["seed"] for b in bodies] == [0, 1] and bodies[0]["stop"] == ["\n"]
    prompt = bodies[0]["prompt"]
    assert prompt.count("Asked: ") == 1 and prompt.endswith('Asked: {"question": "')
    assert "[D4] Volcanoes erupt molten rock." in prompt and "shutil" not in prompt
    prov = truth.provenance
    assert prov["repairs"]["copied_example"] == 0 and prov["repairs"]["hallucinated_id"] == 1
    assert truth.queries.texts == ("what happens inside a cell to sugar", "which rocks come out of volcanoes")
    qid = truth.queries.ids[1]
    assert dict(truth.qrels[qid]) == {"g4": 3, "g3": 2}
    assert prov["hard_negatives"][qid] == ["g1", "g2"]


def test_queries_pointing_at_their_document_are_rejected() -> None:
    from bakeoff.truth.filters.self_reference import refers_to_document

    for q in ("What is the main finding of this study on ageing?", "what did the authors measure",
              "How does the protocol in this document compare", "treatment used in this patient",
              "The document is about a trial of collaborative care", "A document about B cell guidance",
              "what does the abstract conclude", "an article on sleep and memory", "What is the purpose of this experiment?",
              "What are the findings of the study on BRCA1 polymorphisms?", "what did the trial comparing A and B show",
              "What is the review's focus on pancreatic cells?",
              # written by the bundled 0.5B for a library-science collection (CISI) and for SciFact
              "What are the results of the study described in this book?", "What is the purpose of this gathering?",
              "What kind of study was presented in this monograph?",
              "What are the main objectives of the book on Information Retrieval Systems?",
              "What is the main purpose of the book on social sciences information sources?",
              "What is the book about that focuses on the theory of shooting?", "the monograph's main thesis",
              "What are the main characteristics of altered particles that can be measured with this assay procedure?",
              # a definite document or event noun ending its clause, never introduced (CISI, the 0.5B and the 1.5B)
              "What is the purpose of the gathering?", "What was the goal of the pretest?",
              "What types of users were identified in the evaluation?", "What is the main focus of the book?",
              "What are the main trends and innovations discussed in the volume?",
              "What kind of study is presented in the monograph?",
              "What are the first problems we encountered in the Comparative Social Inquiry book?",
              "What are the results of the study conducted during the summer of 1969?",
              "What was decided at the planning meeting?", "What did respondents say in the survey, and why?",
              # ... or the subject of what a document does (CISI and SciFact, the 0.5B and the 1.5B)
              "What materials does the collection focus on?",
              "What does the study find out about the effects of heterodimerization and ligand binding?",
              # the prompt's document named as such (Debian package descriptions, the 0.5B)
              "What is the purpose of the Web browser package in the given document?", "summarise the provided text",
              "What is in the above passage?",
              # one of its tables or figures (CISI, the 0.5B)
              "What are the references tabulated in Table I?", "What does Fig. 2 show?", "growth in figure 3b",
              # a package or library the searcher was shown (Debian package descriptions, the 1.5B)
              "What programs are included in this package for ext2, ext3, and ext4 file systems?",
              "What routines are available for converting IEEE floats to and from strings in this library?"):
        assert refers_to_document(q), q
    for q in ("does this drug help", "studies of ageing in mice", "what authors wrote about cats",
              "is the study of ageing useful", "how to parse a pdf document in python", "document classification",
              "what is an abstract class", "the study of archaeal defense genes", "a report on climate",
              "how to cite a book chapter", "conference proceedings indexing", "volume of interlibrary loans",
              "What is the abstract base class for all I/O classes in Python?", "walk the abstract syntax tree",
              "the book trade in developing countries", "book selection in academic libraries",
              "the volume of requests a library receives",
              # the noun says which one, is a verb, is a method, or was introduced before
              "What is the best day to book?", "What happened at the Wannsee conference?",
              "What did the commission report?", "How do I perform the principal component analysis?",
              "How is the study of ageing done?", "the study of memory in the elderly",
              "The frequency of terms in the documents of a collection predicts their weight in the collection.",
              "Which arm wins the trial of strength in the meeting of ministers?",
              "the original paper by Luhn", "the current text of the law", "the same document type",
              "How do I tie a figure 8 knot?", "Which table i should use for joins?", "the table of contents",
              "the library of congress classification", "which package provides libssl",
              "Which survey shows the widest coverage?", "A survey of 40 libraries: what the survey shows about loans"):
        assert not refers_to_document(q), q
    assert refers_to_document("¿Qué concluye este estudio?", lang="es") and not refers_to_document("x", lang="fr")
    assert refers_to_document("¿Qué concluye el estudio sobre la vitamina D?", lang="es")
    assert not refers_to_document("el estudio de la genética", lang="es")
    corpus = Corpus(("t",), (DOC,), ("",), ({},))
    answers = [json.dumps({"query": "what is the main point of this document"}),
               json.dumps({"query": "how do I pause my program for a while"})]
    with FakeOpenAI([Reply(200, a) for a in answers]) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        truth = describe_truth(corpus, client, options=DescribeOptions(mask_share=0.0, n=1, leak_mode="record"), progress=False)
    assert truth.provenance["rejections"]["refers_to_document"] == 1
    assert truth.queries.texts == ("how do I pause my program for a while",)


def test_queries_drifting_into_another_script_or_an_examples_content_are_rejected() -> None:
    shots = (("numpy.argsort argsort(a) Returns the indices that would sort an array.",
              "how do I get the indices that would sort an array"),)
    corpus = Corpus(("t",), (DOC,), ("",), ({},))
    answers = [json.dumps({"query": "how do I pause my program 一会儿"}),
               json.dumps({"query": "how do I pause my program and get the indices that sort"}),
               json.dumps({"query": "how do I pause my program for a while"})]
    with FakeOpenAI([Reply(200, a) for a in answers]) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        truth = describe_truth(corpus, client, progress=False,
                               options=DescribeOptions(mask_share=0.0, n=1, prompt=PromptControl(examples=shots), leak_mode="record"))
    rej = truth.provenance["rejections"]
    assert (rej["foreign_script"], rej["borrowed_example"]) == (1, 1)
    assert [g["borrowed"] for g in truth.provenance["generations"] if g["outcome"] == "borrowed_example"] == [
        ["get", "indices"]]
    assert truth.queries.texts == ("how do I pause my program for a while",)


def test_user_examples_reach_the_prompt_and_copies_of_them_are_rejected() -> None:
    shots = (("numpy.argsort argsort(a) Returns the indices that would sort an array.",
              "how do I get the indices that would sort an array"),
             ("requests.get get(url) Sends a GET request.", "how to download a web page from a url"))
    c = PromptControl(examples=shots)
    prompt, prefill = describe_completion("time.sleep sleep(secs) Delay execution.", c)
    assert "Document: numpy.argsort argsort(a) Returns" in prompt and prompt.count("Document: ") == 3
    assert prompt.index("requests.get") < prompt.index("time.sleep") and prefill == '{"query": "'
    assert shot_queries(c) == frozenset(q for _, q in shots)
    corpus = Corpus(("t",), (DOC,), ("",), ({},))
    answers = [json.dumps({"query": "how to download a web page from the url"}),
               json.dumps({"query": "how do I pause my program for a while"})]
    with FakeOpenAI([Reply(200, a) for a in answers]) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        truth = describe_truth(corpus, client, options=DescribeOptions(mask_share=0.0, n=1, prompt=c, leak_mode="record"),
                               progress=False)
    assert truth.provenance["rejections"]["copied_example"] == 1
    assert truth.queries.texts == ("how do I pause my program for a while",)
    for bad in ((), (("doc only",),), (("doc", " "),)):
        with pytest.raises(ConfigError):
            PromptControl(examples=bad)  # type: ignore[arg-type]


# -- retries that say why, documents without titles ---------------------------------------------

def _system(body: dict) -> str:
    return body["messages"][0]["content"]


@pytest.mark.parametrize("retry_fix", [True, False])
def test_a_copying_rejection_is_said_in_the_next_request(retry_fix: bool) -> None:
    from bakeoff.truth.generation.prompts import RETRY_FIX

    fix = RETRY_FIX["en"]["copies_passage"]
    pasted = json.dumps({"query": "suspend execution of the calling thread for the given number of seconds ok"})

    def reply(body: dict, i: int) -> Reply:  # pastes a sentence until told not to
        return Reply(200, GOOD if fix in _system(body) else pasted)

    corpus = Corpus(("t0",), (DOC.split("\n")[1],), ("time.sleep",), ({},))
    with FakeOpenAI(reply) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake", concurrency=1))
        opts = DescribeOptions(mask_share=0.0, n=1, max_regenerations=2, bootstrap=0, leak_mode="record",
                               retry_fix=retry_fix)
        truth = describe_truth(corpus, client, options=opts, progress=False)
        systems = [_system(r["body"]) for r in srv.requests]
    outcomes = [(g["round"], g["outcome"]) for g in truth.provenance["generations"]]
    assert fix not in systems[0]  # the first request is asked plainly
    if retry_fix:
        assert len(systems) == 2 and fix in systems[1]
        assert outcomes == [(0, "copies_passage"), (1, "kept")]
        assert truth.queries.texts == (json.loads(GOOD)["query"],)
    else:
        assert len(systems) == 3 and not any(fix in s for s in systems)
        assert outcomes == [(0, "copies_passage"), (1, "copies_passage"), (2, "copies_passage")]
        assert truth.queries.texts == ()
    assert truth.provenance["parameters"]["retry_fix"] is retry_fix


@pytest.mark.parametrize("show_title", [True, False])
def test_the_title_is_shown_to_the_generator_only_when_asked(show_title: bool) -> None:
    corpus = Corpus(("t0",), (DOC.split("\n")[1],), ("time.sleep",), ({},))
    with FakeOpenAI(lambda body, i: Reply(200, GOOD)) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake", concurrency=1))
        opts = DescribeOptions(mask_share=0.0, n=1, bootstrap=0, leak_mode="record", show_title=show_title)
        truth = describe_truth(corpus, client, options=opts, progress=False)
        user = srv.requests[0]["body"]["messages"][-1]["content"]
    assert user == ("Document:\ntime.sleep " if show_title else "Document:\n") + DOC.split("\n")[1]
    # the filters still read the title: the kept query's leak is measured against title and text
    assert truth.queries.metadata[0]["leak"] >= 0.0 and len(truth.queries.ids) == 1


def test_every_filter_that_retries_says_why_in_every_language() -> None:
    from bakeoff.truth.filters.chain import describe_chain
    from bakeoff.truth.generation.prompts import RETRY_FIX

    retrying = {f.name for f in describe_chain().text if f.retry_fix}
    assert retrying == {"truncated", "copies_title", "copies_passage"}
    for lang, fixes in RETRY_FIX.items():
        assert set(fixes) == retrying, lang


def test_a_query_cut_by_the_length_cap_is_asked_again_for_a_shorter_one() -> None:
    from bakeoff.truth.generation.prompts import RETRY_FIX

    fix = RETRY_FIX["en"]["truncated"]
    cut = json.dumps({"query": ("How long does the calling thread stay suspended when a program waits for a while "
                                "between two steps of a long computation that reads many files and then writes")})
    assert len(json.loads(cut)["query"]) == 158

    def reply(body: dict, i: int) -> Reply:  # runs into the cap until told to be short
        return Reply(200, GOOD if fix in _system(body) else cut)

    corpus = Corpus(("t0",), (DOC.split("\n")[1],), ("time.sleep",), ({},))
    with FakeOpenAI(reply) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake", concurrency=1))
        opts = DescribeOptions(mask_share=0.0, n=1, max_regenerations=2, bootstrap=0, leak_mode="record")
        truth = describe_truth(corpus, client, options=opts, progress=False)
    outcomes = [(g["round"], g["outcome"]) for g in truth.provenance["generations"]]
    assert outcomes == [(0, "truncated"), (1, "kept")]
    assert truth.provenance["rejections"]["truncated"] == 1
    assert truth.queries.texts == (json.loads(GOOD)["query"],)
