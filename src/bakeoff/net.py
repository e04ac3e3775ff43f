"""The one HTTP client: httpx with tenacity retries, polite defaults and secrets kept out of messages.

Every caller that speaks HTTP (the OpenAI-compatible embeddings client, the
LLM client, the ``http`` arm, the web-API corpus reader) uses
:class:`HttpClient`, so retries, backoff, timeouts, the User-Agent and the
scrubbing of API keys behave the same everywhere.

**Retry policy.** A request is retried on a timeout, a transport error
(connection refused or reset), a status in :data:`RETRY_STATUS` (408, 425,
429, 500, 502, 503, 504) and, for :meth:`HttpClient.request_json`, a body that
is not valid JSON. It is tried ``retries + 1`` times at most. Attempt ``n``
(0-based) waits ``min(backoff_max, backoff * 2**n)`` seconds before the next
try, unless the response carried ``Retry-After`` (seconds or an HTTP date),
which is honoured, also capped at ``backoff_max``. Other 4xx statuses fail at
once, and so does a retried status for which the caller's ``no_retry(status, body)``
(the body with secrets scrubbed) is true, e.g. a 500 whose body says the request itself
is malformed: asking again cannot help. Every failure is an :class:`HttpError` with one
line of text.

**Deadline.** ``timeout`` bounds each attempt as a whole, from connecting to the last byte
of the body (checked as each piece of the body arrives), and every single wait too; a server
that drips one byte at a time is cut off after ``timeout`` seconds (plus at most one gap), and
the attempt counts as a timeout. Headers dripped byte by byte are bounded per wait only.

**Not retried.** A redirect loop (more than 20 redirects), a body that is not what its
``Content-Encoding`` says, a TLS failure (certificate, handshake) and a malformed URL fail at
once; a truncated body (the connection closed before ``Content-Length`` bytes) is retried.

**Errors.** :class:`HttpError` says ``<url>: <reason>`` for a status that is
not retried, or ``<url>: gave up after <n> attempts; last error: <reason>``;
``reason`` (``HTTP 503: <server message>``, ``timed out after 30 s``,
``connection failed: ...``, ``response is not JSON ...``), ``status`` and
``attempts`` are attributes too, so callers can word their own line; ``body`` holds the
server's error body (secrets scrubbed, at most :data:`ERROR_BODY_CHARS` characters).

**Secrets.** An API key is read from the environment variable named by
``auth_env`` at request time (never stored on the object) and sent as
``Authorization: Bearer <key>``. Every message this module produces goes
through :func:`bakeoff.redact.scrub` first (then is cut), which replaces the
key, the values of secret-looking headers (``Authorization``, ``X-Api-Key``
...) and URL parameters (``api_key=`` ...), and any piece of them of at least
:data:`~bakeoff.redact.MIN_SECRET_PART` characters, so an echoed key cut at a
truncation boundary does not leak either. URLs in messages are
:func:`~bakeoff.redact.redact_url`-ed.

**Hooks.** ``on_request()`` is called before every attempt and
``on_retry(reason, delay)`` before every backoff sleep (a caller's usage
counters, logging); the client's own ``n_requests`` / ``n_retries`` count the
same, thread-safely. A client is picklable (the pooled connection is not
carried over).

**Politeness.** ``min_interval`` spaces the *starts* of requests by at least
that many seconds across threads (a rate limit); the default User-Agent names
bakeoff and its version.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self

from .environment import read_secret
from .errors import BakeoffError, ConfigError, MissingDependencyError
from .library_versions import bakeoff_version
from .redact import MIN_SECRET_PART, is_secret_name, redact_url, scrub, url_secrets

__all__ = [
    "DEFAULT_USER_AGENT",
    "ERROR_BODY_CHARS",
    "MIN_SECRET_PART",
    "RETRY_STATUS",
    "HttpClient",
    "HttpError",
    "default_user_agent",
    "excerpt",
    "retry_after_seconds",
    "scrub",
]

RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
#: Characters of a server's error body kept on :attr:`HttpError.body`.
ERROR_BODY_CHARS = 4000
DEFAULT_USER_AGENT = "bakeoff (+https://pypi.org/project/bakeoff/)"


def default_user_agent(contact: str | None = None) -> str:
    """``bakeoff/<version> (+<project url>[; <contact>])``: honest, identifying the tool and its operator."""
    tail = f"; {contact}" if contact else ""
    return f"bakeoff/{bakeoff_version()} (+https://pypi.org/project/bakeoff/{tail})"


class HttpError(BakeoffError):
    """An HTTP exchange failed (after retries, or with a status that is not retried).

    ``url`` is the redacted URL, ``reason`` the last failure without the URL,
    ``status`` the last HTTP status (``None`` for timeouts and transport
    errors), ``attempts`` how many requests were made, ``body`` the error body of the last
    response (scrubbed, cut to :data:`ERROR_BODY_CHARS`; empty when there was none)."""

    def __init__(self, message: str | None = None, *, url: str = "", status: int | None = None, reason: str = "",
                 attempts: int = 1, body: str = "") -> None:
        self.url = url
        self.status = status
        self.body = body
        self.reason = reason or message or ""
        self.attempts = attempts
        super().__init__(message if message is not None else f"{url}: {self.detail}")

    @property
    def detail(self) -> str:
        """The message without the URL: ``reason``, or ``gave up after n attempts; last error: reason``."""
        return self.reason if self.attempts <= 1 else f"gave up after {self.attempts} attempts; last error: {self.reason}"


def excerpt(text: str, secrets: Iterable[str | None] = (), *, limit: int = 200) -> str:
    """One line of at most ``limit`` characters of ``text``, secrets scrubbed *before* cutting."""
    one = " ".join(scrub(str(text), secrets).split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def retry_after_seconds(value: str | None, *, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date; ``None`` if absent or bad."""
    if value is None or not str(value).strip():
        return None
    v = str(value).strip()
    try:
        return max(0.0, float(v))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.UTC)
    return max(0.0, when.timestamp() - now())


