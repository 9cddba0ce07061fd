"""Hashing and writing never write into the caller's memory.

Arrow shares buffers in ways a zero-copy numpy view does not see: ``pa.nulls`` (and a
cast from the null type) hands one zeroed buffer out as both the validity bitmap and the
values, slices and chunks point into larger buffers, and ``pa.array(numpy_array)`` or a
pandas/polars conversion wraps the caller's own array. For every such layout, with NaN
payloads and -0.0 in the values, the input's bytes are identical after ``hash_table`` and
after ``write``, and the same table hashes to the same ``data_sha`` every time (the one
of a private copy taken beforehand).
"""

from __future__ import annotations

from pathlib import Path

import hypothesis.strategies as st
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

import datom_core as dc
from tests.core.projects import new_project

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WRITE_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

CDISC = Path("/work/shared/cdisc")

# -- what the caller holds -------------------------------------------------------------


def _array_bytes(arr: pa.Array) -> list[bytes | None]:
    out: list[bytes | None] = [None if b is None else b.to_pybytes() for b in arr.buffers()]
    if pa.types.is_dictionary(arr.type):
        out += _array_bytes(arr.dictionary)
    return out


def arrow_bytes(table: pa.Table) -> list[list[bytes | None]]:
    """Every byte of every buffer behind ``table`` (shared buffers listed once per use)."""
    return [_array_bytes(chunk) for col in table.columns for chunk in col.chunks]


