"""Local and fsspec-specific store behaviour, and the store factories."""

from __future__ import annotations

import hashlib
import os
import threading
import tracemalloc
import uuid
from pathlib import Path

import pytest

from datom_core._errors import NotFoundError, StoreError
from datom_core._store import (
    FsspecStore,
    LocalStore,
    S3Store,
    store_from_description,
    store_from_url,
)
from datom_core._store._paths import TEMP_MARKER
from tests.syncs import record_fsyncs


def test_layout_is_root_prefix_datom(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, prefix="team/proj")
    store.write_bytes("dm/abc.parquet", b"x")
    assert (tmp_path / "team" / "proj" / "datom" / "dm" / "abc.parquet").read_bytes() == b"x"
    assert store.url == (tmp_path / "team" / "proj" / "datom").as_uri()
    assert store.describe() == {"type": "local", "root": str(tmp_path), "prefix": "team/proj"}
    assert LocalStore(tmp_path).url == (tmp_path / "datom").as_uri()


def test_relative_roots_are_made_absolute(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = LocalStore("rel")
    assert store.describe()["root"] == str(tmp_path / "rel")
    store.write_bytes("k", b"v")
    monkeypatch.chdir("/")
    assert store.read_bytes("k") == b"v"


def test_nothing_is_created_before_the_first_write(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "later")
    store.check_access()
    assert store.list() == []
    assert not store.exists("k")
    assert not (tmp_path / "later").exists()


def test_writes_leave_no_temp_files_and_leftovers_are_hidden(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.write_bytes("dm/a", b"1")
    store.write_bytes("dm/a", b"2")
    store.put_if_absent("dm/b", b"3")
    store.put_if_absent("dm/b", b"4")
    source = tmp_path / "src.bin"
    source.write_bytes(b"5")
    store.upload_file(source, "dm/c")
    assert sorted(os.listdir(tmp_path / "datom" / "dm")) == ["a", "b", "c"]
    # What a crash between write and rename leaves behind: never listed as a key.
    (tmp_path / "datom" / "dm" / ".d.datom-tmp-0123456789abcdef").write_bytes(b"torn")
    assert store.list() == ["dm/a", "dm/b", "dm/c"]


def test_concurrent_writers_never_expose_a_torn_object(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    versions = [bytes([n]) * 200_000 for n in range(4)]
    store.write_bytes("dm/.metadata/metadata.json", versions[0])
    stop = threading.Event()
    seen: set[bytes] = set()

    def reader() -> None:
        while not stop.is_set():
            seen.add(store.read_bytes("dm/.metadata/metadata.json"))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for _ in range(20):
            for version in versions:
                store.write_bytes("dm/.metadata/metadata.json", version)
    finally:
        stop.set()
        thread.join()
    assert seen <= set(versions)


def test_sha256_memory_stays_constant(tmp_path: Path) -> None:
    data = os.urandom(20 * 1024 * 1024)
    store = LocalStore(tmp_path)
    (tmp_path / "big").write_bytes(data)
    store.upload_file(tmp_path / "big", "dm/big.parquet")
    del data
    expected = hashlib.sha256((tmp_path / "big").read_bytes()).hexdigest()
    tracemalloc.start()
    try:
        digest = store.sha256("dm/big.parquet")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert digest == expected
    assert peak < 4 * 1024 * 1024


def test_a_file_where_the_root_should_be_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_bytes(b"not a directory")
    store = LocalStore(tmp_path / "blocker")
    with pytest.raises(StoreError, match="not a directory"):
        store.check_access()
    with pytest.raises(StoreError) as caught:
        store.write_bytes("dm/x", b"x")
    assert "dm/x" in str(caught.value)
    with pytest.raises(StoreError):
        store.put_if_absent("dm/x", b"x")


def test_store_from_url_picks_the_backend(tmp_path: Path) -> None:
    plain = store_from_url(str(tmp_path / "p"))
    assert isinstance(plain, LocalStore)
    assert plain.url == (tmp_path / "p" / "datom").as_uri()
    spaced = tmp_path / "with space"
    from_file_url = store_from_url(spaced.as_uri(), prefix="proj")
    assert isinstance(from_file_url, LocalStore)
    assert from_file_url.describe() == {"type": "local", "root": str(spaced), "prefix": "proj"}
    s3 = store_from_url("s3://bucket-z/a/b", endpoint_url="http://127.0.0.1:9")
    assert isinstance(s3, S3Store)
    assert (s3.bucket, s3.prefix, s3.url) == ("bucket-z", "a/b", "s3://bucket-z/a/b/datom")
    memory = store_from_url(f"memory://datom-test-{uuid.uuid4().hex}")
    assert isinstance(memory, FsspecStore)
    assert memory.url.endswith("/datom")


@pytest.mark.parametrize(
    "url",
    ["", "file://otherhost/x", "s3:///no-bucket", "ftp://me:pw@127.0.0.1/x"],
)
def test_bad_store_urls_are_refused(url: str) -> None:
    with pytest.raises(StoreError) as caught:
        store_from_url(url)
    assert ":pw@" not in str(caught.value)


def test_unknown_fsspec_protocol_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="nosuchproto"):
        FsspecStore("nosuchproto://x")


@pytest.mark.parametrize(
    "description",
    [
        {"type": "gcs-but-typo", "url": "x"},
        {"type": "local"},
        {"type": "s3", "prefix": "p"},
        {"type": "fsspec"},
        {},
    ],
)
def test_malformed_descriptions_are_refused(description: dict) -> None:
    with pytest.raises(StoreError):
        store_from_description(description)


def test_fsspec_storage_options_are_not_recorded_or_shown(tmp_path: Path) -> None:
    # The local filesystem via fsspec, given an option named like a credential: it must
    # stay out of describe() and out of error messages.
    store = FsspecStore(f"file://{tmp_path}", auto_mkdir=True)
    store.write_bytes("dm/x", b"x")
    assert store_from_description(store.describe(), auto_mkdir=True).read_bytes("dm/x") == b"x"
    assert store.describe() == {"type": "fsspec", "url": f"file://{tmp_path}"}
    secretive = FsspecStore(f"memory://datom-test-{uuid.uuid4().hex}", client_secret="sup3r-s3cret")
    assert "sup3r-s3cret" not in repr(secretive) + secretive.url + repr(secretive.describe())


def test_missing_object_on_fsspec_is_not_found(tmp_path: Path) -> None:
    store = FsspecStore(f"file://{tmp_path}")
    with pytest.raises(NotFoundError, match="dm/none"):
        store.read_bytes("dm/none")


def test_documents_written_in_order_appear_in_order_and_only_once_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    store.write_bytes("a/old.json", b"old")
    store.put_if_absent("a/pinned.json", b"first")
    synced = record_fsyncs(monkeypatch)
    seen: list[list[str]] = []

    def after(i: int) -> None:  # what a reader finds at each step
        seen.append(store.list("a/"))
        # every new document's bytes were synced before the first was named (then the
        # folder, after each rename: these keys are not mirror documents)
        assert [TEMP_MARKER in p for p in synced] == [True, True] + [False] * i  # 0: skipped

    store.write_in_order(
        [
            ("a/pinned.json", b"second", True),  # there already: left alone
            ("a/new.json", b"new", True),
            ("a/old.json", b"newer", False),
        ],
        after=after,
    )
    assert seen == [
        ["a/old.json", "a/pinned.json"],
        ["a/new.json", "a/old.json", "a/pinned.json"],
        ["a/new.json", "a/old.json", "a/pinned.json"],
    ]
    assert [store.read_bytes(k) for k in ("a/pinned.json", "a/new.json", "a/old.json")] == [
        b"first",
        b"new",
        b"newer",
    ]
    assert not [p for p in (tmp_path / "datom" / "a").iterdir() if TEMP_MARKER in p.name]


def test_a_refused_document_names_nothing_after_it_and_leaves_no_temp(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    (tmp_path / "datom" / "a" / "dir.json").mkdir(parents=True)  # cannot be replaced
    with pytest.raises(StoreError):
        store.write_in_order([("a/dir.json", b"x", False), ("a/later.json", b"y", False)])
    assert not store.exists("a/later.json")
    assert not [p for p in (tmp_path / "datom" / "a").iterdir() if TEMP_MARKER in p.name]


def test_staged_documents_are_synced_but_unnamed_until_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    synced = record_fsyncs(monkeypatch)
    staged = store.stage_in_order([("a/one.json", b"1", True), ("a/two.json", b"2", False)])
    assert len(synced) == 2 and store.list("a/") == []  # the bytes are down, no name yet
    staged.publish()
    assert [store.read_bytes(k) for k in ("a/one.json", "a/two.json")] == [b"1", b"2"]
    dropped = store.stage_in_order([("a/three.json", b"3", False)])
    dropped.discard()
    assert store.list("a/") == ["a/one.json", "a/two.json"]
    assert not [p for p in (tmp_path / "datom" / "a").iterdir() if TEMP_MARKER in p.name]
