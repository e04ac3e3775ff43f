"""Real queries without judgments (``--queries-like FILE``): the style and the leak a synthetic truth should have.

A user rarely has judgments, but often has a few dozen real queries: a search log, the questions a help desk
gets. They are used twice, neither time as answers:

* **style exemplars**: each describe request shows :data:`STYLE_SHOTS` of them (drawn per request, seeded)
  in the system message as "how people search here", explicitly for *other* documents, so the model
  copies their form and length (a claim, a keyword query, a long need) and not their content. A query
  that borrows their content words anyway is rejected by the drift filter (``borrowed_example``).
* **leak target**: the leak a real query has against the document that answers it is unknown without a
  judgment, so it is estimated against the document the multilingual USE bi-encoder ranks first for it
  (:func:`estimated_leak_shares`), a semantic match that does not favour copied words; the shares of the
  five leak bins are the target the verdict weights the synthetic queries to
  (:mod:`bakeoff.report.leak_match`).

File formats: plain text, one query per line (blank lines skipped); or JSONL whose lines are objects with a
``text`` or ``query`` field (BEIR's ``queries.jsonl`` reads as is).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...data.leak_bins import leak_bin_counts
from ...data.model import Corpus
from ...errors import ConfigError

__all__ = ["MIN_QUERIES", "STYLE_SHOTS", "draw_style", "estimated_leak_shares", "read_queries_like"]

#: Exemplars shown per request.
STYLE_SHOTS = 4
#: Fewer real queries than this and their leak histogram is mostly noise (refused as a target).
MIN_QUERIES = 10


def read_queries_like(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The queries of ``path`` (module docstring), whitespace collapsed, duplicates dropped in order. A bad line
    is a :class:`~bakeoff.errors.ConfigError` naming the file, the line and the field; fewer than
    :data:`MIN_QUERIES` queries is one too."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: cannot read queries: {e}") from None
    out: dict[str, None] = {}
    jsonl = next((ln.lstrip().startswith("{") for ln in lines if ln.strip()), False)
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if jsonl:
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ConfigError(f"{p}:{i}: not JSON ({e.msg})") from None
            text = row.get("text", row.get("query")) if isinstance(row, dict) else None
            if not isinstance(text, str) or not text.strip():
                raise ConfigError(f"{p}:{i}: field 'text' (or 'query') must be non-empty text")
        else:
            text = line
        out[" ".join(text.split())] = None
    if len(out) < MIN_QUERIES:
        raise ConfigError(f"{p}: {len(out)} distinct queries; --queries-like needs at least {MIN_QUERIES}")
    return tuple(out)


def draw_style(queries: Sequence[str], *, seed: int, row: int, number: int, k: int = STYLE_SHOTS) -> tuple[str, ...]:
    """``k`` of ``queries`` for request ``number`` of document ``row``, drawn with ``default_rng([seed, row,
    number])`` and kept in file order (:attr:`bakeoff.truth.generation.prompts.PromptControl.style_queries` renders them)."""
    pick = sorted(int(x) for x in np.random.default_rng([seed, row, number]).choice(
        len(queries), size=min(k, len(queries)), replace=False))
    return tuple(queries[i] for i in pick)


def estimated_leak_shares(queries: Sequence[str], corpus: Corpus, *, lang: str = "en",
                          scorer: object | None = None) -> tuple[float, ...]:
    """The five leak-bin shares of ``queries``, each query's leak taken against the document of ``corpus`` that
    the USE bi-encoder (or ``scorer``, anything with ``score_matrix(queries, documents)``) ranks first."""
    from ..filters.answerability import open_answerability
    from ..filters.leak import leak

    sc: Any = scorer if scorer is not None else open_answerability("use")
    docs = [f"{t}\n{x}" if t else x for t, x in zip(corpus.titles, corpus.texts, strict=True)]
    m = np.asarray(sc.score_matrix(list(queries), docs))
    top = m.argmax(axis=1)
    values = [leak(q, f"{corpus.titles[int(r)]} {corpus.texts[int(r)]}", lang=lang) for q, r in zip(queries, top)]
    counts = leak_bin_counts(values)
    return tuple(c / len(values) for c in counts)
