"""The HTTP layer against a misbehaving server on 127.0.0.1 (raw sockets, so it can break the
protocol): every failure mode ends as one :class:`HttpError` line naming the URL, within the
deadline, and the server counts the requests it received."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from bakeoff.net import HttpClient, HttpError


class Misbehaving:
    """A raw HTTP/1.1 server: ``/drip`` sends one body byte every 0.5 s for ever, ``/loop`` redirects
    to itself, ``/badgzip`` labels plain text gzip, ``/gzip`` is honest gzip, ``/short`` promises
    100 bytes and closes after 10, ``/ok`` answers ``{"ok": 1}``. ``hits`` counts requests by path."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.hits: Counter[str] = Counter()
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                part = conn.recv(4096)
                if not part:
                    return
                data += part
                if data[:1] == b"\x16":  # a TLS ClientHello: answer in plain HTTP, as a plain server does
                    self.hits["<tls handshake>"] += 1
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                    return
            path = data.split(b" ", 2)[1].decode()
            self.hits[path] += 1
            try:
                self._answer(_Closing(conn), path)
            except OSError:
                return

    def _answer(self, conn: socket.socket, path: str) -> None:
        if path == "/drip":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
            while not self.stop.is_set():
                conn.sendall(b" ")
                time.sleep(0.5)
        elif path == "/loop":
            conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: /loop\r\nContent-Length: 0\r\n\r\n")
        elif path in ("/badgzip", "/gzip"):
            body = b'{"ok": 1}' if path == "/badgzip" else gzip.compress(b'{"ok": 1}')
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        elif path == "/short":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                         b'{"ok": 1, ')
        else:
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{"ok": 1}')


class _Closing:
    """A socket whose first write gets ``Connection: close`` after the status line (one request
    per connection, so a client never reuses a connection the server closed)."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn, self.first = conn, True

    def sendall(self, data: bytes) -> None:
        if self.first:
            data, self.first = data.replace(b"\r\n", b"\r\nConnection: close\r\n", 1), False
        self.conn.sendall(data)


@pytest.fixture()
def server() -> Iterator[Misbehaving]:
    srv = Misbehaving()
    yield srv
    srv.stop.set()
    srv.sock.close()


@pytest.mark.slow  # waits by design
def test_a_dripping_body_ends_at_the_whole_request_deadline(server: Misbehaving) -> None:
    client = HttpClient(timeout=3, retries=0)
    start = time.monotonic()
    with pytest.raises(HttpError) as err:
        client.get_json(server.url + "/drip")
    took = time.monotonic() - start
    assert 3.0 <= took < 4.5  # the deadline (3 s) plus at most one drip interval and set-up
    assert str(err.value).startswith(f"{server.url}/drip: ") and "timed out after 3 s" in str(err.value)
    assert server.hits["/drip"] == 1


@pytest.mark.slow  # waits by design
def test_the_deadline_applies_to_each_attempt(server: Misbehaving) -> None:
    client = HttpClient(timeout=1, retries=1, backoff=0)
    start = time.monotonic()
    with pytest.raises(HttpError, match="gave up after 2 attempts"):
        client.get_json(server.url + "/drip")
    assert 2.0 <= time.monotonic() - start < 3.5
    assert server.hits["/drip"] == 2


def test_a_redirect_loop_is_one_error_not_retried(server: Misbehaving) -> None:
    client = HttpClient(timeout=5, retries=3, backoff=0)
    with pytest.raises(HttpError) as err:
        client.get_json(server.url + "/loop")
    assert str(err.value) == f"{server.url}/loop: redirect loop (more than 20 redirects)"
    assert server.hits["/loop"] == 21  # the first request and httpx's 20 redirects, once


def test_a_body_that_is_not_what_its_content_encoding_says(server: Misbehaving) -> None:
    client = HttpClient(timeout=5, retries=3, backoff=0)
    with pytest.raises(HttpError) as err:
        client.get_json(server.url + "/badgzip")
    assert str(err.value).startswith(f"{server.url}/badgzip: body cannot be decoded as its Content-Encoding says")
    assert "\n" not in str(err.value) and server.hits["/badgzip"] == 1
    assert client.get_json(server.url + "/gzip") == {"ok": 1}  # honest gzip still decodes


def test_a_truncated_body_is_retried_then_one_error(server: Misbehaving) -> None:
    client = HttpClient(timeout=5, retries=2, backoff=0)
    with pytest.raises(HttpError) as err:
        client.get_json(server.url + "/short")
    text = str(err.value)
    assert text.startswith(f"{server.url}/short: gave up after 3 attempts; last error: truncated or malformed")
    assert server.hits["/short"] == 3


def test_tls_to_a_plain_http_server_is_one_error_not_retried(server: Misbehaving) -> None:
    client = HttpClient(timeout=5, retries=3, backoff=0)
    with pytest.raises(HttpError) as err:
        client.get_json(f"https://127.0.0.1:{server.port}/ok")
    assert str(err.value).startswith(f"https://127.0.0.1:{server.port}/ok: TLS error: ")
    assert server.hits == {"<tls handshake>": 1}  # one handshake, failed, not retried


def test_a_good_answer_still_reads(server: Misbehaving) -> None:
    assert HttpClient(timeout=5).get_json(server.url + "/ok") == {"ok": 1}
    assert server.hits["/ok"] == 1
