"""One results set from two (``bakeoff compare``): :func:`merge_results`.

The sets are read by :func:`bakeoff.runner.results.read_results`; their runs and dataset are reopened
by :mod:`bakeoff.runner.reopen` (shared with ``bakeoff report`` and ``bakeoff assess``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import InputError
from ..runner.results import StoredArm, StoredResults

__all__ = ["merge_results"]


def merge_results(first: StoredResults, second: StoredResults, *, labels: Sequence[str],
                  paths: Sequence[Path]) -> StoredResults:
    """One results set holding the arms of two result sets of the same dataset.

    Fingerprints of corpus, queries and judgments must be equal, and the evaluated queries
    identical (the comparison is paired). Arm names present in both sets get a ``LABEL/``
    prefix; ``run_file`` becomes absolute. Measures are those both sets computed.
    """
    fa, fb = first.fingerprints, second.fingerprints
    for key in ("corpus", "queries", "qrels"):
        if fa.get(key) != fb.get(key):
            raise InputError(f"the two result sets are on different data: {key} fingerprints differ",
                             path=paths[1], field=f"dataset.fingerprints.{key}")
    if first.k != second.k:
        raise InputError(f"the two result sets use different cutoffs (k={first.k} vs {second.k})",
                         path=paths[1], field="k")
    for key in ("averaging", "relevance_level"):
        va, vb = getattr(first, key), getattr(second, key)
        if va != vb:
            raise InputError(f"the two result sets use different {key.replace('_', ' ')}s ({va!r} vs {vb!r}); "
                             f"rerun one with --{key.replace('_', '-')} {va}", path=paths[1], field=key)
    sa, sb = first.dataset.split, second.dataset.split
    if sa != sb:
        raise InputError(f"the two result sets are on different splits ({sa!r} vs {sb!r})", path=paths[1],
                         field="dataset.split")
    if set(first.measures) != set(second.measures):
        only_a = sorted(set(first.measures) - set(second.measures))
        only_b = sorted(set(second.measures) - set(first.measures))
        raise InputError(f"the two result sets computed different measures (only in the first: {only_a}; only in "
                         f"the second: {only_b}); run both with the same --measure", path=paths[1], field="measures")
    measure = first.measures[0]
    qa = set(first.arms[0].per_query[measure]) if first.arms else set()
    qb = set(second.arms[0].per_query[measure]) if second.arms else set()
    if qa != qb:
        raise InputError(f"the two result sets evaluated different queries ({len(qa)} vs {len(qb)})",
                         path=paths[1], field="arms.per_query")
    clash = set(first.arm_names) & set(second.arm_names)
    arms: list[StoredArm] = []
    for res, label, path in ((first, labels[0], paths[0]), (second, labels[1], paths[1])):
        rename = {n: (f"{label}/{n}" if n in clash else n) for n in res.arm_names}
        for a in res.arms:
            change: dict[str, object] = {"name": rename[a.name]}
            if a.children:
                change["children"] = tuple(rename.get(c, c) for c in a.children)
            if a.run_file:
                rf = Path(a.run_file)
                change["run_file"] = str(rf if rf.is_absolute() else (path.parent / rf).resolve())
            arms.append(a.model_copy(update=change))
    return first.with_arms(arms)
