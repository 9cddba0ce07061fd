"""Property tests: identity ignores the container and the storage layout, not the values."""

from __future__ import annotations

import datetime as dt
import io
import math
import struct

import hypothesis.strategies as st
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings

import datom_core
from datom_core._arrow import from_arrow

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_text = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=8)
_floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
_ints32 = st.integers(-(2**31) + 1, 2**31 - 1)
_ints64 = st.integers(-(2**63) + 1, 2**63 - 1)
_days = st.integers(-50_000, 50_000)
# polars has no seconds unit: it stores s as ms, so keep ms ticks below 2**53 (exact doubles).
_ticks = st.integers(-(2**40), 2**40)

# (arrow type, strategy of one value) for every supported kind of column.
KINDS: dict[str, tuple[pa.DataType, st.SearchStrategy]] = {
    "float64": (pa.float64(), _floats),
    "float32": (pa.float32(), st.floats(allow_nan=True, width=32)),
    "int32": (pa.int32(), _ints32),
    "int64": (pa.int64(), _ints64),
    "uint16": (pa.uint16(), st.integers(0, 2**16 - 1)),
    "bool": (pa.bool_(), st.booleans()),
    "string": (pa.string(), _text),
    "large_string": (pa.large_string(), _text),
    "date32": (pa.date32(), _days.map(lambda d: dt.date(1970, 1, 1) + dt.timedelta(days=d))),
    "timestamp_us_utc": (pa.timestamp("us", tz="UTC"), _ticks),
    "timestamp_ms": (pa.timestamp("ms"), _ticks),
    "duration_s": (pa.duration("s"), _ticks),
    "time64_us": (pa.time64("us"), st.integers(0, 86_400 * 10**6 - 1)),
    "time32_ms": (pa.time32("ms"), st.integers(0, 86_400 * 10**3 - 1)),
    "int8": (pa.int8(), st.integers(-128, 127)),
    "uint64": (pa.uint64(), st.integers(0, 2**63 - 1)),
    "float16": (pa.float16(), st.floats(allow_nan=True, width=16)),
    "duration_ms": (pa.duration("ms"), _ticks),
    "timestamp_ns_tz": (pa.timestamp("ns", tz="America/New_York"), _ticks),
    "date64": (pa.date64(), _days.map(lambda d: d * 86_400_000)),
}


@st.composite
def columns(draw: st.DrawFn, nrow: int) -> tuple[str, pa.Array]:
    kind = draw(st.sampled_from(sorted(KINDS)))
    arrow_type, values = KINDS[kind]
    raw = draw(st.lists(st.one_of(st.none(), values), min_size=nrow, max_size=nrow))
    if pa.types.is_timestamp(arrow_type) or pa.types.is_duration(arrow_type):
        return kind, pa.array(raw, pa.int64()).cast(arrow_type)
    if pa.types.is_time(arrow_type) or pa.types.is_date64(arrow_type):
        width = pa.int32() if arrow_type.bit_width == 32 else pa.int64()
        return kind, pa.array(raw, width).cast(arrow_type)
    if pa.types.is_float16(arrow_type):
        return kind, pa.array([None if v is None else np.float16(v) for v in raw], arrow_type)
    return kind, pa.array(raw, arrow_type)


@st.composite
def tables(draw: st.DrawFn, min_rows: int = 0) -> pa.Table:
    nrow = draw(st.integers(min_rows, 12))
    ncol = draw(st.integers(1, 4))
    arrays = [draw(columns(nrow))[1] for _ in range(ncol)]
    return pa.table(arrays, names=[f"c{i}" for i in range(ncol)])


def sha(data: object) -> str:
    return datom_core.hash_table(data).data_sha


@SETTINGS
@given(tables())
def test_pandas_polars_and_arrow_hash_the_same(table: pa.Table) -> None:
    expected = sha(table)
    assert sha(table.to_pandas(types_mapper=pd.ArrowDtype)) == expected
    assert sha(from_arrow(table, "pandas")) == expected  # datom's own numpy-backed reading
    assert sha(from_arrow(table, "polars")) == expected  # datom's polars reading
    if not any(pa.types.is_date64(t) for t in table.schema.types):
        # plain polars turns date64 into a datetime column: not the same values any more.
        assert sha(pl.from_arrow(table)) == expected


