"""Drift filters, on queries a 0.5B model wrote for SciFact abstracts (hand-checked word sets)."""

from __future__ import annotations

from bakeoff.truth.filters.drift import borrowed_words, foreign_scripts, scripts

_EXAMPLE = ("What is the primary challenge with allogeneic hematopoietic stem cell transplantation (HSCT) in "
            "thalassemia compared to conventional treatment?")
_CRF_DOC = ("Chronic renal failure accelerates atherogenesis in apolipoprotein E-deficient mice. Cardiovascular "
            "mortality is 10 to 20 times increased in patients with chronic renal failure (CRF). The effect of CRF "
            "on the development of atherosclerosis in apolipoprotein E-deficient male mice was examined.")


def test_an_examples_clause_pasted_onto_another_document_is_borrowed() -> None:
    q = "What is the primary challenge with CRF in apolipoprotein E-deficient mice compared to conventional treatment?"
    # shared phrases: "what is the primary challenge with" (primary, challenge absent from the document) and
    # "compared to conventional treatment" (three absent content words): the latter wins
    assert borrowed_words(q, _CRF_DOC, [_EXAMPLE]) == ["compared", "conventional", "treatment"]


def test_a_question_frame_borrows_at_most_one_word_per_phrase() -> None:
    assert borrowed_words("What is the effect of chronic renal failure on atherosclerosis in mice?", _CRF_DOC,
                          [_EXAMPLE]) == []
    assert borrowed_words("What is the primary effect of CRF on atherosclerosis?", _CRF_DOC, [_EXAMPLE]) == ["primary"]
    # "what role does … play in": each shared phrase carries one word the document lacks
    frame = "What role does PTH signaling play in B lymphopoiesis in the bone marrow?"
    assert borrowed_words("What role does CRF play in atherosclerosis in mice?", _CRF_DOC, [frame]) == ["role"]
    assert borrowed_words("What is the primary effect of CRF?", _CRF_DOC, []) == []


def test_the_phrase_with_most_borrowed_words_wins_not_the_union() -> None:
    q = "How does uremia alter plaque vulnerability in knockout mice?"
    examples = ["How does uremia alter the kidney?", "Is plaque vulnerability in knockout rats higher?"]
    assert borrowed_words(q, "Renal failure in mice.", examples) == ["plaque", "vulnerability", "knockout"]


def test_spanish_function_words_are_not_content() -> None:
    q = "¿Cuál es la principal dificultad del trasplante?"
    assert borrowed_words(q, "Trasplante renal en niños.", ["¿Cuál es la principal dificultad del tratamiento?"],
                          lang="es") == ["principal", "dificultad"]


def test_a_script_the_document_does_not_use_is_foreign() -> None:
    doc = "Liraglutide and synaptic plasticity: hippocampal gene expression and metabolic control in mice."
    assert foreign_scripts("What is the benefit of Liraglutide on metabolic控制", doc) == {"CJK"}
    assert foreign_scripts("How does neuregulin 1β–ErbB4 signaling work?", "neuregulin 1β–ErbB4 signalling") == set()
    assert foreign_scripts("Does IL-6 rise?", doc) == set()
    # a human SciFact claim writes "IFN-γ" where its abstract writes "gamma": Greek letters are symbols
    assert foreign_scripts("Mice without IFN-γ are resistant", "interferon gamma deficient mice") == set()
    assert foreign_scripts("¿Qué es la сталь?", "Qué es el acero") == {"CYRILLIC"}
    assert scripts("Всё and ελα") == {"CYRILLIC", "LATIN", "GREEK"}


def test_copied_run_counts_the_longest_verbatim_stretch() -> None:
    from bakeoff.truth.filters.leak import copied_run

    title = "Clathrin is required for the function of the mitotic spindle"
    text = "Clathrin has an established function in the generation of vesicles that transfer membrane."
    pasted = ("Clathrin is required for the function of the mitotic spindle Clathrin has an established function "
              "in the generation")
    # the title (10 words) runs on into the text (8 more): 18 consecutive words of "title text"
    assert copied_run(pasted, f"{title} {text}") == 18
    assert copied_run("What is the role of clathrin in the mitotic spindle?", f"{title} {text}") == 3  # the mitotic spindle
    assert copied_run("", text) == 0 and copied_run("vesicles", "") == 0
