"""The filter chains: cluster mode's is describe mode's text filters plus the prompt echo, and the prompt echo
rejects exactly a run of ten or more of the instruction's words."""

from __future__ import annotations

from bakeoff.truth.filters.chain import Draft, EchoesPrompt, cluster_chain, describe_chain

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
        "copied_example", "too_short", "refers_to_document", "foreign_script", "borrowed_example", "echoes_prompt"]
