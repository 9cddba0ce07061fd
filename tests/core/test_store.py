"""Store conformance: every backend (local dir, moto S3, fsspec memory://) behaves alike."""

from __future__ import annotations

import copy
import hashlib
import os
import threading
from pathlib import Path

import pytest

from datom_core._errors import IntegrityError, InvalidNameError, NotFoundError, StoreError
from datom_core._store import Store, store_from_description

BIG = 20 * 1024 * 1024 + 12345  # > 20 MiB and not a multiple of any chunk size


def _secrets_free(text: str) -> None:
    for secret in ("testing", "s3cr3t", "AKIA"):
        assert secret not in text


def test_round_trip(store: Store) -> None:
    store.write_bytes("dm/abc.parquet", b"\x00\x01payload\xff")
    store.write_bytes(".metadata/manifest.json", b"{}")
    store.write_bytes("empty", b"")
    assert store.read_bytes("dm/abc.parquet") == b"\x00\x01payload\xff"
    assert store.read_bytes(".metadata/manifest.json") == b"{}"
    assert store.read_bytes("empty") == b""
    assert store.exists("dm/abc.parquet")
    assert store.size("dm/abc.parquet") == 10
    with store.open_read("dm/abc.parquet") as stream:
        assert stream.read(3) == b"\x00\x01p"
        stream.seek(-1, os.SEEK_END)
        assert stream.read() == b"\xff"


def test_table_names_with_spaces_and_parentheses_are_keys(store: Store) -> None:
    store.write_bytes("Adverse Events (v2)/.metadata/metadata.json", b"{}")
    assert store.list("Adverse Events (v2)") == ["Adverse Events (v2)/.metadata/metadata.json"]


def test_overwrite(store: Store) -> None:
    store.write_bytes("dm/.metadata/metadata.json", b"first version, longer")
    store.write_bytes("dm/.metadata/metadata.json", b"second")
    assert store.read_bytes("dm/.metadata/metadata.json") == b"second"
    assert store.size("dm/.metadata/metadata.json") == 6


def test_put_if_absent_writes_once_and_never_overwrites(store: Store, tmp_path: Path) -> None:
    assert store.put_if_absent("dm/sha.parquet", b"original") is True
    assert store.put_if_absent("dm/sha.parquet", b"impostor") is False
    source = tmp_path / "other.parquet"
    source.write_bytes(b"impostor from a file")
    assert store.put_if_absent("dm/sha.parquet", source) is False
    assert store.read_bytes("dm/sha.parquet") == b"original"


def test_put_content_named_writes_once_and_never_overwrites(store: Store) -> None:
    key = "dm/.metadata/" + "ab" * 32 + ".json"
    assert store.put_content_named(key, b"the snapshot") is True
    assert store.put_content_named(key, b"the snapshot") is False
    assert store.put_content_named(key, b"not what its name says") is False
    assert store.read_bytes(key) == b"the snapshot"


def test_put_if_absent_from_a_file(store: Store, tmp_path: Path) -> None:
    source = tmp_path / "data.parquet"
    source.write_bytes(b"parquet bytes")
    assert store.put_if_absent("dm/f.parquet", source) is True
    assert store.put_if_absent("dm/g.parquet", str(source)) is True
    assert store.read_bytes("dm/f.parquet") == store.read_bytes("dm/g.parquet") == b"parquet bytes"


def test_put_if_absent_holds_even_when_the_existence_check_is_stale(store: Store) -> None:
    # A writer that checked just before another one wrote: the backend's own
    # create-only write must still refuse to replace the object.
    store.write_bytes("dm/raced.parquet", b"winner")
    late = copy.copy(store)
    late.exists = lambda key: False  # type: ignore[method-assign]
    assert late.put_if_absent("dm/raced.parquet", b"loser") is False
    assert store.read_bytes("dm/raced.parquet") == b"winner"


def test_concurrent_put_if_absent_has_one_winner(store: Store) -> None:
    results: dict[int, bool] = {}
    start = threading.Barrier(6)

    def writer(n: int) -> None:
        start.wait()
        results[n] = store.put_if_absent("dm/contended.parquet", f"writer {n}".encode())

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [n for n, wrote in results.items() if wrote]
    assert len(results) == 6
    assert len(winners) == 1
    assert store.read_bytes("dm/contended.parquet") == f"writer {winners[0]}".encode()


