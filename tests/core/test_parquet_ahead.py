"""The accelerator that hashes, writes and syncs a big parquet's bytes in a second thread
(``_parquet_ahead``): the same file and digest as the plain sink, every error reaching
the encoder, nothing written once abandoned, and not run under ``DATOM_PLAIN=1``."""

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
from datom_core._plain import PLAIN_ENV
from datom_core._project import _parquet, _parquet_ahead
from datom_core._project._parquet_ahead import AheadSink, ahead


def _big() -> pa.Table:
    rng = np.random.default_rng(3)
    rows = 1_100_000
    table = pa.table({"value": rng.normal(size=rows), "id": pa.array(rng.integers(0, 10**9, rows))})
    assert table.nbytes > _parquet._IN_MEMORY  # encoded into a file, through the sinks
    return table


@pytest.mark.parametrize("local", [True, False], ids=["local-store", "temp-file"])
def test_ahead_and_plain_give_the_same_file_and_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local: bool
) -> None:
    table = _big()
    digests = dc.hash_table(table).column_hashes
    store = dc.LocalStore(tmp_path / "store") if local else None
    synced: list[int] = []
    real_sync = os.fdatasync
    monkeypatch.setattr(
        _parquet_ahead.os, "fdatasync", lambda fd: (synced.append(fd), real_sync(fd))
    )
    seen = []
    for is_plain in (False, True):
        monkeypatch.setenv(PLAIN_ENV, "1" if is_plain else "0")
        with _parquet.serialized(table, digests, store, "t") as sp:
            assert isinstance(sp.source, Path)
            raw = sp.source.read_bytes()
            assert (sp.parquet_sha, sp.size_bytes) == (hashlib.sha256(raw).hexdigest(), len(raw))
            seen.append(raw)
        if not is_plain:  # a staged file is synced as it is written; a temp file is not
            assert len(raw) > 2 * _parquet_ahead.SYNC_EVERY
            assert bool(synced) == local
    assert seen[0] == seen[1]


def test_under_the_switch_the_sink_is_the_encoding_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PLAIN_ENV, "1")

    def fail(*args: object) -> Any:
        raise AssertionError("the accelerator ran under DATOM_PLAIN=1")

    monkeypatch.setattr(_parquet, "ahead", fail)
    conn = dc.init_repo(tmp_path / "repo", "P", dc.LocalStore(tmp_path / "store"))
    assert conn.write("t", _big()).change == "full"


class _Failing:
    """The worker's file, whose ``fail_at``-th write (from 0) fails as a full disk does."""

    def __init__(self, file: Any, fail_at: int) -> None:
        self.file, self.fail_at, self.writes = file, fail_at, 0

    def write(self, data: Any) -> int:
        if self.writes == self.fail_at:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.writes += 1
        return int(self.file.write(data) or 0)


def test_a_failed_write_in_the_worker_reaches_the_encoder_which_never_waits(
    tmp_path: Path,
) -> None:
    target = tmp_path / "f"
    with open(target, "wb") as file:
        sink = AheadSink(file, lambda f: _parquet._HashingSink(_Failing(f, fail_at=2)), False)
        with pytest.raises(OSError, match="No space") as raised:
            for _ in range(_parquet_ahead.QUEUED * 8):  # more than the queue holds
                sink.write(b"x" * 1000)
            sink.finish()
        assert raised.value.errno == errno.ENOSPC
        sink.abandon()  # a second end is harmless
    assert target.stat().st_size == 2000  # what the file took before it failed


def test_a_failed_sync_fails_the_sink(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(_parquet_ahead.os, "fdatasync", refuse)
    with open(tmp_path / "f", "wb") as file, pytest.raises(OSError, match="Input/output"):
        with ahead(file, _parquet._HashingSink, sync=True) as sink:
            for _ in range(6):
                sink.write(b"y" * (1 << 20))


def test_an_abandoned_sink_writes_nothing_more_and_ends_its_worker(tmp_path: Path) -> None:
    release = threading.Event()

    class Slow(_parquet._HashingSink):
        def write(self, data: bytes) -> int:
            release.wait()
            return super().write(data)

    path = tmp_path / "f"
    with open(path, "wb") as file, pytest.raises(KeyboardInterrupt):
        with ahead(file, Slow, sync=False) as sink:
            for _ in range(4):
                sink.write(b"z" * 100)
            threading.Timer(0.05, release.set).start()
            raise KeyboardInterrupt
    assert path.stat().st_size <= 100  # the chunk in hand at most, none of the queued ones
    assert not [t for t in threading.enumerate() if t.name == "datom-parquet"]