def _httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - httpx is a core dependency
        raise MissingDependencyError("httpx", None, "HTTP") from exc
    return httpx


class _Retry(Exception):
    """A failure worth another attempt; ``wait`` is the server's Retry-After, if any."""

    def __init__(self, message: str, *, status: int | None = None, wait: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.wait = wait


class HttpClient:
    """A pooled httpx client with the retry policy, User-Agent and scrubbing of this module.

    ``base_url`` prefixes relative URLs; ``headers`` are sent with every request;
    ``auth_env`` names the environment variable holding a bearer token; ``sleep``
    is injectable so tests can observe backoff without waiting; ``transport`` is
    passed to httpx (tests). ``n_requests`` and ``n_retries`` count attempts made
    and retries taken; ``on_request`` / ``on_retry`` are the hooks of the module doc;
    ``no_retry(status, body)`` marks a response with a retried status as final (module doc).
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        auth_env: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        backoff_max: float = 30.0,
        min_interval: float = 0.0,
        user_agent: str | None = None,
        retry_status: frozenset[int] = RETRY_STATUS,
        follow_redirects: bool = True,
        sleep: Callable[[float], None] = time.sleep,
        transport: Any = None,
        on_request: Callable[[], None] | None = None,
        on_retry: Callable[[str, float], None] | None = None,
        no_retry: Callable[[int, str], bool] | None = None,
    ) -> None:
        if retries < 0:
            raise ConfigError(f"retries must be >= 0, got {retries}")
        if timeout <= 0:
            raise ConfigError(f"timeout must be > 0 seconds, got {timeout}")
        self.base_url = base_url.rstrip("/") + "/" if base_url else None
        self.headers = {"User-Agent": user_agent or default_user_agent(), **dict(headers or {})}
        self.auth_env = auth_env or None
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff, self.backoff_max = float(backoff), float(backoff_max)
        self.min_interval = float(min_interval)
        self.retry_status = retry_status
        self.follow_redirects = follow_redirects
        self._sleep = sleep
        self._transport = transport
        self._on_request, self._on_retry = on_request, on_retry
        self._no_retry = no_retry
        self._client: Any = None
        self._lock = threading.Lock()
        self._next_start = 0.0
        self.n_requests = 0
        self.n_retries = 0

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_client"], state["_lock"] = None, None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------
    def _http(self) -> Any:
        with self._lock:
            if self._client is None:
                httpx = _httpx()
                kw: dict[str, Any] = {"timeout": self.timeout, "follow_redirects": self.follow_redirects}
                if self.base_url:
                    kw["base_url"] = self.base_url
                if self._transport is not None:
                    kw["transport"] = self._transport
                self._client = httpx.Client(**kw)
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- secrets ---------------------------------------------------------------
    def secret(self) -> str | None:
        """The bearer token from ``auth_env`` (``ConfigError`` when the variable is unset)."""
        if not self.auth_env:
            return None
        key = read_secret(self.auth_env)
        if not key:
            raise ConfigError(f"environment variable {self.auth_env} (the API key) is not set")
        return key

    def secrets(self, *, url: str = "", headers: Mapping[str, str] | None = None) -> list[str]:
        """Everything :meth:`scrub` removes: the API key, secret-looking header values (the
        credential after an auth scheme such as ``Bearer`` too) and secret URL values."""
        out: list[str] = []
        key = read_secret(self.auth_env) if self.auth_env else None
        if key:
            out.append(key)
        for name, value in {**self.headers, **dict(headers or {})}.items():
            if is_secret_name(name) and value.strip():
                out.append(value.split(None, 1)[-1])  # the credential after a scheme such as "Bearer"
        if url:
            out += url_secrets(self._url(url))
        return sorted(set(out), key=len, reverse=True)

    def scrub(self, text: str, *, url: str = "", headers: Mapping[str, str] | None = None) -> str:
        """``text`` without the client's secrets (see :meth:`secrets` and :func:`bakeoff.redact.scrub`)."""
        return scrub(text, self.secrets(url=url, headers=headers))

    def excerpt(self, text: str, *, limit: int = 200, url: str = "", headers: Mapping[str, str] | None = None) -> str:
        """One line of at most ``limit`` characters of ``text``, the client's secrets scrubbed before cutting."""
        return excerpt(text, self.secrets(url=url, headers=headers), limit=limit)

    # -- requests ----------------------------------------------------------------
    def _pace(self) -> None:
        if self.min_interval <= 0:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + self.min_interval
        if start > now:
            self._sleep(start - now)

    def _url(self, url: str) -> str:
        return url if "://" in url or not self.base_url else self.base_url + url.lstrip("/")

    def _once(self, method: str, url: str, *, parse_json: bool, **kw: Any) -> Any:
        httpx = _httpx()
        extra = dict(kw.pop("headers", None) or {})
        headers = {**self.headers, **extra}
        key = self.secret()
        if key:
            headers["Authorization"] = f"Bearer {key}"

        def cut(text: str, limit: int = 200) -> str:
            return self.excerpt(text, limit=limit, url=url, headers=extra)

        http = self._http()  # built before pacing, so the spacing is between sends, not client set-up
        self._pace()
        with self._lock:
            self.n_requests += 1
        if self._on_request is not None:
            self._on_request()
        try:
            resp = self._fetch(http, method, url, headers=headers, **kw)
        except httpx.TimeoutException:
            raise _Retry(f"timed out after {self.timeout:g} s") from None
        except httpx.TooManyRedirects:
            raise HttpError(url=self._where(url), reason="redirect loop (more than 20 redirects)") from None
        except httpx.DecodingError as exc:
            raise HttpError(url=self._where(url), reason=f"body cannot be decoded as its Content-Encoding says "
                                                         f"({cut(str(exc) or type(exc).__name__, 80)})") from None
        except httpx.RemoteProtocolError as exc:
            raise _Retry(f"truncated or malformed response: {cut(str(exc) or type(exc).__name__)}") from None
        except httpx.TransportError as exc:
            if _is_tls_error(exc):
                raise HttpError(url=self._where(url), reason=f"TLS error: {cut(str(exc) or type(exc).__name__)}") from None
            raise _Retry(f"connection failed: {cut(str(exc) or type(exc).__name__)}") from None
        except (httpx.RequestError, httpx.InvalidURL, httpx.StreamError) as exc:
            raise HttpError(url=self._where(url), reason=f"request failed: {cut(str(exc) or type(exc).__name__)}") from None
        status = resp.status_code
        if status >= 400:
            body = self.scrub(_body_text(resp), url=url, headers=extra)
            final = status not in self.retry_status or (self._no_retry is not None and self._no_retry(status, body))
            if final:
                raise HttpError(url=self._where(url), status=status, reason=f"HTTP {status}: {cut(_error_text(resp))}",
                                body=body[:ERROR_BODY_CHARS])
            raise _Retry(f"HTTP {status}: {cut(_error_text(resp))}", status=status,
                         wait=retry_after_seconds(resp.headers.get("retry-after")))
        if not parse_json:
            return resp
        try:
            return resp.json()
        except (ValueError, UnicodeDecodeError):
            ctype = resp.headers.get("content-type", "?")
            raise _Retry(f"response is not JSON (content-type {ctype}): {cut(resp.text, 80)}",
                         status=status) from None

    def _fetch(self, http: Any, method: str, url: str, **kw: Any) -> Any:
        """The response with its whole body read, within the deadline: ``timeout`` seconds from the
        start of the attempt to its last byte (connecting, waiting and reading), checked as each
        piece of the body arrives; each single wait is bounded by ``timeout`` as well."""
        httpx = _httpx()
        start = time.monotonic()
        with http.stream(method, url, **kw) as resp:
            raw: list[bytes] = []
            for chunk in resp.iter_raw():
                raw.append(chunk)
                if time.monotonic() - start > self.timeout:
                    raise httpx.ReadTimeout("whole-request deadline passed", request=resp.request)
            if time.monotonic() - start > self.timeout:
                raise httpx.ReadTimeout("whole-request deadline passed", request=resp.request)
        whole = httpx.Response(resp.status_code, headers=resp.headers, content=b"".join(raw),
                               request=resp.request, extensions=resp.extensions)
        whole.read()  # decodes the Content-Encoding now (httpx.DecodingError when it lies)
        return whole

    def _where(self, url: str) -> str:
        """The absolute URL of a request, secrets redacted, for messages."""
        return redact_url(self._url(url))

    def _with_retries(self, method: str, url: str, *, parse_json: bool, **kw: Any) -> Any:
        from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt

        def wait(state: Any) -> float:
            exc = state.outcome.exception()
            n = state.attempt_number - 1
            delay = self.backoff * (2.0 ** n)
            if isinstance(exc, _Retry) and exc.wait is not None:
                delay = exc.wait
            return min(self.backoff_max, max(0.0, delay))

        def before_sleep(state: Any) -> None:
            with self._lock:
                self.n_retries += 1
            if self._on_retry is not None:
                self._on_retry(str(state.outcome.exception()), float(state.next_action.sleep))

        retrying = Retrying(stop=stop_after_attempt(self.retries + 1), wait=wait,
                            retry=retry_if_exception_type(_Retry), sleep=self._sleep,
                            before_sleep=before_sleep, reraise=False)
        try:
            return retrying(self._once, method, url, parse_json=parse_json, **kw)
        except RetryError as err:
            last = err.last_attempt.exception()
            status = getattr(last, "status", None)
            raise HttpError(url=self._where(url), status=status, reason=str(last), attempts=self.retries + 1) from None

    def request(self, method: str, url: str, **kw: Any) -> Any:
        """An ``httpx.Response`` with a status below 400 (retried as the module docstring says)."""
        return self._with_retries(method, url, parse_json=False, **kw)

    def request_json(self, method: str, url: str, **kw: Any) -> Any:
        """The decoded JSON body of a successful response (a non-JSON body is retried, then an error)."""
        return self._with_retries(method, url, parse_json=True, **kw)

    def get_json(self, url: str, **kw: Any) -> Any:
        return self.request_json("GET", url, **kw)

    def post_json(self, url: str, body: Any, **kw: Any) -> Any:
        """POST ``body`` as JSON and decode the JSON answer."""
        return self.request_json("POST", url, content=json.dumps(body).encode("utf-8"),
                                 headers={"Content-Type": "application/json", "Accept": "application/json",
                                          **dict(kw.pop("headers", None) or {})}, **kw)


def _is_tls_error(exc: BaseException) -> bool:
    """Whether an ``ssl.SSLError`` is among the causes of ``exc`` (certificate, handshake)."""
    import ssl

    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _body_text(resp: Any) -> str:
    """The response body as text ("" when it cannot be decoded)."""
    try:
        return str(resp.text)
    except Exception:  # noqa: BLE001 - undecodable body
        return ""


def _error_text(resp: Any) -> str:
    """The server's error message (OpenAI style ``{"error": {"message"}}`` when present), else the body,
    else the status's reason phrase."""
    raw = _body_text(resp)
    if not raw.strip():
        return str(getattr(resp, "reason_phrase", "") or "")
    try:
        obj = json.loads(raw)
    except ValueError:
        return raw
    err = obj.get("error") if isinstance(obj, dict) else None
    msg = err.get("message") if isinstance(err, dict) else err
    return str(msg or raw)