def test_sha256_streams_and_matches_hashlib(store: Store) -> None:
    data = os.urandom(3 * 1024 * 1024 + 7)
    store.write_bytes("dm/x.parquet", data)
    assert store.sha256("dm/x.parquet") == hashlib.sha256(data).hexdigest()
    store.write_bytes("dm/empty.parquet", b"")
    assert store.sha256("dm/empty.parquet") == hashlib.sha256(b"").hexdigest()


def test_list_is_recursive_sorted_and_prefix_is_a_directory(store: Store) -> None:
    keys = [
        "dm/b.parquet",
        "dm/a.parquet",
        "dm/.metadata/metadata.json",
        "dm2/a.parquet",
        ".metadata/manifest.json",
    ]
    for key in keys:
        store.write_bytes(key, key.encode())
    assert store.list() == sorted(keys)
    assert store.list("dm") == ["dm/.metadata/metadata.json", "dm/a.parquet", "dm/b.parquet"]
    assert store.list("dm/") == store.list("dm")
    assert store.list("dm/.metadata") == ["dm/.metadata/metadata.json"]
    assert store.list("d") == []
    assert store.list("absent") == []
    assert store.list("dm/a.parquet") == []


def test_list_of_an_empty_store(store: Store) -> None:
    assert store.list() == []


def test_exists_is_false_for_missing_keys_and_directories(store: Store) -> None:
    assert not store.exists("dm/nothing.parquet")
    store.write_bytes("dm/.metadata/metadata.json", b"{}")
    assert not store.exists("dm")
    assert not store.exists("dm/.metadata")


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.read_bytes("dm/missing.parquet"),
        lambda s: s.open_read("dm/missing.parquet"),
        lambda s: s.size("dm/missing.parquet"),
        lambda s: s.sha256("dm/missing.parquet"),
        lambda s: s.read_verified("dm/missing.parquet", "0" * 64),
    ],
    ids=["read_bytes", "open_read", "size", "sha256", "read_verified"],
)
def test_missing_key_raises_not_found_naming_key_and_store(store: Store, call) -> None:
    with pytest.raises(NotFoundError) as caught:
        call(store)
    assert "dm/missing.parquet" in str(caught.value)
    assert store.url in str(caught.value)


def test_delete_removes_and_tolerates_missing(store: Store) -> None:
    store.write_bytes("dm/gone.parquet", b"x")
    store.delete("dm/gone.parquet")
    assert not store.exists("dm/gone.parquet")
    store.delete("dm/gone.parquet")
    assert store.list() == []


BAD_KEYS = [
    "",
    "/abs/key",
    "../escape",
    "dm/../../escape",
    "dm/./x",
    "dm//x",
    "dm/",
    "dm\\x.parquet",
    "dm/*.parquet",
    "dm/x?.parquet",
    "dm/\x00x",
    "dm/.x.datom-tmp-00ff",
]


@pytest.mark.parametrize("key", BAD_KEYS)
def test_invalid_keys_are_refused_by_every_operation(store: Store, key: str, tmp_path) -> None:
    source = tmp_path / "f"
    source.write_bytes(b"x")
    calls = [
        lambda: store.read_bytes(key),
        lambda: store.open_read(key),
        lambda: store.write_bytes(key, b"x"),
        lambda: store.put_if_absent(key, b"x"),
        lambda: store.upload_file(source, key),
        lambda: store.exists(key),
        lambda: store.size(key),
        lambda: store.sha256(key),
        lambda: store.read_verified(key, "0" * 64),
        lambda: store.delete(key),
    ]
    for call in calls:
        with pytest.raises(InvalidNameError):
            call()
    assert store.list() == []


@pytest.mark.parametrize("prefix", ["/abs", "../up", "a//b", "a\\b"])
def test_invalid_list_prefixes_are_refused(store: Store, prefix: str) -> None:
    with pytest.raises(InvalidNameError):
        store.list(prefix)


def test_describe_round_trips_and_holds_no_secrets(store: Store) -> None:
    description = store.describe()
    _secrets_free(repr(description))
    _secrets_free(store.url + repr(store))
    store.write_bytes("dm/.metadata/metadata.json", b"shared")
    again = store_from_description(description)
    assert type(again) is type(store)
    assert again.url == store.url
    assert again.describe() == description
    assert again.read_bytes("dm/.metadata/metadata.json") == b"shared"


