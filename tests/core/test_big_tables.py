"""Big tables: the parquet's SHA-256 hashed while it is encoded gives the same bytes and
digests as the plain path (``DATOM_PLAIN=1``), and a tampered big parquet is refused
before any parser sees it, either way."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datom_core as dc
from datom_core._project import _fast, _parquet
from datom_core._project import _layout as L
from tests.core.projects import new_project

_MODES = {"accelerated": None, "plain": "1"}


def _big(rows: int = 700_000, seed: int = 1) -> pa.Table:
    """A table over the in-memory limit (16 MiB of Arrow data): encoded into a temp file."""
    rng = np.random.default_rng(seed)
    words = np.array([f"SUBJ-{i:05d}" for i in range(3000)])
    table = pa.table(
        {
            "value": rng.normal(size=rows),
            "id": pa.array(rng.integers(0, 10**12, rows), pa.int64()),
            "subject": pa.array(words[rng.integers(0, len(words), rows)]),
        }
    )
    assert rows < 700_000 or table.nbytes > _parquet._IN_MEMORY
    return table


def _mode(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    if _MODES[mode] is None:
        monkeypatch.delenv("DATOM_PLAIN", raising=False)
    else:
        monkeypatch.setenv("DATOM_PLAIN", _MODES[mode])


def test_the_switch_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, plain in (("", False), ("0", False), ("1", True), ("yes", True)):
        monkeypatch.setenv("DATOM_PLAIN", value)
        assert _fast.plain() is plain
    monkeypatch.delenv("DATOM_PLAIN")
    assert _fast.plain() is False


@pytest.mark.parametrize("chunk", [1, 7, 1 << 16])
def test_encode_hashing_gives_the_file_and_its_digest_both_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    # Small buffers: many writes reach the hashing thread, in order.
    monkeypatch.setattr(_fast, "_CHUNK", chunk)
    table = pa.table({"x": list(range(5000)), "s": [f"v{i % 37}" for i in range(5000)]})
    results = {}
    for mode in _MODES:
        _mode(monkeypatch, mode)
        path = tmp_path / f"{mode}.parquet"
        sha = _fast.encode_hashing(path, lambda sink: pq.write_table(table, sink))
        raw = path.read_bytes()
        assert sha == hashlib.sha256(raw).hexdigest()
        assert pq.read_table(path).equals(table)
        results[mode] = (sha, raw)
    assert results["accelerated"] == results["plain"]


def test_serialized_bytes_digest_and_footer_are_the_same_with_the_overlap_or_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = _big(200_000)
    monkeypatch.setattr(_parquet, "_IN_MEMORY", 0)  # the temp-file path
    digests = dc.hash_table(table).column_hashes
    seen = {}
    for mode in _MODES:
        _mode(monkeypatch, mode)
        # digests given late (a callable), as the background encoder gets them
        with _parquet.serialized(table, lambda: digests) as sp:
            assert isinstance(sp.source, Path)
            raw = sp.source.read_bytes()
            assert sp.parquet_sha == hashlib.sha256(raw).hexdigest()
            assert sp.size_bytes == len(raw)
            footer = pq.ParquetFile(pa.BufferReader(raw)).metadata.metadata
            assert json.loads(footer[_parquet.FOOTER_KEY.encode()]) == [
                {"name": c.name, "sha": c.sha} for c in digests
            ]
            seen[mode] = (raw, sp.parquet_sha)
    assert seen["accelerated"] == seen["plain"]


def test_a_big_write_stores_the_same_object_and_version_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _big()
    outcome = {}
    for mode in _MODES:
        _mode(monkeypatch, mode)
        conn = new_project(tmp_path / mode)
        result = conn.write("big", table)
        key = L.store_parquet("big", result.data_sha)
        raw = conn.store.read_bytes(key)
        assert hashlib.sha256(raw).hexdigest() == result.parquet_sha
        assert conn.read("big", as_="arrow").equals(table)
        outcome[mode] = (result.data_sha, result.parquet_sha, raw)
    assert outcome["accelerated"] == outcome["plain"]


@pytest.mark.parametrize("mode", list(_MODES))
def test_a_tampered_big_parquet_is_refused_before_any_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    _mode(monkeypatch, mode)
    conn = new_project(tmp_path)
    result = conn.write("big", _big())
    key = L.store_parquet("big", result.data_sha)
    raw = bytearray(conn.store.read_bytes(key))
    raw[len(raw) // 3] ^= 0x01  # one bit, inside the row data: still a parseable file
    conn.store.write_bytes(key, bytes(raw))
    parsed: list[int] = []
    real_parse = _parquet._parse

    def recording_parse(data: bytes | pa.Buffer, columns: list[str] | None) -> pa.Table:
        parsed.append(len(data))
        return real_parse(data, columns)

    monkeypatch.setattr(_parquet, "_parse", recording_parse)
    for columns in (None, ["id"]):
        with pytest.raises(dc.IntegrityError, match="parquet_sha") as info:
            conn.read("big", columns=columns, as_="arrow")
        assert info.value.key == key and info.value.expected == result.parquet_sha
    assert parsed == []  # the parser never saw the altered bytes
    raw[len(raw) // 3] ^= 0x01  # restored: read again, parsed once
    conn.store.write_bytes(key, bytes(raw))
    assert conn.read("big", as_="arrow").num_rows == 700_000
    assert len(parsed) == 1
