"""Split hygiene: training data must not contain a test query or a near-duplicate of one.

Near-duplicate means equal after :func:`normalise`: Unicode NFKC, casefold,
punctuation removed (every character whose Unicode category starts with ``P``
or ``S``), whitespace runs collapsed to one space, ends stripped. So
``"Does  ACE2 bind?"`` and ``"does ace2 bind"`` collide; ``"ACE2 binds"`` does not.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping

from ..errors import ConfigError

__all__ = ["normalise", "find_leaks", "check_hygiene", "SplitLeakError"]


class SplitLeakError(ConfigError):
    """Training data contains test queries (exit 2, one line)."""


def normalise(text: str) -> str:
    """NFKC, casefold, drop punctuation/symbols, collapse whitespace."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = "".join(" " if unicodedata.category(c)[0] in "PSZC" and not c.isspace() else c for c in t)
    return " ".join(t.split())


def find_leaks(train: Mapping[str, str], test: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(train_id, test_id)`` pairs whose texts are equal after :func:`normalise`.

    Sorted by train id then test id; empty normalised texts never match.
    """
    by_norm: dict[str, list[str]] = {}
    for tid, text in test.items():
        n = normalise(text)
        if n:
            by_norm.setdefault(n, []).append(tid)
    out = []
    for qid, text in train.items():
        for tid in by_norm.get(normalise(text), ()):
            out.append((qid, tid))
    return sorted(out)


def check_hygiene(
    train: Mapping[str, str], tests: Iterable[tuple[str, Mapping[str, str]]], *, drop: bool = False
) -> tuple[int, list[tuple[str, str, str]]]:
    """Check training query texts against every held-out split.

    ``tests`` is ``(label, {qid: text})`` per held-out split. Any training query
    equal (after :func:`normalise`) to a test query raises :class:`SplitLeakError`,
    unless ``drop`` is true: then the leaks are returned for the caller to remove.
    Returns (number of test queries checked, ``[(train_id, label, test_id), ...]``).
    """
    n = 0
    found: list[tuple[str, str, str]] = []
    for label, test in tests:
        n += len(test)
        leaks = find_leaks(train, test)
        if leaks and not drop:
            qid, tid = leaks[0]
            raise SplitLeakError(
                f"training data contains {len(leaks)} query text(s) equal or near-duplicate to {label} queries "
                f"(e.g. training query {qid!r} ~ test query {tid!r}); remove them or pass --drop-leaks"
            )
        found += [(q, label, t) for q, t in leaks]
    return n, found
