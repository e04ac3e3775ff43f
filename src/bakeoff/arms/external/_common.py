"""Helpers shared by the external arms: the error type, secret redaction, masks."""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from ...data.model import Corpus
from ...data.ranking import rank
from ...errors import BakeoffError

__all__ = ["ExternalError", "redact_url", "SECRET_WORDS", "is_secret_name", "ranked_from_hits", "apply_mask"]

#: Names (of URL query parameters, headers, connection keys) whose values are secrets.
SECRET_WORDS = ("password", "passwd", "pwd", "secret", "token", "key", "auth", "authorization", "credential",
                "signature", "sig")


class ExternalError(BakeoffError):
    """An external retriever failed (unreachable, bad response, non-zero exit ...). One line."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


def is_secret_name(name: str) -> bool:
    """True when a parameter/header name looks like it carries a secret (``api_key``, ``Authorization`` ...)."""
    low = name.lower().replace("-", "_")
    return any(w in low for w in SECRET_WORDS)


def redact_url(url: str) -> str:
    """``url`` with the password of its user-info and secret-looking query values replaced by ``***``.

    ``postgresql://bob:hunter2@db:5432/x?sslmode=require&password=p`` ->
    ``postgresql://bob:***@db:5432/x?sslmode=require&password=***``. Key/value
    connection strings (``host=db password=p``) have their secret values redacted too.
    """
    if "://" not in url:
        return re.sub(r"(?i)\b(\w*(?:password|passwd|pwd|secret|token|key)\w*)\s*=\s*('[^']*'|\S+)", r"\1=***", url)
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, sep, _pw = userinfo.partition(":")
        netloc = f"{user}:***@{hostport}" if sep else f"{user}@{hostport}"
    query = parts.query
    if query:
        pairs = [(k, "***" if is_secret_name(k) else v) for k, v in parse_qsl(query, keep_blank_values=True)]
        query = urlencode(pairs, safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def ranked_from_hits(ids: Sequence[object], scores: Sequence[object] | None, k: int) -> tuple[tuple[str, float], ...]:
    """Top-``k`` of an external hit list under the package tie rule.

    Without ``scores`` the i-th of n hits (0-based) gets score ``n - i``, so the
    system's own order is kept. A doc id returned twice keeps its best score.
    """
    n = len(ids)
    vals = [float(n - i) for i in range(n)] if scores is None else [float(s) for s in scores]  # type: ignore[arg-type]
    best: dict[str, float] = {}
    for d, s in zip(ids, vals):
        key = str(d)
        if key not in best or s > best[key]:
            best[key] = s
    return rank(best)[:k]


def apply_mask(pairs: tuple[tuple[str, float], ...], corpus: Corpus, mask: np.ndarray | None) -> tuple[tuple[str, float], ...]:
    """Drop documents whose mask row is False (and, under a mask, ids unknown to the corpus)."""
    if mask is None:
        return pairs
    pos = corpus.position
    return tuple((d, s) for d, s in pairs if d in pos and bool(mask[pos[d]]))
