"""The leak metric, its word lists and histograms (golden values worked by hand)."""

from __future__ import annotations

import pytest

from bakeoff.truth.filters.leak import common_words, leak, leak_histogram, leak_stats, rare_terms


def test_rare_terms_lowercases_splits_on_digits_and_drops_short_and_common_words() -> None:
    # "energy", "muscle", "cells" are common English words; "via" and "in" are short; 42 is not a letter run.
    text = "Glycolysis produces ENERGY in muscle cells via phosphorylation, 42 times; glyco_lysis"
    assert rare_terms(text) == {"glycolysis", "produces", "phosphorylation", "glyco", "lysis"}


def test_leak_golden() -> None:
    src = "Glycolysis and oxidative phosphorylation in skeletal muscle"
    # rare(q) = {glycolysis, insulin, produces}; shared with the source: {glycolysis} -> 1/3
    assert leak("does glycolysis need insulin? it produces energy", src) == pytest.approx(1 / 3)
    assert leak("how do muscles make energy", src) == 0.0          # no rare term at all -> 0
    assert leak("glycolysis phosphorylation", src) == 1.0
    assert leak("", src) == 0.0


def test_spanish_list_is_language_aware() -> None:
    assert "función" in common_words("es") and "función" not in common_words("en")
    q = "función celular de las enzimas"
    # es: función, celular common -> rare {enzimas}; en: all three are rare
    assert rare_terms(q, lang="es") == {"enzimas"}
    assert rare_terms(q, lang="en") == {"función", "celular", "enzimas"}
    assert leak(q, "las enzimas digestivas", lang="es") == 1.0
    assert leak(q, "las enzimas digestivas", lang="en") == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="no common-word list"):
        common_words("fr")


def test_histogram_bins_and_closed_last_bin() -> None:
    h = leak_histogram([0.0, 0.05, 0.1, 0.35, 0.99, 1.0])
    assert h["0.00-0.10"] == 2 and h["0.10-0.20"] == 1 and h["0.30-0.40"] == 1 and h["0.90-1.00"] == 2
    assert sum(h.values()) == 6
    s = leak_stats([0.0, 0.5, 1.0], threshold=0.35)
    assert s["mean"] == pytest.approx(0.5) and s["median"] == 0.5 and s["share_above"] == pytest.approx(2 / 3)


def test_title_copy_is_the_share_of_query_words_in_the_title() -> None:
    from bakeoff.truth.filters.leak import title_copy

    title = "PTH Signaling in Osteoprogenitors Is Essential for B-Lymphocyte Differentiation"
    assert title_copy("PTH signaling in osteoprogenitors", title) == 1.0      # "in" is under 3 letters
    assert title_copy("what does PTH do in bone cells", title) == 1 / 5    # what does pth bone cells: pth
    assert title_copy("gzip seek", "gzip.GzipFile.seek") == 1.0            # dotted names split
    assert title_copy("seek", "gzip.GzipFile.seek") == 0.0                # one word: no verdict
    assert title_copy("how to seek a file", "os") == 0.0                  # one-word title: no verdict


def test_words_split_on_punctuation_space_and_underscore_and_are_the_drift_filters_words() -> None:
    from bakeoff.truth.filters import drift, leak

    assert leak.words("IFN-γ levels_2 in T-cells, 2024!") == ["ifn", "γ", "levels", "2", "in", "t", "cells", "2024"]
    assert drift.words is leak.words  # one definition of a word for title copy, copied runs and borrowed phrases
    assert leak.copied_run("the T-cells rose", "so the t cells rose sharply") == 4
