"""Prompts and answer schemas for synthetic ground truth.

The default local model (Gemma 3 270M) is a *base* model, so every prompt is
few-shot: worked examples as earlier chat turns, then the real task. The
examples come first so a llama.cpp server can reuse their KV cache between
requests. Every string field has a ``max_length`` (→ JSON-schema ``maxLength``),
otherwise grammar-constrained generation can run to ``max_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["describe_schema", "cluster_schema", "describe_messages", "describe_completion", "cluster_messages",
           "DESCRIBE_SHOT_QUERIES",
           "DESCRIBE_INSTRUCTION", "CLUSTER_INSTRUCTION"]

DESCRIBE_INSTRUCTION = (
    "Write the search query a layman would type to find this document. Describe what it is about "
    "in everyday words. Do not copy the document's distinctive or technical terms."
)

CLUSTER_INSTRUCTION = (
    "Write {n} questions a user might ask. For every question judge EVERY document by its id: "
    "relevant or not, a distinct rank (1 = most useful) and a short reason."
)

_DESCRIBE_SHOTS: tuple[tuple[str, str], ...] = (
    ("Aspirin irreversibly inhibits cyclooxygenase-1, reducing thromboxane A2 synthesis in platelets "
     "and lowering the risk of myocardial infarction.",
     "why does a common painkiller help prevent heart attacks"),
    ("shutil.copytree(src, dst): Recursively copy an entire directory tree rooted at src to a directory "
     "named dst and return the destination directory.",
     "how do I duplicate a whole folder with everything inside it"),
    ("Regular physical exercise improves insulin sensitivity in adults with type 2 diabetes.",
     "does working out help people with high blood sugar"),
    ("str.upper(): Return a copy of the string with all the cased characters converted to uppercase.",
     "make text all capital letters"),
)
#: The example answers; a generated query equal to one of them is rejected as a copy.
DESCRIBE_SHOT_QUERIES: frozenset[str] = frozenset(q for _, q in _DESCRIBE_SHOTS)
_COMPLETION_HEADER = "Search log: each document, then what a non-expert typed into the search box to find it.\n\n"

_CLUSTER_SHOT_DOCS: tuple[tuple[str, str], ...] = (
    ("D1", "Vitamin D deficiency is associated with weaker bones and more fractures in older adults."),
    ("D2", "Regular walking lowers blood pressure in middle-aged people."),
    ("D3", "Calcium and vitamin D supplements reduce hip fractures in nursing home residents."),
)
_CLUSTER_SHOT_ANSWER: dict[str, Any] = {"questions": [{
    "question": "do supplements help old people avoid broken bones",
    "judgments": [
        {"id": "D3", "relevant": True, "rank": 1, "reason": "supplements cut hip fractures"},
        {"id": "D1", "relevant": True, "rank": 2, "reason": "low vitamin D, more fractures"},
        {"id": "D2", "relevant": False, "rank": 3, "reason": "about blood pressure"},
    ]}]}


def describe_schema() -> type[Any]:
    """``{"query": str (<= 160 chars)}``."""
    from pydantic import BaseModel, Field

    class Description(BaseModel):
        query: str = Field(max_length=160)

    return Description


def cluster_schema(*, max_questions: int = 3, max_docs: int = 16) -> type[Any]:
    """``{"questions": [{"question", "judgments": [{"id", "relevant", "rank", "reason"}]}]}``.

    Deliberately permissive about ids and ranks: duplicates, unknown ids and
    omissions are *repaired and counted* (see :mod:`bakeoff.truth.repair`), not rejected.
    """
    from pydantic import BaseModel, Field

    class Judgment(BaseModel):
        id: str = Field(max_length=8)
        relevant: bool
        rank: int
        reason: str = Field(max_length=80)

    class ClusterQuestion(BaseModel):
        question: str = Field(max_length=200)
        judgments: list[Judgment] = Field(max_length=max_docs)

    class ClusterAnswer(BaseModel):
        questions: list[ClusterQuestion] = Field(max_length=max_questions)

    return ClusterAnswer


def _user_describe(text: str) -> str:
    return f"Document:\n{text}\n\n{DESCRIBE_INSTRUCTION}\nAnswer as JSON: {{\"query\": \"...\"}}"


def describe_messages(text: str) -> tuple[dict[str, str], ...]:
    """Few-shot chat turns asking for a layman's query for ``text``."""
    msgs: list[dict[str, str]] = []
    for doc, query in _DESCRIBE_SHOTS:
        msgs.append({"role": "user", "content": _user_describe(doc)})
        msgs.append({"role": "assistant", "content": json.dumps({"query": query})})
    msgs.append({"role": "user", "content": _user_describe(text)})
    return tuple(msgs)


def describe_completion(text: str) -> tuple[str, str]:
    """``(prompt, prefill)`` for a few-shot *completion*: a search log of documents and the
    JSON-encoded layman query for each, ending with ``text`` and an opened ``{"query": "``."""
    parts = [_COMPLETION_HEADER]
    for doc, query in _DESCRIBE_SHOTS:
        parts.append(f"Document: {doc}\nSearched for: {json.dumps({'query': query})}\n\n")
    parts.append(f"Document: {text}\nSearched for: ")
    return "".join(parts), '{"query": "'


def _user_cluster(docs: Sequence[tuple[str, str]], n: int) -> str:
    listing = "\n".join(f"[{label}] {text}" for label, text in docs)
    return f"Documents:\n{listing}\n\n{CLUSTER_INSTRUCTION.format(n=n)}\nAnswer as JSON."


def cluster_messages(docs: Sequence[tuple[str, str]], *, n_questions: int) -> tuple[dict[str, str], ...]:
    """Few-shot chat turns asking for ``n_questions`` questions judged over ``docs`` (label, text)."""
    return (
        {"role": "user", "content": _user_cluster(_CLUSTER_SHOT_DOCS, 1)},
        {"role": "assistant", "content": json.dumps(_CLUSTER_SHOT_ANSWER)},
        {"role": "user", "content": _user_cluster(docs, n_questions)},
    )
