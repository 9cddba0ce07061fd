"""SAS (sas7bdat, xpt), SPSS (sav, zsav, por) and Stata (dta) files through pyreadstat.

The file is read in chunks of rows, each chunk converted to Arrow before the next is
read, so the Python objects pyreadstat makes never hold more than one chunk. Values come
out as follows:

* numbers: ``float64`` (SAS and SPSS store only doubles), ``int64`` for Stata's integer
  storage types; missing values (``.``, ``.A``-``.Z``, ``._``, SPSS user-missing) are null.
* dates, datetimes and times (by the variable's display format, as pyreadstat decides):
  ``date32``, ``timestamp[us]`` and ``time64[us]``; never the raw number.
* strings: ``string``, as the file holds them: a blank value is ``""`` (as R's haven
  reads it), never null; these formats have no missing text of their own.
* value labels are not applied: the stored codes are the data. Variable labels, display
  formats, value labels and declared widths are kept in each column's field metadata
  (``_labels``; not identity).

Text is decoded in the file's declared encoding (sas7bdat, sav and dta files declare one;
xpt and por do not, and are read as UTF-8), or in ``encoding`` when the caller names one.
When no encoding was named and the text is not valid in the declared one (a Windows-1252
xpt, typically: SAS sessions on Windows write them), the file is read again as
Windows-1252, then as Latin-1 (which decodes any byte), with an
:class:`~datom_core.OnboardingWarning` naming the encoding used: a readable file is never
refused as corrupt for its encoding. A ``por`` file has no encoding option (its format
fixes its characters).

Before any data is read, the row count in the file's header is checked: rows x columns
must stay within :data:`~._limits.MAX_STAT_CELLS` and within what a file of that size
can hold (a damaged or forged header claiming billions of rows is refused at once,
instead of being paged through chunk by chunk).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyreadstat

from datom_core._errors import OnboardingWarning
from datom_core._onboard._readers._common import Source, check_column_names
from datom_core._onboard._readers._labels import with_file_labels
from datom_core._onboard._readers._limits import MAX_STAT_CELLS, raise_recourse

#: Cells per chunk: bounds the Python objects alive at once (a few hundred MB at most).
CELLS_PER_CHUNK = 2_000_000

_READ_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sas7bdat": pyreadstat.read_sas7bdat,
    "xpt": pyreadstat.read_xport,
    "sav": pyreadstat.read_sav,
    "zsav": pyreadstat.read_sav,
    "por": pyreadstat.read_por,
    "dta": pyreadstat.read_dta,
}
_FAMILY = {"sas7bdat": "sas", "xpt": "sas", "sav": "spss", "zsav": "spss", "por": "spss"}
_INTEGER_STORAGE = {"int8", "int16", "int32"}
# At most this many cells per byte of file: every cell takes at least a byte, except in
# compressed files (SAS RLE/RDC pages, zlib in zsav), with a safety margin on each.
_MOST_CELLS_PER_BYTE = {"sas7bdat": 8192, "zsav": 2048}
_ERRORS = (
    pyreadstat.ReadstatError,
    pyreadstat.PyreadstatError,
    OSError,
    ValueError,
    OverflowError,
    UnicodeError,
    pa.ArrowException,
)


#: Tried in this order when the text is not valid in the declared encoding (or UTF-8).
FALLBACK_ENCODINGS = (("cp1252", "Windows-1252"), ("latin1", "Latin-1"))
_NO_ENCODING_OPTION = frozenset({"por"})
# ReadStat's words for text it cannot convert, and for an encoding name it does not know.
_UNDECODABLE = "Unable to convert string"
_UNKNOWN_ENCODING = "unsupported character set"


def read_statistical(
    source: Source, *, chunk_rows: int | None = None, encoding: str | None = None
) -> pa.Table:
    """Read a SAS, SPSS or Stata file into a table (see the module docstring for types).

    ``chunk_rows`` overrides the number of rows read per chunk (default: about
    :data:`CELLS_PER_CHUNK` cells). ``encoding`` names the text's encoding (``"cp1252"``,
    ``"latin1"``, ``"utf-8"``, ...) instead of the one the file declares.
    """
    if encoding is not None or source.fmt in _NO_ENCODING_OPTION:
        return _read(source, chunk_rows, encoding, named=True)
    try:
        return _read(source, chunk_rows, None, named=False)
    except _Undecodable as first:
        failure = first
    for codec, shown in FALLBACK_ENCODINGS:
        try:
            table = _read(source, chunk_rows, codec, named=False)
        except _Undecodable as again:
            failure = again
            continue
        warnings.warn(
            f"{source.path!r}: read as {shown} ({codec}): its text is not valid in the "
            f"encoding it declares (UTF-8 when it declares none: {failure.detail}). If "
            f"another encoding was meant, onboard it with encoding='...' (CLI: --encoding)",
            OnboardingWarning,
            stacklevel=2,
        )
        return table
    raise source.corrupt(failure.cause) from failure.cause  # unreachable: Latin-1 decodes all


class _Undecodable(Exception):
    """The file's text is not valid in the encoding it was read with."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.detail = str(cause).strip()


