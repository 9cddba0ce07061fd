"""Requests a small write makes to S3 (moto behind a loopback proxy that logs them), and
what each waits for on the wire."""

from __future__ import annotations

import contextlib
import hashlib
import re
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datom_core as dc
from datom_core._store import _s3, _s3session
from tests.core.projects import frame
from tests.faultproxy import FaultProxy

PARQUET = re.compile(r"/dm/[0-9a-f]{64}\.parquet$")


def _another_projects_parquet(
    tmp_path: Path, bucket: str, proxy: FaultProxy
) -> tuple[dc.Connection, str]:
    """A second project in the bucket with ``dm`` written, and its parquet's key (the key
    the first project's ``dm`` of the same data takes)."""
    other = dc.init_repo(
        tmp_path / "other", "OTHER", dc.S3Store(bucket, prefix="other", endpoint_url=proxy.url)
    )
    other.write("dm", frame(seed=3))
    return other, next(k for k in other.store.list("dm") if k.endswith(".parquet"))


def _write(tmp_path: Path, bucket: str, proxy: FaultProxy) -> tuple[dc.Connection, list[str]]:
    store = dc.S3Store(bucket, prefix="proj", endpoint_url=proxy.url)
    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", store)
    conn.write("dm", frame())
    proxy.seen.clear()
    conn.write("dm", frame(seed=2))
    return conn, [f"{m} {t.split('?')[0]}" for m, t in proxy.seen]


def test_a_small_parquet_is_put_without_a_look_first(
    tmp_path: Path, s3_bucket: str, s3_proxy: FaultProxy
) -> None:
    """The conditional PUT finds an object already there by itself: a small new parquet
    is one request (a HEAD first would be a second round trip)."""
    conn, seen = _write(tmp_path, s3_bucket, s3_proxy)
    parquet = [r for r in seen if PARQUET.search(r)]
    assert [r.split()[0] for r in parquet] == ["PUT"]
    assert conn.validate().ok


def test_independent_puts_are_all_in_flight_at_once(s3_bucket: str, s3_proxy: FaultProxy) -> None:
    """A group's store mirror puts its tables' documents together (``_groupmirror``): 24
    PUTs handed to the store at once are all sent before any is answered, not in waves
    of botocore's default pool (10 connections)."""
    store = dc.S3Store(s3_bucket, prefix="many", endpoint_url=s3_proxy.url)
    store.write_bytes("warm", b"{}")
    stalled = s3_proxy.inject("stall", method="PUT", path=r"/doc-\d+$", times=24, delay=2.0)
    with ThreadPoolExecutor(24) as pool:
        puts = [pool.submit(store.write_bytes, f"doc-{i}", b"{}") for i in range(24)]
        while stalled.fired < 24 and not any(p.done() for p in puts):
            time.sleep(0.01)
        in_flight = stalled.fired
        answered = sum(p.done() for p in puts)
        for p in puts:
            p.result()
    assert (in_flight, answered) == (24, 0)


def test_a_parquet_already_there_is_kept_and_not_replaced(
    tmp_path: Path, s3_bucket: str, s3_proxy: FaultProxy
) -> None:
    """An object no recorded version names already holds the new data's parquet (an
    interrupted write's): the conditional PUT is refused, the object verified and used."""
    conn, _ = _write(tmp_path, s3_bucket, s3_proxy)
    other, key = _another_projects_parquet(tmp_path, s3_bucket, s3_proxy)
    there = other.store.read_bytes(key)
    conn.store.put_if_absent(key, there)
    s3_proxy.seen.clear()
    result = conn.write("dm", frame(seed=3))
    assert result.change == "full" and not result.uploaded
    assert conn.store.read_bytes(key) == there
    parquet = [m for m, t in s3_proxy.seen if PARQUET.search(t.split("?")[0])]
    assert parquet[0] == "PUT" and parquet.count("PUT") == 1  # refused: then verified
    assert conn.validate().ok


