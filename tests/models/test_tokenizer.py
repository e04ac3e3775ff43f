"""The tokenizer of chunking by tokens: MiniLM token counts checked against the pure-Python WordPiece
tokenizer of transformers, and the words tokenizer by name."""

from __future__ import annotations

import random

import pytest

from bakeoff.data.chunking import WORDS, ChunkSpec, chunk_corpus, windows
from bakeoff.data.model import Corpus, Dataset
from bakeoff.models.tokenizer import load_tokenizer


def test_words_by_name() -> None:
    assert load_tokenizer("words") is WORDS


@pytest.mark.slow  # SciFact
def test_minilm_token_windows_match_the_python_wordpiece_count(scifact: Dataset) -> None:
    """tokens=128,overlap=32 counts the tokens all-MiniLM-L6-v2 sees: the number of tokens per
    document agrees with transformers' pure-Python BertTokenizer (an independent WordPiece), and
    the passages are exactly the windows over them."""
    transformers = pytest.importorskip("transformers")
    tok = load_tokenizer("minilm")
    from bakeoff.models.resolve import bundled_minilm_dir

    slow = transformers.BertTokenizer(str(bundled_minilm_dir() / "vocab.txt"), do_lower_case=True)
    rng = random.Random(7)
    rows = rng.sample(range(len(scifact.corpus)), 40)
    sub = Corpus(tuple(scifact.corpus.ids[i] for i in rows), tuple(scifact.corpus.texts[i] for i in rows),
                 tuple(scifact.corpus.titles[i] for i in rows), tuple({} for _ in rows))
    spec = ChunkSpec.parse("tokens=128,overlap=32")
    cc = chunk_corpus(sub, spec, tokenizer=tok)
    spans = tok.spans(sub.texts)
    n_long = 0
    for doc_id, text, sp in zip(sub.ids, sub.texts, spans, strict=True):
        assert len(sp) == len(slow.tokenize(text))
        wins = windows(len(sp), 128, 32)
        n_long += len(wins) > 1
        got = [p for p in cc.passages if p.metadata["doc"] == doc_id]
        assert [p.id for p in got] == [f"{doc_id}#{n}" for n in range(len(wins))]
        for p, (a, b) in zip(got, wins, strict=True):
            assert p.text == text[sp[a][0]:sp[b - 1][1]]
            inside = [s for s in sp if s[0] >= p.metadata["start"] and s[1] <= p.metadata["end"]]
            assert len(inside) == b - a <= 128
    assert n_long >= 10  # SciFact abstracts are often longer than 128 tokens
    assert cc.tokenizer_identity.startswith("sentence-transformers/all-MiniLM-L6-v2@sha256:")
