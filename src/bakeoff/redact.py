"""Keeping secrets out of text: names that look secret, URLs with their secrets redacted, key scrubbing.

Every message, log line, cache key or report that could quote a secret goes
through this module first.

- :func:`is_secret_name`: a parameter, header or connection-key name carries a
  secret when it contains one of :data:`SECRET_WORDS` (``api_key``,
  ``Authorization``, ``X-Auth-Token``, ``password`` ...).
- :func:`redact_url`: the password of a URL's user-info and the values of its
  secret-looking query parameters become ``***``; so do the secret values of a
  ``key=value`` connection string.
- :func:`scrub`: every known secret, and every piece of one (prefix, suffix or
  middle) that is at least :data:`MIN_SECRET_PART` characters long, becomes
  ``***``, longest pieces first (so an echoed key cut at a truncation boundary,
  or masked by the server to ``sk-abc...wxyz``, does not leak either; pieces
  shorter than that are not a usable credential).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["MIN_SECRET_PART", "SECRET_WORDS", "is_secret_name", "redact_url", "scrub", "url_secrets"]

#: Names (of URL query parameters, headers, connection keys) whose values are secrets.
SECRET_WORDS = ("password", "passwd", "pwd", "secret", "token", "key", "auth", "authorization", "credential",
                "signature", "sig")
#: The shortest piece of a secret that :func:`scrub` still removes.
MIN_SECRET_PART = 6


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


def url_secrets(url: str) -> list[str]:
    """The secret values in ``url``: its user-info password and its secret-looking query values."""
    if "://" not in url:
        return []
    parts = urlsplit(url)
    out = [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if is_secret_name(k) and v]
    if parts.password:
        out.append(parts.password)
    return out


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret, and every piece of one at least :data:`MIN_SECRET_PART`
    characters long, replaced by ``***`` (longest first)."""
    for secret in secrets:
        if not secret:
            continue
        text = text.replace(secret, "***")
        for n in range(len(secret) - 1, MIN_SECRET_PART - 1, -1):
            for i in range(len(secret) - n + 1):
                part = secret[i : i + n]
                if part in text:
                    text = text.replace(part, "***")
    return text
