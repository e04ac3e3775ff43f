"""Runs and judgments to and from pandas DataFrames (pandas is imported only when called).

Column names are found among the spellings of the tools whose users pass DataFrames around:

========  ====================================  ==================================
what      PyTerrier                             ranx (``from_df`` / ``to_dataframe``)
========  ====================================  ==================================
query     ``qid``                               ``q_id``
document  ``docno``                             ``doc_id``
score     ``score`` (run), ``label`` (qrels)    ``score``
========  ====================================  ==================================

``query_id``, ``docid`` and ``relevance`` / ``grade`` are recognised too; a ``*_col=`` argument names
a column explicitly. Written frames use PyTerrier's names (``qid``, ``docno``, ``score``, ``rank``;
``label`` for grades), with ids as Python strings (``object`` dtype, which ranx requires), which ranx
reads with ``q_id_col="qid", doc_id_col="docno"``.

A run read from a frame is ordered by the package tie rule (:func:`bakeoff.data.ranking.rank`:
score descending, then doc id descending); a ``rank`` column is ignored, as trec_eval ignores the
ranks of a run file. Ids are read as strings (``7`` -> ``"7"``); a missing id, a non-numeric score
(or NaN) and a non-integer grade are :class:`~bakeoff.errors.InputError` naming the row and column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from .model import Qrels, Run

__all__ = ["qrels_from_df", "qrels_to_df", "run_from_df", "run_to_df"]

_QUERY = ("qid", "q_id", "query_id")
_DOC = ("docno", "doc_id", "docid")
_SCORE = ("score",)
_GRADE = ("label", "relevance", "grade", "score")


def _column(df: Any, given: str | None, names: Sequence[str], what: str) -> str:
    if given is not None:
        if given not in df.columns:
            raise InputError(f"the DataFrame has no column {given!r} for the {what}; columns: {list(df.columns)}",
                             path="<DataFrame>", field=given)
        return given
    for n in names:
        if n in df.columns:
            return n
    raise InputError(f"no {what} column: expected one of {', '.join(names)} (or name it with {what}_col=); "
                     f"columns: {list(df.columns)}", path="<DataFrame>", field=what)


def _ids(values: Sequence[Any], col: str) -> list[str]:
    out = []
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and math.isnan(v)) or str(v).strip() == "":
            raise InputError(f"row {i}: empty id", path="<DataFrame>", field=col)
        out.append(str(v))
    return out


def run_from_df(df: Any, *, name: str = "run", query_col: str | None = None, doc_col: str | None = None,
                score_col: str | None = None) -> Run:
    """A :class:`~bakeoff.data.model.Run` from a frame with one row per (query, document, score)."""
    from .model import Run

    q, d, s = (_column(df, query_col, _QUERY, "query"), _column(df, doc_col, _DOC, "doc"),
               _column(df, score_col, _SCORE, "score"))
    qids, dids = _ids(df[q].tolist(), q), _ids(df[d].tolist(), d)
    scores: dict[str, dict[str, float]] = {}
    for i, (qid, did, v) in enumerate(zip(qids, dids, df[s].tolist(), strict=True)):
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise InputError(f"row {i}: score {v!r} is not a number", path="<DataFrame>", field=s) from None
        if math.isnan(x):
            raise InputError(f"row {i}: score is NaN", path="<DataFrame>", field=s)
        per = scores.setdefault(qid, {})
        if did in per:
            raise InputError(f"row {i}: document {did!r} appears twice for query {qid!r}", path="<DataFrame>",
                             field=d)
        per[did] = x
    return Run.from_scores(name, scores)


def run_to_df(run: Run) -> Any:
    """``run`` as a frame: ``qid``, ``docno``, ``score``, ``rank`` (0-based, PyTerrier's), in rank order."""
    import pandas as pd

    rows = [(q, d, float(s), i) for q in run for i, (d, s) in enumerate(run.get(q))]
    return _ids_as_objects(pd.DataFrame(rows, columns=["qid", "docno", "score", "rank"]))


def qrels_from_df(df: Any, *, query_col: str | None = None, doc_col: str | None = None,
                  grade_col: str | None = None) -> Qrels:
    """:class:`~bakeoff.data.model.Qrels` from a frame with one row per judgment (integer grades)."""
    from .model import Qrels

    q, d, g = (_column(df, query_col, _QUERY, "query"), _column(df, doc_col, _DOC, "doc"),
               _column(df, grade_col, _GRADE, "grade"))
    out: dict[str, dict[str, int]] = {}
    for i, (qid, did, v) in enumerate(zip(_ids(df[q].tolist(), q), _ids(df[d].tolist(), d), df[g].tolist(),
                                          strict=True)):
        try:
            x = float(v)
        except (TypeError, ValueError):
            x = math.nan
        if not math.isfinite(x) or x != int(x):
            raise InputError(f"row {i}: grade {v!r} is not an integer", path="<DataFrame>", field=g)
        per = out.setdefault(qid, {})
        if did in per:
            raise InputError(f"row {i}: document {did!r} judged twice for query {qid!r}", path="<DataFrame>",
                             field=d)
        per[did] = int(x)
    return Qrels(out)


def qrels_to_df(qrels: Qrels) -> Any:
    """``qrels`` as a frame: ``qid``, ``docno``, ``label``."""
    import pandas as pd

    return _ids_as_objects(pd.DataFrame([(q, d, int(g)) for q in qrels for d, g in qrels.get(q).items()],
                                        columns=["qid", "docno", "label"]))


def _ids_as_objects(df: Any) -> Any:
    """Id columns of Python strings (``object`` dtype), which ranx's ``from_df`` requires; pandas 3
    would infer its own string dtype."""
    for col in ("qid", "docno"):
        df[col] = df[col].astype(object)
    return df

