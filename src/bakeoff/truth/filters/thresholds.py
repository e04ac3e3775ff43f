"""The default thresholds of the query filters, each a named value, all in one place.

Describe mode's options (:class:`~bakeoff.truth.generation.describe.DescribeOptions`) take their defaults
from here, and so does the filter chain (:mod:`bakeoff.truth.filters.chain`); change a default here and
every caller follows. A threshold set to ``None`` in the options turns its filter off.
"""

from __future__ import annotations

__all__ = [
    "CROSS_ENCODER_ANSWERABILITY_THRESHOLD",
    "EXAMPLE_JACCARD",
    "LEAK_SLACK",
    "LEAK_THRESHOLD",
    "MAX_BORROWED",
    "MAX_COPIED_RUN",
    "MAX_QUERY_CHARS",
    "MAX_QUESTION_CHARS",
    "MAX_TITLE_COPY",
    "MINILM_ANSWERABILITY_THRESHOLD",
    "MIN_QUERY_WORDS",
    "MIN_WHOLE_COPY",
    "REFERENCE_ALPHA",
    "REFERENCE_DOCUMENTS",
    "SPECIFICITY_THRESHOLD",
    "STEER_MIN_SUCCESS",
    "STEER_MIN_TRIES",
    "TRUNCATION_SLACK",
    "USE_ANSWERABILITY_THRESHOLD",
]

#: ``copied_example``: a query whose word set has at least this Jaccard similarity with an example answer of
#: the prompt echoes that example (small base models often do).
EXAMPLE_JACCARD = 0.6
#: ``too_short``: a query of fewer words is rejected.
MIN_QUERY_WORDS = 3
#: The longest query the describe schema allows, in characters (its ``maxLength``: a grammar-constrained
#: server closes the string there); cluster mode's questions allow ``MAX_QUESTION_CHARS``.
MAX_QUERY_CHARS = 160
MAX_QUESTION_CHARS = 200
#: ``truncated``: a query within this many characters of its schema's cap (collapsed whitespace may shorten it)
#: that does not end a sentence was cut by the cap (:class:`~bakeoff.truth.filters.chain.Truncated`).
TRUNCATION_SLACK = 5
#: ``borrowed_example``: at most this many borrowed content words from one example are tolerated
#: (:func:`~bakeoff.truth.filters.drift.borrowed_words`).
MAX_BORROWED = 1
#: ``copies_title``: a query with at least this share of its words in its document's title names the title
#: (:func:`~bakeoff.truth.filters.leak.title_copy`).
MAX_TITLE_COPY = 0.8
#: ``copies_passage``: a query holding a run of at least this many consecutive words of its document pasted
#: a sentence (:func:`~bakeoff.truth.filters.leak.copied_run`).
MAX_COPIED_RUN = 10
#: ``copies_passage`` too: a query of at least this many words that is, whole, one run of its document (a short
#: sentence pasted: "Return the current time in seconds since the Epoch"). Of people's (query, relevant document)
#: pairs, 2 of SciFact's 1,258 and none of CISI's 3,114 are.
MIN_WHOLE_COPY = 5
#: ``leak`` (``--leak-mode cut``): a query whose leak is above this is rejected; also cluster mode's leak cut.
LEAK_THRESHOLD = 0.35
#: ``leak_quota`` (``--leak-mode target``): each leak bin keeps at most ``ceil(LEAK_SLACK * share * n)`` queries.
LEAK_SLACK = 1.25
#: The leak quota is waived after a round once at least ``STEER_MIN_TRIES`` steered regenerations were
#: judged and fewer than ``STEER_MIN_SUCCESS`` of them reached a bin with room: a model that does not follow
#: the steer would spend every later round on regenerations that land in the same full bins.
STEER_MIN_TRIES = 20
STEER_MIN_SUCCESS = 0.1

# -- answerability (:mod:`bakeoff.truth.filters.answerability`) -----------------------------------------------

#: ``not_answerable``, the default rule: a query is kept when its own document ranks among the top ``alpha``
#: of ``REFERENCE_DOCUMENTS`` random documents of the corpus plus itself (:mod:`bakeoff.truth.filters.reference_rank`).
REFERENCE_DOCUMENTS = 99
REFERENCE_ALPHA = 0.05
#: The absolute rule's default keep threshold of the USE cosine. Chosen on 80 hand-judged Gemma 3 270M queries of
#: a demo run (the docs' benchmarks page, "Answerability"; stdlib docstrings, 21 answerable by their document; ROC
#: AUC 0.839): cosine >= 0.45 kept 29 (59 % answerable), >= 0.5 21 (57 %), >= 0.55 11 (64 %), >= 0.6 6 (67 %).
USE_ANSWERABILITY_THRESHOLD = 0.5
#: Default keep threshold of the MiniLM cosine (same 80 queries, ROC AUC 0.875): >= 0.5 kept 30 (53 %),
#: >= 0.55 25 (64 %), >= 0.6 15 (73 %), >= 0.65 8 (88 %).
MINILM_ANSWERABILITY_THRESHOLD = 0.6
#: Default keep threshold of a cross-encoder logit (probability 0.5 for BCE-trained rerankers).
CROSS_ENCODER_ANSWERABILITY_THRESHOLD = 0.0

# -- specificity (:mod:`bakeoff.truth.filters.specificity`) ---------------------------------------------------

#: ``low_specificity``: default keep threshold on the specificity score (mean nats per query token); chosen from
#: the measurements in ``benchmarks/truth_quality.py`` (see :class:`~bakeoff.truth.filters.specificity.SpecificityOptions`).
SPECIFICITY_THRESHOLD = 1.0
