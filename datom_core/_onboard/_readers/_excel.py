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
* dates and datetimes → ``timestamp[us, tz=UTC]`` (R's readxl reads every date cell as
  a UTC POSIXct, pandas as a datetime: a date is its midnight); times of day →
  ``time64[us]`` (as pandas reads them; readxl gives 1899-12-31 datetimes);
  durations → ``duration[us]``;
* no value at all → the ``null`` type;
* **any other mix (e.g. numbers and text) → ``string``**: every cell is written as text
  (whole numbers without a decimal point, other numbers in Python's shortest round-trip
  form, booleans as ``TRUE``/``FALSE``, dates and times in ISO 8601), so the column stays
  hashable instead of holding mixed objects.

Header cells that are not text are named the same way (a header ``2024`` is ``"2024"``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

import pyarrow as pa
from python_calamine import CalamineError, CalamineSheet, CalamineWorkbook

from datom_core._onboard._readers._common import Source, check_column_names
from datom_core._onboard._readers._limits import MAX_SHEET_CELLS, MAX_XLS_BYTES
from datom_core._onboard._readers._xls_guard import check_xls
from datom_core._onboard._readers._xlsx_guard import check_xlsx, refuse_size, size_text

#: Rows converted from calamine's cells to Arrow at a time: bounds the Python objects.
CHUNK_ROWS = 65_536

_TYPE_BY_KIND: dict[frozenset[str], pa.DataType] = {
    frozenset({"number"}): pa.float64(),
    frozenset({"text"}): pa.string(),
    frozenset({"bool"}): pa.bool_(),
    frozenset({"date"}): pa.timestamp("us", tz="UTC"),
    frozenset({"datetime"}): pa.timestamp("us", tz="UTC"),
    frozenset({"date", "datetime"}): pa.timestamp("us", tz="UTC"),
    frozenset({"time"}): pa.time64("us"),
    frozenset({"duration"}): pa.duration("us"),
}


def read_excel(source: Source) -> pa.Table:
    """Read the first sheet of a workbook into a table (see the module docstring).

    The workbook is measured before it is read (:func:`._xlsx_guard.check_xlsx`,
    :func:`._xls_guard.check_xls`, :data:`._limits.MAX_XLS_BYTES`) and the sheet's area
    once calamine has it (:data:`._limits.MAX_SHEET_CELLS`); its cells are converted
    :data:`CHUNK_ROWS` rows at a time, each chunk typed from its own cells, and read a
    second time only for a column whose kinds mix across chunks (see :class:`_Column`).
    """
    if source.fmt == "xls" and source.size() > MAX_XLS_BYTES.value:
        raise refuse_size(source, "the file", size_text(source.size()), MAX_XLS_BYTES)
    try:
        with source.open() as handle:
            (check_xlsx if source.fmt == "xlsx" else check_xls)(source, handle)
            handle.seek(0)
            if source.is_local:
                workbook = CalamineWorkbook.from_path(source.path)
            else:
                workbook = CalamineWorkbook.from_filelike(handle)
            with workbook:
                if not workbook.sheet_names:
                    raise _empty(source)
                sheet = workbook.get_sheet_by_index(0)
                _check_area(source, sheet)
                return _convert(source, sheet)
    except (CalamineError, OSError, ValueError) as e:
        raise source.corrupt(e) from e


def _empty(source: Source) -> Exception:
    return source.fail("the first sheet is empty", "put the table on the first sheet")


def _check_area(source: Source, sheet: CalamineSheet) -> None:
    # Also bounds an xls, whose cells calamine has read by now (at most 65,536 x 256).
    cells = sheet.height * sheet.width
    if cells > MAX_SHEET_CELLS.value:
        shown = f"{sheet.height:,} rows x {sheet.width:,} columns = {cells:,} cells"
        raise refuse_size(source, "the first sheet", shown, MAX_SHEET_CELLS)


def _convert(source: Source, sheet: CalamineSheet) -> pa.Table:
    header = next(_data_rows(sheet), None)
    if header is None or sheet.start is None:
        raise _empty(source)
    columns = [_Column() for _ in header]
    rows = 0  # body rows up to the last one holding a value: trailing empty rows go
    for first, chunk in _body_chunks(sheet):
        for back, row in enumerate(reversed(chunk)):  # only trailing empty rows are read
            if row.count("") + row.count(None) < len(row):
                rows = first + len(chunk) - back
                break
        for column, values in zip(columns, zip(*chunk, strict=True), strict=True):
            column.add(values)
    keep = [j for j, name in enumerate(header) if columns[j].kinds or not _is_empty(name)]
    names = [cell_text(header[j]) for j in keep]
    check_column_names(source, names)
    redo = [j for j in keep if columns[j].needs_text]
    if redo:  # kinds that mix only across chunks: the text comes from the cells again
        for j in redo:
            columns[j].restart()
        for _, chunk in _body_chunks(sheet):
            cells = list(zip(*chunk, strict=True))
            for j in redo:
                columns[j].add(cells[j])
    arrays = [columns[j].finish() for j in keep]
    return pa.Table.from_arrays(arrays, names=names).slice(0, rows)


class _Column:
    """One column's Arrow chunks, each typed from its own cells, then given one type.

    A chunk's array is kept as is when the column's type is the chunk's (or null, or a
    date chunk in a timestamp column); a column whose kinds mix across chunks (numbers
    in one, text in another) is read again as text, see :meth:`needs_text`.
    """

    def __init__(self) -> None:
        self.kinds: set[str] = set()
        self._pieces: list[tuple[frozenset[str], pa.Array]] = []
        self._forced: frozenset[str] | None = None

    def add(self, values: Sequence[Any]) -> None:
        kinds = self._forced if self._forced is not None else frozenset(_kinds(values))
        self.kinds |= kinds
        self._pieces.append((kinds, excel_column(values, kinds)))

    @property
    def needs_text(self) -> bool:
        """True when a text column holds chunks converted as another type."""
        kinds = frozenset(self.kinds)
        if not kinds or kinds in _TYPE_BY_KIND:
            return False
        reusable = ({"text"}, kinds)  # as text already: cell by cell, as the column will be
        return any(k and k not in reusable and k in _TYPE_BY_KIND for k, _ in self._pieces)

    def restart(self) -> None:
        self._forced, self._pieces = frozenset(self.kinds), []

    def finish(self) -> pa.ChunkedArray:
        target = _target(frozenset(self.kinds))
        arrays = [
            pa.nulls(len(array), target) if not kinds else array.cast(target)
            for kinds, array in self._pieces
        ]
        return pa.chunked_array(arrays, type=target)


def _data_rows(sheet: CalamineSheet) -> Iterator[list[Any]]:
    # iter_rows starts at the sheet's first row, the data area at its first row with a value.
    start = sheet.start
    return islice(sheet.iter_rows(), start[0] if start else 0, None)


def _body_chunks(sheet: CalamineSheet) -> Iterator[tuple[int, list[list[Any]]]]:
    """``(rows before it, chunk)`` for the rows after the header, CHUNK_ROWS at a time."""
    rows = islice(_data_rows(sheet), 1, None)
    done = 0
    while chunk := list(islice(rows, CHUNK_ROWS)):
        yield done, chunk
        done += len(chunk)


def _kinds(values: Sequence[Any]) -> set[str]:
    """The kinds of the non-empty values (see :func:`_kind`), mostly without a Python loop."""
    kinds = set()
    for kind_type in set(map(type, values)):
        if kind_type is str:
            if any(v for v in values if type(v) is str):
                kinds.add("text")
        elif kind_type is not type(None):
            kinds.add(_KIND_BY_TYPE.get(kind_type, "other"))
    return kinds


def _target(kinds: frozenset[str]) -> pa.DataType:
    if not kinds:
        return pa.null()
    return _TYPE_BY_KIND.get(kinds, pa.string())


def excel_column(values: Sequence[Any], kinds: frozenset[str] | None = None) -> pa.Array:
    """One typed Arrow column from the cell values calamine returns for it.

    ``kinds`` are those of the whole column when ``values`` are a chunk of it.
    """
    cells = [None if v == "" else v for v in values]  # calamine's empty cell is ""
    if kinds is None:
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


_KIND_BY_TYPE = {
    bool: "bool",
    int: "number",
    float: "number",
    dt.datetime: "datetime",
    dt.date: "date",
    dt.time: "time",
    dt.timedelta: "duration",
}


def _as_datetime(value: Any) -> dt.datetime | None:
    if value is None or isinstance(value, dt.datetime):
        return value
    return dt.datetime.combine(value, dt.time())


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value == "")
