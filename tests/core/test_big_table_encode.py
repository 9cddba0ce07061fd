"""A big table's parquet: encoded by the write once hashing and classifying are over, into
a file, its bytes hashed as they are written (``_parquet._HashingSink``). The file holds
exactly the bytes in-memory encoding gives and the digest names them; a disk refusing the
bytes, at once or midway, fails the write cleanly; an unchanged table pays for no
parquet, a changed one for exactly one."""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datom_core as dc
from datom_core._errors import StoreError
from datom_core._project import _parquet
from datom_core._store import LocalStore
from tests.core.projects import fingerprint, new_project


def _big(seed: int = 1, rows: int = 1_100_000) -> pa.Table:
    """Past the in-memory limit: encoded into a file, through the sink."""
    rng = np.random.default_rng(seed)
    words = np.array([f"SUBJ-{i:05d}" for i in range(4000)])
    table = pa.table(
        {
            "value": rng.normal(size=rows),
            "id": pa.array(rng.integers(0, 10**12, rows)),
            "subject": pa.array(words[rng.integers(0, len(words), rows)]),
        }
    )
    assert rows < 1_000_000 or table.nbytes > _parquet._IN_MEMORY
    return table


def _staged_files(conn: dc.Connection) -> list[str]:
    root = Path(conn.store.url.removeprefix("file://"))
    return sorted(p.name for p in root.rglob("*") if p.is_file() and ".parquet" in p.name)


@pytest.mark.parametrize("to_store", [True, False], ids=["local-store", "temp-file"])
def test_a_big_table_is_written_to_a_file_holding_the_in_memory_bytes_it_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, to_store: bool
) -> None:
    table = _big()
    digests = dc.hash_table(table).column_hashes
    store = LocalStore(tmp_path / "store") if to_store else None
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with _parquet.serialized(table, digests, store, "t") as sp:
        assert isinstance(sp.source, Path)
        # a local store's file is staged in the table's folder, to be linked, not copied
        folder = Path(store._path("t")) if store is not None else tmp_path / "tmp"
        assert sp.source.parent == folder
        raw = sp.source.read_bytes()
        assert sp.parquet_sha == hashlib.sha256(raw).hexdigest()
        assert sp.size_bytes == len(raw)
        footer = pq.ParquetFile(sp.source).metadata.metadata
        assert footer[_parquet.FOOTER_KEY.encode()] == _parquet.footer_json(digests).encode()
    assert not sp.source.exists()  # never outlives the block
    monkeypatch.setattr(_parquet, "_IN_MEMORY", table.nbytes)  # the same table, in memory
    with _parquet.serialized(table, digests, store, "t") as in_memory:
        assert in_memory.source == raw
        assert (in_memory.parquet_sha, in_memory.size_bytes) == (sp.parquet_sha, sp.size_bytes)


class _ShortFile:
    """A file taking at most ``at_most`` bytes a write (as a pipe or a full buffer may);
    ``fail_at``: the write (from 0) that fails as a full disk does (-1: none)."""

    def __init__(self, at_most: int, fail_at: int = -1) -> None:
        self.at_most, self.fail_at, self.writes, self.data = at_most, fail_at, 0, bytearray()

    def write(self, data: Any) -> int:
        if self.writes == self.fail_at:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.writes += 1
        taken = bytes(data[: self.at_most])
        self.data += taken
        return len(taken)


def test_the_hashing_sink_writes_every_byte_in_order_and_hashes_what_it_wrote() -> None:
    file = _ShortFile(at_most=333)
    sink = _parquet._HashingSink(file)  # type: ignore[arg-type]
    chunks = [os.urandom(1000 + i) for i in range(40)]
    for chunk in chunks:
        assert sink.write(memoryview(chunk)) == len(chunk)  # type: ignore[arg-type]
    assert bytes(file.data) == b"".join(chunks)
    assert sink.digest.hexdigest() == hashlib.sha256(b"".join(chunks)).hexdigest()
    assert sink.size == sink.tell() == len(file.data)


