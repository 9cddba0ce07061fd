"""A loopback HTTP proxy that injects the faults of real infrastructure, for tests.

It stands in front of one upstream (moto S3, the smart-HTTP git server) and forwards each
request on a fresh upstream connection, unless a fault rule matches it. A rule matches on
the method and a regular expression of the path (query included), fires ``times`` times,
and does one of:

* ``status``: answer ``status`` (500, 503, 401, 429...) without forwarding (with
  ``Retry-After: retry_after`` when given);
* ``slowdown``: answer S3's ``503 SlowDown`` without forwarding;
* ``reset``: reset the connection (TCP RST) without forwarding;
* ``truncate``: forward, then send the answer's headers and half of its body, and close;
* ``lost``: forward (the upstream applies the request), then reset the connection
  instead of answering: the client never learns the outcome;
* ``stall``: wait ``delay`` seconds, then forward and answer (if the client still waits);
* ``hold``: keep the request without forwarding or answering (the client times out and
  retries); :meth:`FaultProxy.deliver_held` sends it to the upstream later, as a packet
  delayed in the network would land;
* ``after``: forward and answer, then apply ``then`` to every later matching request
  (e.g. a token revoked once the push landed: ``after`` the push, ``status`` 401).

Requests are parsed just enough to be forwarded byte for byte (``Content-Length`` or
chunked bodies); signed headers are never changed. ``Expect: 100-continue`` is answered
by the proxy itself (and not forwarded), so a held body is complete.
"""

from __future__ import annotations

import re
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["FaultProxy", "Rule"]

_SLOWDOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)


@dataclass
class Rule:
    """One fault: ``mode`` for up to ``times`` requests matching ``method`` and ``path``."""

    mode: str
    method: str | None = None
    path: str = ""
    times: int = 1
    status: int = 500
    delay: float = 0.0
    retry_after: str | None = None
    then: Rule | None = None
    fired: int = 0

    def matches(self, method: str, target: str) -> bool:
        if self.times <= self.fired:
            return False
        if self.method is not None and method != self.method:
            return False
        return re.search(self.path, target) is not None


@dataclass
class _Request:
    method: str
    target: str
    raw: bytes  # the request as the upstream gets it


