"""A big table's parquet on a local store is encoded straight into a temp file beside its
objects and linked into place (no copy), hashed as it is written; the temp file never
shows in a listing and never outlives the write, whatever happens to the write."""

from __future__ import annotations

import hashlib
import os
import stat
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import datom_core as dc
from datom_core._errors import StoreError
from datom_core._project import _parquet
from datom_core._store import LocalStore, _local
from datom_core._store._paths import TEMP_NAME
from tests.core.projects import new_project


def _big(seed: int) -> pa.Table:
    """Past the in-memory limit (16 MiB of Arrow data): a temp file route."""
    rng = np.random.default_rng(seed)
    rows = 1_200_000
    table = pa.table(
        {"value": rng.normal(size=rows), "id": pa.array(rng.integers(0, 10**12, rows))}
    )
    assert table.nbytes > _parquet._IN_MEMORY
    return table


def _folder(conn: dc.Connection, table: str) -> Path:
    store = conn.store
    assert isinstance(store, LocalStore)
    return Path(store.url.removeprefix("file://")) / table


def _no_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(source: str) -> Any:
        raise AssertionError(f"{source} was copied into the store")

    monkeypatch.setattr(_local, "_copier", refuse)


def test_a_big_parquet_is_linked_into_a_local_store_not_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = new_project(tmp_path)
    _no_copy(monkeypatch)
    results = [conn.write("t", _big(seed)) for seed in (1, 2)]  # a new table, then new data
    folder = _folder(conn, "t")
    snapshot_mode = stat.S_IMODE((folder / ".metadata" / "metadata.json").stat().st_mode)
    for result in results:
        path = folder / f"{result.data_sha}.parquet"
        # hashed as written: the recorded digest is the stored bytes'
        assert hashlib.sha256(path.read_bytes()).hexdigest() == result.parquet_sha
        assert path.stat().st_nlink == 1  # the temp name is gone
        # the store's own permissions, not a private temp file's
        assert stat.S_IMODE(path.stat().st_mode) == snapshot_mode
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [".metadata", *(f"{r.data_sha}.parquet" for r in results)]
    )
    assert conn.read("t", as_="arrow").select(["value", "id"]).equals(_big(2))
    assert [v.data_sha for v in conn.history("t")] == [r.data_sha for r in reversed(results)]


def test_a_failed_big_write_leaves_no_temp_file_and_the_table_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = new_project(tmp_path)
    first = conn.write("t", _big(1))
    folder = _folder(conn, "t")
    before = sorted(p.name for p in folder.iterdir())

    def broken(self: LocalStore, source: Path, key: str) -> bool:
        assert TEMP_NAME.match(source.name) and source.parent == folder  # staged beside
        raise StoreError(f"disk full while storing {key}")

    monkeypatch.setattr(LocalStore, "_link_staged", broken)
    with pytest.raises(StoreError, match="disk full"):
        conn.write("t", _big(2))
    assert sorted(p.name for p in folder.iterdir()) == before
    assert conn.metadata("t")["data_sha"] == first.data_sha
    monkeypatch.undo()
    second = conn.write("t", _big(2))  # nothing left in the way
    assert second.change == "full"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*before, f"{second.data_sha}.parquet"]
    )


def test_a_staged_file_a_killed_writer_leaves_is_hidden_then_found_by_validate(
    tmp_path: Path,
) -> None:
    conn = new_project(tmp_path)
    store = conn.store
    assert isinstance(store, LocalStore)
    path, fd = store.open_staging("fresh")  # no folder yet: a table's first write
    try:
        os.write(fd, b"half a parquet")
    finally:
        os.close(fd)
    assert path.parent == Path(store.url.removeprefix("file://")) / "fresh"
    assert TEMP_NAME.match(path.name)
    assert not [k for k in store.list() if k.startswith("fresh/")]  # listings never show it
    assert not [p for p in conn.validate().problems if p.kind == "temp_object"]  # a live write
    two_hours_ago = time.time() - 7200
    os.utime(path, (two_hours_ago, two_hours_ago))
    found = [p for p in conn.validate().problems if p.kind == "temp_object"]
    assert [p.key for p in found] == [f"fresh/{path.name}"]
    conn.validate(fix=True)
    assert not path.exists()


def test_a_staged_file_for_another_folder_is_copied_not_linked(tmp_path: Path) -> None:
    """Only a temp file beside the key is linked: any other file is copied, and stays."""
    store = LocalStore(tmp_path / "store")
    path, fd = store.open_staging("a")
    os.write(fd, b"bytes")
    os.close(fd)
    assert store.put_if_absent("b/x.parquet", path)
    assert store.read_bytes("b/x.parquet") == b"bytes"
    assert path.read_bytes() == b"bytes"
    os.write(os.open(path, os.O_WRONLY), b"BYTES")  # the copy does not share its inode
    assert store.read_bytes("b/x.parquet") == b"bytes"
    path.unlink()
    # beside its key: linked, and an object already there is left untouched
    again, fd = store.open_staging("b")
    os.write(fd, b"other")
    os.close(fd)
    assert not store.put_if_absent("b/x.parquet", again)
    assert store.read_bytes("b/x.parquet") == b"bytes"
    again.unlink()


def test_a_big_table_on_a_remote_store_is_staged_privately(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a local store: the temp file is the system's, private to this user, removed."""
    store = dc.FsspecStore(f"memory://datom-staging-{os.getpid()}")
    table = _big(3)
    with _parquet.serialized(table, None, store, "t") as sp:
        assert isinstance(sp.source, Path)
        assert stat.S_IMODE(sp.source.stat().st_mode) == 0o600
        raw = sp.source.read_bytes()
        assert hashlib.sha256(raw).hexdigest() == sp.parquet_sha
        assert sp.size_bytes == len(raw)
    assert not sp.source.exists()
