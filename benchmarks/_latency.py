"""A loopback TCP proxy that adds a fixed delay each way and counts HTTP requests.

It stands in front of one upstream (``host:port``) on 127.0.0.1, a WAN link in miniature:
every chunk read from either side is delivered to the other ``rtt / 2`` seconds later
(latency only, no bandwidth limit, order kept per direction). Requests are counted at
the proxy: a client chunk that starts a new turn of the conversation (the upstream has
answered since the client last sent) and begins with an HTTP request line is one
request. HTTP/1.1 clients do not pipeline, so this counts each request once, keep-alive
connections included; a body sent after ``100 Continue`` is not a new request (it does
not begin with a request line). Connections opened are counted too, and each request's
timing is kept (:attr:`LatencyProxy.timeline`: when it left the client, when the first
bytes of an answer reached it; an interim ``100 Continue`` is an answer there).

What it models, and what not: the delay is per chunk and chunks overlap in flight, so a
message written in several chunks (headers, then the body) still arrives ``rtt / 2`` after
its last chunk left, as on a real link: no per-write cost is added, and both sockets set
``TCP_NODELAY``. A connection's handshake costs nothing here (the proxy accepts on
loopback), where a real one costs a round trip (more with TLS): moto's server (werkzeug)
and ``git http-backend`` answer ``Connection: close`` / HTTP/1.0, so every request opens a
connection, which against real S3 or a keep-alive git server would be a pooled one.
"""

from __future__ import annotations

import heapq
import re
import socket
import threading
import time
from dataclasses import dataclass, field

__all__ = ["LatencyProxy"]

_REQUEST_LINE = re.compile(rb"^(GET|PUT|POST|HEAD|DELETE|PATCH|OPTIONS) \S+ HTTP/1\.[01]\r\n")


@dataclass
class LatencyProxy:
    """A delaying, request-counting TCP proxy on 127.0.0.1 in front of ``upstream_port``."""

    upstream_port: int
    rtt: float = 0.05
    upstream_host: str = "127.0.0.1"
    requests: int = 0
    connections: int = 0
    bytes_down: int = 0  # upstream -> client
    bytes_up: int = 0
    paths: list[str] = field(default_factory=list)
    # one per request: [path, left the client, first answer bytes reached it (or None)]
    timeline: list[list] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port: int = self._listener.getsockname()[1]
        # One delivery thread for all connections: (due time, seq, socket, data) in a heap.
        self._due: list[tuple[float, int, socket.socket, bytes, dict]] = []
        self._seq = 0
        self._cond = threading.Condition()

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    def start(self) -> LatencyProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        threading.Thread(target=self._deliver, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._listener.close()
        with self._cond:
            self._cond.notify_all()

    def reset_counts(self) -> None:
        with self._lock:
            self.requests = self.connections = self.bytes_down = self.bytes_up = 0
            self.paths.clear()
            self.timeline.clear()

    def counts(self) -> tuple[int, int, int]:
        """(requests, connections, bytes sent to clients) so far."""
        with self._lock:
            return self.requests, self.connections, self.bytes_down

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection((self.upstream_host, self.upstream_port))
            except OSError:
                client.close()
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections += 1
            # answered: the next client chunk starts a request; eof: directions closed
            turn = {"answered": True, "eof": 0, "socks": (client, upstream)}
            threading.Thread(
                target=self._pump, args=(client, upstream, True, turn), daemon=True
            ).start()
            threading.Thread(
                target=self._pump, args=(upstream, client, False, turn), daemon=True
            ).start()

    def _pump(self, src: socket.socket, dst: socket.socket, up: bool, turn: dict) -> None:
        while True:
            try:
                data = src.recv(262144)
            except OSError:
                data = b""
            with self._lock:
                if up and data and turn["answered"]:
                    match = _REQUEST_LINE.match(data)
                    if match:
                        self.requests += 1
                        path = " ".join(match.group(0).decode("latin-1").split()[:2])
                        self.paths.append(path)
                        turn["answered"] = False
                        turn["request"] = [path, time.monotonic(), None]
                        self.timeline.append(turn["request"])
                elif not up and data:
                    turn["answered"] = True
                    request = turn.get("request")
                    if request is not None and request[2] is None:
                        request[2] = time.monotonic() + self.rtt / 2  # as delivered
                if up:
                    self.bytes_up += len(data)
                else:
                    self.bytes_down += len(data)
            self._schedule(dst, data, turn)  # b"" = half-close, delivered in order too
            if not data:
                return

    def _schedule(self, dst: socket.socket, data: bytes, turn: dict) -> None:
        with self._cond:
            self._seq += 1
            due = time.monotonic() + self.rtt / 2
            heapq.heappush(self._due, (due, self._seq, dst, data, turn))
            self._cond.notify()

    def _deliver(self) -> None:
        while not self._stop.is_set():
            with self._cond:
                while not self._due and not self._stop.is_set():
                    self._cond.wait()
                if self._stop.is_set():
                    return
                due, _, dst, data, turn = self._due[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._due)
            try:
                if data:
                    dst.sendall(data)
                else:
                    dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            if not data:
                turn["eof"] += 1
                if turn["eof"] == 2:
                    for s in turn["socks"]:
                        s.close()