@dataclass
class FaultProxy:
    """A fault-injecting HTTP proxy on 127.0.0.1 in front of ``upstream`` (``http://h:p``)."""

    upstream: str
    rules: list[Rule] = field(default_factory=list)
    seen: list[tuple[str, str]] = field(default_factory=list)
    held: list[_Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        parts = urlsplit(self.upstream)
        self._up = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        self._stopped = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url_for(self, path: str) -> str:
        return f"{self.url}/{path.lstrip('/')}"

    def inject(self, mode: str, **kwargs: object) -> Rule:
        """Add a fault rule (see the module docstring); returns it (``rule.fired`` counts)."""
        rule = Rule(mode, **kwargs)  # type: ignore[arg-type]
        with self._lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    def deliver_held(self) -> list[int]:
        """Forward every held request to the upstream now; their status codes."""
        with self._lock:
            held, self.held = self.held, []
        return [_status(_exchange(self._up, r)) for r in held]

    def close(self) -> None:
        self._stopped = True
        self._server.close()

    # -- serving ----------------------------------------------------------------------------

    def _serve(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._client, args=(client,), daemon=True).start()

    def _rule_for(self, method: str, target: str) -> Rule | None:
        with self._lock:
            self.seen.append((method, target))
            for rule in self.rules:
                if rule.matches(method, target):
                    rule.fired += 1
                    if rule.mode == "after" and rule.then is not None:
                        self.rules.insert(0, rule.then)
                    return rule
        return None

    def _client(self, client: socket.socket) -> None:
        reader = client.makefile("rb")
        try:
            while True:
                request = _read_request(reader, client)
                if request is None:
                    return
                rule = self._rule_for(request.method, request.target)
                if not self._answer(client, request, rule):
                    return
        except OSError:
            return
        finally:
            reader.close()
            client.close()

    def _answer(self, client: socket.socket, request: _Request, rule: Rule | None) -> bool:
        """Serve one request; False when the connection is done with."""
        mode = rule.mode if rule is not None else "forward"
        if mode == "status":
            assert rule is not None
            body = f"injected {rule.status}\n".encode()
            head = f"HTTP/1.1 {rule.status} Injected\r\nContent-Length: {len(body)}\r\n"
            if rule.status == 401:
                head += 'WWW-Authenticate: Basic realm="git"\r\n'
            if rule.retry_after is not None:
                head += f"Retry-After: {rule.retry_after}\r\n"
            body = b"" if request.method == "HEAD" else body  # a HEAD answer has no body
            client.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)
            return False
        if mode == "slowdown":
            head = (
                "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n"
                f"Content-Length: {len(_SLOWDOWN)}\r\nConnection: close\r\n\r\n"
            )
            client.sendall(head.encode() + (b"" if request.method == "HEAD" else _SLOWDOWN))
            return False
        if mode == "reset":
            _reset(client)
            return False
        if mode == "hold":
            with self._lock:
                self.held.append(request)
            client.settimeout(None)
            try:  # wait for the client to give up (it reads nothing more from us)
                while client.recv(65536):
                    pass
            except OSError:
                pass
            return False
        if mode == "stall":
            assert rule is not None
            time.sleep(rule.delay)
        response = _exchange(self._up, request)
        if mode == "lost":
            _reset(client)
            return False
        if mode == "truncate":
            head, _, body = response.partition(b"\r\n\r\n")
            client.sendall(head + b"\r\n\r\n" + body[: max(len(body) // 2, 1) - 1])
            _reset(client)
            return False
        client.sendall(response)
        head = response.split(b"\r\n\r\n", 1)[0].lower()
        return b"connection: close" not in head and not head.startswith(b"http/1.0")


def _reset(sock: socket.socket) -> None:
    """Close with a TCP RST (SO_LINGER 0), as a dropped connection looks to the client."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def _read_request(reader: object, client: socket.socket) -> _Request | None:
    readline: Callable[[], bytes] = reader.readline  # type: ignore[attr-defined]
    read: Callable[[int], bytes] = reader.read  # type: ignore[attr-defined]
    line = readline()
    if not line:
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers: list[bytes] = []
    expect = False
    length, chunked = 0, False
    while True:
        h = readline()
        if h in (b"\r\n", b"\n", b""):
            break
        name, _, value = h.decode("latin-1").partition(":")
        lname, value = name.strip().lower(), value.strip()
        if lname == "expect" and value.lower() == "100-continue":
            expect = True
            continue  # answered here, not forwarded
        if lname == "content-length":
            length = int(value)
        if lname == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
        headers.append(h)
    if expect:
        client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    body = _read_chunked(readline, read) if chunked else read(length) if length else b""
    raw = line + b"".join(headers) + b"\r\n" + body
    return _Request(method, target, raw)


def _read_chunked(readline: Callable[[], bytes], read: Callable[[int], bytes]) -> bytes:
    out = bytearray()
    while True:
        size_line = readline()
        out += size_line
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while True:  # trailers, then the blank line
                trailer = readline()
                out += trailer
                if trailer in (b"\r\n", b"\n", b""):
                    return bytes(out)
        out += read(size + 2)


def _exchange(upstream: tuple[str, int], request: _Request) -> bytes:
    """Send ``request`` on a fresh connection; the whole raw response."""
    with socket.create_connection(upstream, timeout=60) as up:
        up.sendall(request.raw)
        reader = up.makefile("rb")
        status_line = reader.readline()
        head = [status_line]
        length: int | None = None
        chunked = False
        while True:
            h = reader.readline()
            head.append(h)
            if h in (b"\r\n", b"\n", b""):
                break
            name, _, value = h.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
            if name.strip().lower() == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
        code = int(status_line.split()[1]) if len(status_line.split()) > 1 else 0
        if request.method == "HEAD" or code in (204, 304) or 100 <= code < 200:
            body = b""
        elif chunked:
            body = _read_chunked(reader.readline, reader.read)
        elif length is not None:
            body = reader.read(length)
        else:
            body = reader.read()
        reader.close()
    return b"".join(head) + body


def _status(response: bytes) -> int:
    parts = response.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
