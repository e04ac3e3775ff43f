"""Structured output: the forms of ``response_format`` that OpenAI-compatible servers take, the order in
which they are tried, and how to read a server's refusal of a request.

Forms (:data:`FORMS`, in the order :class:`~bakeoff.truth.llm.client.LLMClient` tries them when
:attr:`~bakeoff.truth.llm.client.LLMConfig.response_format` is ``auto``):

* ``json_schema``: ``{"type": "json_schema", "json_schema": {"name": N, "schema": S}}`` (OpenAI, vLLM,
  ollama, llama.cpp's ``llama-server``);
* ``json_object_schema``: ``{"type": "json_object", "schema": S}`` (llama-cpp-python's server, which
  refuses the first form; ``llama-server`` takes it too);
* ``none``: no ``response_format`` at all; the answer is free text.

Whatever the form, every answer is parsed and validated against ``S`` by the client.

**Negotiation** (``auto``): the client sends its first chat request in the first form; while the server
refuses the form (a :func:`refusal` whose field is the response format), the same request goes again in
the next form. The first form accepted is kept for the client's life, replicas included (they are
identical servers by definition), and one warning line says which form was refused and which is used.
A refusal of any other field, or of every form, is a :class:`RequestRefused` (a one-line
:class:`~bakeoff.errors.ConfigError` naming the field) and the client asks nothing more.

**Cache identity** (:func:`key_form`): the two constrained forms are two spellings of one constraint
(decoding restricted to the grammar of ``S``; ``llama-server`` answers the same bytes to both), so both
are keyed ``json_schema``; ``none`` decodes without a constraint and may answer otherwise, so it is keyed
``none``. A server that accepts ``json_object`` but ignores its ``schema`` decodes less constrained than
its key says; such answers still had to validate against ``S``.

**Refusals** (:func:`refusal`): a response with status 400, 422 or 500 refuses the request itself when
its body names a field (OpenAI's ``error.param``, a pydantic/FastAPI ``loc``, or a mention of
``response_format`` or a JSON schema) or says ``validation error``. Fields that carry the request's
*content* (``messages``, ``prompt``: "too long for the context") are that request's failure, not a
refusal. A 500 that is a refusal is not retried (asking again cannot help).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ...errors import ConfigError

__all__ = ["FORMS", "Form", "Refusal", "RequestRefused", "describe_form", "fallback_note", "is_refusal", "key_form",
           "refusal", "response_format_body"]

Form = Literal["json_schema", "json_object_schema", "none"]

#: The forms in the order they are tried.
FORMS: tuple[Form, ...] = ("json_schema", "json_object_schema", "none")

#: Statuses whose body is read for a refusal.
REFUSAL_STATUS = frozenset({400, 422, 500})

#: Fields holding the request's content: an error about them concerns one request, not the client's setup.
CONTENT_FIELDS = frozenset({"messages", "prompt"})

_FORM_WORDS = {"json_schema": "response_format json_schema",
               "json_object_schema": "response_format json_object with a schema",
               "none": "no response_format (plain text, validated against the schema)"}


def describe_form(form: Form) -> str:
    """How a form reads in messages, e.g. ``response_format json_object with a schema``."""
    return _FORM_WORDS[form]


def key_form(form: Form) -> str:
    """The value a form contributes to the cache key: ``json_schema`` (constrained) or ``none``."""
    return "none" if form == "none" else "json_schema"


def response_format_body(form: Form, name: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` member of a chat request in ``form`` (``None``: send no such member)."""
    if form == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
    if form == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    return None


@dataclass(frozen=True)
class Refusal:
    """A server's refusal of a request: the ``field`` it names (dotted, e.g. ``response_format.type``;
    ``request`` when it names none) and its ``message`` on one line."""

    field: str
    message: str

    @property
    def about_format(self) -> bool:
        """Whether the refused field is the response format (so another form may be accepted)."""
        return self.field.split(".")[0] == "response_format"


