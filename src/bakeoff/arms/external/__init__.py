"""Arms whose retriever lives outside bakeoff: an HTTP service, a command, PostgreSQL.

They are evaluated exactly like built-in arms: the runner obtains their runs
through :meth:`bakeoff.runner.context.Context.search`, which times and caches them.
A failed call raises :class:`ExternalError` from ``search`` *before* the
context caches anything, so a failure never leaves a cached run behind.

Scores returned by an external system are re-ordered with the package tie
rule (:func:`bakeoff.data.ranking.rank`: score descending, then doc id
descending); the system's own order is used only when it returns no scores
(then the i-th of n hits gets score ``n - i``).

Because bakeoff cannot see inside an external system, its cache identity is
its configuration (URL, command, redacted connection string, table and
columns); give ``version=...`` to make a changed index miss the cache.

Modules here import only the standard library at import time.
"""

from ._common import ExternalError, redact_url

__all__ = ["ExternalError", "redact_url"]
