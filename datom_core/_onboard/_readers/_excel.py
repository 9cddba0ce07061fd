"""Spreadsheets (xls, xlsx) through python-calamine: the first sheet, first row as header.

The data area starts at the first non-empty row and column. Trailing rows that are
entirely empty are dropped, as are columns with neither a header nor any value (spacer
columns); empty rows inside the data are kept as rows of nulls. Empty cells (and error
cells such as ``#N/A``, which calamine reads as empty) are null; Excel does not tell an
empty text cell from a blank one, so there are no empty strings.

Each column gets one Arrow type from the kinds of its non-empty cells:

* numbers → ``float64`` (Excel stores every number as a double; whole numbers stay
  ``float64`` so that an xls and an xlsx of the same sheet give the same table);
* text → ``string``; booleans → ``bool``;
* dates → ``date32``; datetimes, or dates mixed with datetimes → ``timestamp[us]``;
  times of day → ``time64[us]``; durations → ``duration[us]``;
* no value at all → the ``null`` type;
* **any other mix (e.g. numbers and text) → ``string``**: every cell is written as text
  (whole numbers without a decimal point, other numbers in Python's shortest round-trip
  form, booleans as ``TRUE``/``FALSE``, dates and times in ISO 8601), so the column stays
  hashable instead of holding mixed objects.

Header cells that are not text are named the same way (a header ``2024`` is ``"2024"``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from python_calamine import CalamineError, CalamineWorkbook

from datom_core._onboard._readers._common import Source, check_column_names

_TYPE_BY_KIND: dict[frozenset[str], pa.DataType] = {
    frozenset({"number"}): pa.float64(),
    frozenset({"text"}): pa.string(),
    frozenset({"bool"}): pa.bool_(),
    frozenset({"date"}): pa.date32(),
    frozenset({"datetime"}): pa.timestamp("us"),
    frozenset({"date", "datetime"}): pa.timestamp("us"),
    frozenset({"time"}): pa.time64("us"),
    frozenset({"duration"}): pa.duration("us"),
}


def read_excel(source: Source) -> pa.Table:
    """Read the first sheet of a workbook into a table (see the module docstring)."""
    rows = _sheet_rows(source)
    if not rows:
        raise source.fail("the first sheet is empty", "put the table on the first sheet")
    header, body = rows[0], rows[1:]
    while body and all(_is_empty(cell) for cell in body[-1]):
        body.pop()
    columns: list[Sequence[Any]] = list(zip(*body, strict=True)) if body else [()] * len(header)
    kept = [
        (cell_text(name), values)
        for name, values in zip(header, columns, strict=True)
        if not (_is_empty(name) and all(_is_empty(v) for v in values))
    ]
    names = [name for name, _ in kept]
    check_column_names(source, names)
    return pa.Table.from_arrays([excel_column(values) for _, values in kept], names=names)


def _sheet_rows(source: Source) -> list[list[Any]]:
    try:
        if source.is_local:
            workbook = CalamineWorkbook.from_path(source.path)
            return _first_sheet(workbook)
        with source.open() as handle:
            return _first_sheet(CalamineWorkbook.from_filelike(handle))
    except (CalamineError, OSError, ValueError) as e:
        raise source.corrupt(e) from e


def _first_sheet(workbook: CalamineWorkbook) -> list[list[Any]]:
    with workbook:
        if not workbook.sheet_names:
            return []
        return workbook.get_sheet_by_index(0).to_python(skip_empty_area=True)


def excel_column(values: Sequence[Any]) -> pa.Array:
    """One typed Arrow column from the cell values calamine returns for it."""
    cells = [None if _is_empty(v) else v for v in values]
    kinds = frozenset(_kind(v) for v in cells if v is not None)
    if not kinds:
        return pa.nulls(len(cells))
    target = _TYPE_BY_KIND.get(kinds)
    if target is None:  # mixed kinds: keep every cell, as text
        return pa.array([None if v is None else cell_text(v) for v in cells], type=pa.string())
    if target == pa.float64():
        cells = [None if v is None else float(v) for v in cells]
    elif pa.types.is_timestamp(target):
        cells = [_as_datetime(v) for v in cells]
    return pa.array(cells, type=target)


def cell_text(value: Any) -> str:
    """A cell value as text: the form used for mixed columns and non-text headers."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)  # timedelta: H:MM:SS


def _kind(value: Any) -> str:
    # bool before number (bool is an int), datetime before date (datetime is a date).
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, dt.datetime):
        return "datetime"
    if isinstance(value, dt.date):
        return "date"
    if isinstance(value, dt.time):
        return "time"
    if isinstance(value, dt.timedelta):
        return "duration"
    return "other"


def _as_datetime(value: Any) -> dt.datetime | None:
    if value is None or isinstance(value, dt.datetime):
        return value
    return dt.datetime.combine(value, dt.time())


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value == "")
