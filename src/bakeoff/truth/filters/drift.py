"""Generated queries that drift away from their document: into an example's content, or into another script.

A small model shown few-shot examples copies more than their form. Two drifts are caught, each a
rejection reason of describe mode:

* ``borrowed_example`` — :func:`borrowed_words`: a phrase of the query (two or more consecutive words)
  that one example query of the prompt also has, with two or more content words (:data:`~bakeoff.truth.filters.thresholds.MAX_BORROWED`
  + 1) absent from the query's own document: the query carries that example's content, not its
  document's — "What is the primary challenge with CRF in mice compared to conventional treatment?",
  where "compared to conventional treatment" came from an example about another document. Content
  words are :func:`bakeoff.truth.filters.leak.words` (``[^\\W_]+`` runs, lower-cased) not in
  :data:`FUNCTION_WORDS` of the prompt language.
  A question frame shared word by word ("what role does … play in") borrows one word per phrase, so
  the examples' form may be copied freely.
* ``foreign_script`` — :func:`foreign_scripts`: letters of a writing system (Latin, Greek, Cyrillic,
  CJK, Arabic, …, the first word of the character's Unicode name) that the source document does not
  use, as when a Qwen model slips into Chinese mid-query ("… metabolic控制"); Greek letters are symbols
  ("IFN-γ") and never foreign.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping

from .leak import words
from .thresholds import EXAMPLE_JACCARD

__all__ = ["FUNCTION_WORDS", "SYMBOL_SCRIPTS", "borrowed_words", "copies_example", "foreign_scripts",
           "scripts"]

#: Words that carry a question's form, not its content, per prompt language.
FUNCTION_WORDS: Mapping[str, frozenset[str]] = {
    "en": frozenset(
        ["what", "which", "who", "whom", "whose", "when", "where", "why", "how", "is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "can", "could", "should", "would", "will", "may", "might", "must", "the", "a", "an", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "but", "not", "no", "nor", "as", "that", "this", "these", "those", "it", "its", "their", "they", "there", "than", "then", "into", "about", "between", "during", "after", "before", "over", "under", "through", "per", "via", "any", "some", "all", "each", "i", "me", "my", "we", "us", "our", "you", "your", "he", "him", "his", "she", "her", "they", "them"]),
    "es": frozenset(
        ["qué", "que", "cuál", "cuáles", "cual", "quién", "quiénes", "cuándo", "cuando", "dónde", "donde", "por", "porqué", "cómo", "como", "es", "son", "era", "eran", "fue", "ser", "está", "están", "hay", "puede", "pueden", "debe", "el", "la", "los", "las", "un", "una", "unos", "unas", "lo", "de", "del", "al", "a", "en", "con", "sin", "para", "sobre", "entre", "y", "o", "u", "ni", "no", "se", "su", "sus", "este", "esta", "estos", "estas", "ese", "esa", "más", "menos", "muy", "todo", "todos", "cada", "algún", "alguna", "yo", "me", "mi", "mis", "nosotros", "nos", "nuestro", "tú", "te", "tu", "tus", "usted", "él", "ella", "ellos", "ellas", "les", "le"]),
}


def borrowed_words(query: str, source: str, examples: Iterable[str], *, lang: str = "en") -> list[str]:
    """The content words absent from ``source`` in the longest-reaching phrase the query shares with one of
    ``examples`` (see the module docstring), in query order; ``[]`` without examples.

    A shared phrase is a run of at least two consecutive words (lower-cased) found in the same order in
    the example; its borrowed words are its content words absent from ``source``. The phrase with the
    most borrowed words wins. A frame shared word by word ("what role does … play in") borrows one word
    per phrase; a pasted clause ("compared to conventional treatment") borrows several.
    """
    function = FUNCTION_WORDS.get(lang, FUNCTION_WORDS["en"])
    src = set(words(source))
    q = words(query)
    best: list[str] = []
    for example in examples:
        e = words(example)
        for i in range(len(q) - 1):
            for j in range(len(e) - 1):
                if q[i] != e[j] or (i and j and q[i - 1] == e[j - 1]):
                    continue  # not the start of a maximal shared run
                k = 0
                while i + k < len(q) and j + k < len(e) and q[i + k] == e[j + k]:
                    k += 1
                if k < 2:
                    continue
                got = list(dict.fromkeys(w for w in q[i:i + k]
                                         if w not in src and w not in function and not w.isdigit()))
                if len(got) > len(best):
                    best = got
    return best


def scripts(text: str) -> set[str]:
    """Writing systems of ``text``'s letters: the first word of each letter's Unicode name
    (``LATIN``, ``GREEK``, ``CJK``, ``CYRILLIC``, ``HIRAGANA``, …)."""
    out: set[str] = set()
    for ch in set(text):
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            if name:
                out.add(name.split(" ", 1)[0])
    return out


#: Letters used as symbols in any script's scientific text ("IFN-γ", "α-tocopherol"): never foreign.
SYMBOL_SCRIPTS = frozenset({"GREEK", "MICRO"})


def foreign_scripts(query: str, source: str) -> set[str]:
    """Writing systems of the query's letters that ``source`` does not use, :data:`SYMBOL_SCRIPTS` aside."""
    return scripts(query) - scripts(source) - SYMBOL_SCRIPTS


def copies_example(query: str, *, examples: frozenset[str] = frozenset(),
                    max_jaccard: float = EXAMPLE_JACCARD) -> bool:
    """True when ``query``'s word set has Jaccard >= ``max_jaccard`` with a few-shot example answer
    (small base models often echo their examples)."""
    words = set(query.lower().split())
    for shot in examples:
        other = set(shot.lower().split())
        if words and len(words & other) / len(words | other) >= max_jaccard:
            return True
    return False