def test_upload_file(store: Store, tmp_path: Path) -> None:
    source = tmp_path / "upload.parquet"
    source.write_bytes(b"uploaded" * 1000)
    store.upload_file(source, "dm/up.parquet")
    assert store.read_bytes("dm/up.parquet") == b"uploaded" * 1000
    source.write_bytes(b"replaced")
    store.upload_file(str(source), "dm/up.parquet")
    assert store.read_bytes("dm/up.parquet") == b"replaced"


def test_upload_of_a_missing_local_file_names_it(store: Store, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="nope.parquet"):
        store.upload_file(tmp_path / "nope.parquet", "dm/x.parquet")
    with pytest.raises(NotFoundError, match="nope.parquet"):
        store.put_if_absent("dm/x.parquet", tmp_path / "nope.parquet")
    assert not store.exists("dm/x.parquet")


def test_large_object_streams_through_upload_hash_and_read(store: Store, tmp_path: Path) -> None:
    data = os.urandom(BIG)
    source = tmp_path / "big.parquet"
    source.write_bytes(data)
    assert store.put_if_absent("dm/big.parquet", source) is True
    assert store.size("dm/big.parquet") == BIG
    assert store.sha256("dm/big.parquet") == hashlib.sha256(data).hexdigest()
    with store.open_read("dm/big.parquet") as stream:
        stream.seek(BIG - 100)
        assert stream.read() == data[-100:]


def test_open_read_feeds_pyarrow(store: Store) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"id": list(range(50_000)), "name": [f"n{i}" for i in range(50_000)]})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    store.write_bytes("dm/t.parquet", sink.getvalue().to_pybytes())
    with store.open_read("dm/t.parquet") as stream:
        assert pq.read_table(stream).equals(table)
    assert stream.closed


def test_two_instances_see_each_others_writes(store: Store) -> None:
    other = store_from_description(store.describe())
    # Prime whatever caches exist on both sides before the other writes.
    assert not other.exists("dm/new.parquet")
    assert other.list("dm") == []
    store.write_bytes("dm/new.parquet", b"fresh")
    assert other.exists("dm/new.parquet")
    assert other.list("dm") == ["dm/new.parquet"]
    assert other.read_bytes("dm/new.parquet") == b"fresh"
    other.write_bytes("dm/new.parquet", b"fresher")
    assert store.read_bytes("dm/new.parquet") == b"fresher"
    other.delete("dm/new.parquet")
    assert not store.exists("dm/new.parquet")
    assert store.list() == []


def test_check_access_passes_on_a_usable_store(store: Store) -> None:
    store.check_access()
    store.write_bytes("x", b"x")
    store.check_access()


def test_errors_are_datom_errors(store: Store) -> None:
    # NotFoundError is a LookupError, StoreError an OSError: callers can catch either way.
    with pytest.raises(LookupError):
        store.read_bytes("nothing")
    assert issubclass(StoreError, OSError)


@pytest.mark.parametrize("size", [0, 1, 1 << 20, BIG])
def test_read_verified_hands_out_bytes_that_match(store: Store, size: int) -> None:
    data = os.urandom(size)
    store.write_bytes("dm/v.parquet", data)
    sha = hashlib.sha256(data).hexdigest()
    got = store.read_verified("dm/v.parquet", sha)
    assert bytes(got) == data
    assert bytes(store.read_verified("dm/v.parquet", sha.upper())) == data


def test_read_verified_refuses_altered_bytes_naming_key_and_digests(store: Store) -> None:
    data = os.urandom(3 * (1 << 20) + 7)
    store.write_bytes("dm/v.parquet", data)
    expected = hashlib.sha256(data).hexdigest()
    for tampered in (data[:-1], data[:100] + bytes([data[100] ^ 1]) + data[101:], data + b"x", b""):
        store.write_bytes("dm/v.parquet", tampered)
        with pytest.raises(IntegrityError) as caught:
            store.read_verified("dm/v.parquet", expected)
        err = caught.value
        actual = hashlib.sha256(tampered).hexdigest()
        assert (err.key, err.expected, err.actual) == ("dm/v.parquet", expected, actual)
        for part in ("dm/v.parquet", store.url, expected, actual):
            assert part in str(err)
