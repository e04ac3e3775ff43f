"""The leak metric: how much of a query's distinctive vocabulary is copied from its source.

    rare(t)  = { w : w a lowercase letter-only token of t, len(w) >= 5, w not in COMMON[lang] }
    leak(q, s) = |rare(q) ∩ rare(s)| / |rare(q)|        (0.0 when rare(q) is empty)

Tokens are maximal runs of Unicode letters (``[^\\W\\d_]+``), so digits and
underscores split words. A query that only paraphrases in common words scores
0; one that copies every distinctive term of its document scores 1. The
common-word lists (``wordlists/en.txt``, ``wordlists/es.txt``) hold the 3000 most
frequent words of >= 5 letters per language (from wordfreq 3.1.1, CC BY-SA 4.0).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache
from importlib.resources import files

import numpy as np

__all__ = [
    "DEFAULT_BINS",
    "LANGUAGES",
    "common_words",
    "copied_run",
    "leak",
    "leak_histogram",
    "leak_stats",
    "mask_rare_terms",
    "rare_terms",
    "title_copy",
    "words",
]

LANGUAGES: tuple[str, ...] = ("en", "es")
_TOKEN = re.compile(r"[^\W\d_]+")
#: Histogram bin edges over [0, 1]; the last bin is closed ([0.9, 1.0]).
DEFAULT_BINS: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@cache
def common_words(lang: str = "en") -> frozenset[str]:
    """The shipped common-word list of ``lang`` (``en`` or ``es``)."""
    if lang not in LANGUAGES:
        raise ValueError(f"no common-word list for language {lang!r}; known: {', '.join(LANGUAGES)}")
    text = files("bakeoff.truth.filters").joinpath("wordlists", f"{lang}.txt").read_text(encoding="utf-8")
    return frozenset(w.strip() for w in text.splitlines() if w.strip() and not w.startswith("#"))


def rare_terms(text: str, *, lang: str = "en", min_len: int = 5) -> frozenset[str]:
    """Lowercase letter tokens of ``text`` with at least ``min_len`` letters that are not common."""
    common = common_words(lang)
    return frozenset(w for w in _TOKEN.findall(text.lower()) if len(w) >= min_len and w not in common)


def leak(query: str, source: str, *, lang: str = "en") -> float:
    """|rare(query) ∩ rare(source)| / |rare(query)|; 0.0 when the query has no rare term."""
    rq = rare_terms(query, lang=lang)
    if not rq:
        return 0.0
    return len(rq & rare_terms(source, lang=lang)) / len(rq)


def mask_rare_terms(text: str, *, share: float, rng: np.random.Generator, lang: str = "en",
                    placeholder: str = "…") -> str:
    """``text`` with a drawn ``share`` of its distinct rare terms (:func:`rare_terms`, the leak vocabulary) replaced by
    ``placeholder`` at every occurrence, any case. The terms are visited in sorted order and each is masked when
    ``rng.random() < share``: the same text, share and seed mask the same words. A model shown the result cannot
    copy those words into its query."""
    hide = {w for w in sorted(rare_terms(text, lang=lang)) if rng.random() < share}
    if not hide:
        return text
    return _TOKEN.sub(lambda m: placeholder if m.group(0).lower() in hide else m.group(0), text)


_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The words of ``text`` in order, lower-cased: maximal runs of Unicode letters and digits (``[^\\W_]+``),
    so punctuation, spaces and underscores split them. The word unit of :func:`title_copy`, :func:`copied_run`
    and :func:`bakeoff.truth.filters.drift.borrowed_words`."""
    return _WORD.findall(text.lower())


def title_copy(query: str, title: str) -> float:
    """The share of the query's words (lowercase letter/digit runs of >= 3 characters) found in the
    title's words; 0.0 when the query has fewer than two such words or the title fewer than two.

        title_copy(q, t) = |{w in words(q) : w in words(t)}| / |words(q)|     (words(q) counted with repeats)

    A query that restates its document's title ("PTH signaling in osteoprogenitors" for *PTH Signaling
    in Osteoprogenitors Is Essential for ...*) names the document instead of asking what its content
    answers."""
    wq = [w for w in words(query) if len(w) >= 3]
    wt = {w for w in words(title) if len(w) >= 3}
    if len(wq) < 2 or len(wt) < 2:
        return 0.0
    return sum(w in wt for w in wq) / len(wq)


def copied_run(query: str, source: str) -> int:
    """The length, in words, of the longest run of consecutive words of ``query`` found in the same order in
    ``source`` (words: lowercase letter/digit runs, ``[^\\W_]+``).

    A real query may share many words with its document but rarely a long verbatim stretch (human
    queries are checked against the default threshold on the benchmarks page); a generated "query" of ten
    or more copied words is a pasted sentence, or the title running on into the text."""
    q, d = words(query), words(source)
    where: dict[str, list[int]] = {}
    for j, w in enumerate(d):
        where.setdefault(w, []).append(j)
    best = 0
    for i, w in enumerate(q):
        if len(q) - i <= best:
            break
        for j in where.get(w, ()):
            k = 0
            while i + k < len(q) and j + k < len(d) and q[i + k] == d[j + k]:
                k += 1
            best = max(best, k)
    return best


def leak_histogram(values: Iterable[float], *, bins: Sequence[float] = DEFAULT_BINS) -> dict[str, int]:
    """Counts per bin ``[lo, hi)`` (the last bin closed), keyed ``"lo-hi"`` with two decimals."""
    vals = np.asarray(list(values), dtype=float)
    counts, _ = np.histogram(vals, bins=np.asarray(bins, dtype=float))
    return {f"{lo:.2f}-{hi:.2f}": int(c) for lo, hi, c in zip(bins[:-1], bins[1:], counts, strict=True)}


def leak_stats(values: Iterable[float], *, threshold: float | None = None) -> dict[str, object]:
    """``n``, ``mean``, ``median``, ``share_above`` (> threshold) and ``histogram`` of leak values."""
    vals = [float(v) for v in values]
    arr = np.asarray(vals, dtype=float)
    out: dict[str, object] = {
        "n": len(vals),
        "mean": float(arr.mean()) if vals else 0.0,
        "median": float(np.median(arr)) if vals else 0.0,
        "histogram": leak_histogram(vals),
    }
    if threshold is not None:
        out["threshold"] = threshold
        out["share_above"] = float((arr > threshold).mean()) if vals else 0.0
    return out
