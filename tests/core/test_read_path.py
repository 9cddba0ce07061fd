"""The read path's shortcuts give exactly what the long way gives.

A small parquet is decoded without the dataset layer of ``pq.read_table``: the table (types,
schema metadata, column order) must be the same, and a selection the short way treats
differently (a repeated or unknown column) still goes the long way. Column digests this
process hashed are remembered by ``data_sha``: a change summary built from them equals the
one built from the stored footers.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datom_core as dc
from datom_core._memory import KeyedMemory
from datom_core._project import _columns, _parquet
from datom_core._project import _layout as L
from tests.core.projects import frame, new_project


def _rich() -> pa.Table:
    n = 6
    return pa.table(
        {
            "d": pa.array([dt.date(2020, 1, 1), None] * 3, pa.date32()),
            "d64": pa.array([dt.date(2020, 1, 1), None] * 3, pa.date64()),
            "ts": pa.array([dt.datetime(2020, 1, 1), None] * 3, pa.timestamp("us", tz="UTC")),
            "tns": pa.array([1, None] * 3, pa.time64("ns")),
            "cat": pa.array(["a", "b"] * 3).dictionary_encode(),
            "ls": pa.array(["a", None] * 3, pa.large_string()),
            "b": pa.array([True, None] * 3),
            "n": pa.nulls(n),
            "i": pa.array([1, None] * 3, pa.int32()),
            "dec": pa.array([Decimal("1.50"), None] * 3, pa.decimal128(5, 2)),
            "s": pa.array([{"x": 1}, {"x": 2}] * 3),
            "l": pa.array([[1], [2, 3]] * 3),
        }
    )


def _bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


@pytest.mark.parametrize(
    "source",
    [
        _rich(),
        pa.Table.from_pandas(
            pd.DataFrame(
                {
                    "a": [1, 2],
                    "c": pd.Categorical(["x", "y"]),
                    "t": pd.to_datetime(["2020-01-01", "2021-01-01"]).tz_localize("Europe/Paris"),
                    "u": [1.5, float("nan")],
                }
            ),
            preserve_index=False,
        ),
    ],
)
def test_a_small_parquet_decodes_as_read_table_does(source: pa.Table) -> None:
    raw = _bytes(source)
    assert len(raw) < _parquet._SMALL
    names = source.column_names
    for columns in (None, [names[-1], names[0]], [names[1]]):
        short = _parquet._parse(raw, columns)
        long = pq.read_table(pa.BufferReader(raw), columns=columns)
        assert short.schema.equals(long.schema, check_metadata=True)
        assert short.equals(long)
        assert short.column_names == long.column_names


def test_a_selection_the_short_way_reads_differently_goes_the_long_way() -> None:
    raw = _bytes(_rich())
    twice = _parquet._parse(raw, ["d", "d"])
    assert twice.column_names == ["d", "d"]  # as pq.read_table gives it (ParquetFile: one)
    with pytest.raises(pa.ArrowInvalid):  # ParquetFile.read would return no column at all
        _parquet._parse(raw, ["d", "no_such_column"])
    nested = _parquet._parse(raw, ["s.x"])
    assert nested.equals(pq.read_table(pa.BufferReader(raw), columns=["s.x"]))


def test_reads_are_the_same_either_way_and_tampering_is_still_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = new_project(tmp_path)
    data = frame(40).assign(
        DAY=[dt.date(2024, 1, 1 + i % 28) for i in range(40)],
        FLAG=[None if i % 3 else "Y" for i in range(40)],
    )
    result = conn.write("dm", data)
    short = {kind: conn.read("dm", as_=kind) for kind in ("arrow", "pandas")}
    subset = conn.read("dm", columns=["FLAG", "AGE"], as_="arrow")
    monkeypatch.setattr(_parquet, "_SMALL", 0)  # every file the long way
    long = {kind: conn.read("dm", as_=kind) for kind in ("arrow", "pandas")}
    assert short["arrow"].equals(long["arrow"])
    assert short["arrow"].schema.equals(long["arrow"].schema, check_metadata=True)
    pd.testing.assert_frame_equal(short["pandas"], long["pandas"])
    assert subset.equals(conn.read("dm", columns=["FLAG", "AGE"], as_="arrow"))
    assert dc.hash_table(short["pandas"]).data_sha == result.data_sha
    monkeypatch.undo()
    key = L.store_parquet("dm", result.data_sha)
    raw = bytearray(conn.store.read_bytes(key))
    raw[len(raw) // 2] ^= 0x01
    conn.store.write_bytes(key, bytes(raw))
    with pytest.raises(dc.IntegrityError, match="parquet_sha") as info:
        conn.read("dm")
    assert info.value.key == key and info.value.expected == result.parquet_sha


def test_digests_hashed_here_are_known_by_data_sha_and_summarise_as_the_footers_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = new_project(tmp_path)
    first = conn.write("dm", frame(8))
    changed = frame(8).assign(WEIGHT=lambda f: f["WEIGHT"] + 1, HEIGHT=170.0)
    second = conn.write("dm", changed)
    expected = dc.hash_table(changed).column_hashes
    assert _columns.known_digests(second.data_sha, len(expected)) == expected
    assert _columns.known_digests(second.data_sha, len(expected) + 1) is None
    remembered = conn.diff("dm")
    monkeypatch.setattr(_columns, "_KNOWN", KeyedMemory(16))  # forget what was hashed here
    from_footers = conn.diff("dm")
    assert remembered == from_footers
    assert remembered.before == first.version and remembered.after == second.version
    assert remembered.columns_changed == ("WEIGHT",)
    assert remembered.columns_added == ("HEIGHT",)
    assert remembered.columns_unchanged == ("USUBJID", "AGE")


def test_the_digest_memory_is_bounded_by_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_columns, "_KNOWN", KeyedMemory(1 << 16, 10))  # 10 columns in all
    hashes = [dc.hash_table(frame(3, seed=i)) for i in range(5)]  # 3 columns each
    for h in hashes:
        _columns.remember_digests(h)
    assert _columns._KNOWN.held <= 10
    assert _columns.known_digests(hashes[-1].data_sha, 3) == hashes[-1].column_hashes
    assert _columns.known_digests(hashes[0].data_sha, 3) is None  # the oldest went first


def test_a_small_table_encodes_to_the_same_bytes_in_memory_as_through_a_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = _rich()
    digests = dc.hash_table(table.drop_columns(["dec", "s", "l", "n"])).column_hashes
    with _parquet.serialized(table, digests) as small:
        assert isinstance(small.source, bytes)  # no temporary file
        in_memory = (small.source, small.parquet_sha, small.size_bytes)
    monkeypatch.setattr(_parquet, "_IN_MEMORY", -1)  # every table through Arrow's file output
    with _parquet.serialized(table, digests) as large:
        assert isinstance(large.source, Path)
        through_file = (large.source.read_bytes(), large.parquet_sha, large.size_bytes)
    assert in_memory == through_file
    raw, sha, size = in_memory
    assert hashlib.sha256(raw).hexdigest() == sha and len(raw) == size
    decoded = _parquet._parse(raw, None)
    assert decoded.column_names == table.column_names and decoded.num_rows == table.num_rows
    assert not large.source.exists()


def test_a_small_table_is_encoded_by_the_write_itself_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small table's parquet is encoded in the writing thread, into memory: no file."""
    encoded: list[tuple[int, bool, type]] = []
    real = _parquet._encoded

    def counting(sink: Any, table: pa.Table, digests: Any) -> Any:
        here = threading.current_thread() is threading.main_thread()
        encoded.append((table.num_rows, here, type(sink)))
        return real(sink, table, digests)

    def no_file(*args: Any) -> Any:
        raise AssertionError("a small table's parquet went through a file")

    monkeypatch.setattr(_parquet, "_encoded", counting)
    monkeypatch.setattr(_parquet, "_new_file", no_file)
    data = [frame(30, seed=s) for s in range(3)]
    conn = new_project(tmp_path)
    results = [conn.write("dm", d) for d in data]
    assert encoded == [(30, True, pa.BufferOutputStream)] * 3
    assert [r.change for r in results] == ["full", "full", "full"]
    for r in results:
        raw = conn.store.read_bytes(L.store_parquet("dm", r.data_sha))
        assert hashlib.sha256(raw).hexdigest() == r.parquet_sha
    pd.testing.assert_frame_equal(conn.read("dm"), data[-1])
