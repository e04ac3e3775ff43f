"""Chunking: windows and unit splitting (golden cases), passage ids, text and metadata, the words
tokenizer and the refusal to count tokens without a tokenizer, MaxP / FirstP aggregation by hand (tie
rule, input order), and the chunk specification's parsing."""

from __future__ import annotations

import pytest

from bakeoff.data.chunking import WORDS, ChunkSpec, aggregate_run, chunk_corpus, split_units, windows
from bakeoff.data.model import Corpus, Run
from bakeoff.errors import ConfigError


def test_windows_golden() -> None:
    assert windows(10, 4, 2) == [(0, 4), (2, 6), (4, 8), (6, 10)]
    assert windows(9, 4, 2) == [(0, 4), (2, 6), (4, 8), (6, 9)]
    assert windows(4, 4, 2) == [(0, 4)]
    assert windows(5, 4, 2) == [(0, 4), (2, 5)]
    assert windows(5, 3, 0) == [(0, 3), (3, 5)]
    assert windows(1, 128, 32) == [(0, 1)]
    assert windows(0, 4, 1) == [(0, 0)]
    assert windows(300, 128, 32) == [(0, 128), (96, 224), (192, 300)]


def test_sentence_and_paragraph_units_golden() -> None:
    text = 'Dr. Smith arrived. He said "stop." Then 3 cats left!\n\n  Next para?  \n \nLast one.'
    sents = split_units([text], ChunkSpec(unit="sentences", size=1))[0]
    assert [text[a:b] for a, b in sents] == ["Dr.", "Smith arrived.", 'He said "stop."', "Then 3 cats left!",
                                             "Next para?", "Last one."]
    paras = split_units([text], ChunkSpec(unit="paragraphs", size=1))[0]
    assert [text[a:b] for a, b in paras] == ['Dr. Smith arrived. He said "stop." Then 3 cats left!', "Next para?",
                                             "Last one."]


def test_chunk_ids_text_titles_and_metadata() -> None:
    c = Corpus(("a", "b", "c"), ("p1.\n\np2.\n\np3.", "", "solo"), ("Title A", "Title B", ""), ({"x": 1}, {}, {}))
    cc = chunk_corpus(c, ChunkSpec.parse("paragraphs=2,overlap=1"))
    assert cc.passages.ids == ("a#0", "a#1", "b#0", "c#0")
    assert cc.passages.texts == ("p1.\n\np2.", "p2.\n\np3.", "", "solo")
    assert cc.passages.titles == ("Title A", "Title A", "Title B", "")
    assert dict(cc.passages.metadata[1]) == {"doc": "a", "passage": 1, "start": 5, "end": 13}
    assert cc.doc_of == ("a", "a", "b", "c") and cc.doc_row == (0, 0, 1, 2)
    other = chunk_corpus(c, ChunkSpec.parse("paragraphs=1"))
    assert other.passages.fingerprint() != cc.passages.fingerprint() != c.fingerprint()
    # ids stay unique even when document ids contain '#': the text after the last '#' is the number
    odd = chunk_corpus(Corpus(("a", "a#1"), ("x\n\ny", "z"), ("", ""), ({}, {})), ChunkSpec.parse("paragraphs=1"))
    assert odd.passages.ids == ("a#0", "a#1", "a#1#0")


def test_aggregate_maxp_firstp_by_hand_with_the_tie_rule() -> None:
    pd = {"a#0": ("a", 0), "a#1": ("a", 1), "b#0": ("b", 0), "b#1": ("b", 1), "c#0": ("c", 0), "c#2": ("c", 2)}
    run = Run.from_scores("x", {"q": {"a#1": 3.0, "a#0": 1.0, "b#1": 2.0, "b#0": 2.5, "c#2": 3.0, "c#0": 0.5}})
    maxp = aggregate_run(run, pd, how="maxp")
    assert maxp["q"] == (("c", 3.0), ("a", 3.0), ("b", 2.5))  # a and c tie at 3.0: doc id descending
    firstp = aggregate_run(run, pd, how="firstp")
    assert firstp["q"] == (("b", 2.5), ("a", 1.0), ("c", 0.5))
    assert aggregate_run(run, pd, how="maxp", k=2)["q"] == (("c", 3.0), ("a", 3.0))
    # input order does not matter, the input run is not modified
    shuffled = Run.from_ranked("x", {"q": tuple(reversed(run["q"]))})
    assert aggregate_run(shuffled, pd, how="maxp")["q"] == maxp["q"]
    assert run["q"][0] == ("c#2", 3.0)
    with pytest.raises(ValueError, match="not in the chunked corpus"):
        aggregate_run(Run.from_scores("x", {"q": {"zz#0": 1.0}}), pd)


def test_chunk_spec_parsing_and_errors() -> None:
    assert ChunkSpec.parse("tokens=128,overlap=32").as_dict() == {
        "unit": "tokens", "size": 128, "overlap": 32, "aggregate": "maxp", "tokenizer": "minilm"}
    assert ChunkSpec.parse("sentences=3", aggregate="firstp").aggregate == "firstp"
    for bad, msg in [("tokens=128,overlap=128", "overlap must be"), ("words=3", "unknown keys"),
                     ("tokens=0", ">= 1"), ("tokens=12,paragraphs=1", "exactly one"),
                     ("sentences=2,tokenizer=words", "tokens=N only"), ("tokens", "not key=value"),
                     ("tokens=x", "must be an integer")]:
        with pytest.raises(ConfigError, match=msg):
            ChunkSpec.parse(bad)
    with pytest.raises(ConfigError, match="maxp or firstp"):
        ChunkSpec.parse("tokens=5", aggregate="mean")


def test_tokens_need_a_tokenizer_and_words_count_words() -> None:
    c = Corpus(("a",), ("one two  three\nfour five",), ("",), ({},))
    spec = ChunkSpec.parse("tokens=2,overlap=0,tokenizer=words")
    with pytest.raises(ValueError, match="needs the tokenizer 'words'"):
        chunk_corpus(c, spec)
    cc = chunk_corpus(c, spec, tokenizer=WORDS)
    assert cc.passages.texts == ("one two", "three\nfour", "five") and cc.tokenizer_identity == "words"
