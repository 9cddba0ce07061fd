"""Every refusal of IDENTITY.md names the column, prints its recourse, and mutates nothing."""

from __future__ import annotations

import decimal

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import datom_core
from datom_core import UnhashableColumnsError

OK = pa.array([1, 2], pa.int32())

# (case id, table builder, offending column label, words of the recourse)
REFUSALS = [
    ("list", lambda: pa.table({"ok": OK, "bad": pa.array([[1], [2, 3]])}), "bad", "explode"),
    (
        "large_list",
        lambda: pa.table({"ok": OK, "bad": pa.array([[1], []], pa.large_list(pa.int8()))}),
        "bad",
        "explode",
    ),
    (
        "fixed_size_list",
        lambda: pa.table({"ok": OK, "bad": pa.array([[1], [2]], pa.list_(pa.int8(), 1))}),
        "bad",
        "explode",
    ),
    ("nested_frame", lambda: pd.DataFrame({"ok": [1, 2], "bad": [[1, 2], [3]]}), "bad", "explode"),
    (
        "struct",
        lambda: pa.table({"ok": OK, "bad": pa.array([{"a": 1}, {"a": 2}])}),
        "bad",
        "flatten",
    ),
    (
        "map",
        lambda: pa.table(
            {"ok": OK, "bad": pa.array([[("k", 1)], []], pa.map_(pa.string(), pa.int8()))}
        ),
        "bad",
        "flatten",
    ),
    ("binary", lambda: pa.table({"ok": OK, "bad": pa.array([b"x", b"y"])}), "bad", "base64"),
    (
        "large_binary",
        lambda: pa.table({"ok": OK, "bad": pa.array([b"x", b"y"], pa.large_binary())}),
        "bad",
        "base64",
    ),
    (
        "fixed_size_binary",
        lambda: pa.table({"ok": OK, "bad": pa.array([b"x", b"y"], pa.binary(1))}),
        "bad",
        "base64",
    ),
    (
        "decimal128",
        lambda: pa.table({"ok": OK, "bad": pa.array([decimal.Decimal("1.5"), None])}),
        "bad",
        "float64",
    ),
    (
        "decimal256",
        lambda: pa.table(
            {"ok": OK, "bad": pa.array([decimal.Decimal("1.5"), None], pa.decimal256(40, 2))}
        ),
        "bad",
        "float64",
    ),
    (
        "complex",
        lambda: pd.DataFrame({"ok": [1, 2], "bad": np.array([1 + 2j, 3j])}),
        "bad",
        "real and imaginary",
    ),
    (
        "mixed_object",
        lambda: pd.DataFrame({"ok": [1, 2], "bad": pd.Series(["a", 1], dtype=object)}),
        "bad",
        "one type",
    ),
    ("nul_in_string", lambda: pa.table({"ok": OK, "bad": pa.array(["a\0b", "c"])}), "bad", "NUL"),
    ("nul_in_name", lambda: pa.table({"ok": OK, "ba\0d": pa.array([1, 2])}), "ba\0d", "NUL"),
    (
        "uint64_too_big",
        lambda: pa.table({"ok": OK, "bad": pa.array([1, 2**64 - 1], pa.uint64())}),
        "bad",
        "2^63-1",
    ),
    (
        "decimal_object",
        lambda: pd.DataFrame({"ok": [1, 2], "bad": [decimal.Decimal("1"), decimal.Decimal("2")]}),
        "bad",
        "float64",
    ),
    (
        "period",
        lambda: pd.DataFrame(
            {"ok": [1, 2], "bad": pd.period_range("2020-01", periods=2, freq="M")}
        ),
        "bad",
        "supported type",
    ),
    (
        "interval",
        lambda: pd.DataFrame({"ok": [1, 2], "bad": pd.interval_range(0, 2)}),
        "bad",
        "supported type",
    ),
    (
        "other_object",
        lambda: pd.DataFrame({"ok": [1, 2], "bad": [object(), object()]}),
        "bad",
        "supported type",
    ),
    (
        "polars_object",
        lambda: pl.DataFrame(
            {"ok": [1, 2], "bad": pl.Series([object(), object()], dtype=pl.Object)}
        ),
        "bad",
        "supported type",
    ),
    ("polars_list", lambda: pl.DataFrame({"ok": [1, 2], "bad": [[1], [2]]}), "bad", "explode"),
    (
        "index",
        lambda: pd.DataFrame({"ok": [1, 2]}, index=["a", "b"]),
        "(index)",
        "reset_index(drop=True)",
    ),
    (
        "filtered_index",
        lambda: pd.DataFrame({"ok": [1, 2, 3]}).iloc[[0, 2]],
        "(index)",
        "reset_index()",
    ),
    ("duplicate_names", lambda: pa.table([OK, OK], names=["a", "a"]), "a", "rename"),
    ("non_string_name", lambda: pd.DataFrame({0: [1, 2], "ok": [1, 2]}), "0", "rename"),
    ("zero_columns", lambda: pa.table({}), "(table)", "zero columns"),
]


