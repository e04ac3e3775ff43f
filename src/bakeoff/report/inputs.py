"""Loading what a report needs: ``results.json``, its TREC runs, and the dataset it was run on
(:mod:`bakeoff.runner.reopen`, shared with ``bakeoff assess``), and :func:`merge_results`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..runner.reopen import load_dataset, load_runs, results_path
from ..runner.results import StoredResults

__all__ = ["results_path", "load_dataset", "load_runs", "merge_results"]

log = logging.getLogger("bakeoff")


def merge_results(first: Mapping[str, Any], second: Mapping[str, Any], *, labels: Sequence[str],
                  paths: Sequence[Path]) -> StoredResults:
    """One results dict holding the arms of two result sets of the same dataset.

    Fingerprints of corpus, queries and judgments must be equal, and the evaluated queries
    identical (the comparison is paired). Arm names present in both sets get a ``LABEL/``
    prefix; ``run_file`` becomes absolute. Measures are those both sets computed.
    """
    fa = first["dataset"].get("fingerprints") or {}
    fb = second["dataset"].get("fingerprints") or {}
    for key in ("corpus", "queries", "qrels"):
        if fa.get(key) != fb.get(key):
            raise InputError(f"the two result sets are on different data: {key} fingerprints differ",
                             path=paths[1], field=f"dataset.fingerprints.{key}")
    if first["k"] != second["k"]:
        raise InputError(f"the two result sets use different cutoffs (k={first['k']} vs {second['k']})",
                         path=paths[1], field="k")
    measures = [m for m in first["measures"] if m in second["measures"]]
    if not measures:
        raise InputError("the two result sets share no measure", path=paths[1], field="measures")
    qa = set(first["arms"][0]["per_query"][measures[0]]) if first["arms"] else set()
    qb = set(second["arms"][0]["per_query"][measures[0]]) if second["arms"] else set()
    if qa != qb:
        raise InputError(f"the two result sets evaluated different queries ({len(qa)} vs {len(qb)})",
                         path=paths[1], field="arms.per_query")
    names_a = {a["name"] for a in first["arms"]}
    names_b = {a["name"] for a in second["arms"]}
    clash = names_a & names_b
    arms = []
    for res, label, names, path in ((first, labels[0], names_a, paths[0]), (second, labels[1], names_b, paths[1])):
        rename = {n: (f"{label}/{n}" if n in clash else n) for n in names}
        for a in res["arms"]:
            b = dict(a)
            b["name"] = rename[a["name"]]
            if "children" in b:
                b["children"] = [rename.get(c, c) for c in b["children"]]
            if b.get("run_file"):
                rf = Path(b["run_file"])
                b["run_file"] = str(rf if rf.is_absolute() else (path.parent / rf).resolve())
            arms.append(b)
    return StoredResults.from_dict({**dict(first), "measures": measures, "arms": arms})