_LOC = re.compile(r"""['"]loc['"]:\s*[(\[]([^)\]]*)[)\]]""")
_MSG = re.compile(r"""['"]msg['"]:\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")
_INPUT = re.compile(r"""['"]input['"]:\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")
_FORMAT_WORDS = re.compile(r"\bresponse_format\b|\bjson[ _]schema\b", re.IGNORECASE)


def _dotted(loc: Sequence[Any]) -> str | None:
    parts = [str(p) for p in loc if str(p) not in ("body", "")]
    return ".".join(parts) or None


def _literal(text: str) -> str:
    try:
        return str(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        return text.strip("'\"")


def _parse(body: str) -> tuple[str, str | None]:
    """``(message, field)`` from an error body: OpenAI ``{"error": {"message", "param"}}``, FastAPI
    ``{"detail": [{"loc", "msg"}]}``, a pydantic error text inside a message, or the raw text."""
    try:
        obj = json.loads(body)
    except ValueError:
        obj = None
    message, field = body, None
    if isinstance(obj, dict):
        err, detail = obj.get("error"), obj.get("detail")
        if isinstance(err, dict):
            message = str(err.get("message") or body)
            if isinstance(err.get("param"), str) and err["param"]:
                field = err["param"]
        elif isinstance(err, str):
            message = err
        elif isinstance(detail, list) and detail and isinstance(detail[0], dict):
            first = detail[0]
            loc = first.get("loc")
            field = _dotted(loc) if isinstance(loc, list) else None
            message = str(first.get("msg") or body)
            if "input" in first and not isinstance(first["input"], dict | list):
                message += f" (got {first['input']!r})"
        elif isinstance(detail, str):
            message = detail
    if field is None:
        m = _LOC.search(message)
        if m:
            field = _dotted([_literal(p.strip()) for p in m.group(1).split(",") if p.strip()])
    msg, got = _MSG.search(message), _INPUT.search(message)
    if msg:  # a pydantic error inside the message: its own words, without the traceback that follows
        message = _literal(msg.group(1)) + (f" (got {_literal(got.group(1))!r})" if got else "")
    return " ".join(message.split()), field


def is_refusal(status: int, body: str) -> bool:
    """Whether an error response is a :func:`refusal` (the ``no_retry`` test of :class:`~bakeoff.net.HttpClient`)."""
    return refusal(status, body) is not None


def refusal(status: int | None, body: str) -> Refusal | None:
    """The :class:`Refusal` an error response makes, or ``None`` when it is not one (module docstring)."""
    if status not in REFUSAL_STATUS or not body:
        return None
    message, field = _parse(body)
    if field is None and _FORMAT_WORDS.search(message):
        field = "response_format"
    if field is not None and field.split(".")[0] in CONTENT_FIELDS:
        return None
    if field is None:
        if "validation error" not in message.lower():
            return None
        field = "request"
    cut = message if len(message) <= 200 else message[:199] + "…"
    return Refusal(field=field, message=cut)


class RequestRefused(ConfigError):
    """A server refused the shape of a request (every request would fail alike): one line naming the field."""

    def __init__(self, url: str, status: int, refused: Refusal, *, tried: Sequence[tuple[Form, Refusal]] = ()) -> None:
        self.url, self.status, self.refusal = url, status, refused
        forms = "; ".join(f"{describe_form(f)}: {r.message}" for f, r in tried)
        also = f" (refused before: {forms})" if forms else ""
        super().__init__(f"{url} refuses the request: {refused.message} (HTTP {status}){also}", field=refused.field)


def fallback_note(url: str, tried: Sequence[tuple[Form, Refusal]], using: Form) -> str:
    """The one warning line of a fallback: the forms refused (with the server's words) and the form used."""
    refused = "; ".join(f"{describe_form(f)} ({r.message})" for f, r in tried)
    return f"{url} refuses {refused}; asking with {describe_form(using)} from now on"
