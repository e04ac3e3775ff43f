"""Who may talk to the labelling server, and how much: the launch key, the Host and Origin
checks, the body limits and the error answer, as one ASGI middleware (:class:`Guard`).

* **Launch key.** Each server start draws a random key (:func:`new_key`, 32 URL-safe
  characters) and prints it in its URL (``...?key=KEY``). Opening that URL sets the key as a
  cookie (``HttpOnly``, ``SameSite=Strict``, named after the port so two servers on one host
  do not clobber each other's) and redirects to the same page without it. Every page needs
  the cookie; every action (``POST``) needs the cookie *and* the same key in the
  ``X-Bakeoff-Key`` header, which the page's script reads from its own ``<meta>`` (another
  origin can neither read that nor send a custom header without a CORS preflight, which this
  server never grants). Static files need nothing (they hold no data).
* **Host.** The ``Host`` header's name must be one of ``allowed_hosts`` (:func:`allowed_hosts`:
  the address the server is bound to, and ``localhost`` for 127.0.0.1 / ::1), so a DNS name
  rebound to the address is refused with 400.
* **Origin.** An action whose ``Origin`` header is present must come from
  ``http://{Host}``; an action with ``Sec-Fetch-Site`` other than ``same-origin`` or ``none`` is
  refused too (403).
* **Limits.** A request body above :data:`MAX_BODY` bytes is refused with 413 (by its
  ``Content-Length`` or, when streamed, as soon as it passes the limit); a JSON body nested
  deeper than :data:`MAX_DEPTH` is refused with 400 by :func:`check_json_depth` before it is
  parsed.
* **Errors.** Any unexpected exception becomes a 500 page naming a random error id; the log
  gets one line with the id, the request line and the exception's type and message (the
  traceback only at DEBUG level), never the request's body or key.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import secrets
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, quote, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["KEY_HEADER", "MAX_BODY", "MAX_DEPTH", "Guard", "allowed_hosts", "check_json_depth", "cookie_name",
           "new_key"]

log = logging.getLogger("bakeoff")

#: Largest request body accepted, in bytes (an action's body is a few hundred bytes).
MAX_BODY = 64 * 1024
#: Deepest JSON nesting accepted in an action's body (actions are flat objects: depth 1).
MAX_DEPTH = 4
#: The header carrying the launch key on every action.
KEY_HEADER = "x-bakeoff-key"


def new_key() -> str:
    """A fresh launch key: 24 random bytes, URL-safe base64 (32 characters)."""
    return secrets.token_urlsafe(24)


def cookie_name(port: int) -> str:
    """The key cookie's name for a server on ``port``."""
    return f"bakeoff_label_{port}"


def allowed_hosts(bound: str, *, asked: str | None = None) -> list[str]:
    """Host names the server answers to when bound to address ``bound``: the address itself
    (IPv6 also in brackets), ``localhost`` when it is 127.0.0.1 or ::1, and ``asked`` when
    the user gave a name rather than an address. An unspecified address (0.0.0.0, ::) gives
    ``["*"]``: any name (the key still guards every page and action)."""
    try:
        ip = ipaddress.ip_address(bound)
    except ValueError:
        return sorted({bound, *([asked] if asked else [])})
    if ip.is_unspecified:
        return ["*"]
    hosts = {bound, f"[{bound}]"} if ip.version == 6 else {bound}
    if bound in ("127.0.0.1", "::1"):
        hosts.add("localhost")
    if asked:
        try:
            ipaddress.ip_address(asked.strip("[]"))
        except ValueError:
            hosts.add(asked)
    return sorted(hosts)


