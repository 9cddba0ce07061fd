"""Column types of delimited text, decided as data.table's ``fread`` decides them.

R datom's ``datom_sync`` reads csv with ``fread`` (through rio), so a csv onboarded from
Python must give the same columns for both languages to agree on ``data_sha``. The text
is parsed with every column as a string (pyarrow), then each column takes the first type
of fread's ladder that every present value fits:

1. logical: every value ``TRUE``/``FALSE``, or every value ``True``/``False``, or every
   value ``true``/``false`` (one spelling per column; ``T``/``F``, ``yes``/``no`` and
   ``0``/``1`` are not logical);
2. integer: ``[+-]digits``, within int64 (``int64``; R: integer or bit64::integer64);
3. double: decimal or exponent notation, ``NaN``/``nan``/``NAN``, ``Inf``/``inf``/``INF``/
   ``Infinity``/``1.#INF`` (signed); a literal that overflows or underflows to zero, or an
   integer literal beyond int64, makes the column text (``float64``);
4. date: ``YYYY-M-D`` (one- or two-digit month and day), a real calendar date (``date32``);
5. date-time: ``YYYY-M-D hh:mm:ss`` or with ``T``, optional fraction (at most six digits)
   and ``Z``/``±hh``/``±hhmm``/``±hh:mm`` offset, converted to UTC; a value without an offset
   is UTC, as fread reads it (``timestamp[us, tz=UTC]``);
6. otherwise text (``string``), exactly as the file holds it.

A value is *missing* when the field is empty, only spaces, or an unquoted ``NA``. Missing
values are null in every typed column; in a text column an empty field stays ``""`` and
only an unquoted ``NA`` is null. A column with no present value is logical, all null.
Spaces around a value are ignored for typing (fread strips them).

Where fread departs from the file, this module keeps the file (the user guide for R
colleagues lists the departures): a column mixing date-only and date-time values stays text (fread invents
midnight); text keeps its surrounding spaces and a quoted field's doubled quotes are one
quote; doubles are correctly rounded; sub-second times are exact to the microsecond.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: pyarrow's first pass: numbers and ``YYYY-MM-DD`` dates inferred (fread agrees on
#: those), no logicals, times or date-times (fread's rules differ); an empty field or an
#: ``NA`` is null in a typed column and stays text in a text column.
FIRST_PASS: dict[str, Any] = {
    "null_values": ["", "NA"],
    "strings_can_be_null": False,
    "quoted_strings_can_be_null": False,
    "true_values": [],
    "false_values": [],
    "timestamp_parsers": ["%Y-never"],  # matches no real value: no date-time inference
}

#: Present values looked at first, to rule a type out without scanning the whole column.
SAMPLE = 1000

_BOOL_SPELLINGS = (("TRUE", "FALSE"), ("True", "False"), ("true", "false"))
_INT = r"^[+-]?[0-9]+$"
_REGULAR = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_NAN = r"^[+-]?(NaN|nan|NAN)$"
_INF = r"^[+-]?(Inf|inf|INF|Infinity|1\.#INF)$"
_ZERO = r"^[+-]?[0.]*([eE].*)?$"  # a literal whose mantissa is zero
_DATE = r"^(?P<y>[0-9]{4})-(?P<m>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
_DATE_ONLY = _DATE + "$"
_DATETIME = (
    _DATE + r"[T ](?P<H>[0-9]{1,2}):(?P<M>[0-9]{2}):(?P<S>[0-9]{2})(?:\.(?P<f>[0-9]{0,6}))?"
    r"(?P<z>Z|(?P<zs>[+-])(?P<zh>[0-9]{2})(?::?(?P<zm>[0-9]{2}))?)?$"
)
_TIMESTAMP = pa.timestamp("us", tz="UTC")
_INT64_BOUND = 2.0**63


def fread_types(table: pa.Table, read_text: Callable[[list[str]], pa.Table]) -> pa.Table:
    """The first pass's ``table`` with each column typed as fread types it.

    ``read_text(names)`` reads those columns again, as text (only an unquoted ``NA``
    null): for the few columns whose type or missing values the first pass cannot decide.
    """
    columns = {name: table.column(name) for name in table.column_names}
    again = [name for name, column in columns.items() if _needs_text(column)]
    if again:
        text = read_text(again)
        for name in again:
            columns[name] = type_column(text.column(name))
    for name, column in columns.items():
        if name in again:
            continue
        if pa.types.is_null(column.type):
            columns[name] = pa.chunked_array([pa.nulls(len(column), pa.bool_())])
        elif pa.types.is_string(column.type):
            columns[name] = type_column(column)
    return pa.table(columns)


def _needs_text(column: pa.ChunkedArray) -> bool:
    kind = column.type
    if pa.types.is_string(kind):  # "NA" quoted is text, unquoted is missing
        return bool(pc.any(pc.equal(column, "NA")).as_py())
    if pa.types.is_floating(kind):
        # Spellings of NaN and Inf, integers beyond int64, and whole numbers (written
        # "+3" or " 3 ", fread's integers; or "3.0", its doubles) need their text.
        odd = pc.or_(pc.is_nan(column), pc.is_inf(column))
        if pc.any(pc.or_(odd, pc.greater_equal(pc.abs(column), _INT64_BOUND))).as_py():
            return True
        return bool(pc.all(pc.equal(pc.floor(column), column)).as_py())
    return not (pa.types.is_integer(kind) or pa.types.is_date(kind) or pa.types.is_null(kind))


def type_column(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """One text column, typed by the ladder in the module docstring."""
    sample = pc.utf8_trim(pc.drop_null(column)[: 4 * SAMPLE], " ")
    sample = sample.filter(pc.not_equal(sample, ""))[:SAMPLE]
    ladder = [parse for parse in _LADDER if parse(sample) is not None]
    if not ladder and len(sample):
        return column  # text: most text columns end here, after looking at the sample
    trimmed = _trim(column)
    present = pc.and_(pc.is_valid(trimmed), pc.not_equal(trimmed, ""))
    if not pc.any(present).as_py():
        return pa.chunked_array([pa.nulls(len(column), pa.bool_())])
    values = pc.if_else(present, trimmed, pa.scalar(None, pa.string()))
    for parse in ladder:
        typed = parse(values)
        if typed is not None:
            return typed
    return column


def _trim(column: pa.ChunkedArray) -> pa.ChunkedArray:
    padded = pc.or_(pc.starts_with(column, " "), pc.ends_with(column, " "))
    if pc.any(padded).as_py():
        return pc.utf8_trim(column, " ")
    return column


def _all(matches: pa.ChunkedArray | pa.Array) -> bool:
    return bool(pc.all(matches, skip_nulls=True).as_py())


def _logical(values: pa.ChunkedArray) -> pa.ChunkedArray | None:
    for true, false in _BOOL_SPELLINGS:
        if _all(pc.or_(pc.is_in(values, pa.array([true, false])), pc.is_null(values))):
            return pc.equal(values, true)
    return None


def _integer(values: pa.ChunkedArray) -> pa.ChunkedArray | None:
    if not _all(pc.match_substring_regex(values, _INT)):
        return None
    try:
        return pc.cast(_unsigned(values), pa.int64())
    except pa.ArrowInvalid:
        return None  # beyond int64: not a double either (fread reads it as text)


def _unsigned(values: pa.ChunkedArray) -> pa.ChunkedArray:
    # Arrow's integer parser refuses a leading "+"; fread takes it.
    return pc.replace_substring_regex(values, r"^\+", "")


def _double(values: pa.ChunkedArray) -> pa.ChunkedArray | None:
    regular = pc.match_substring_regex(values, _REGULAR)
    nan = pc.match_substring_regex(values, _NAN)
    inf = pc.match_substring_regex(values, _INF)
    if not _all(pc.or_(regular, pc.or_(nan, inf))):
        return None
    if not _integers_fit(values):
        return None
    numbers = pc.cast(pc.if_else(regular, values, pa.scalar(None, pa.string())), pa.float64())
    # Overflow to infinity, or underflow to zero of a non-zero literal: fread gives text.
    zero_literal = pc.match_substring_regex(values, _ZERO)
    lost = pc.or_(pc.is_inf(numbers), pc.and_(pc.equal(numbers, 0.0), pc.invert(zero_literal)))
    if pc.any(lost).as_py():
        return None
    if pc.any(nan).as_py() or pc.any(inf).as_py():
        negative = pc.starts_with(values, "-")
        infinity = pc.if_else(negative, -np.inf, np.inf)
        numbers = pc.if_else(inf, infinity, pc.if_else(nan, np.nan, numbers))
    return numbers


def _integers_fit(values: pa.ChunkedArray) -> bool:
    integers = pc.match_substring_regex(values, _INT)
    if not pc.any(integers).as_py():
        return True
    try:
        pc.cast(_unsigned(pc.if_else(integers, values, pa.scalar(None, pa.string()))), pa.int64())
    except pa.ArrowInvalid:
        return False
    return True


def _date(values: pa.ChunkedArray) -> pa.ChunkedArray | None:
    if not _all(pc.match_substring_regex(values, _DATE_ONLY)):
        return None
    parts = _parts(values, _DATE_ONLY)
    days = _days(parts)
    if days is None:
        return None
    valid = pc.is_valid(values)
    return pa.chunked_array([pa.array(days, pa.int32(), mask=~_numpy(valid)).cast(pa.date32())])


def _datetime(values: pa.ChunkedArray) -> pa.ChunkedArray | None:
    if not _all(pc.match_substring_regex(values, _DATETIME)):
        return None
    parts = _parts(values, _DATETIME)
    days = _days(parts)
    if days is None:
        return None
    hour, minute, second = (_ints(parts, key) for key in ("H", "M", "S"))
    zone_hour, zone_minute = _ints(parts, "zh"), _ints(parts, "zm")
    if (hour > 23).any() or (minute > 59).any() or (second > 59).any() or (zone_minute > 59).any():
        return None
    fraction = pc.utf8_rpad(_field(parts, "f"), 6, "0")
    micros = _numpy(pc.cast(pc.if_else(pc.equal(fraction, "000000"), "0", fraction), pa.int64()))
    sign = np.where(_numpy(pc.equal(_field(parts, "zs"), "-")), -1, 1)
    offset = sign * (zone_hour * 3600 + zone_minute * 60)
    seconds = days.astype(np.int64) * 86400 + hour * 3600 + minute * 60 + second - offset
    ticks = seconds * 1_000_000 + micros
    mask = ~_numpy(pc.is_valid(values))
    return pa.chunked_array([pa.array(ticks, pa.int64(), mask=mask).cast(_TIMESTAMP)])


def _parts(values: pa.ChunkedArray, pattern: str) -> pa.StructArray:
    combined = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    return pc.extract_regex(combined, pattern)


def _field(parts: pa.StructArray, key: str) -> pa.Array:
    # A group that did not take part in the match is "" (a missing row: null).
    return pc.fill_null(parts.field(key), "")


def _ints(parts: pa.StructArray, key: str) -> np.ndarray:
    text = _field(parts, key)
    return _numpy(pc.cast(pc.if_else(pc.equal(text, ""), "0", text), pa.int64()))


def _numpy(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(array.to_numpy(zero_copy_only=False))


def _days(parts: pa.StructArray) -> np.ndarray | None:
    """Days since 1970-01-01 of each row's year, month, day; None if one is no real date."""
    year, month, day = (_ints(parts, key) for key in ("y", "m", "d"))
    present = _numpy(parts.is_valid())
    year, month, day = (
        np.where(present, year, 1970),
        np.where(present, month, 1),
        np.where(present, day, 1),
    )
    if ((month < 1) | (month > 12) | (day < 1)).any():
        return None
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    month_days = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[month - 1]
    if (day > month_days + (leap & (month == 2))).any():
        return None
    # Howard Hinnant's days_from_civil.
    y = year - (month <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return np.asarray(era * 146097 + doe - 719468, dtype=np.int64)


_LADDER: tuple[Callable[[pa.ChunkedArray], pa.ChunkedArray | None], ...] = (
    _logical,
    _integer,
    _double,
    _date,
    _datetime,
)
