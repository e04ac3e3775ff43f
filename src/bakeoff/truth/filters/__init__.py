"""Quality filters and scores of generated queries: the leak metric (:mod:`.leak`), self-reference,
drift (borrowed or copied examples, foreign scripts), answerability (with the reference rank) and
specificity, and the score-threshold rule they share (:mod:`.score_filter`).

Never imports :mod:`bakeoff.truth.generation` or :mod:`bakeoff.truth.judging` (an import-linter contract):
a filter reads a query and its document, not how they were made."""
