"""A big table's parquet: encoded while a second thread hashes and writes its bytes (the
``encode`` accelerator, ``_project/_encodepipe.py``). The accelerated and plain paths
give the same bytes; a disk refusing the bytes fails the write cleanly on either; an
unchanged table still pays for no parquet, a changed one for exactly one."""

from __future__ import annotations

import errno
import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import datom_core as dc
from datom_core._errors import StoreError
from datom_core._plain import NAMED, PLAIN_ENV
from datom_core._project import _early, _parquet
from datom_core._project._encodepipe import PipedSink
from datom_core._store import LocalStore
from tests.core.projects import fingerprint, new_project

_SWITCHES = ("0", "encode", "1")  # accelerated, the accelerator alone off, every one off


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


class _Counted(PipedSink):
    made: list[bool] = []

    def __init__(self, file: Any, *, durable: bool) -> None:
        _Counted.made.append(durable)
        super().__init__(file, durable=durable)


def test_encode_is_a_named_accelerator() -> None:
    assert "encode" in NAMED


@pytest.mark.parametrize("to_store", [True, False], ids=["local-store", "temp-file"])
def test_the_piped_sink_gives_the_plain_paths_bytes_and_runs_unless_switched_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, to_store: bool
) -> None:
    table = _big()
    digests = dc.hash_table(table).column_hashes
    store = LocalStore(tmp_path / "store") if to_store else None
    monkeypatch.setattr(_parquet, "PipedSink", _Counted)
    seen = {}
    for switch in _SWITCHES:
        monkeypatch.setenv(PLAIN_ENV, switch)
        _Counted.made = []
        with _parquet.serialized(table, lambda: digests, store, "t") as sp:
            assert isinstance(sp.source, Path)
            raw = sp.source.read_bytes()
            assert sp.parquet_sha == hashlib.sha256(raw).hexdigest()
            assert sp.size_bytes == len(raw)
            seen[switch] = (raw, sp.parquet_sha, sp.size_bytes)
        assert not sp.source.exists()  # never outlives the block
        # the accelerator runs exactly when not switched off; a file for a local store is
        # made durable as it is written (its writeback started), a private temp file not
        assert _Counted.made == ([to_store] if switch == "0" else [])
    assert seen["0"] == seen["encode"] == seen["1"]


class _FailingFile:
    """A file whose ``fail_at``-th write (from 0) fails as a full disk does."""

    def __init__(self, fail_at: int) -> None:
        self.fail_at, self.writes, self.data = fail_at, 0, bytearray()

    def fileno(self) -> int:
        return -1  # never reached: the sink is not durable

    def write(self, data: Any) -> int:
        if self.writes == self.fail_at:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.writes += 1
        self.data += data
        return len(data)


def test_the_piped_sink_writes_in_order_and_hashes_what_it_wrote() -> None:
    file = _FailingFile(fail_at=-1)
    sink = PipedSink(file, durable=False)  # type: ignore[arg-type]
    chunks = [os.urandom(1000 + i) for i in range(40)]  # more than the queue holds
    for chunk in chunks:
        assert sink.write(memoryview(chunk)) == len(chunk)  # a view is copied, not kept
    sink.finish()
    assert bytes(file.data) == b"".join(chunks)
    assert sink.digest.hexdigest() == hashlib.sha256(b"".join(chunks)).hexdigest()
    assert sink.size == sink.tell() == len(file.data)


def test_a_failed_write_of_the_piped_sink_reaches_the_encoder_and_never_hangs() -> None:
    file = _FailingFile(fail_at=2)
    sink = PipedSink(file, durable=False)  # type: ignore[arg-type]
    with pytest.raises(OSError, match="No space") as raised:
        for _ in range(10_000):  # the encoder goes on writing until it is told
            sink.write(b"x" * 4096)
    assert raised.value.errno == errno.ENOSPC
    with pytest.raises(OSError, match="No space"):
        sink.finish()
    assert not any(t.name == "datom-parquet-out" and t.is_alive() for t in threading.enumerate())


def test_an_abandoned_piped_sink_stops_its_thread_without_raising() -> None:
    sink = PipedSink(_FailingFile(fail_at=0), durable=False)  # type: ignore[arg-type]
    sink.write(b"lost")
    sink.abandon()  # the encoder failed first: its own error is the one to raise
    assert not any(t.name == "datom-parquet-out" and t.is_alive() for t in threading.enumerate())


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The staged parquet's descriptor writes to /dev/full: every write fails ENOSPC."""
    real = LocalStore.open_staging

    def open_staging(self: LocalStore, folder: str) -> tuple[Path, int]:
        path, fd = real(self, folder)
        os.close(fd)
        return path, os.open("/dev/full", os.O_WRONLY | os.O_CLOEXEC)

    monkeypatch.setattr(LocalStore, "open_staging", open_staging)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("switch", _SWITCHES)
def test_a_disk_refusing_the_parquet_fails_the_write_with_a_store_error_naming_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, switch: str
) -> None:
    monkeypatch.setenv(PLAIN_ENV, switch)
    conn = new_project(tmp_path)
    first = conn.write("labs", _big(1))
    before = fingerprint(conn)
    with monkeypatch.context() as mp:
        _full_disk(mp)
        with pytest.raises(StoreError, match=r"table 'labs'.*No space left.*write again"):
            conn.write("labs", _big(2))
    assert fingerprint(conn) == before  # git, the store and the manifest as they were
    assert _staged_files(conn) == [f"{first.data_sha}.parquet"]  # no temp file left
    assert conn.write("labs", _big(2)).change == "full"  # nothing left in the way


class _Started(_parquet.BackgroundParquet):
    count = 0

    def __init__(self, table: pa.Table, **where: Any) -> None:
        _Started.count += 1
        super().__init__(table, **where)


@pytest.mark.parametrize("switch", _SWITCHES)
def test_an_unchanged_big_table_starts_no_encode_and_a_changed_last_column_starts_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, switch: str
) -> None:
    """The encode starts on a differing digest only: the same data encodes nothing, one
    changed column (the last) starts one encode, beside the hashing; on the plain path
    (``encode`` switched off) none starts beside it, the write encodes after hashing."""
    monkeypatch.setenv(PLAIN_ENV, switch)
    monkeypatch.setattr(_early, "BackgroundParquet", _Started)
    conn = new_project(tmp_path)
    table = _big()
    conn.write("t", table)
    _Started.count = 0
    staged = _staged_files(conn)
    assert conn.write("t", table).change == "none"
    assert _Started.count == 0 and _staged_files(conn) == staged
    last = table.num_columns - 1
    changed = table.set_column(last, "subject", pa.array(["other"] * table.num_rows))
    result = conn.write("t", changed)
    assert result.change == "full" and _Started.count == (1 if switch == "0" else 0)
    assert conn.read("t", as_="arrow").select(table.column_names).equals(changed)
