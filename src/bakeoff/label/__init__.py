"""Human judgments in the browser (``bakeoff label``).

A person judges pooled documents (the union of several arms' top ``depth``, shuffled, arm
identity hidden) one query at a time, keyboard first; reviews synthetic queries (accept,
edit, reject); several annotators share one SQLite database; agreement (Cohen's kappa,
Krippendorff's alpha) and export to TREC/BEIR qrels come from the same database, which
``bakeoff run --qrels DB`` also reads directly.

Modules: :mod:`.sources` (query sources), :mod:`.pool` (pooling), :mod:`.store` (the
SQLite write side; the format and read side are :mod:`bakeoff.data.judgments`),
:mod:`.app` (Starlette + Jinja2), :mod:`.session` (start-up checks and serving),
:mod:`.agreement`, :mod:`.export`. Importing this package loads none of them.
"""
