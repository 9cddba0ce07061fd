"""S3-only store behaviour, against a real moto server on loopback."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import multiprocessing
import pickle
import socket
import subprocess
import sys
import threading
import uuid
import warnings
from typing import Any

import pytest

from datom_core._errors import DatomError, IntegrityError, NotFoundError, StoreError
from datom_core._store import S3Store, store_from_description, store_from_url
from tests.s3util import closed_loopback_port as _closed_loopback_port

LEAKY_KEY = "AKIALEAKCHECK0000001"
LEAKY_SECRET = "s3cr3t-leak-check-value"
LEAKY_TOKEN = "t0ken-leak-check-value"


def _messages(error: BaseException) -> str:
    """Every message in an exception chain, as a caller or a log would see them."""
    parts = []
    seen: BaseException | None = error
    while seen is not None:
        parts.append(f"{type(seen).__name__}: {seen}")
        seen = seen.__cause__ or seen.__context__
    return "\n".join(parts)


@pytest.mark.timeout(60)
def test_unreachable_endpoint_is_a_store_error(s3_endpoint: str) -> None:
    endpoint = f"http://127.0.0.1:{_closed_loopback_port()}"
    store = S3Store("some-bucket", prefix="proj", endpoint_url=endpoint)
    calls = [
        store.check_access,
        lambda: store.read_bytes("dm/x.parquet"),
        lambda: store.exists("dm/x.parquet"),
        lambda: store.write_bytes("dm/x.parquet", b"x"),
    ]
    for call in calls:
        with pytest.raises(StoreError) as caught:
            call()
        assert isinstance(caught.value, DatomError)
        assert not isinstance(caught.value, NotFoundError)
        assert store.url in str(caught.value)
        assert endpoint in str(caught.value)


def test_missing_bucket_is_a_store_error_naming_it(s3_endpoint: str) -> None:
    store = S3Store(f"datom-absent-{uuid.uuid4().hex[:12]}", endpoint_url=s3_endpoint)
    with pytest.raises(StoreError, match=rf"bucket '{store.bucket}' does not exist"):
        store.check_access()
    for call in (
        lambda: store.write_bytes("k", b"x"),
        lambda: store.put_if_absent("k", b"x"),
        lambda: store.list(),
    ):
        with pytest.raises(StoreError) as caught:
            call()
        assert not isinstance(caught.value, NotFoundError)
        assert store.bucket in str(caught.value)


def test_wrong_credentials_are_a_store_error(
    s3_endpoint: str, s3_bucket: str, iam_credentials: tuple[str, str]
) -> None:
    key, secret = iam_credentials
    good = S3Store(s3_bucket, prefix="proj", endpoint_url=s3_endpoint, key=key, secret=secret)
    good.check_access()
    good.write_bytes("dm/x.parquet", b"allowed")
    assert good.read_bytes("dm/x.parquet") == b"allowed"

    wrong_secret = S3Store(
        s3_bucket, prefix="proj", endpoint_url=s3_endpoint, key=key, secret=LEAKY_SECRET
    )
    unknown_key = S3Store(
        s3_bucket, prefix="proj", endpoint_url=s3_endpoint, key=LEAKY_KEY, secret=secret
    )
    for store in (wrong_secret, unknown_key):
        for call in (
            store.check_access,
            lambda s=store: s.read_bytes("dm/x.parquet"),
            lambda s=store: s.write_bytes("dm/y.parquet", b"denied"),
        ):
            with pytest.raises(StoreError, match="credentials") as caught:
                call()
            assert not isinstance(caught.value, NotFoundError)
            for leaked in (secret, LEAKY_SECRET, LEAKY_KEY):
                assert leaked not in _messages(caught.value)
    assert good.list() == ["dm/x.parquet"]


def test_credentials_never_appear_in_url_repr_description_or_errors(
    s3_endpoint: str, s3_bucket: str
) -> None:
    store = S3Store(
        s3_bucket,
        prefix="proj",
        endpoint_url=s3_endpoint,
        key=LEAKY_KEY,
        secret=LEAKY_SECRET,
        token=LEAKY_TOKEN,
    )
    store.write_bytes("dm/x.parquet", b"x")  # moto accepts any credentials by default
    shown = [store.url, repr(store), str(store), json.dumps(store.describe())]
    with pytest.raises(NotFoundError) as missing:
        store.read_bytes("dm/absent.parquet")
    shown.append(_messages(missing.value))
    unreachable = S3Store(
        s3_bucket,
        endpoint_url=f"http://127.0.0.1:{_closed_loopback_port()}",
        key=LEAKY_KEY,
        secret=LEAKY_SECRET,
        token=LEAKY_TOKEN,
    )
    with pytest.raises(StoreError) as failed:
        unreachable.check_access()
    shown.append(_messages(failed.value))
    for text in shown:
        for secret in (LEAKY_KEY, LEAKY_SECRET, LEAKY_TOKEN):
            assert secret not in text


def test_describe_records_the_address_only(s3_endpoint: str, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, prefix="/team/proj/", endpoint_url=s3_endpoint, region="eu-west-1")
    assert store.url == f"s3://{s3_bucket}/team/proj/datom"
    assert store.describe() == {
        "type": "s3",
        "bucket": s3_bucket,
        "prefix": "team/proj",
        "endpoint_url": s3_endpoint,
        "region": "eu-west-1",
    }
    assert store_from_description(store.describe()).url == store.url


def test_keys_land_under_prefix_datom(s3_endpoint: str, s3_bucket: str, s3_admin: Any) -> None:
    store = store_from_url(f"s3://{s3_bucket}/team/proj", endpoint_url=s3_endpoint)
    assert isinstance(store, S3Store)
    store.write_bytes("dm/abc.parquet", b"x")
    store.write_bytes(".metadata/manifest.json", b"{}")
    listed = s3_admin.list_objects_v2(Bucket=s3_bucket)["Contents"]
    assert sorted(o["Key"] for o in listed) == [
        "team/proj/datom/.metadata/manifest.json",
        "team/proj/datom/dm/abc.parquet",
    ]
    no_prefix = store_from_url(f"s3://{s3_bucket}", endpoint_url=s3_endpoint)
    assert no_prefix.url == f"s3://{s3_bucket}/datom"
    assert no_prefix.list() == []


def test_credentials_in_urls_are_refused(s3_endpoint: str) -> None:
    with pytest.raises(StoreError) as caught:
        S3Store("bucket-x", endpoint_url="http://user:hunter2@127.0.0.1:9")
    assert "hunter2" not in str(caught.value)
    with pytest.raises(StoreError) as caught:
        store_from_url("s3://AKIAX:hunter2@bucket-x/proj")
    assert "hunter2" not in str(caught.value)


def test_a_pickled_store_works_in_another_process(s3_endpoint: str, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, prefix="proj", endpoint_url=s3_endpoint)
    assert not store.exists("dm/child.parquet")  # the parent's filesystem is live now
    child = (
        "import pickle, sys\n"
        "store = pickle.loads(sys.stdin.buffer.read())\n"
        "store.write_bytes('dm/child.parquet', b'from another process')\n"
    )
    subprocess.run([sys.executable, "-c", child], input=pickle.dumps(store), check=True, timeout=60)
    assert store.exists("dm/child.parquet")
    assert store.read_bytes("dm/child.parquet") == b"from another process"


def _write_in_child(store: S3Store) -> None:
    store.write_bytes("dm/forked.parquet", b"from a forked child")


@pytest.mark.timeout(60)
@pytest.mark.skipif(sys.platform == "win32", reason="fork() does not exist on Windows")
def test_a_store_keeps_working_after_fork(s3_endpoint: str, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, prefix="proj", endpoint_url=s3_endpoint)
    store.write_bytes("dm/parent.parquet", b"x")  # binds the filesystem to this process
    with warnings.catch_warnings():
        # Python >= 3.12 warns about fork() in a threaded process (moto runs in a thread
        # here); the child only talks HTTP, which is what this test is about.
        warnings.simplefilter("ignore", DeprecationWarning)
        child = multiprocessing.get_context("fork").Process(target=_write_in_child, args=(store,))
        child.start()
    child.join(50)
    assert child.exitcode == 0
    assert store.read_bytes("dm/forked.parquet") == b"from a forked child"
    assert store.read_bytes("dm/parent.parquet") == b"x"


def _parquet_bytes(table: Any) -> bytes:
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def test_read_verified_is_one_get_hashed_as_it_streams(s3_endpoint: str, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, prefix="proj", endpoint_url=s3_endpoint)
    data = bytes(range(256)) * (40 * 4096 + 3)  # ~40 MiB: many body chunks
    store.write_bytes("dm/big.parquet", data)
    fs = store._fs
    calls: list[str] = []
    fs.call_s3("head_bucket", Bucket=s3_bucket)  # opens the client whose calls we watch
    fs.s3.meta.events.register("before-call.s3", lambda model, **_: calls.append(model.name))
    got = store.read_verified("dm/big.parquet", hashlib.sha256(data).hexdigest())
    assert bytes(got) == data
    assert calls == ["GetObject"]  # no HEAD, no ranged re-reads, no second pass


def test_a_content_named_document_is_one_conditional_put(s3_endpoint: str, s3_bucket: str) -> None:
    """A snapshot put before a push costs one request, not a HEAD and a PUT; a second
    put of the key is refused by the endpoint and leaves the first bytes."""
    store = S3Store(s3_bucket, prefix="proj", endpoint_url=s3_endpoint)
    key = f"dm/.metadata/{uuid.uuid4().hex}.json"
    fs = store._fs
    calls: list[str] = []
    fs.call_s3("head_bucket", Bucket=s3_bucket)  # opens the client whose calls we watch
    fs.s3.meta.events.register("before-call.s3", lambda model, **_: calls.append(model.name))
    assert store.put_content_named(key, b"the snapshot") is True
    assert calls == ["PutObject"]
    assert store.put_content_named(key, b"other bytes") is False
    assert calls == ["PutObject", "PutObject"]
    assert store.read_bytes(key) == b"the snapshot"


def test_a_look_is_one_head_and_a_document_read_is_one_get(
    s3_endpoint: str, s3_bucket: str
) -> None:
    """What a write asks most (is the parquet there? the store's history copy) costs one
    request each: no listing of the key as a folder after a missing HEAD, no HEAD before a
    GET."""
    store = S3Store(s3_bucket, prefix="proj", endpoint_url=s3_endpoint)
    store.write_bytes("dm/.metadata/version_history.json", b"[]\n")
    fs = store._fs
    calls: list[str] = []
    fs.call_s3("head_bucket", Bucket=s3_bucket)  # opens the client whose calls we watch
    fs.s3.meta.events.register("before-call.s3", lambda model, **_: calls.append(model.name))
    assert store.exists("dm/absent.parquet") is False
    assert store.exists("dm/.metadata/version_history.json") is True
    assert store.size("dm/.metadata/version_history.json") == 3
    assert store.read_bytes("dm/.metadata/version_history.json") == b"[]\n"
    assert store.read_if_present("dm/.metadata/absent.json") is None
    assert calls == ["HeadObject", "HeadObject", "HeadObject", "GetObject", "GetObject"]


def test_an_object_tampered_in_the_bucket_is_refused_before_parsing(
    s3_endpoint: str, s3_bucket: str, s3_admin: Any
) -> None:
    import pyarrow as pa

    from datom_core._project._parquet import read_verified

    store = S3Store(s3_bucket, prefix="proj", endpoint_url=s3_endpoint)
    genuine = _parquet_bytes(pa.table({"x": [1, 2, 3]}))
    store.write_bytes("dm/t.parquet", genuine)
    sha = hashlib.sha256(genuine).hexdigest()
    assert read_verified(store, "dm/t.parquet", sha).column("x").to_pylist() == [1, 2, 3]
    # Someone with bucket access swaps in other, perfectly parseable parquet, then garbage.
    for forged in (_parquet_bytes(pa.table({"x": [1, 2, 4]})), b"PAR1 not parquet at all PAR1"):
        s3_admin.put_object(Bucket=s3_bucket, Key="proj/datom/dm/t.parquet", Body=forged)
        with pytest.raises(IntegrityError) as caught:
            read_verified(store, "dm/t.parquet", sha)
        err = caught.value
        assert (err.key, err.expected) == ("dm/t.parquet", sha)
        assert err.actual == hashlib.sha256(forged).hexdigest()
        assert "parquet_sha" in str(err) and sha in str(err) and err.actual in str(err)


class _CuttingProxy:
    """A TCP relay on loopback to the moto server that cuts its first ``cuts`` connections
    after ``after`` response bytes: a transfer dying mid-body, on real sockets."""

    def __init__(self, endpoint: str, cuts: int, after: int) -> None:
        host, port = endpoint.removeprefix("http://").split(":")
        self._target = (host, int(port))
        self._cuts, self._after = cuts, after
        self.connections = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            limit = self._after if self.connections <= self._cuts else None
            upstream = socket.create_connection(self._target)
            threading.Thread(target=self._pipe, args=(client, upstream, None), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, limit), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket, limit: int | None) -> None:
        sent = 0
        try:
            while chunk := source.recv(65536):
                if limit is not None and sent + len(chunk) > limit:
                    sink.sendall(chunk[: limit - sent])
                    break
                sink.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()

    def close(self) -> None:
        self._server.close()


@pytest.mark.timeout(120)
def test_a_transfer_cut_mid_body_is_read_again_not_called_tampering(
    s3_endpoint: str, s3_bucket: str, s3_admin: Any
) -> None:
    data = bytes(range(256)) * (12 * 4096)  # 12 MiB
    sha = hashlib.sha256(data).hexdigest()
    s3_admin.put_object(Bucket=s3_bucket, Key="proj/datom/dm/cut.parquet", Body=data)
    proxy = _CuttingProxy(s3_endpoint, cuts=1, after=3 << 20)
    try:
        store = S3Store(s3_bucket, prefix="proj", endpoint_url=proxy.endpoint)
        assert bytes(store.read_verified("dm/cut.parquet", sha)) == data
        assert proxy.connections == 2  # the cut GET, then one full one
    finally:
        proxy.close()
    proxy = _CuttingProxy(s3_endpoint, cuts=100, after=3 << 20)
    try:
        store = S3Store(s3_bucket, prefix="proj", endpoint_url=proxy.endpoint)
        with pytest.raises(StoreError) as caught:
            store.read_verified("dm/cut.parquet", sha)
        assert not isinstance(caught.value, IntegrityError)
        assert "dm/cut.parquet" in str(caught.value) and store.url in str(caught.value)
    finally:
        proxy.close()
