"""The default thresholds of the query filters, each a named value, all in one place.

Describe mode's options (:class:`~bakeoff.truth.generation.describe.DescribeOptions`) take their defaults
from here, and so does the filter chain (:mod:`bakeoff.truth.filters.chain`); change a default here and
every caller follows. A threshold set to ``None`` in the options turns its filter off.
"""

from __future__ import annotations

__all__ = [
    "EXAMPLE_JACCARD",
    "LEAK_SLACK",
    "LEAK_THRESHOLD",
    "MAX_BORROWED",
    "MAX_COPIED_RUN",
    "MAX_TITLE_COPY",
    "MIN_QUERY_WORDS",
    "STEER_MIN_SUCCESS",
    "STEER_MIN_TRIES",
]

#: ``copied_example``: a query whose word set has at least this Jaccard similarity with an example answer of
#: the prompt echoes that example (small base models often do).
EXAMPLE_JACCARD = 0.6
#: ``too_short``: a query of fewer words is rejected.
MIN_QUERY_WORDS = 3
#: ``borrowed_example``: at most this many borrowed content words from one example are tolerated
#: (:func:`~bakeoff.truth.filters.drift.borrowed_words`).
MAX_BORROWED = 1
#: ``copies_title``: a query with at least this share of its words in its document's title names the title
#: (:func:`~bakeoff.truth.filters.leak.title_copy`).
MAX_TITLE_COPY = 0.8
#: ``copies_passage``: a query holding a run of at least this many consecutive words of its document pasted
#: a sentence (:func:`~bakeoff.truth.filters.leak.copied_run`).
MAX_COPIED_RUN = 10
#: ``leak`` (``--leak-mode cut``): a query whose leak is above this is rejected; also cluster mode's leak cut.
LEAK_THRESHOLD = 0.35
#: ``leak_quota`` (``--leak-mode target``): each leak bin keeps at most ``ceil(LEAK_SLACK * share * n)`` queries.
LEAK_SLACK = 1.25
#: The leak quota is waived after a round once at least ``STEER_MIN_TRIES`` steered regenerations were
#: judged and fewer than ``STEER_MIN_SUCCESS`` of them reached a bin with room: a model that does not follow
#: the steer would spend every later round on regenerations that land in the same full bins.
STEER_MIN_TRIES = 20
STEER_MIN_SUCCESS = 0.1
