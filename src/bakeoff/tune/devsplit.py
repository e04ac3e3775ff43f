"""The development split of a sweep: where parameters are chosen, never the test queries.

Three kinds (``--dev`` / ``[tune] dev``):

* ``SPLIT`` (e.g. ``train``, ``dev``, ``train+dev``): another judged split of the same folder
  or source (same corpus). The chosen setting is then evaluated on the configured split
  (the *test split*). Refused: the dev split *is* the test split (a name in common), a query
  id in both, or a dev query whose text equals a test query's after
  :func:`bakeoff.train.hygiene.normalise` (the fine-tuning hygiene rule: NFKC, casefold,
  punctuation and symbols removed, whitespace collapsed) -- unless ``drop_leaks``, which
  drops those dev queries (logged and recorded);
* ``slice:F`` (``0 < F < 1``): a seeded share ``F`` of the test split's queries is held apart
  as the dev set; the rest is the test set;
* ``kfold:N`` (``N >= 2``): the test split's queries in ``N`` seeded folds; for each fold the
  setting is chosen on the other ``N - 1`` folds and applied to it, so every query's test value
  comes from a setting chosen without it (cross-validation).

Slices and folds are drawn over **groups of queries with the same normalised text**, so
near-duplicate queries always land on the same side (no leak by construction). The groups,
in first-occurrence order, are permuted by ``numpy.random.default_rng(seed).permutation``;
a slice takes the first ``round(F * n_groups)`` groups; fold ``f`` holds the groups at
permuted positions ``i`` with ``i % N == f``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..data.clean import normalise_query
from ..errors import ConfigError

__all__ = ["DevSplit", "assign_folds", "leaks", "slice_queries"]


@dataclass(frozen=True)
class DevSplit:
    """``kind`` is ``split`` (then ``split`` names it), ``slice`` (``fraction``) or ``kfold`` (``folds``)."""

    kind: str
    split: str | None = None
    fraction: float | None = None
    folds: int | None = None

    @classmethod
    def parse(cls, text: str, *, where: str = "--dev") -> DevSplit:
        t = str(text).strip()
        head, sep, arg = t.partition(":")
        if sep and head in ("slice", "kfold"):
            try:
                val = float(arg) if head == "slice" else int(arg)
            except ValueError:
                raise ConfigError(f"{where} {t!r}: expected slice:F (0 < F < 1) or kfold:N (N >= 2)") from None
            if head == "slice":
                if not 0.0 < val < 1.0:
                    raise ConfigError(f"{where} {t!r}: the dev share must lie strictly between 0 and 1")
                return cls("slice", fraction=float(val))
            if val < 2:
                raise ConfigError(f"{where} {t!r}: k-fold needs at least 2 folds")
            return cls("kfold", folds=int(val))
        if not t or sep:
            raise ConfigError(f"{where} {t!r}: expected a split name (e.g. train), slice:F or kfold:N")
        return cls("split", split=t)

    def check_against(self, test_split: str, *, where: str = "--dev") -> None:
        """A named dev split must not be (or contain) the test split."""
        if self.kind != "split":
            return
        common = set(str(self.split).split("+")) & set(str(test_split).split("+"))
        if common:
            raise ConfigError(f"{where} {self.split!r} shares the split {min(common)!r} with the test split "
                              f"{test_split!r}: tune on another split (e.g. train), slice:F or kfold:N")

    def describe(self) -> str:
        if self.kind == "split":
            return f"split {self.split}"
        if self.kind == "slice":
            return f"slice {self.fraction:g} of the test queries (held apart)"
        return f"{self.folds}-fold cross-validation over the test queries"

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **{k: v for k, v in (("split", self.split), ("fraction", self.fraction),
                                                         ("folds", self.folds)) if v is not None}}


def leaks(dev: Mapping[str, str], test: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """``(dev_id, test_id, why)`` for every dev query sharing an id with, or equal in normalised
    text to, a test query (sorted by dev id, then test id)."""
    from ..train.hygiene import find_leaks

    out = [(q, q, "same query id") for q in dev if q in test]
    same = {q for q, _, _ in out}
    out += [(q, t, "same text after normalisation") for q, t in find_leaks(dev, test) if q not in same]
    return sorted(out)


def _groups(ids: Sequence[str], texts: Mapping[str, str]) -> list[list[str]]:
    by: dict[str, list[str]] = {}
    for q in ids:
        key = normalise_query(texts.get(q, "")) or f"\0{q}"
        by.setdefault(key, []).append(q)
    return list(by.values())


def slice_queries(ids: Sequence[str], texts: Mapping[str, str], *, fraction: float,
                  seed: int) -> tuple[list[str], list[str]]:
    """``(dev ids, test ids)``, both in the input order (module docstring)."""
    groups = _groups(ids, texts)
    order = np.random.default_rng(seed).permutation(len(groups))
    n_dev = round(fraction * len(groups))
    if n_dev < 1 or n_dev >= len(groups):
        raise ConfigError(f"--dev slice:{fraction:g} leaves an empty dev or test set ({len(groups)} query groups)")
    dev = {q for i in order[:n_dev].tolist() for q in groups[i]}
    return [q for q in ids if q in dev], [q for q in ids if q not in dev]


def assign_folds(ids: Sequence[str], texts: Mapping[str, str], *, folds: int, seed: int) -> dict[str, int]:
    """Query id -> fold (0-based), by groups of equal normalised text (module docstring)."""
    groups = _groups(ids, texts)
    if len(groups) < folds:
        raise ConfigError(f"--dev kfold:{folds}: only {len(groups)} distinct queries")
    order = np.random.default_rng(seed).permutation(len(groups))
    out: dict[str, int] = {}
    for pos, g in enumerate(order):
        for q in groups[int(g)]:
            out[q] = pos % folds
    return out
