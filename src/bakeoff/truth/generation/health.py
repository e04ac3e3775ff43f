"""Is a generated truth worth evaluating? The kept share and the share of kept queries that read like titles.

A generator can collapse on a corpus nobody tuned it for: most generations rejected, or the survivors
reduced to title fragments ("Document on X", "The X of Y") that name a document instead of asking for
something. Evaluating arms on those says nothing about the corpus. :func:`truth_health` reads a describe
run's counts and kept queries and says, in one line, whether it collapsed, why (the rejection counts)
and what to try.

* **kept share** = kept / sampled documents; below :data:`MIN_KEPT_SHARE` the truth covers too little of
  the sample to speak for the corpus.
* **title-like** (:func:`looks_like_title`, question style only): a query that is not a question — no
  question mark, no interrogative or auxiliary first word — and either opens like a label
  ("document(s)/paper(s)/article(s)/information on|about", or starts with an article and has at most
  eight words) or has at least half of its words in its document's title
  (:func:`bakeoff.truth.filters.leak.title_copy`). Above :data:`MAX_TITLE_LIKE` of the kept queries, the
  truth is title fragments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..filters.leak import title_copy

__all__ = ["MAX_TITLE_LIKE", "MIN_KEPT_SHARE", "looks_like_title", "truth_health"]

#: Below this share of sampled documents kept, the truth is reported as collapsed.
MIN_KEPT_SHARE = 0.5
#: Above this share of title-like kept queries, the truth is reported as title fragments.
MAX_TITLE_LIKE = 0.3

_ASK = re.compile(r"^(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|should|"
                  r"would|will|has|have|had|may|might|must|shall|find|show|list|explain|compare|describe|tell|give|"
                  r"qu[eé]|cu[aá]l|cu[aá]les|qui[eé]n|cu[aá]ndo|d[oó]nde|c[oó]mo|por qu[eé]|es|son|puede|hay)\b",
                  re.IGNORECASE)
_LABEL = re.compile(r"^(?:documents?|papers?|articles?|information|studies|research|texts?|documentos?|art[ií]culos?|"
                    r"informaci[oó]n|estudios?)\s+(?:on|about|of|regarding|concerning|sobre|acerca|de)\b", re.IGNORECASE)
_ARTICLE = re.compile(r"^(?:the|a|an|el|la|los|las|un|una)\s", re.IGNORECASE)


def looks_like_title(query: str, title: str = "") -> bool:
    """True when ``query`` reads as a label of a document rather than a need (module docstring)."""
    q = " ".join(query.split())
    if not q or "?" in q or "¿" in q or _ASK.match(q):
        return False
    if _LABEL.match(q):
        return True
    if _ARTICLE.match(q) and len(q.split()) <= 8:
        return True
    return bool(title) and title_copy(q, title) >= 0.5


def truth_health(*, sampled: int, kept: int, rejections: Mapping[str, int], queries: Sequence[str],
                 titles: Sequence[str], style: str = "question",
                 kept_of: str = "sampled documents kept a query") -> dict[str, Any]:
    """``{"ok", "kept_share", "title_like", "title_like_share", "reasons": [str], "line": str | None}``.

    ``queries`` and ``titles``: the kept queries and their documents' titles, in the same order. ``line`` is
    the one-line warning (``None`` when ``ok``): what went wrong, the three largest rejection counts and
    what to try. ``kept_of`` names what ``sampled`` counts and ``kept`` keeps (cluster mode: the questions
    asked)."""
    share = kept / sampled if sampled else 0.0
    title_like = sum(looks_like_title(q, t) for q, t in zip(queries, titles, strict=True)) if style == "question" else 0
    tl_share = title_like / len(queries) if queries else 0.0
    reasons = []
    if share < MIN_KEPT_SHARE:
        reasons.append(f"only {kept} of {sampled} {kept_of} ({share:.0%})")
    if tl_share > MAX_TITLE_LIKE:
        reasons.append(f"{title_like} of {len(queries)} kept queries read like titles, not needs ({tl_share:.0%})")
    line = None
    if reasons:
        top = sorted(((k, v) for k, v in rejections.items() if v), key=lambda kv: -kv[1])[:3]
        why = ", ".join(f"{k} {v}" for k, v in top) or "none"
        line = ("warning: the generated truth is too weak to decide on: " + "; ".join(reasons)
                + f" (most rejected: {why}). Try a stronger model (--llm local:qwen-coder-1.5b or a hosted one), "
                  "--queries-like FILE with real queries of this collection, or more documents (-n).")
    return {"ok": not reasons, "kept_share": share, "title_like": title_like, "title_like_share": tl_share,
            "reasons": reasons, "line": line}