class BodyRefused(Exception):
    """A request body the server will not read (too large or too deep)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def check_json_depth(raw: bytes, *, limit: int = MAX_DEPTH) -> None:
    """Raise :class:`BodyRefused` (400) when the JSON text ``raw`` nests arrays/objects
    deeper than ``limit`` (brackets inside strings do not count). Linear in ``len(raw)``."""
    depth = 0
    in_str = escaped = False
    for ch in raw.decode("utf-8", errors="replace"):
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                raise BodyRefused(f"the JSON body is nested deeper than {limit} levels", 400)
        elif ch in "]}":
            depth -= 1


def _header(scope: Scope, name: bytes) -> str | None:
    for k, v in scope.get("headers", []):
        if k == name:
            return v.decode("latin-1")
    return None


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _page(status: int, text: str) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    import html

    body = (f'<!doctype html><meta charset="utf-8"><title>{status}</title>'
            f'<p class="message error">{html.escape(text)}</p>').encode()
    return status, [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode())], body


class Guard:
    """The ASGI middleware enforcing the module docstring's rules around ``app``."""

    def __init__(self, app: ASGIApp, *, key: str, port: int, hosts: list[str]) -> None:
        self.app = app
        self.key = key
        self.cookie = cookie_name(port)
        self.hosts = hosts

    def _host_ok(self, host: str | None) -> bool:
        if "*" in self.hosts:
            return True
        return host is not None and _host_name(host).lower() in {h.lower() for h in self.hosts}

    def _cookie_key(self, scope: Scope) -> str | None:
        raw = _header(scope, b"cookie")
        if not raw:
            return None
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(raw)
        except Exception:  # noqa: BLE001 - a malformed cookie header is simply no key
            return None
        morsel = jar.get(self.cookie)
        return morsel.value if morsel is not None else None

    def _same(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.key.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        async def answer(status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
            code, headers, body = _page(status, text)
            await tracked_send({"type": "http.response.start", "status": code, "headers": [*headers, *(extra or [])]})
            await send({"type": "http.response.body", "body": body})

        try:
            host = _header(scope, b"host")
            if not self._host_ok(host):
                await answer(400, "Invalid host header")
                return
            path, method = scope["path"], scope["method"]
            if path.startswith("/static/") or path == "/favicon.ico":
                await self.app(scope, receive, tracked_send)
                return
            if method == "POST":
                if not self._same(self._cookie_key(scope)) or not self._same(_header(scope, KEY_HEADER.encode())):
                    await answer(403, "This action lacks the session key: reload the page from the link "
                                      "bakeoff label printed.")
                    return
                origin = _header(scope, b"origin")
                site = _header(scope, b"sec-fetch-site")
                if (origin is not None and origin != f"http://{host}") or site not in (None, "same-origin", "none"):
                    await answer(403, "Actions are accepted from this server's own pages only.")
                    return
                length = _header(scope, b"content-length")
                if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
                    await answer(413, f"The request body is larger than {MAX_BODY} bytes.")
                    return
                await self.app(scope, _capped(receive), tracked_send)
                return
            if method in ("GET", "HEAD"):
                query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
                if "key" in query:
                    if not self._same(query.pop("key")):
                        await answer(403, "This link's key is not this server's: open the link bakeoff label "
                                          "printed when it started.")
                        return
                    rest = urlencode(query)
                    location = quote(path) + (f"?{rest}" if rest else "")  # the path as sent: percent-encoded
                    cookie = f"{self.cookie}={self.key}; Path=/; HttpOnly; SameSite=Strict"
                    await answer(303, "Opening the page.", [(b"location", location.encode("latin-1")),
                                                            (b"set-cookie", cookie.encode())])
                    return
            if not self._same(self._cookie_key(scope)):
                await answer(403, "Open this page with the link bakeoff label printed when it started "
                                  "(it carries the session key).")
                return
            await self.app(scope, receive, tracked_send)
        except BodyRefused as exc:
            if not started:
                await answer(exc.status, str(exc))
        except Exception as exc:  # any unexpected error: a 500 with an id, never a traceback
            error_id = secrets.token_hex(6)
            log.error("error %s on %s %s: %s: %s", error_id, scope.get("method"), scope.get("path"),
                      type(exc).__name__, str(exc)[:300])
            log.debug("error %s", error_id, exc_info=True)
            if not started:
                await answer(500, f"Something went wrong on the server (error {error_id}); the server's log "
                                  "has a line with this id.")


def _capped(receive: Receive) -> Receive:
    """``receive`` that raises :class:`BodyRefused` (413) once the body passes :data:`MAX_BODY`."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > MAX_BODY:
                raise BodyRefused(f"The request body is larger than {MAX_BODY} bytes.", 413)
        return message

    return wrapped
