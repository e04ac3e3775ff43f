"""The filter chains: cluster mode's is describe mode's text filters plus the prompt echo, and the prompt echo
rejects exactly a run of ten or more of the instruction's words."""

from __future__ import annotations

import pytest

from bakeoff.truth.filters.chain import CopiesPassage, Draft, EchoesPrompt, Truncated, cluster_chain, describe_chain
from bakeoff.truth.filters.thresholds import MAX_QUERY_CHARS
from bakeoff.truth.generation.prompts import describe_schema

RULE = ("The document's content must answer the query: a query that only names the document or its title is not "
        "answered by it.")


def _draft(query: str, prompt: str = RULE) -> Draft:
    return Draft(query, "A title", "A title Some text.", frozenset(), (), "en", prompt=prompt)


def test_the_prompt_echo_counts_a_run_of_ten_instruction_words() -> None:
    echo = EchoesPrompt()
    # ten consecutive words of the rule ("a query that only names the document or its title")
    assert echo.check(_draft("Which paper matches a query that only names the document or its title?")) == {}
    # nine of them, then a word of its own: passes
    assert echo.check(_draft("Which paper matches a query that only names the document or a title?")) is None
    assert echo.check(_draft("a query that only names the document or its title", prompt="")) is None


def test_cluster_chain_is_describe_chain_plus_the_echo() -> None:
    names = [f.name for f in cluster_chain()]
    assert names == [*(f.name for f in describe_chain().text), "echoes_prompt"]
    assert "echoes_prompt" not in [f.name for f in describe_chain().text]
    assert [f.name for f in cluster_chain(max_title_copy=None, max_copied_run=None)] == [
        "copied_example", "too_short", "truncated", "refers_to_document", "foreign_script", "borrowed_example",
        "echoes_prompt"]
    assert [f.max_chars for f in cluster_chain() if isinstance(f, Truncated)] == [200]
    assert [f.max_chars for f in describe_chain().text if isinstance(f, Truncated)] == [160]


# Kept queries of the bundled 0.5B model (CISI, SciFact) that a grammar-constrained server closed at the schema's
# 160 characters, and one as long that ends a sentence.
_CUT = [
    ("What changes occur in the gut microbiome and metabolome of mice after antibiotic treatment and how does this "
     "affect their susceptibility to Clostridium difficil"),
    ("What is the algorithm for compaction of alphanumeric data description? It operates on the principle of taking "
     "two alphabetic characters and replacing them with"),
    ("AACR, ISBD(S) and ISSN: A Comment, rule 6 of the Anglo-American Cataloging Rules, replacing rule 6 with "
     "conventions for description of serials, proposed as an"),
]
_WHOLE = [
    ("What is the role of isoprenylcysteine carboxyl methylation in post-prenylation-processing enzymes and how "
     "might it be used as a new target in oncogenesis?"),
]


@pytest.mark.parametrize("query", _CUT)
def test_a_query_cut_by_the_length_cap_is_truncated(query: str) -> None:
    assert MAX_QUERY_CHARS - 5 <= len(query) <= MAX_QUERY_CHARS
    assert describe_schema().model_json_schema()["properties"]["query"]["maxLength"] == MAX_QUERY_CHARS
    assert Truncated().check(_draft(query)) == {"chars": len(query)}


def test_a_long_query_that_ends_a_sentence_or_a_short_unended_one_passes() -> None:
    assert Truncated().check(_draft(_WHOLE[0])) is None  # 154 characters, ends with "?"
    assert Truncated().check(_draft("x" * 159 + ")")) is None
    assert Truncated().check(_draft(_CUT[0][:150])) is None  # unended but 10 short of the cap: a keyword query
    assert Truncated().check(_draft(_CUT[0][:155])) == {"chars": 155}
    assert Truncated(max_chars=200).check(_draft(_CUT[0])) is None
    assert Truncated().check(_draft(_CUT[0] + " infection and the colon's response to it")) is None  # past the cap


def test_a_query_trailing_off_in_an_ellipsis_is_truncated() -> None:
    for q in ("The stream position to the given byte offset is...", "N-cadherin is involved in ...",
              "the most significant attitude one acquired was…"):
        assert Truncated().check(_draft(q)) == {"chars": len(q)}, q
    assert Truncated().check(_draft("What does the ... operator do in Python?")) is None


_DOC = ("time() -> floating point number  Return the current time in seconds since the Epoch. Fractions of a second "
        "may be present if the system clock provides them.")


def test_a_short_sentence_pasted_whole_is_a_copied_passage() -> None:
    paste = CopiesPassage()

    def check(query: str) -> object:
        return paste.check(Draft(query, "time.time", f"time.time {_DOC}", frozenset(), (), "en"))

    assert check("Return the current time in seconds since the Epoch") == {}  # 9 words, all one run
    assert check("current time in seconds since") == {}  # five words, whole
    assert check("time in seconds since") is None  # four: too short to tell a paste from a phrase
    assert check("How do I get the current time in seconds since the Epoch?") is None  # its own words around a run
    assert check("Return the current time in seconds since the Unix Epoch") is None  # one word of its own
    # ten copied words reject a query of any length, as before
    assert check("Why does it return the current time in seconds since the Epoch Fractions here?") == {}
