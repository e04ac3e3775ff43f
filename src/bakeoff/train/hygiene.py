"""Split hygiene: training data must not contain a test query or a near-duplicate of one.

Near-duplicate means equal after :func:`normalise`: Unicode NFKC, casefold,
punctuation removed (every character whose Unicode category starts with ``P``
or ``S``), whitespace runs collapsed to one space, ends stripped. So
``"Does  ACE2 bind?"`` and ``"does ace2 bind"`` collide; ``"ACE2 binds"`` does not.

The policy of ``bakeoff finetune`` (:func:`check_held_out`): training queries are checked
against every held-out split named (``FOLDER[:split]``, default split ``test``), or, when
none is named, against the ``test`` split of the training folder and of the ``--corpus``
folder where they exist. A leak refuses the training unless leaks are dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.clean import normalise_query
from ..errors import ConfigError

__all__ = ["SplitLeakError", "check_held_out", "check_hygiene", "find_leaks", "normalise"]

log = logging.getLogger("bakeoff")

#: The rule as recorded in ``bakeoff_training.json``.
RULE = "NFKC, casefold, punctuation/symbols removed, whitespace collapsed; equal texts leak"


class SplitLeakError(ConfigError):
    """Training data contains test queries (exit 2, one line)."""


normalise = normalise_query  # the one query-normalisation rule (bakeoff.data.clean)


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


def held_out_splits(tests: Sequence[str], *, train_path: Path, corpus: Path | None) -> list[tuple[Path, str]]:
    """The held-out ``(folder, split)`` pairs: each ``FOLDER[:split]`` of ``tests`` (default split
    ``test``), else the ``test`` split of the training folder and of the corpus folder, where present."""
    from .data import parse_dataset_spec

    specs = [parse_dataset_spec(t, default_split="test") for t in tests]
    if not specs:
        for folder in (train_path, corpus):
            if folder is not None and folder.is_dir() and (folder / "qrels" / "test.tsv").exists():
                specs.append((folder, "test"))
    return specs


def check_held_out(train: Mapping[str, str], *, train_path: Path, corpus: Path | None, tests: Sequence[str],
                   drop: bool) -> tuple[dict[str, Any], set[str]]:
    """Check the training query texts ``train`` against the held-out splits (:func:`held_out_splits`;
    a folder without ``corpus.jsonl`` reads ``corpus``). Returns the record written into the model
    folder and the training query ids to drop (leaks, with ``drop``; else a leak raises
    :class:`SplitLeakError`)."""
    from .data import load_split

    checked = []
    sets = []
    for folder, sp in held_out_splits(tests, train_path=train_path, corpus=corpus):
        ds = load_split(folder, sp, corpus=corpus if not (folder / "corpus.jsonl").exists() else None)
        sets.append((f"{folder.name}:{sp}", {q.id: q.text for q in ds.queries}))
        checked.append(f"{folder.name}:{sp}")
    if not sets:
        log.warning("no held-out split found to check training queries against (pass --test FOLDER:split)")
    n, leaks = check_hygiene(train, sets, drop=drop)
    dropped = sorted({q for q, _, _ in leaks})
    if dropped:
        log.warning("dropped %d training queries equal to held-out queries: %s", len(dropped),
                    ", ".join(f"{q}~{lab}/{t}" for q, lab, t in leaks))
    rec = {"checked_against": checked, "n_test_queries": n, "dropped_leaks": [list(x) for x in leaks],
           "rule": RULE}
    return rec, set(dropped)
