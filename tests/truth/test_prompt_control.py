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
from bakeoff.data.model import Corpus
from bakeoff.errors import ConfigError
from bakeoff.truth.llm import ChatRequest, LLMClient, LLMConfig, is_reasoning_model
from bakeoff.truth.prompts import (
    PRESETS,
    PromptControl,
    describe_completion,
    describe_messages,
    describe_schema,
    shot_queries,
)
from bakeoff.truth.sampling import eligible_rows, sample_rows
from bakeoff.truth.synthetic import DescribeOptions, describe_truth
from tests.support.fake_openai_chat import FakeOpenAI, Reply

KEY = "sk-test-reasoning-4711"
GOOD = json.dumps({"query": "how do I pause my program for a while"})
DOC = "time.sleep(secs)\nSuspend execution of the calling thread for the given number of seconds."


# -- prompts -------------------------------------------------------------------------------

def test_spanish_prompt_has_spanish_labels_examples_and_instruction() -> None:
    c = PromptControl(lang="es")
    prompt, prefill = describe_completion("texto del documento", c)
    assert prompt.startswith("Registro de búsquedas: cada documento y lo que una persona no experta escribió")
    assert "Documento: La aspirina inhibe" in prompt and "Búsqueda: " in prompt
    assert "cómo duplico una carpeta entera" in prompt and "Document:" not in prompt
    assert prompt.endswith("Documento: texto del documento\nBúsqueda: ") and prefill == '{"query": "'
    msgs = describe_messages("texto", c)
    assert msgs[-1]["content"].startswith("Documento:\ntexto\n\nEscribe la pregunta que haría una persona no experta")
    assert json.loads(msgs[1]["content"]) == {"query": "por qué un analgésico común ayuda a prevenir los infartos"}


def test_style_persona_preset_and_instruction_reach_the_prompt() -> None:
    c = PromptControl(style="keywords", persona="a nurse on a night shift", preset="seed000",
                      instruction="Ask about dosage only.")
    prompt, _ = describe_completion("doc", c)
    header = prompt.split("\n\n", 1)[0]
    assert "what a nurse on a night shift typed" in header
    assert PRESETS["seed000"]["en"] in header and header.endswith("Ask about dosage only.")
    assert '{"query": "painkiller heart attack prevention"}' in prompt
    instr = describe_messages("doc", c)[-1]["content"]
    assert "short keyword query (2 to 5 words)" in instr and "The searcher is a nurse on a night shift." in instr
    assert "Pretend you do not know which document answers" in instr and "no statute or section numbers" in instr
    assert "hole folder" in " ".join(shot_queries(PromptControl(style="typos")))
    for bad in (dict(style="shouting"), dict(lang="fr"), dict(preset="nope")):
        with pytest.raises(ConfigError):
            PromptControl(**bad)  # type: ignore[arg-type]


def test_describe_rejects_copies_of_the_styles_own_examples() -> None:
    corpus = Corpus(("t",), (DOC,), ("",), ({},))
    answers = [json.dumps({"query": "texto a mayúsculas"}), json.dumps({"query": "pausar el programa un rato"})]
    with FakeOpenAI([Reply(200, a) for a in answers]) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        opts = DescribeOptions(n=1, prompt=PromptControl(style="keywords", lang="es"), lang="es", specificity=None)
        truth = describe_truth(corpus, client, options=opts, progress=False)
        first = srv.requests[0]["body"]["messages"][-1]["content"]
    assert first.startswith("Documento:") and "palabras clave" in first
    assert truth.provenance["rejections"]["copied_example"] == 1
    assert truth.queries.texts == ("pausar el programa un rato",)
    assert truth.provenance["prompts"]["control"]["lang"] == "es"


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
    a two-example completion prompt; answers become graded qrels, copies of an example are dropped."""
    from bakeoff.truth.prompts import CLUSTER_SHOT_QUESTIONS
    from bakeoff.truth.repair import GradeMap
    from bakeoff.truth.synthetic import ClusterOptions, cluster_truth

    copied = next(iter(sorted(CLUSTER_SHOT_QUESTIONS)))
    tails = [f'{copied}", "answers": ["D1"]}}',
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
    assert prompt.count("Asked: ") == 3 and prompt.endswith('Asked: {"question": "')
    assert "[D4] Volcanoes erupt molten rock." in prompt and "shutil.rmtree" in prompt
    prov = truth.provenance
    assert prov["repairs"]["copied_example"] == 1 and prov["repairs"]["hallucinated_id"] == 1
    assert truth.queries.texts == ("which rocks come out of volcanoes",)
    qid = truth.queries.ids[0]
    assert dict(truth.qrels[qid]) == {"g4": 3, "g3": 2}
    assert prov["hard_negatives"][qid] == ["g1", "g2"]


def test_examples_replace_the_built_in_shots_and_copies_of_them_are_rejected() -> None:
    shots = (("numpy.argsort argsort(a) Returns the indices that would sort an array.",
              "how do I get the indices that would sort an array"),
             ("requests.get get(url) Sends a GET request.", "how to download a web page from a url"))
    c = PromptControl(examples=shots)
    prompt, prefill = describe_completion("time.sleep sleep(secs) Delay execution.", c)
    assert "Document: numpy.argsort argsort(a) Returns" in prompt and "aspirin" not in prompt.lower()
    assert prompt.index("requests.get") < prompt.index("time.sleep") and prefill == '{"query": "'
    assert shot_queries(c) == frozenset(q for _, q in shots)
    corpus = Corpus(("t",), (DOC,), ("",), ({},))
    answers = [json.dumps({"query": "how to download a web page from the url"}),
               json.dumps({"query": "how do I pause my program for a while"})]
    with FakeOpenAI([Reply(200, a) for a in answers]) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        truth = describe_truth(corpus, client, options=DescribeOptions(n=1, prompt=c, specificity=None),
                               progress=False)
    assert truth.provenance["rejections"]["copied_example"] == 1
    assert truth.queries.texts == ("how do I pause my program for a while",)
    for bad in ((), (("doc only",),), (("doc", " "),)):
        with pytest.raises(ConfigError):
            PromptControl(examples=bad)  # type: ignore[arg-type]
