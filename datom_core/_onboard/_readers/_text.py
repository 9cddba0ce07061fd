"""Delimited text (csv, tsv, psv, txt) through ``pyarrow.csv``, typed as ``fread`` types it.

pyarrow parses the text and infers numbers and ISO dates (correctly rounded, fast);
:mod:`._text_types` then gives each column its type by data.table's ``fread`` rules, so
that Python and R datom read the same csv into the same table, reading again as text the
few columns whose text it needs to decide. A file up to :data:`WHOLE_READ_LIMIT` is parsed whole by the multi-threaded ``read_csv``; a
larger one is streamed block by block (``open_csv``), so memory holds the table and one
block of text rather than the whole text. ``open_csv`` fixes each column's type from the
first block; when a later block does not fit that type (an integer column that turns
decimal, a column empty in the first block) the file is read again with ``read_csv``,
which widens a column's type across all blocks.

The text is UTF-8 unless ``encoding`` names another codec (``"cp1252"``, ``"latin-1"``,
...), which pyarrow decodes from while parsing.

A block is :data:`~._limits.MAX_LINE_BYTES` of text (16 MiB unless the environment
variable ``DATOM_MAX_LINE_BYTES`` says otherwise), large so that type inference on the
first block usually sees the whole file. A record (a line, or several lines joined by a
quoted field) must fit in one block, so that is the longest record datom reads: a longer
one, typically a file with no line breaks or a double quote left open, is refused as
such rather than as a corrupt file.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv

from datom_core._errors import OnboardingError
from datom_core._onboard._readers._common import Source, check_column_names
from datom_core._onboard._readers._limits import MAX_LINE_BYTES, MAX_TEXT_COLUMNS, raise_recourse
from datom_core._onboard._readers._text_types import FIRST_PASS, fread_types

#: Files up to this size are parsed whole by pyarrow's multi-threaded ``read_csv`` (fast;
#: peak memory a few times the file); larger ones are streamed block by block.
WHOLE_READ_LIMIT = 256 << 20

#: txt delimiters, in order of preference when the first line holds as many of each.
TXT_DELIMITERS = (",", "\t", "|", ";")

_FIXED_DELIMITERS = {"csv": ",", "tsv": "\t", "psv": "|"}
_SNIFF_BYTES = 1 << 20
_LINE_PIECE = 1 << 16
_STRADDLES = "straddles two block boundaries"


def read_delimited(
    source: Source, *, block_size: int | None = None, encoding: str | None = None
) -> pa.Table:
    """Read a delimited text file whole into a table (see the module docstring).

    Files up to :data:`WHOLE_READ_LIMIT` are parsed in one multi-threaded pass; larger
    ones (or any file when ``block_size`` is given) are streamed. ``encoding`` is the
    text's codec (default UTF-8).
    """
    size = block_size or MAX_LINE_BYTES.value
    header = first_line(source, size)
    delimiter = _FIXED_DELIMITERS.get(source.fmt) or sniff_delimiter(source)
    check_column_count(source, header, delimiter)
    options = _Options(delimiter, size, encoding)
    table = None
    if block_size is not None or source.size() > WHOLE_READ_LIMIT:
        try:
            table = stream_delimited(source, options)
        except pa.ArrowInvalid:
            # A later block did not fit the first block's types (or the text is malformed,
            # which read_csv reports again below): read_csv infers across every block.
            pass
    if table is None:
        table = _read_whole(source, options)
    return fread_types(table, lambda names: _read_whole(source, options, text_columns=names))


class _Options:
    """How pyarrow parses the file (:mod:`._text_types` says what it leaves to decide)."""

    def __init__(self, delimiter: str, block_size: int, encoding: str | None) -> None:
        self.block_size = block_size
        self.read = pacsv.ReadOptions(block_size=block_size, encoding=encoding or "utf8")
        # Free-text fields of EDC exports often hold line breaks inside quotes.
        self.parse = pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True)

    def convert(self, text_columns: list[str] | None = None) -> pacsv.ConvertOptions:
        if text_columns is None:
            return pacsv.ConvertOptions(**FIRST_PASS)
        # These columns only, as text: an unquoted NA is null, anything else is text.
        return pacsv.ConvertOptions(
            include_columns=text_columns,
            column_types=dict.fromkeys(text_columns, pa.string()),
            null_values=["NA"],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        )


def _read_whole(
    source: Source, options: _Options, text_columns: list[str] | None = None
) -> pa.Table:
    try:
        with _input(source) as src:
            table = pacsv.read_csv(
                src,
                read_options=options.read,
                parse_options=options.parse,
                convert_options=options.convert(text_columns),
            )
    except (pa.ArrowException, OSError, UnicodeError) as e:
        raise _text_error(source, e, options.block_size) from e
    check_column_names(source, table.column_names)
    return table


def stream_delimited(source: Source, options: _Options) -> pa.Table:
    """Stream the file with ``open_csv``, typing every column from the first block.

    Raises ``pyarrow.ArrowInvalid`` when a later block does not convert to those types;
    other failures are :class:`~datom_core.OnboardingError`.
    """
    try:
        with _input(source) as src:
            try:
                reader = pacsv.open_csv(
                    src,
                    read_options=options.read,
                    parse_options=options.parse,
                    convert_options=options.convert(),
                )
            except pa.ArrowInvalid as e:  # the header or the first block is malformed
                raise _text_error(source, e, options.block_size) from e
            # Refuse bad headers before converting a possibly large body.
            check_column_names(source, reader.schema.names)
            batches = list(reader)  # ArrowInvalid here: a later block; the caller retries
    except pa.ArrowInvalid as e:
        if _STRADDLES in str(e):  # no retry: a record longer than a block stays too long
            raise _text_error(source, e, options.block_size) from e
        raise
    except (pa.ArrowException, OSError, UnicodeError) as e:
        raise _text_error(source, e) from e
    return pa.Table.from_batches(batches, schema=reader.schema)


def first_line(source: Source, limit: int) -> bytes:
    """The file's first line; a file whose first line is longer than ``limit`` is refused.

    pyarrow would report such a file as empty ("cannot infer number of columns").
    """
    pieces: list[bytes] = []
    seen = 0
    try:
        with source.open() as handle:
            while seen <= limit:
                piece = handle.read(min(_LINE_PIECE, limit + 1 - seen))
                end = min(
                    (at for at in (piece.find(b"\n"), piece.find(b"\r")) if at >= 0), default=-1
                )
                if not piece or end >= 0:
                    return b"".join(pieces) + piece[: max(end, 0)]
                pieces.append(piece)
                seen += len(piece)
    except OSError as e:
        raise _text_error(source, e) from e
    raise _too_long(source, limit, "its first line")


def check_column_count(source: Source, header: bytes, delimiter: str) -> None:
    """Refuse a header of more than :data:`~._limits.MAX_TEXT_COLUMNS` columns.

    pyarrow takes about 10 KB a column however short the file: a 2 MB file of 200,000
    columns would take 2 GB. Delimiters inside double quotes do not count.
    """
    outside_quotes = header.split(b'"')[::2]
    columns = 1 + sum(part.count(delimiter.encode()) for part in outside_quotes)
    if columns > MAX_TEXT_COLUMNS.value:
        raise source.fail(
            f"its header has {columns:,} columns, more than the limit of "
            f"{MAX_TEXT_COLUMNS.describe()}",
            raise_recourse(
                MAX_TEXT_COLUMNS,
                "check the delimiter and the header line, or write the table as parquet",
            ),
        )


def _too_long(source: Source, limit: int, what: str) -> OnboardingError:
    return source.fail(
        f"{what} is longer than {limit:,} bytes, the longest line datom reads (the file "
        "has no line breaks? or a double quote left open joins lines into one field?)",
        raise_recourse(
            MAX_LINE_BYTES,
            "check that the file is delimited text with one record a line, and export it again",
        ),
    )


def sniff_delimiter(source: Source) -> str:
    """The delimiter of a ``.txt`` file, guessed from its first line.

    Counts ``,`` ``\\t`` ``|`` ``;`` outside double quotes on the first line and takes the
    most frequent; ties go to the earlier one in that order. A first line holding none of
    them is a one-column file, read with ``,``.
    """
    try:
        with source.open() as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError as e:
        raise _text_error(source, e) from e
    line = head.split(b"\n", 1)[0].decode("utf-8", errors="replace").lstrip("\ufeff")
    counts = dict.fromkeys(TXT_DELIMITERS, 0)
    quoted = False
    for char in line:
        if char == '"':
            quoted = not quoted
        elif not quoted and char in counts:
            counts[char] += 1
    best = max(TXT_DELIMITERS, key=lambda d: counts[d])  # max keeps the first of equals
    return best if counts[best] else ","


def _input(source: Source) -> AbstractContextManager[Any]:
    # A local path goes to pyarrow as is, so that it reads with its own (faster) file I/O.
    if source.is_local:
        return nullcontext(source.path)
    return source.open()


def _text_error(source: Source, error: BaseException, block_size: int = 0) -> OnboardingError:
    message = str(error)
    if _STRADDLES in message:
        return _too_long(source, block_size or MAX_LINE_BYTES.value, "a line (record)")
    if "UTF8" in message or isinstance(error, UnicodeError):
        return source.fail(
            f"the text is not valid UTF-8 ({message})",
            "save the file as UTF-8, or name its encoding (encoding='cp1252', in the CLI "
            "--encoding cp1252), and onboard it again",
        )
    if "Empty CSV file" in message:
        return source.fail(
            "the file holds no header line", "export the table again with its header row"
        )
    return source.corrupt(error)