def _failure(source: Source, error: BaseException, encoding: str | None, named: bool) -> Exception:
    message = str(error)
    if isinstance(error, UnicodeDecodeError) or _UNDECODABLE in message:
        if not named:  # datom chose the encoding: the caller tries the next one
            return _Undecodable(error)
        return source.fail(
            f"its text is not valid {encoding} ({message.strip()})",
            "name the encoding the file was written in (encoding='cp1252', 'latin1', "
            "'utf-8'; CLI: --encoding), or omit it to let datom fall back to Windows-1252",
        )
    if encoding is not None and _UNKNOWN_ENCODING in message:
        return source.fail(
            f"the encoding {encoding!r} is not known to the reader",
            "name a standard encoding such as 'cp1252', 'latin1' or 'utf-8'",
        )
    return source.corrupt(error)


def _read(source: Source, chunk_rows: int | None, encoding: str | None, named: bool) -> pa.Table:
    plain = _READ_FUNCTIONS[source.fmt]
    if encoding is not None and source.fmt not in _NO_ENCODING_OPTION:

        def read(*args: Any, **kwargs: Any) -> Any:
            return plain(*args, encoding=encoding, **kwargs)
    else:
        read = plain
    with source.local_path() as path:
        try:
            _, meta = read(path, metadataonly=True, output_format="dict")
        except _ERRORS as e:
            raise _failure(source, e, encoding, named) from e
        names = list(meta.column_names)
        check_column_names(source, names)
        columns = {
            name: _Column(
                storage=meta.readstat_variable_types[name],
                display_format=meta.original_variable_types.get(name) or "",
                family=_FAMILY.get(source.fmt, "stata"),
            )
            for name in names
        }
        number_rows = check_row_count(source, meta.number_rows, len(names))
        rows = chunk_rows or max(1, CELLS_PER_CHUNK // len(names))
        try:
            for chunk in _chunks(read, path, number_rows, rows):
                for name, column in columns.items():
                    column.add(chunk[name])
            arrays = [column.finish() for column in columns.values()]
        except _ERRORS as e:
            raise _failure(source, e, encoding, named) from e
    table = pa.Table.from_arrays(arrays, names=names)
    return with_file_labels(table, meta, _FAMILY.get(source.fmt, "stata"))


def check_row_count(source: Source, number_rows: int | None, columns: int) -> int | None:
    """The header's row count (``None``: not recorded), refused if absurd."""
    if number_rows is None or number_rows < 0:
        return None  # xpt and por do not record it; the reading stops at the last row
    cells = number_rows * columns
    claim = f"its header claims {number_rows:,} rows of {columns:,} columns ({cells:,} cells)"
    most = source.size() * _MOST_CELLS_PER_BYTE.get(source.fmt, 2)
    if cells > most:
        raise source.fail(
            f"{claim}, more than a file of {source.size():,} bytes can hold: the header is "
            "damaged or forged",
            "export the dataset again from the source system, or convert it once to parquet",
        )
    if cells > MAX_STAT_CELLS.value:
        raise source.fail(
            f"{claim}, more than the limit of {MAX_STAT_CELLS.describe()}",
            raise_recourse(MAX_STAT_CELLS, "split the dataset, or convert it to parquet"),
        )
    return number_rows


def _chunks(
    read: Callable[..., Any], path: str, number_rows: int | None, rows: int
) -> Iterator[dict[str, list[Any]]]:
    # Paged by hand: pyreadstat's read_file_in_chunks never stops early with dict output
    # (an empty dict chunk still has a non-zero len), so it would page through every row
    # a header claims, and through nothing at all when the file holds fewer.
    offset = 0
    while number_rows is None or offset < number_rows:
        data, _ = read(path, row_offset=offset, row_limit=rows, output_format="dict")
        got = len(next(iter(data.values()), []))
        if got:
            yield data
        if got < rows:
            return
        offset += got


class _Column:
    """Arrow chunks of one variable, given one common type when the file is read."""

    def __init__(self, storage: str, display_format: str, family: str) -> None:
        self._storage = storage
        self._format = display_format
        self._family = family
        self._chunks: list[pa.Array] = []

    def add(self, values: list[Any]) -> None:
        if self._storage == "string":
            self._chunks.append(pa.array(values, type=pa.string()))
        else:
            # Infer: pyreadstat hands over date/datetime/time objects for temporal formats.
            self._chunks.append(pa.array(values))

    def finish(self) -> pa.ChunkedArray:
        target = next((c.type for c in self._chunks if c.type != pa.null()), None)
        if target is None:  # every value missing: the type comes from the metadata alone
            target = self._type_without_values()
        elif pa.types.is_integer(target) and self._storage not in _INTEGER_STORAGE:
            target = pa.float64()  # a double variable whose values all happen to be whole
        return pa.chunked_array([c.cast(target) for c in self._chunks], type=target)

    def _type_without_values(self) -> pa.DataType:
        if self._storage == "string":
            return pa.string()
        kind = temporal_kind(self._format, self._family)
        if kind is not None:
            return kind
        return pa.int64() if self._storage in _INTEGER_STORAGE else pa.float64()


# Display formats that pyreadstat reads as dates, datetimes and times (names without
# width or decimals). Only needed for a temporal column whose values are all missing.
_SAS_DATE = {"DATE", "WEEKDATE", "WEEKDATX", "DTDATE", "IS8601DA", "E8601DA", "B8601DA"}
_SAS_DATE_PREFIXES = ("DDMMYY", "MMDDYY", "YYMMDD")
_SAS_DATETIME = {"DATETIME", "E8601DT", "IS8601DT", "B8601DT", "B8601DN", "DATEAMPM", "MDYAMPM"}
_SAS_TIME = {"TIME", "HHMM", "TOD", "TIMEAMPM", "IS8601TM", "E8601TM", "B8601TM"}
_SPSS_DATE = {"DATE", "ADATE", "EDATE", "JDATE", "SDATE"}
_SPSS_DATETIME = {"DATETIME", "YMDHMS"}
_SPSS_TIME = {"TIME", "DTIME"}
_STATA_DATE = {"%td", "%d", "%tdD_m_Y", "%tdCCYY-NN-DD"}
_STATA_DATETIME = {"%tc", "%tC"}
_STATA_TIME = {"%tcHH:MM:SS", "%tcHH:MM"}
_FORMAT_NAME = re.compile(r"^([A-Z][A-Z0-9]*[A-Z])(\d+)?(\.\d*)?$")

_DATE, _TIMESTAMP, _TIME = pa.date32(), pa.timestamp("us"), pa.time64("us")


def temporal_kind(display_format: str, family: str) -> pa.DataType | None:
    """The Arrow type of a variable with this display format, if it is a date or time."""
    if family == "stata":
        if display_format in _STATA_DATE:
            return _DATE
        if display_format in _STATA_DATETIME:
            return _TIMESTAMP
        return _TIME if display_format in _STATA_TIME else None
    match = _FORMAT_NAME.match(display_format.upper())
    if match is None:
        return None
    name = match.group(1)
    if family == "spss":
        dates, datetimes, times = _SPSS_DATE, _SPSS_DATETIME, _SPSS_TIME
    else:
        dates, datetimes, times = _SAS_DATE, _SAS_DATETIME, _SAS_TIME
        if name[:6] in _SAS_DATE_PREFIXES and len(name) <= 7:
            return _DATE
    if name in dates:
        return _DATE
    if name in datetimes:
        return _TIMESTAMP
    return _TIME if name in times else None