def test_a_failed_write_of_the_hashing_sink_reaches_the_encoder() -> None:
    sink = _parquet._HashingSink(_ShortFile(at_most=1 << 20, fail_at=2))  # type: ignore[arg-type]
    with pytest.raises(OSError, match="No space") as raised:
        for _ in range(10):
            sink.write(b"x" * 4096)
    assert raised.value.errno == errno.ENOSPC
    assert sink.size == 2 * 4096  # what the file took, no more


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The staged parquet's descriptor writes to /dev/full: every write fails ENOSPC."""
    real = LocalStore.open_staging

    def open_staging(self: LocalStore, folder: str) -> tuple[Path, int]:
        path, fd = real(self, folder)
        os.close(fd)
        return path, os.open("/dev/full", os.O_WRONLY | os.O_CLOEXEC)

    monkeypatch.setattr(LocalStore, "open_staging", open_staging)


class _FullMidway(_parquet._HashingSink):
    """The third megabyte and every later one fail as a full disk does."""

    def write(self, data: bytes) -> int:
        if self.size >= 2 << 20:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(data)


@pytest.mark.parametrize("when", ["at-once", "midway"])
def test_a_disk_refusing_the_parquet_fails_the_write_with_a_store_error_naming_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    if when == "at-once" and not Path("/dev/full").exists():
        pytest.skip("needs /dev/full (Linux)")
    conn = new_project(tmp_path)
    first = conn.write("labs", _big(1))
    before = fingerprint(conn)
    with monkeypatch.context() as mp:
        if when == "at-once":
            _full_disk(mp)
        else:
            mp.setattr(_parquet, "_HashingSink", _FullMidway)
        with pytest.raises(StoreError, match=r"table 'labs'.*No space left.*write again"):
            conn.write("labs", _big(2))
    assert fingerprint(conn) == before  # git, the store and the manifest as they were
    assert _staged_files(conn) == [f"{first.data_sha}.parquet"]  # no temp file left
    assert conn.write("labs", _big(2)).change == "full"  # nothing left in the way


def test_a_temporary_file_refusing_the_parquet_is_a_store_error_and_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that is not local gets the parquet through a private temporary file."""
    table = _big()
    digests = dc.hash_table(table).column_hashes
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(_parquet, "_HashingSink", _FullMidway)
    with pytest.raises(StoreError, match=r"table 't'.*a temporary file.*No space left"):
        with _parquet.serialized(table, digests, None, "t"):
            pass
    assert list(tmp_path.iterdir()) == []


def _count_encodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The row counts of the tables encoded from now on, each in the writing thread."""
    encoded: list[int] = []
    real = _parquet._encoded

    def counted(sink: Any, table: pa.Table, digests: Any) -> Any:
        assert threading.current_thread() is threading.main_thread()  # by the write itself
        encoded.append(table.num_rows)
        return real(sink, table, digests)

    monkeypatch.setattr(_parquet, "_encoded", counted)
    return encoded


def test_an_unchanged_big_table_encodes_nothing_and_a_changed_last_column_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only new data is encoded: the same data (also with new metadata) encodes nothing,
    one changed column (the last) encodes the table once, after hashing."""
    conn = new_project(tmp_path)
    table = _big()
    conn.write("t", table)
    encoded = _count_encodes(monkeypatch)
    staged = _staged_files(conn)
    assert conn.write("t", table).change == "none"
    assert conn.write("t", table, metadata={"n": 1}).change == "metadata_only"
    assert encoded == [] and _staged_files(conn) == staged
    last = table.num_columns - 1
    changed = table.set_column(last, "subject", pa.array(["other"] * table.num_rows))
    result = conn.write("t", changed)
    assert result.change == "full" and encoded == [table.num_rows]
    assert conn.read("t", as_="arrow").select(table.column_names).equals(changed)
