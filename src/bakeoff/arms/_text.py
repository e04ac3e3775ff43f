"""Shared lexical analysis: one tokenizer definition for BM25 and TF-IDF, at index and query time.

Tokens are ``(?u)\\b\\w\\w+\\b`` matches of the lower-cased text (bm25s' and
scikit-learn's default pattern), minus stopwords, optionally Snowball-stemmed
with PyStemmer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from ..errors import ConfigError, MissingDependencyError

__all__ = ["TOKEN_PATTERN", "make_analyzer", "make_stemmer", "stopword_list"]

TOKEN_PATTERN = r"(?u)\b\w\w+\b"


def stopword_list(name: str | None) -> tuple[str, ...]:
    """bm25s' stopword list for a language name/code; ``None``/"none" gives no stopwords."""
    if name is None or str(name).lower() in ("none", "false", "", "off"):
        return ()
    from bm25s.tokenization import _infer_stopwords

    try:
        words = _infer_stopwords(str(name).lower())
    except Exception:  # noqa: BLE001 - bm25s raises any type for an unknown language
        words = None
    if not words:
        raise ConfigError(f"unknown stopword language {name!r} (e.g. english, spanish, none)")
    return tuple(words)


@lru_cache(maxsize=16)
def make_stemmer(language: str | None) -> Callable[[list[str]], list[str]] | None:
    """PyStemmer's Snowball ``stemWords`` for ``language``; ``None``/"none" gives no stemming."""
    if language is None or str(language).lower() in ("none", "false", "", "off"):
        return None
    try:
        import Stemmer
    except ImportError:
        raise MissingDependencyError("PyStemmer", None, "stemming") from None
    try:
        return Stemmer.Stemmer(str(language).lower()).stemWords
    except KeyError:
        raise ConfigError(
            f"unknown stemmer language {language!r}; PyStemmer knows: {', '.join(Stemmer.algorithms())}"
        ) from None


def make_analyzer(
    *, lower: bool = True, stopwords: str | None = "english", stemmer: str | None = None
) -> Callable[[str], list[str]]:
    """A ``text -> tokens`` function implementing the rule in this module's docstring."""
    pattern = re.compile(TOKEN_PATTERN)
    stop = frozenset(stopword_list(stopwords))
    stem = make_stemmer(stemmer)

    def analyze(text: str) -> list[str]:
        words = [w for w in pattern.findall(text.lower() if lower else text) if w not in stop]
        return stem(words) if stem is not None else words

    return analyze
