"""Loading what a report needs: ``results.json``, its TREC runs, and the dataset it was run on
(:mod:`bakeoff.runner.reopen`, shared with ``bakeoff assess``), and :func:`merge_results`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from ..errors import InputError
from ..runner.reopen import load_dataset, load_runs, results_path
from ..runner.results import StoredResults
from ..runner.results import read_results as _read_json
from ..validation import OpenSchema, PositiveInt, validate

__all__ = ["ResultsRecord", "load_dataset", "load_runs", "merge_results", "read_results", "results_path"]

log = logging.getLogger("bakeoff")


# What a report reads of a results.json (unknown keys are allowed: readers ignore them).
Score = Annotated[float, Field(allow_inf_nan=True)]


class _ArmRecord(OpenSchema):
    name: str
    metrics: dict[str, Score | None]
    per_query: dict[str, dict[str, Score]]
    run_file: str | None = None
    children: list[str] | None = None


class _DatasetRecord(OpenSchema):
    name: str | None = None
    split: str | None = None
    source: dict[str, Any] | str = Field(default_factory=dict)  # bakeoff demo: a label; data in dataset.truth
    fingerprints: dict[str, str] = Field(default_factory=dict)


class ResultsRecord(OpenSchema):
    """The part of ``results.json`` (:mod:`bakeoff.runner.results`) that reports rely on."""

    dataset: _DatasetRecord
    k: PositiveInt
    measures: list[str] = Field(min_length=1)
    arms: list[_ArmRecord] = Field(min_length=1)
    averaging: Literal["bakeoff", "trec_eval", "trec_eval-c"] = "bakeoff"
    relevance_level: int = 1

    @model_validator(mode="after")
    def _per_query_covers_measures(self) -> ResultsRecord:
        for i, arm in enumerate(self.arms):
            for m in self.measures:
                if m not in arm.per_query:
                    raise ValueError(f"arms[{i}] ({arm.name!r}) has no per_query values for measure {m!r}")
        names = [a.name for a in self.arms]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"arm names repeated: {dup}")
        return self


def read_results(path: str | Path) -> StoredResults:
    """A ``results.json`` (file or folder) read for a report: valid JSON of the bakeoff schema and
    holding what reports read (:class:`ResultsRecord`); otherwise one InputError naming the file
    and the field."""
    p = results_path(path)
    try:
        results = _read_json(p)
    except RecursionError:
        raise InputError("JSON nested too deeply to read", path=p) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte {exc.start})", path=p) from None
    except IsADirectoryError:
        raise InputError("is a folder, expected results.json", path=p) from None
    raw = json.loads(p.read_text(encoding="utf-8"))  # as written (the typed view fills absent keys in)
    validate(ResultsRecord, raw, where=str(p), error=InputError)
    return results


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
    for key, default in (("averaging", "bakeoff"), ("relevance_level", 1)):
        va, vb = first.get(key, default), second.get(key, default)
        if va != vb:
            raise InputError(f"the two result sets use different {key.replace('_', ' ')}s ({va!r} vs {vb!r}); "
                             f"rerun one with --{key.replace('_', '-')} {va}", path=paths[1], field=key)
    sa, sb = first["dataset"].get("split"), second["dataset"].get("split")
    if sa != sb:
        raise InputError(f"the two result sets are on different splits ({sa!r} vs {sb!r})", path=paths[1],
                         field="dataset.split")
    if set(first["measures"]) != set(second["measures"]):
        only_a = sorted(set(first["measures"]) - set(second["measures"]))
        only_b = sorted(set(second["measures"]) - set(first["measures"]))
        raise InputError(f"the two result sets computed different measures (only in the first: {only_a}; only in "
                         f"the second: {only_b}); run both with the same --measure", path=paths[1], field="measures")
    measures = list(first["measures"])
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
