"""The structured-output form a client uses, settled with the server once
(:mod:`bakeoff.truth.llm.structured` describes the forms, the order they are tried and refusals).

The first chat request goes alone and settles the form; requests that waited for it are told to look in
the cache again (their key may have changed with the form) and ask again. A server that refuses the
request itself sees it once: the refusal is remembered and later requests raise it unsent.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .structured import FORMS, Form, Refusal, RequestRefused, fallback_note

if TYPE_CHECKING:  # pragma: no cover
    from .client import ChatRequest, ResponseFormat

log = logging.getLogger("bakeoff")

#: Sends the request in a form and returns the server's answer; raises RequestRefused for a refusal.
Send = Callable[[Form], Any]


class FormNegotiation:
    """The forms to try (all of :data:`~bakeoff.truth.llm.structured.FORMS` for ``auto``, else the one
    configured), the one the server took, and a refusal that ended the client."""

    def __init__(self, response_format: ResponseFormat, *, url: str) -> None:
        self.url = url
        self.forms: tuple[Form, ...] = FORMS if response_format == "auto" else (response_format,)
        #: The form the server took (``None`` until the first chat request is answered).
        self.taken: Form | None = None
        self._negotiating = threading.Lock()
        self._refused: RequestRefused | None = None  # once set, every request raises it without asking

    @property
    def in_use(self) -> Form:
        """The form requests are sent and keyed in: the one taken, else the first to try."""
        return self.taken or self.forms[0]

    def ask(self, req: ChatRequest, send: Send) -> Any:
        """The server's answer to ``req`` (through ``send``) in the form in use; ``None`` when the request
        waited for another to settle the form (look in the cache again, then ask again)."""
        if self._refused is not None:
            raise self._refused
        try:
            if req.prompt is None and self.taken is None:
                with self._negotiating:
                    if self._refused is not None:
                        raise self._refused
                    if self.taken is None:
                        return self._negotiate(send)
                return None
            return send(self.in_use)
        except RequestRefused as exc:
            self._refused = exc
            raise

    def _negotiate(self, send: Send) -> Any:
        """Send the request in each form to try until the server takes one; keep that form."""
        tried: list[tuple[Form, Refusal]] = []
        for form in self.forms:
            try:
                resp = send(form)
            except RequestRefused as exc:
                if not exc.refusal.about_format or form == self.forms[-1]:
                    raise RequestRefused(exc.url, exc.status, exc.refusal, tried=tried) from None
                tried.append((form, exc.refusal))
                continue
            self.taken = form
            if tried:
                log.warning("%s", fallback_note(self.url, tried, form))
            return resp
        raise AssertionError("unreachable: the last form returns or raises")  # pragma: no cover