def private_copy(table: pa.Table) -> pa.Table:
    """A copy sharing no memory with ``table`` (through the IPC format)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return pa.ipc.open_stream(sink.getvalue()).read_all()


# -- the layouts -----------------------------------------------------------------------

# Doubles by their bits: NaNs with payloads and either sign, +-0.0, infinities, normals.
_nan_bits = st.tuples(st.integers(0, 1), st.integers(1, 2**52 - 1)).map(
    lambda sm: (sm[0] << 63) | (0x7FF << 52) | sm[1]
)
_special_bits = st.sampled_from(
    [0x8000000000000000, 0, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF00000000007A2]
)
_double_bits = st.one_of(
    _nan_bits, _special_bits, st.floats(width=64).map(lambda f: int(np.float64(f).view(np.uint64)))
)

NUMERIC = {
    "float64": pa.float64(),
    "float32": pa.float32(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "bool": pa.bool_(),
    "date32": pa.date32(),
    "timestamp_us": pa.timestamp("us"),
    "duration_ms": pa.duration("ms"),
    "string": pa.string(),
    "large_string": pa.large_string(),
}


def _doubles(bits: list[int]) -> np.ndarray:
    return np.array(bits, dtype=np.uint64).view(np.float64)


@st.composite
def shared_columns(draw: st.DrawFn, n: int) -> pa.ChunkedArray:
    """One column of ``n`` rows in a layout whose buffers are shared or borrowed."""
    layout = draw(
        st.sampled_from(
            [
                "nulls",
                "cast_null",
                "numpy",
                "numpy_masked",
                "slice",
                "string_slice",
                "chunked",
                "dict",
            ]
        )
    )
    kind = draw(st.sampled_from(sorted(NUMERIC)))
    t = NUMERIC[kind]
    if layout == "nulls":
        return pa.chunked_array([pa.nulls(n, t)])
    if layout == "cast_null":
        return pa.chunked_array([pa.nulls(n).cast(t)])
    bits = draw(st.lists(_double_bits, min_size=n, max_size=n))
    values = _doubles(bits)
    if layout == "numpy":  # the Arrow column wraps this numpy array, zero-copy
        return pa.chunked_array([pa.array(values)])
    missing = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    if layout == "numpy_masked":
        return pa.chunked_array([pa.array(values, mask=missing)])
    if layout == "dict":
        words = pa.array([f"w{b % 7}" for b in bits], pa.string(), mask=missing)
        return pa.chunked_array([words.dictionary_encode()])
    before, after = draw(st.integers(0, 9)), draw(st.integers(0, 9))
    wide = np.concatenate([_doubles([1] * before), values, _doubles([2] * after)])
    wide_missing = np.concatenate([np.zeros(before, bool), missing, np.zeros(after, bool)])
    if layout == "slice":
        return pa.chunked_array([pa.array(wide, mask=wide_missing).slice(before, n)])
    if layout == "string_slice":  # offsets and bytes shared with the rows around it
        words = pa.array([repr(float(x)) for x in wide], pa.string(), mask=wide_missing)
        return pa.chunked_array([words.slice(before, n)])
    cut = draw(st.integers(0, n))
    whole = pa.array(wide, mask=wide_missing).slice(before, n)
    pieces = [whole.slice(0, cut), whole.slice(cut), pa.nulls(0, pa.float64())]
    return pa.chunked_array(pieces)


@st.composite
def shared_tables(draw: st.DrawFn) -> pa.Table:
    n = draw(st.integers(1, 40))
    ncol = draw(st.integers(1, 4))
    cols = [draw(shared_columns(n)) for _ in range(ncol)]
    return pa.table({f"c{i}": c for i, c in enumerate(cols)})


# -- Arrow input -----------------------------------------------------------------------


@SETTINGS
@given(shared_tables())
def test_hashing_leaves_every_buffer_as_it_was(table: pa.Table) -> None:
    expected = dc.hash_table(private_copy(table)).data_sha
    before = arrow_bytes(table)
    nulls = [col.null_count for col in table.columns]
    shas = [dc.hash_table(table).data_sha for _ in range(3)]
    assert arrow_bytes(table) == before
    assert [col.null_count for col in table.columns] == nulls
    assert shas == [expected] * 3


def test_all_missing_float_column_hashes_the_same_every_time() -> None:
    table = pa.table({"a": pa.nulls(20, pa.float64())})
    shas = {dc.hash_table(table).data_sha for _ in range(3)}
    assert len(shas) == 1
    assert table.column("a").null_count == 20
    assert table.column("a").to_pylist() == [None] * 20


@pytest.mark.parametrize("make", [lambda: pa.nulls(5).cast(pa.float64()), lambda: pa.nulls(5)])
def test_cast_from_null_keeps_its_nulls(make: object) -> None:
    table = pa.table({"a": make()})  # type: ignore[operator]
    first = dc.hash_table(table).data_sha
    assert table.column("a").null_count == 5
    assert dc.hash_table(table).data_sha == first


def test_negative_zero_in_the_callers_numpy_array_stays() -> None:
    values = np.array([-0.0, 1.0, -0.0, np.nan])
    dc.hash_table(pa.table({"x": values}))
    assert np.signbit(values).tolist() == [True, False, True, False]
    # cv1 still encodes -0.0 as +0.0.
    assert dc.hash_table(pa.table({"x": values})) == dc.hash_table(
        pa.table({"x": np.array([0.0, 1.0, 0.0, np.nan])})
    )


def test_nan_payloads_in_the_callers_array_stay() -> None:
    bits = [0x7FF8000000000001, 0xFFF8000000000000, 0x7FF00000000007A2]
    values = np.array(bits, np.uint64).view(np.float64)
    dc.hash_table(pa.table({"x": values}))
    assert values.view(np.uint64).tolist() == bits


# -- pandas and polars input -----------------------------------------------------------


@st.composite
def float_frames(draw: st.DrawFn) -> dict[str, np.ndarray]:
    n = draw(st.integers(1, 30))
    ncol = draw(st.integers(1, 3))
    return {
        f"c{i}": _doubles(draw(st.lists(_double_bits, min_size=n, max_size=n))) for i in range(ncol)
    }


@SETTINGS
@given(float_frames())
def test_pandas_frames_are_left_as_they_were(columns: dict[str, np.ndarray]) -> None:
    df = pd.DataFrame(columns, copy=False)
    held = {k: df[k].to_numpy().tobytes() for k in df.columns}
    originals = {k: v.tobytes() for k, v in columns.items()}
    first = dc.hash_table(df).data_sha
    assert dc.hash_table(df).data_sha == first
    assert {k: df[k].to_numpy().tobytes() for k in df.columns} == held
    assert {k: v.tobytes() for k, v in columns.items()} == originals


@SETTINGS
@given(float_frames(), st.booleans())
def test_polars_frames_are_left_as_they_were(columns: dict[str, np.ndarray], nulls: bool) -> None:
    df = pl.DataFrame(columns)
    if nulls:  # polars keeps missing apart from NaN
        df = df.with_columns(
            pl.when(pl.int_range(pl.len()) % 3 == 0).then(None).otherwise(pl.all()).name.keep()
        )
    held = arrow_bytes(df.to_arrow())
    first = dc.hash_table(df).data_sha
    assert dc.hash_table(df).data_sha == first
    assert arrow_bytes(df.to_arrow()) == held


# -- writes ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> dc.Connection:
    return new_project(tmp_path_factory.mktemp("caller-memory"))


@WRITE_SETTINGS
@given(table=shared_tables())
def test_a_write_leaves_the_table_as_it_was_and_records_its_hash(
    conn: dc.Connection, table: pa.Table
) -> None:
    expected = dc.hash_table(private_copy(table)).data_sha
    before = arrow_bytes(table)
    first = conn.write("T", table)
    assert arrow_bytes(table) == before
    assert first.data_sha == expected
    again = conn.write("T", table)
    assert again.change == "none"
    assert dc.hash_table(conn.read("T", as_="arrow")).data_sha == expected


def test_a_dictionary_of_the_null_type_is_stored_as_the_null_column_it_hashes_as(
    conn: dc.Connection,
) -> None:
    # Parquet cannot store a dictionary whose values are of the null type (pyarrow raises
    # ArrowNotImplementedError); its cv1 hash is that of a null column, so that is stored.
    table = pa.table({"a": pa.array([None, None]).dictionary_encode(), "b": [1, 2]})
    plain = pa.table({"a": pa.nulls(2), "b": [1, 2]})
    assert dc.hash_table(table).data_sha == dc.hash_table(plain).data_sha
    result = conn.write("nulldict", table)
    assert result.data_sha == dc.hash_table(plain).data_sha
    assert table.column("a").type == pa.dictionary(pa.int32(), pa.null())  # the caller's
    assert conn.read("nulldict", as_="arrow").column("a").type == pa.null()
    assert conn.write("nulldict", table).change == "none"


@pytest.mark.skipif(not (CDISC / "ae.xpt").exists(), reason="the CDISC pilot files are absent")
def test_an_extract_written_twice_is_one_version(tmp_path: Path) -> None:
    # AE.AELLTCD is all missing: the xpt reader hands out a float64 column whose validity
    # and values share one zeroed buffer.
    conn = new_project(tmp_path)
    table = dc.read_extract(CDISC / "ae.xpt")
    before = arrow_bytes(table)
    first = conn.write("AE", table)
    second = conn.write("AE", table)
    assert (first.change, second.change) == ("full", "none")
    assert arrow_bytes(table) == before
    assert len(conn.history("AE")) == 1
    report = conn.validate(verify_data="content")
    assert report.ok, report


def test_every_view_of_arrow_memory_in_identity_is_read_only() -> None:
    # np.frombuffer gives a writeable array over a mutable Arrow buffer: identity code
    # takes its views through readonly_view only, so a stray write raises, never corrupts.
    root = Path(dc.__file__).parent / "_identity"
    users = sorted(p.name for p in root.glob("*.py") if "np.frombuffer(" in p.read_text())
    assert users == ["_pipeline.py"]
    from datom_core._identity._pipeline import readonly_view

    view = readonly_view(pa.allocate_buffer(16), np.float64, 1, 1)
    with pytest.raises(ValueError):
        view[0] = 1.0


@WRITE_SETTINGS
@given(columns=float_frames())
def test_writing_pandas_and_polars_frames_leaves_them_as_they_were(
    conn: dc.Connection, columns: dict[str, np.ndarray]
) -> None:
    frame = pd.DataFrame(columns, copy=False)
    held = {k: frame[k].to_numpy().tobytes() for k in frame.columns}
    first = conn.write("P", frame)
    assert {k: frame[k].to_numpy().tobytes() for k in frame.columns} == held
    assert conn.write("P", frame).change == "none"
    assert first.data_sha == dc.hash_table(frame).data_sha

    polars = pl.DataFrame(columns)
    before = arrow_bytes(polars.to_arrow())
    conn.write("Q", polars)
    assert arrow_bytes(polars.to_arrow()) == before
    assert conn.write("Q", polars).change == "none"
