"""Guards on runs before they are evaluated and compared.

* **Empty runs** (:func:`empty_guard`): an arm whose ranking is empty for more than
  ``max_share`` of the evaluated queries (default :data:`DEFAULT_MAX_EMPTY_SHARE`) is
  *broken* -- a crashed service, a wrong field name, a command printing nothing -- not a
  bad retriever. Its metrics would be near 0 and every test would call it "significantly
  worse", which is true and useless. The record ``{"queries", "n", "share", "max_share",
  "broken"}`` goes to the arm's ``empty`` field in results.json; reports list a broken arm
  apart and leave it out of the ranking, the tests and the verdict.
* **Identical ids** (:func:`drop_identical_ids`): in datasets where every query is also a
  document (BEIR ArguAna, Quora, CQADupStack; ir_datasets#219) each query retrieves itself
  first, which is not a useful answer and is not judged. With ``ignore_identical_ids`` the
  document whose id equals the query id is removed from that query's ranking before
  evaluation (the rest keeps its order; the ranking is one shorter), as BEIR's
  ``EvaluateRetrieval.evaluate(ignore_identical_ids=True)`` does. results.json records the
  option in ``dataset.ignore_identical_ids`` and each arm's count of removed documents in
  ``identical_ids_removed``.
* **Self-retrieval datasets** (:func:`self_retrieval`): the rule above is on by default for a
  dataset whose queries *are* documents -- more than half of its queries have the id of a
  document whose text (or title) is the query's text, whitespace and case aside. ArguAna, Quora
  and CQADupStack qualify; SciFact (no query id is a document id) and CISI (query ids 1-112 are
  document ids, but of other texts) do not. BEIR's ``EvaluateRetrieval.evaluate`` removes
  identical ids on every dataset and MTEB only on the tasks flagged for it; the detection gives
  MTEB's choice on BEIR's sets without a list of names. ``--keep-identical-ids`` opts out,
  ``--ignore-identical-ids`` forces it on.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from ..data.model import Dataset, Run
from ..errors import ConfigError

__all__ = ["DEFAULT_MAX_EMPTY_SHARE", "check_share", "drop_identical_ids", "empty_guard", "self_retrieval"]

#: Share of evaluated queries with an empty ranking above which an arm is broken.
DEFAULT_MAX_EMPTY_SHARE = 0.5


def check_share(value: Any, *, what: str = "max_empty_share") -> float:
    """``value`` as a float in ``[0, 1]`` (ConfigError otherwise)."""
    try:
        share = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{what} must be a number between 0 and 1, got {value!r}") from None
    if not 0.0 <= share <= 1.0:
        raise ConfigError(f"{what} must be between 0 and 1, got {value!r}")
    return share


def empty_guard(run: Run, query_ids: Sequence[str], *, max_share: float = DEFAULT_MAX_EMPTY_SHARE) -> dict[str, Any]:
    """``{"queries": #empty, "n": #queries, "share", "max_share", "broken": share > max_share}``.

    A query is empty when the run has no document for it (absent or an empty ranking).
    """
    n = len(query_ids)
    empty = sum(1 for q in query_ids if not run.get(q))
    share = empty / n if n else 0.0
    return {"queries": empty, "n": n, "share": share, "max_share": float(max_share), "broken": share > max_share}


def drop_identical_ids(run: Run) -> tuple[Run, int]:
    """``run`` without, for each query, the document whose id is the query id; and how many were removed."""
    removed = 0
    out = {}
    for qid, ranked in run.ranked.items():
        kept = tuple(p for p in ranked if p[0] != qid)
        removed += len(ranked) - len(kept)
        out[qid] = kept
    return Run(run.name, MappingProxyType(out)), removed


def _norm(text: str) -> str:
    return " ".join(str(text or "").split()).casefold()


def self_retrieval(dataset: Dataset) -> dict[str, Any]:
    """Whether ``dataset``'s queries are documents of its corpus (see module docstring):
    ``{"queries": #queries that are their own document, "n": #queries, "self_retrieval": bool}``.

    A query is its own document when a document has its id and that document's text or title is
    the query's text, or contains it (whitespace runs collapsed, case folded). The dataset is a
    self-retrieval one when more than half of its queries are.
    """
    corpus = dataset.corpus
    n = len(dataset.queries)
    own = 0
    for q in dataset.queries:
        if q.id not in corpus:
            continue
        doc = corpus[q.id]
        text = _norm(q.text)
        if text and (text == _norm(doc.text) or text == _norm(doc.title) or text in _norm(f"{doc.title} {doc.text}")):
            own += 1
    return {"queries": own, "n": n, "self_retrieval": n > 0 and own * 2 > n}