def test_a_large_parquet_is_looked_for_first(
    tmp_path: Path, s3_bucket: str, s3_proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the threshold the HEAD spares an upload: the look stays."""
    monkeypatch.setattr(_s3, "_LOOK_FIRST_ABOVE", 0)
    _, seen = _write(tmp_path, s3_bucket, s3_proxy)
    parquet = [r for r in seen if PARQUET.search(r)]
    assert [r.split()[0] for r in parquet] == ["HEAD", "PUT"]


# -- what the wire carries, and when ------------------------------------------------------


@dataclass
class _Exchange:
    """One request on the wire: when it began, when its body was complete, when its
    answer reached the client, and whether a ``100 Continue`` came down before that."""

    method: str
    path: str
    begun: float
    length: int = -1  # of the body; -1 until the headers are complete
    head: bytes = b""
    received: int = 0
    body_done: float | None = None
    answered: float | None = None
    continued: float | None = None  # when a ``100 Continue`` reached the client

    @property
    def key(self) -> str:
        return self.path.split("?")[0]


class _Wire:
    """A loopback TCP relay in front of S3 that holds every answer back ``delay`` seconds
    (a round trip in miniature) and records each request (:class:`_Exchange`)."""

    def __init__(self, upstream: str, delay: float) -> None:
        parts = urlsplit(upstream)
        self._up = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.delay = delay
        self.exchanges: list[_Exchange] = []
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._server.close()
        for sock in self._sockets:  # wakes the pumps still reading
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(timeout=10)
        for sock in self._sockets:
            sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self._up)
            self._sockets += [client, upstream]
            current: list[_Exchange] = []  # this connection's exchanges
            for pump, a, b in ((self._up_pump, client, upstream), (self._down_pump, upstream, client)):  # fmt: skip
                thread = threading.Thread(target=pump, args=(a, b, current), daemon=True)
                self._threads.append(thread)
                thread.start()

    def _up_pump(self, src: socket.socket, dst: socket.socket, current: list[_Exchange]) -> None:
        while data := _recv(src):
            now = time.monotonic()
            with self._lock:
                ex = current[-1] if current else None
                if ex is None or ex.answered is not None:
                    method, path = data.split(b" ", 2)[:2]
                    ex = _Exchange(method.decode(), path.decode(), now)
                    current.append(ex)
                    self.exchanges.append(ex)
                if ex.length < 0:
                    ex.head += data
                    if b"\r\n\r\n" in ex.head:
                        head, _, body = ex.head.partition(b"\r\n\r\n")
                        found = re.search(rb"(?im)^content-length:\s*(\d+)", head)
                        ex.length, ex.received = int(found.group(1)) if found else 0, len(body)
                else:
                    ex.received += len(data)
                if ex.length >= 0 and ex.received >= ex.length and ex.body_done is None:
                    ex.body_done = now
            _send(dst, data)
        _send(dst, b"")

    def _down_pump(self, src: socket.socket, dst: socket.socket, current: list[_Exchange]) -> None:
        while data := _recv(src):
            time.sleep(self.delay)  # in order: one pump per direction
            with self._lock:
                ex = current[-1] if current else None
                final = _CONTINUE.sub(b"", data)
                if ex is not None and ex.answered is None:
                    now = time.monotonic()
                    if len(final) < len(data) and ex.continued is None:
                        ex.continued = now
                    ex.answered = now if final else None
            _send(dst, data)
        _send(dst, b"")


_CONTINUE = re.compile(rb"HTTP/1\.1 100 Continue\r\n\r\n")


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def _send(sock: socket.socket, data: bytes) -> None:
    """Forward ``data``; ``b""``: the other side ended, so end this direction too."""
    try:
        sock.sendall(data) if data else sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


@pytest.fixture
def wire(s3_endpoint: str) -> Iterator[_Wire]:
    relay = _Wire(s3_endpoint, delay=0.15)
    try:
        yield relay
    finally:
        relay.close()


def _small_write(tmp_path: Path, bucket: str, wire: _Wire) -> tuple[dc.Connection, list[_Exchange]]:
    store = dc.S3Store(bucket, prefix="proj", endpoint_url=wire.url)
    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", store)
    conn.write("dm", frame())
    with wire._lock:
        wire.exchanges.clear()
    conn.write("dm", frame(seed=2))
    with wire._lock:
        return conn, list(wire.exchanges)


def _one(exchanges: list[_Exchange], method: str, pattern: str) -> _Exchange:
    found = [e for e in exchanges if e.method == method and re.search(pattern, e.key)]
    assert len(found) == 1, [(e.method, e.key) for e in exchanges]
    return found[0]


SNAPSHOT = r"/dm/\.metadata/[0-9a-f]{64}\.json$"


def test_a_small_put_sends_its_body_with_its_headers(s3_bucket: str, wire: _Wire) -> None:
    """botocore asks every PUT for ``100 Continue`` (``Expect``) before it sends the body:
    a round trip of its own. A small body goes at once; the answer is the only one."""
    store = dc.S3Store(s3_bucket, prefix="p", endpoint_url=wire.url)
    store.write_bytes("dm/.metadata/metadata.json", b"{}" * 100)
    store.put_content_named("dm/.metadata/" + "a" * 64 + ".json", b"{}")
    assert store.put_if_absent("dm/" + "b" * 64 + ".parquet", b"x" * 5000)
    puts = [e for e in wire.exchanges if e.method == "PUT"]
    assert len(puts) == 3
    for put in puts:
        assert put.body_done is not None and put.answered is not None
        assert put.continued is None, f"{put.key} waited for 100 Continue"
        assert put.body_done < put.answered  # the body left before any answer came


def test_a_large_put_still_asks_before_its_body(
    s3_bucket: str, wire: _Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the threshold the body waits for ``100 Continue``: a refusal spares it."""
    monkeypatch.setattr(_s3session, "CONTINUE_ABOVE", 1000)
    store = dc.S3Store(s3_bucket, prefix="p", endpoint_url=wire.url)
    assert store.put_content_named("dm/.metadata/" + "c" * 64 + ".json", b"y" * 5000)
    (put,) = [e for e in wire.exchanges if e.method == "PUT"]
    assert put.continued is not None and put.body_done is not None
    assert put.continued < put.body_done


def test_a_small_write_is_six_requests_the_history_and_metadata_at_once(
    tmp_path: Path, s3_bucket: str, wire: _Wire, accelerated: None
) -> None:
    """The parquet and the snapshot are in flight together (the second begins before
    the first is answered); the mirror does not put the snapshot again; every document
    that names the version starts once the parquet and the snapshot are answered: the
    history and metadata.json together, the manifest once both are answered (last)."""
    conn, seen = _small_write(tmp_path, s3_bucket, wire)
    assert sorted(e.method for e in seen) == ["GET", "PUT", "PUT", "PUT", "PUT", "PUT"]
    parquet, snapshot = _one(seen, "PUT", PARQUET.pattern), _one(seen, "PUT", SNAPSHOT)
    assert parquet.answered is not None and snapshot.answered is not None
    assert max(parquet.begun, snapshot.begun) < min(parquet.answered, snapshot.answered)
    history = _one(seen, "PUT", r"version_history\.json$")
    metadata = _one(seen, "PUT", r"/dm/\.metadata/metadata\.json$")
    manifest = _one(seen, "PUT", r"/datom/\.metadata/manifest\.json$")
    assert history.answered is not None and metadata.answered is not None
    assert min(history.begun, metadata.begun) > max(parquet.answered, snapshot.answered)
    assert max(history.begun, metadata.begun) < min(history.answered, metadata.answered)
    assert manifest.begun > max(history.answered, metadata.answered)
    assert conn.validate().ok


def test_the_plain_path_puts_the_parquet_then_the_snapshot(
    tmp_path: Path, s3_bucket: str, wire: _Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``DATOM_PLAIN=1``: one PUT after the other, as before the two went at once; the
    history answered before metadata.json begins."""
    monkeypatch.setenv("DATOM_PLAIN", "1")
    conn, seen = _small_write(tmp_path, s3_bucket, wire)
    parquet, snapshot = _one(seen, "PUT", PARQUET.pattern), _one(seen, "PUT", SNAPSHOT)
    assert parquet.answered is not None and snapshot.begun > parquet.answered
    history = _one(seen, "PUT", r"version_history\.json$")
    metadata = _one(seen, "PUT", r"/dm/\.metadata/metadata\.json$")
    assert history.answered is not None and metadata.begun > history.answered
    assert conn.validate().ok


@pytest.mark.parametrize("refused", ["parquet", "snapshot"])
def test_a_refused_put_of_the_pair_leaves_the_store_as_it_was(
    tmp_path: Path, s3_bucket: str, s3_proxy: FaultProxy, refused: str
) -> None:
    """Either PUT of the pair refused (403): the write fails and the other, in flight
    at the same time, is removed again; git and the store hold what they held."""
    store = dc.S3Store(s3_bucket, prefix="proj", endpoint_url=s3_proxy.url)
    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", store)
    conn.write("dm", frame())
    before = sorted(store.list(""))
    head = conn.context.require_repo().head()
    path = PARQUET.pattern if refused == "parquet" else SNAPSHOT
    s3_proxy.inject("status", method="PUT", path=path.rstrip("$"), status=403, times=10)
    with pytest.raises(dc.StoreError):
        conn.write("dm", frame(seed=2))
    s3_proxy.clear()
    assert sorted(store.list("")) == before
    assert conn.context.require_repo().head() == head
    assert conn.validate().ok


def test_a_parquet_there_in_other_bytes_is_pinned_by_the_snapshot(
    tmp_path: Path, s3_bucket: str, s3_proxy: FaultProxy, accelerated: None
) -> None:
    """The snapshot left beside the parquet PUT names our bytes; when an unrecorded
    object of the same data but other bytes (another writer's encoding) refuses our
    parquet, the version pins that object, and its snapshot says so."""
    conn, _ = _write(tmp_path, s3_bucket, s3_proxy)
    other, key = _another_projects_parquet(tmp_path, s3_bucket, s3_proxy)
    sink = tmp_path / "other.parquet"
    pq.write_table(
        pq.read_table(pa.BufferReader(other.store.read_bytes(key))), sink, compression="gzip"
    )
    there = sink.read_bytes()
    assert there != other.store.read_bytes(key)
    conn.store.put_if_absent(key, there)
    result = conn.write("dm", frame(seed=3))
    assert result.change == "full" and not result.uploaded
    assert result.parquet_sha == hashlib.sha256(there).hexdigest()
    snapshot = conn.store.read_bytes(f"dm/.metadata/{result.version}.json")
    assert result.parquet_sha in snapshot.decode()
    assert conn.store.read_bytes(key) == there
    assert conn.validate().ok
    assert conn.read("dm").shape[0] == 5