@pytest.mark.parametrize(
    ("case", "build", "column", "recourse"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_refusal_names_column_and_recourse(case: str, build, column: str, recourse: str) -> None:
    data = build()
    before = _snapshot(data)
    with pytest.raises(UnhashableColumnsError) as info:
        datom_core.hash_table(data)
    message = str(info.value)
    assert column in message and recourse in message, message
    assert "nothing was written" in message
    report = datom_core.check_hashable(data)
    assert not report.ok
    bad = {c.column: c for c in report.unsupported}
    assert column in bad and recourse in bad[column].recourse
    assert "ok" not in bad  # the good neighbour is reported ok
    assert recourse in str(report)
    assert _snapshot(data) == before  # the input was not mutated


def test_all_offenders_are_named_at_once() -> None:
    data = pa.table(
        {
            "fine": OK,
            "lists": pa.array([[1], [2]]),
            "blob": pa.array([b"x", b"y"]),
            "money": pa.array([decimal.Decimal("1.5"), None]),
        }
    )
    with pytest.raises(UnhashableColumnsError) as info:
        datom_core.hash_table(data)
    message = str(info.value)
    for name, words in [("lists", "explode"), ("blob", "base64"), ("money", "float64")]:
        assert name in message and words in message
    assert "3 column(s)" in message
    assert [c.column for c in info.value.report.unsupported] == ["lists", "blob", "money"]


def test_report_lists_every_column_with_status_and_dtype() -> None:
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [[1], [2]]})
    report = datom_core.check_hashable(df)
    assert [(c.column, c.status) for c in report.columns] == [
        ("a", "ok"),
        ("b", "ok"),
        ("c", "unsupported"),
    ]
    assert report.columns[0].dtype == "int64"
    text = str(report)
    assert text.splitlines()[0].split() == ["column", "dtype", "status", "recourse"]
    assert datom_core.check_hashable(pd.DataFrame({"a": [1]})).ok


def test_uint64_within_int64_is_fine() -> None:
    h = datom_core.hash_table(pa.table({"x": pa.array([1, 2**40], pa.uint64())}))
    assert (
        h.data_sha
        == datom_core.hash_table(pa.table({"x": pa.array([1, 2**40], pa.int64())})).data_sha
    )


def test_unsupported_container_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="pandas DataFrames, polars DataFrames and pyarrow"):
        datom_core.hash_table([1, 2, 3])


def test_default_like_integer_index_is_accepted() -> None:
    df = pd.DataFrame({"a": [1, 2]}, index=[0, 1])
    assert (
        datom_core.hash_table(df).data_sha
        == datom_core.hash_table(pd.DataFrame({"a": [1, 2]})).data_sha
    )


def _snapshot(data: object) -> object:
    if isinstance(data, pd.DataFrame):
        return (list(data.columns), list(map(str, data.dtypes)), data.index.tolist(), repr(data))
    if isinstance(data, pl.DataFrame):
        return (data.columns, [str(d) for d in data.dtypes], data.height)
    return (data.schema, data.num_rows)


def test_a_prepared_table_is_not_checked_again_and_an_equal_unprepared_one_is() -> None:
    frame = pd.DataFrame({"USUBJID": ["S1", None], "AVAL": [1.5, np.nan], "N": [1, 2]})
    prepared = datom_core.prepare_table(frame)
    assert datom_core.prepare_table(prepared) is prepared  # made here: passed every check
    again = pa.table(prepared.columns, names=prepared.column_names)  # equal, made elsewhere
    redone = datom_core.prepare_table(again)
    assert redone is not again and redone.equals(prepared)
    assert datom_core.hash_table(prepared) == datom_core.hash_table(frame)
    bad = pa.table({"ok": OK, "bad": pa.array([[1], [2, 3]])})  # never prepared: refused
    with pytest.raises(UnhashableColumnsError):
        datom_core.prepare_table(bad)
