"""The labelling web app: Starlette routes, Jinja2 templates and static files served from
this package (``bakeoff/label/templates``, ``bakeoff/label/static``).

Pages: ``/label/{annotator}`` (grade pooled documents) and ``/review/{annotator}`` (accept,
edit or reject synthetic queries). Every action is a ``POST /api/{annotator}/{page}/{action}``
with a JSON body; the answer is the re-rendered work area (an HTML fragment), sent only
after the action committed to SQLite (:class:`~bakeoff.label.store.Store`).

Safety: Jinja2 autoescapes every value (document and query text are shown as text); a
Content-Security-Policy allows scripts, styles and requests from this origin only (no
inline script or style, nothing from another host); :class:`~bakeoff.label.guard.Guard`
requires the launch key on every page and action, checks Host and Origin, caps the body
size and JSON depth and turns unexpected errors into a 500 with an id; actions need a JSON
content type (a cross-site form cannot send one). Annotator names are NFC-normalised and
restricted to a letter or digit of any script, then up to 39 letters, digits, ``_ . @ -``
(so ``Jürgen`` typed composed or decomposed is one annotator).
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..data.judgments import GRADES
from ..data.model import Corpus
from .display import SHOWN_CHARS, DocumentView, document_view
from .guard import Guard, check_json_depth
from .guidelines import description_of
from .store import Refused, Store

__all__ = ["CSP", "NAME_RULE", "annotator_name", "make_app", "valid_annotator"]

_CSP_PAGE = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
             "form-action 'self'; base-uri 'none'")
#: The Content-Security-Policy header (the page's <meta> copy omits frame-ancestors, which
#: only a header can carry).
CSP = _CSP_PAGE + "; frame-ancestors 'none'"
_HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY"),
            (b"cache-control", b"no-store")]
_NAME = re.compile(r"[^\W_][\w.@-]{0,39}")
#: What the name rule says, for messages.
NAME_RULE = "a letter or digit (any script), then letters, digits, _ . @ - (at most 40 characters)"


def annotator_name(name: str) -> str | None:
    """``name`` NFC-normalised and stripped when it is an acceptable annotator name, else None."""
    n = unicodedata.normalize("NFC", name).strip()
    return n if _NAME.fullmatch(n) else None


def valid_annotator(name: str) -> bool:
    """Whether ``name`` is an acceptable annotator name (:func:`annotator_name`)."""
    return annotator_name(name) is not None


class _SecurityHeaders:
    """ASGI middleware adding the CSP and hardening headers to every response, and a
    ``Server-Timing: app;dur=MS`` header (time in the app, readable by the page's
    Resource Timing entries, so latency can be split into server and browser)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                dur = f"app;dur={1000 * (time.perf_counter() - t0):.2f}".encode()
                message["headers"] = [*message.get("headers", []), *_HEADERS, (b"server-timing", dur)]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class _Views:
    """What the pages and actions render: the templates with the page context, documents as shown
    (:func:`~bakeoff.label.display.document_view`) and the work areas an action re-renders."""

    def __init__(self, *, store: Store, corpus: Corpus, title: str, key: str) -> None:
        self.store, self.corpus = store, corpus
        self.env = Environment(loader=PackageLoader("bakeoff.label", "templates"), autoescape=True,
                               undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        self.review_mode = store.has_review()
        self.guide = store.meta().get("guidelines")
        self.base_ctx = {"title": title, "grades": GRADES, "csp": _CSP_PAGE, "review_mode": self.review_mode,
                         "key": key, "shown_chars": SHOWN_CHARS, "guide": self.guide}

    def render(self, name: str, **ctx: Any) -> str:
        return self.env.get_template(name).render(**self.base_ctx, **ctx)

    def doc_of(self, doc_id: str | None, query: str = "") -> DocumentView:
        if doc_id is None or doc_id not in self.corpus:
            return document_view(doc_id or "", "", "(this document is not in the loaded corpus)", "")
        d = self.corpus[doc_id]
        return document_view(d.id, d.title, d.text, query)

    def label_fragment(self, a: str, message: str = "") -> str:
        view = self.store.view(a, message=message)
        need = description_of(view.qid, view.query_meta, self.guide) if view.qid else ""
        return self.render("_work.html", view=view, doc=self.doc_of(view.doc_id, view.query_text), need=need)

    def review_fragment(self, a: str, message: str = "") -> str:
        view = self.store.review_view(a, message=message)
        return self.render("_review.html", view=view, sources=[self.doc_of(d, view.text) for d in view.written_from])

    def settle_fragment(self, a: str, message: str = "") -> str:
        items = self.store.disagreements()
        for it in items:
            it["doc_view"] = self.doc_of(it["doc"], it["query"])
        return self.render("_settle.html", items=items, message=message, annotator=a)


class _Pages:
    """The pages (``GET``): the start page, labelling, review, the overview and the disagreements."""

    def __init__(self, views: _Views, *, default_annotator: str | None) -> None:
        self.views, self.store, self.default_annotator = views, views.store, default_annotator

    async def index(self, request: Request) -> Response:
        if self.default_annotator:
            pending = self.views.review_mode and self.store.review_view(self.default_annotator).pending
            page = "review" if pending else "label"
            return RedirectResponse(f"/{page}/{quote(self.default_annotator)}", status_code=303)
        return HTMLResponse(self.views.render("start.html", annotator="", page="start", error=""))

    async def start(self, request: Request) -> Response:
        a = annotator_name(request.query_params.get("annotator") or "")
        page = "review" if request.query_params.get("page") == "review" and self.views.review_mode else "label"
        if a is None:
            return HTMLResponse(self.views.render("start.html", annotator="", page="start",
                                                  error=f"Give a name: {NAME_RULE}."), status_code=400)
        return RedirectResponse(f"/{page}/{quote(a)}", status_code=303)

    async def label(self, request: Request) -> Response:
        a = _annotator_of(request)
        message = ""
        goto = request.query_params.get("q")
        if goto is not None:  # a jump from the overview page
            try:
                self.store.move(a, "goto_query", qid=goto)
            except Refused as exc:
                message = f"Not done: {exc}"
        return HTMLResponse(self.views.render("label.html", annotator=a, page="label",
                                              work=self.views.label_fragment(a, message)))

    async def settle(self, request: Request) -> Response:
        a = _annotator_of(request)
        return HTMLResponse(self.views.render("settle.html", annotator=a, page="settle",
                                              work=self.views.settle_fragment(a)))

    async def overview(self, request: Request) -> Response:
        a = _annotator_of(request)
        rows = self.store.overview(a)
        return HTMLResponse(self.views.render("overview.html", annotator=a, page="overview", rows=rows,
                                              totals={"queries": len(rows), "open": sum(r.open for r in rows),
                                                      "done": sum(1 for r in rows if r.open and r.mine == r.pool_size),
                                                      "mine": sum(r.mine for r in rows)}))

    async def review(self, request: Request) -> Response:
        a = _annotator_of(request)
        if not self.views.review_mode:
            return RedirectResponse(f"/label/{quote(a)}", status_code=303)
        return HTMLResponse(self.views.render("review.html", annotator=a, page="review",
                                              work=self.views.review_fragment(a)))


class _Actions:
    """The actions (``POST /api/{annotator}/{page}/{action}``, a JSON body): each answers with its page's
    work area re-rendered after the store committed, or with status 409 and the store's refusal."""

    def __init__(self, views: _Views, *, pool_one: Callable[[str, str], None] | None) -> None:
        self.views, self.store, self.pool_one = views, views.store, pool_one

    async def settle(self, request: Request) -> Response:
        a = _annotator_of(request)
        data = await _body_of(request)
        if request.path_params["action"] == "view":
            return HTMLResponse(self.views.settle_fragment(a))
        if request.path_params["action"] != "decide":
            raise _BadRequest(f"unknown action {request.path_params['action']!r}", status=404)
        grade = data.get("grade")
        try:
            self.store.settle(a, str(data.get("qid")), str(data.get("doc")), None if grade is None else _int(grade))
        except Refused as exc:
            return HTMLResponse(self.views.settle_fragment(a, message=f"Not done: {exc}"), status_code=409)
        return HTMLResponse(self.views.settle_fragment(a))

    async def label(self, request: Request) -> Response:
        a = _annotator_of(request)
        data = await _body_of(request)
        action = request.path_params["action"]
        message = ""
        store = self.store
        try:
            if action == "judge":
                if "replaces" not in data:
                    raise _BadRequest("a grade carries the grade it replaces: \"replaces\": 0-3 or null")
                replaces = data["replaces"]
                store.judge(a, str(data.get("qid")), str(data.get("doc")), _int(data.get("grade")),
                            str(data.get("note") or "")[:2000], replaces=None if replaces is None else _int(replaces))
            elif action in ("skip", "cant_tell"):
                store.skip(a, str(data.get("qid")), str(data.get("doc")), cant_tell=action == "cant_tell")
            elif action == "undo":
                message = store.undo(a)
            elif action == "move":
                message = store.move(a, str(data.get("to")), qid=data.get("qid"), doc=data.get("doc"))
            elif action != "view":
                raise _BadRequest(f"unknown action {action!r}", status=404)
        except Refused as exc:
            return HTMLResponse(self.views.label_fragment(a, message=f"Not done: {exc}"), status_code=409)
        return HTMLResponse(self.views.label_fragment(a, message=message))

    async def review(self, request: Request) -> Response:
        a = _annotator_of(request)
        data = await _body_of(request)
        action = request.path_params["action"]
        message = ""
        try:
            if action == "decide":
                qid = str(data.get("qid"))
                to_pool = self.store.review(a, qid, str(data.get("decision")), data.get("text"))
                if to_pool is not None and self.pool_one is not None:
                    await run_in_threadpool(self.pool_one, qid, to_pool)
            elif action == "undo":
                message = self.store.review_undo(a)
            elif action == "move":
                self.store.review_move(a, str(data.get("to")), qid=data.get("qid"))
            elif action != "view":
                raise _BadRequest(f"unknown action {action!r}", status=404)
        except Refused as exc:
            return HTMLResponse(self.views.review_fragment(a, message=f"Not done: {exc}"), status_code=409)
        return HTMLResponse(self.views.review_fragment(a, message=message))


def _annotator_of(request: Request) -> str:
    a = annotator_name(request.path_params["annotator"])
    if a is None:
        raise _BadRequest(f"bad annotator name {request.path_params['annotator']!r}: {NAME_RULE}")
    return a


async def _body_of(request: Request) -> dict[str, Any]:
    """An action's JSON object (a JSON content type, depth capped, an object): else a 4xx."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise _BadRequest("actions take a JSON body (Content-Type: application/json)", status=415)
    raw = await request.body()
    check_json_depth(raw)
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        raise _BadRequest("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise _BadRequest("the body must be a JSON object")
    return data


async def _no_favicon(request: Request) -> Response:
    return Response(status_code=204)


async def _bad_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, _BadRequest)
    return HTMLResponse(f"<p class=\"message error\">{_escape(str(exc))}</p>", status_code=exc.status)


def make_app(*, store: Store, corpus: Corpus, title: str, allowed_hosts: list[str], key: str, port: int,
             default_annotator: str | None = None,
             pool_one: Callable[[str, str], None] | None = None) -> Starlette:
    """The ASGI app. ``key`` is the launch key every page and action needs, ``port`` the
    port it is served on (names the key cookie); ``allowed_hosts`` the Host names accepted
    (:func:`~bakeoff.label.guard.allowed_hosts`). ``pool_one(qid, text)`` pools a query
    accepted in review (None when the database has no synthetic queries)."""
    views = _Views(store=store, corpus=corpus, title=title, key=key)
    pages = _Pages(views, default_annotator=default_annotator)
    actions = _Actions(views, pool_one=pool_one)
    routes = [
        Route("/", pages.index),
        Route("/start", pages.start),
        Route("/favicon.ico", _no_favicon),
        Route("/label/{annotator}", pages.label),
        Route("/review/{annotator}", pages.review),
        Route("/overview/{annotator}", pages.overview),
        Route("/disagreements/{annotator}", pages.settle),
        Route("/api/{annotator}/settle/{action}", actions.settle, methods=["POST"]),
        Route("/api/{annotator}/label/{action}", actions.label, methods=["POST"]),
        Route("/api/{annotator}/review/{action}", actions.review, methods=["POST"]),
        Mount("/static", StaticFiles(packages=[("bakeoff.label", "static")]), name="static"),
    ]
    return Starlette(routes=routes,
                     middleware=[Middleware(_SecurityHeaders),
                                 Middleware(Guard, key=key, port=port, hosts=allowed_hosts)],
                     exception_handlers={_BadRequest: _bad_request})


class _BadRequest(Exception):
    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise Refused(f"grade must be 0, 1, 2 or 3, got {value!r}")
    try:
        return int(value)
    except ValueError:
        raise Refused(f"grade must be 0, 1, 2 or 3, got {value!r}") from None


def _escape(text: str) -> str:
    import html

    return html.escape(text, quote=True)