@SETTINGS
@given(tables(min_rows=2), st.data())
def test_chunking_and_dictionary_encoding_do_not_matter(
    table: pa.Table, data: st.DataObject
) -> None:
    expected = sha(table)
    cut = data.draw(st.integers(0, table.num_rows))
    assert sha(pa.concat_tables([table.slice(0, cut), table.slice(cut)])) == expected
    encoded = pa.table(
        [
            c.dictionary_encode()
            if pa.types.is_string(c.type) or pa.types.is_integer(c.type)
            else c
            for c in table.columns
        ],
        names=table.column_names,
    )
    assert sha(encoded) == expected


@SETTINGS
@given(tables())
def test_parquet_round_trip_preserves_data_sha(table: pa.Table) -> None:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    buf.seek(0)
    back = pq.read_table(buf)
    assert sha(back) == sha(table)
    assert sha(from_arrow(back, "pandas")) == sha(table)
    assert sha(from_arrow(back, "polars")) == sha(table)


@SETTINGS
@given(st.lists(st.integers(0, 2**52 - 1), min_size=1, max_size=6), st.booleans())
def test_nan_payloads_and_negative_zero_fold(payloads: list[int], negative: bool) -> None:
    nans = [
        struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000000 | (p or 1) | (negative << 63)))[0]
        for p in payloads
    ]
    assert all(math.isnan(v) for v in nans)
    canonical = pa.table({"x": pa.array([math.nan] * len(nans) + [0.0])})
    weird = pa.table({"x": pa.array(nans + [-0.0])})
    assert sha(weird) == sha(canonical)
    # ... but NaN and missing stay distinct.
    assert sha(pa.table({"x": pa.array([None] * len(nans) + [0.0], pa.float64())})) != sha(
        canonical
    )


@SETTINGS
@given(tables(min_rows=2))
def test_row_order_column_order_and_names_are_identity(table: pa.Table) -> None:
    expected = sha(table)
    reversed_rows = table.take(pa.array(range(table.num_rows - 1, -1, -1)))
    if reversed_rows.to_pylist() != table.to_pylist():
        assert sha(reversed_rows) != expected
    renamed = table.rename_columns([n + "_" for n in table.column_names])
    assert sha(renamed) != expected
    if table.num_columns > 1:
        swapped = table.select(list(reversed(table.column_names)))
        assert sha(swapped) != expected


def test_integer_width_does_not_matter_but_range_does() -> None:
    as_double = sha(pa.table({"x": pa.array([1.0, 2.0, None])}))
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint64()):
        assert sha(pa.table({"x": pa.array([1, 2, None], t)})) == as_double
    assert sha(pd.DataFrame({"x": [1.0, 2.0, np.nan]})) == as_double
    big = pa.table({"x": pa.array([1, 2**31], pa.int64())})
    assert sha(big) != sha(pa.table({"x": pa.array([1.0, 2.0**31])}))


def test_numpy_pandas_nan_is_missing() -> None:
    """pandas with numpy dtypes cannot tell NaN from missing: NaN hashes as missing."""
    missing = sha(pa.table({"x": pa.array([1.0, None])}))
    assert sha(pd.DataFrame({"x": [1.0, np.nan]})) == missing
    arrow_backed = pd.arrays.ArrowExtensionArray(pa.array([1.0, math.nan]))
    assert sha(pd.DataFrame({"x": arrow_backed})) != missing


def test_containers_and_metadata_are_not_identity() -> None:
    table = pa.table({"a": [1, 2], "b": ["x", None]})
    df = table.to_pandas()
    df.attrs["note"] = "ignored"
    with_meta = table.replace_schema_metadata({b"k": b"v"})
    assert sha(df) == sha(table) == sha(with_meta) == sha(pl.from_arrow(table))
    category = pd.DataFrame({"a": [1, 2], "b": pd.Categorical(["x", None], categories=["x", "zz"])})
    assert sha(category) == sha(table)


def test_zero_rows_is_allowed() -> None:
    h = datom_core.hash_table(pa.table({"a": pa.array([], pa.int32())}))
    assert (h.nrow, h.ncol) == (0, 1)
    assert len(h.data_sha) == 64


def test_file_sha_streams_any_url(tmp_path) -> None:
    import hashlib

    payload = np.random.default_rng(1).bytes(3 * (1 << 20) + 17)
    path = tmp_path / "f.bin"
    path.write_bytes(payload)
    expected = hashlib.sha256(payload).hexdigest()
    assert datom_core.file_sha(path) == expected
    assert datom_core.file_sha(f"file://{path}") == expected
    assert datom_core.file_sha(str(path)) == expected
