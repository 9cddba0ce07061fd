"""The Arrow boundary: the only module that knows pandas and polars.

Everything inside datom works on ``pyarrow.Table``. :func:`to_arrow` converts what users
hand us, column by column, so that every problem can be reported at once;
:func:`from_arrow` converts back in a way that keeps identity (a table read back re-hashes
to its recorded ``data_sha``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from datom_core._errors import InvalidArgumentError, UnsupportedInputError
from datom_core._labels import kept_field

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ConvertedColumn", "ConvertedTable", "OutputKind", "from_arrow", "to_arrow"]

OutputKind = Literal["pandas", "arrow", "polars"]

_R_INT_MAX = 2147483647
_THREADED_ROWS = 20_000
_MIXED = "cast the column to one type explicitly (for example .astype(str))"
_OTHER = (
    "convert it to a supported type (number, string, date, time, duration, boolean); "
    "Python objects such as Decimal, Period, Interval or geometries are not values datom can hash"
)


@dataclass(frozen=True)
class ConvertedColumn:
    """One source column on its way to Arrow."""

    name: Any  # the label as given (may be a non-string, which is refused later)
    dtype: str  # the source dtype, as the user knows it
    array: pa.ChunkedArray | None  # None when the conversion itself was refused
    problem: str | None = None  # the recourse when refused
    labels: dict[bytes, bytes] | None = None  # an Arrow input's column labels (_labels)


@dataclass(frozen=True)
class ConvertedTable:
    """All columns of a source table plus table-level problems (index, zero columns)."""

    columns: tuple[ConvertedColumn, ...]
    problems: tuple[tuple[str, str], ...] = ()  # (what, recourse)

    def table(self) -> pa.Table:
        """The Arrow table; only valid when every column converted.

        Column labels in an Arrow input's field metadata are kept (they are not identity);
        any other field or schema metadata is left behind.
        """
        arrays = [_no_null_dictionary(c.array) for c in self.columns]
        names = [str(c.name) for c in self.columns]
        if not any(c.labels for c in self.columns):
            return pa.Table.from_arrays(arrays, names=names)
        fields = [
            pa.field(name, a.type, metadata=c.labels)  # type: ignore[union-attr]
            for name, a, c in zip(names, arrays, self.columns, strict=True)
        ]
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _no_null_dictionary(array: pa.ChunkedArray | None) -> pa.ChunkedArray | None:
    # A dictionary of the null type (an empty categorical, an all-missing dictionary column)
    # hashes as the null column it is, but Parquet cannot store it: store that null column.
    if array is None or not pa.types.is_dictionary(array.type):
        return array
    if not pa.types.is_null(array.type.value_type):
        return array
    return pa.chunked_array([pa.nulls(len(array))])


def to_arrow(data: Any) -> ConvertedTable:
    """Convert a pandas/polars frame or a pyarrow Table/RecordBatch, never mutating it."""
    if isinstance(data, pa.Table):
        return _from_arrow_table(data)
    if isinstance(data, pa.RecordBatch):
        return _from_arrow_table(pa.Table.from_batches([data]))
    if _is_pandas(data):
        return _from_pandas(data)
    if _is_polars(data):
        return _from_polars(data)
    raise UnsupportedInputError(
        f"datom stores pandas DataFrames, polars DataFrames and pyarrow Tables or RecordBatches; "
        f"got {type(data).__module__}.{type(data).__qualname__}. Convert it to one of those first."
    )


def _from_arrow_table(table: pa.Table) -> ConvertedTable:
    fields = [kept_field(f) for f in table.schema]
    cols = tuple(
        ConvertedColumn(name, str(f.type), table.column(i), labels=dict(f.metadata or {}) or None)
        for i, (name, f) in enumerate(zip(table.column_names, fields, strict=True))
    )
    return ConvertedTable(cols)


def _is_pandas(data: Any) -> bool:
    # Checked by module name so that importing datom (the CLI) does not import pandas.
    module = type(data).__module__
    return module.startswith("pandas") and type(data).__name__ == "DataFrame"


def _is_polars(data: Any) -> bool:
    module = type(data).__module__
    return module.startswith("polars") and type(data).__name__ == "DataFrame"


def _from_polars(df: Any) -> ConvertedTable:
    import polars as pl

    cols = []
    for series in df.get_columns():
        if series.dtype == pl.Object:  # polars would hand these to Arrow as opaque bytes
            cols.append(ConvertedColumn(series.name, str(series.dtype), None, _OTHER))
            continue
        try:
            array = pa.chunked_array(series.to_arrow())
            cols.append(ConvertedColumn(series.name, str(series.dtype), array))
        except Exception:  # polars Object columns and friends have no Arrow form
            cols.append(ConvertedColumn(series.name, str(series.dtype), None, _OTHER))
    return ConvertedTable(tuple(cols))


def _from_pandas(df: pd.DataFrame) -> ConvertedTable:
    problems = []
    if not _default_index(df.index):
        problems.append(
            (
                "(index)",
                "the DataFrame has a non-default index: reset_index() to keep it as a column, "
                "or reset_index(drop=True) to drop it",
            )
        )
    cols = tuple(_pandas_column(series, name) for name, series in df.items())
    return ConvertedTable(cols, tuple(problems))


def _default_index(index: pd.Index) -> bool:
    import pandas as pd

    if isinstance(index, pd.RangeIndex):
        return index.start == 0 and index.step == 1
    # An integer index holding exactly 0..n-1 in order carries no information either.
    if isinstance(index, pd.MultiIndex) or index.dtype.kind not in "iu":
        return False
    return bool((index == pd.RangeIndex(len(index))).all())


def _pandas_column(series: pd.Series, name: Any) -> ConvertedColumn:
    import pandas as pd

    dtype = series.dtype
    label = str(dtype)
    if dtype.kind == "c":
        return ConvertedColumn(name, label, None, "split it into real and imaginary float columns")
    if isinstance(dtype, pd.PeriodDtype | pd.IntervalDtype | pd.SparseDtype):
        return ConvertedColumn(name, label, None, _OTHER)
    try:
        array = pa.array(series, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError):
        return ConvertedColumn(name, label, None, _object_recourse(series))
    # Arrow-backed pandas columns hand back a ChunkedArray already.
    chunked = array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array])
    return ConvertedColumn(name, label, chunked)


def _object_recourse(series: pd.Series) -> str:
    kinds = {type(v) for v in series.dropna()}
    return _MIXED if len(kinds) > 1 else _OTHER


def from_arrow(table: pa.Table, as_: OutputKind = "pandas") -> Any:
    """Convert an Arrow table to the requested kind without losing identity."""
    if as_ == "arrow":
        return table
    if as_ == "polars":
        import polars as pl  # optional extra

        # polars would read date64 as a datetime: keep it a date (same days, same identity).
        for i, field in enumerate(table.schema):
            if pa.types.is_date64(field.type):
                table = table.set_column(i, field.name, table.column(i).cast(pa.date32()))
        return pl.from_arrow(table)
    if as_ == "pandas":
        return _to_pandas(table)
    raise InvalidArgumentError(f'as_ must be "pandas", "arrow" or "polars", not {as_!r}')


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    import pandas as pd

    # Threads cost more than they save below tens of thousands of rows.
    df = table.to_pandas(use_threads=table.num_rows > _THREADED_ROWS)
    # numpy dtypes cannot tell NaN from missing, nor keep an int64 next to a missing value,
    # nor nanosecond times of day: those columns stay Arrow-backed.
    for name in table.column_names:
        column = table.column(name)
        if _needs_arrow_dtype(column):
            df[name] = pd.arrays.ArrowExtensionArray(column)
    return df


def _needs_arrow_dtype(column: pa.ChunkedArray) -> bool:
    t = column.type
    if pa.types.is_floating(t):
        return len(column) > 0 and bool(pc.any(pc.is_nan(column)).as_py())
    if pa.types.is_integer(t) and column.null_count:
        lo_hi = pc.min_max(column)
        lo, hi = lo_hi["min"].as_py(), lo_hi["max"].as_py()
        # numpy would turn the column into float64: beyond R's integer range that changes
        # its cv1 encoding (i64 -> num), so it stays Arrow-backed.
        return lo is not None and (lo < -_R_INT_MAX or hi > _R_INT_MAX)
    if pa.types.is_date(t) or pa.types.is_time(t):
        # pandas holds these as Python objects; with no value left, the type would be lost.
        return column.null_count == len(column) or (pa.types.is_time64(t) and t.unit == "ns")
    return False
