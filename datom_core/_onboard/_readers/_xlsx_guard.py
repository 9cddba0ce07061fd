"""Measure an .xlsx before calamine reads it, so that a zip bomb is refused cheaply.

An .xlsx is a zip of XML parts. calamine reads the workbook parts (shared strings,
styles, the sheet list) whole when it opens the file, then expands the first sheet into
a dense rectangle of cells spanning its first to its last cell with a value. A 1 MB zip
can hold gigabytes of XML, or two cells (``A1`` and ``XFD1048576``) whose rectangle has
17 billion cells. So before calamine sees the file, this module inflates those parts
itself, streaming and counting, from the compressed bytes (a size declared in the zip
is not trusted), and refuses a file whose parts, rows, columns or rectangle exceed the
limits of :mod:`._limits`. Inflating stops as soon as a limit is crossed.

The scan follows calamine's rules for where a cell is: a ``<row>`` or ``<c>`` with an
``r`` attribute is at that place, one without follows the previous one; a cell written
as an empty element (``<c .../>``) takes a place but holds no value. It never
under-counts: text that merely looks like a tag (in a comment) can only count more.
"""

from __future__ import annotations

import posixpath
import struct
import zipfile
import zlib
from collections.abc import Iterator
from itertools import chain
from typing import IO
from xml.etree import ElementTree

from datom_core._onboard._readers._common import Source
from datom_core._onboard._readers._limits import (
    MAX_SHEET_CELLS,
    MAX_SHEET_COLUMNS,
    MAX_SHEET_ROWS,
    MAX_SHEET_TEXT_BYTES,
    MAX_SHEET_XML_BYTES,
    MAX_WORKBOOK_BYTES,
    Limit,
    raise_recourse,
)
from datom_core._onboard._readers._shared_text import SharedText
from datom_core._onboard._readers._sheet_scan import SheetScan

__all__ = ["EXPORT_RECOURSE", "check_xlsx", "refuse_size", "size_text"]

EXPORT_RECOURSE = "export the sheet from Excel as csv (or write it as parquet) and onboard that"

# Parts calamine reads whole when it opens a workbook (compared by lowercase basename).
_OPENED_PARTS = frozenset(
    {"workbook.xml", "workbook.xml.rels", "sharedstrings.xml", "styles.xml", ".rels"}
)
_CHUNK = 1 << 20
_SHEET_LIST_BYTES = 16 << 20
_LONGEST_ROW = 64 << 20
_MOST_PARTS = 65_536


def check_xlsx(source: Source, handle: IO[bytes]) -> None:
    """Refuse the workbook open in ``handle`` if reading its first sheet would be unbounded.

    A file with no zip end record at all is left to calamine, which reports what it is;
    a zip whose directory cannot be read is refused as corrupt.
    """
    entries = _entry_count(handle)
    if entries is None:
        return
    if entries > _MOST_PARTS:
        raise source.fail(
            f"the zip holds {entries:,} parts; a genuine workbook has at most a few thousand",
            EXPORT_RECOURSE,
        )
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise source.corrupt(e) from e  # unmeasured, it does not reach calamine
    with archive:
        members = archive.infolist()
        opened = [m for m in members if posixpath.basename(m.filename).lower() in _OPENED_PARTS]
        budget = MAX_WORKBOOK_BYTES.value
        shared = SharedText()
        for member in opened:
            strings = posixpath.basename(member.filename).lower() == "sharedstrings.xml"
            for chunk in _inflate(source, handle, member, budget, MAX_WORKBOOK_BYTES):
                budget -= len(chunk)
                if strings:
                    shared.feed_strings(chunk)
            if strings:
                shared.finish_strings()
        for member in _first_sheet_members(source, handle, members):
            _scan_sheet(source, handle, member, shared)


def refuse_size(source: Source, what: str, size: str, limit: Limit) -> Exception:
    """The refusal of a file beyond ``limit``, with the recourse."""
    return source.fail(
        f"{what} is {size}, more than the limit of {limit.describe()}; a file like this is "
        "either not a genuine spreadsheet (a zip bomb) or too large for one",
        raise_recourse(limit, EXPORT_RECOURSE),
    )


def _entry_count(handle: IO[bytes]) -> int | None:
    """The number of entries the zip's end record declares (None: no zip end record).

    Read before the central directory is parsed, which costs memory for every entry.
    """
    size = handle.seek(0, 2)
    tail_start = max(0, size - (1 << 16) - 22)
    handle.seek(tail_start)
    tail = handle.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) < at + 22:
        return None
    entries = int(struct.unpack("<H", tail[at + 10 : at + 12])[0])
    locator = tail.rfind(b"PK\x06\x07", 0, at)
    if entries == 0xFFFF and locator >= 0 and len(tail) >= locator + 20:
        (offset,) = struct.unpack("<Q", tail[locator + 8 : locator + 16])
        handle.seek(offset)
        record = handle.read(56)
        if record[:4] == b"PK\x06\x06" and len(record) == 56:
            entries = int(struct.unpack("<Q", record[32:40])[0])
    return entries


def _first_sheet_members(
    source: Source, handle: IO[bytes], members: list[zipfile.ZipInfo]
) -> list[zipfile.ZipInfo]:
    """The zip entries calamine may read as the first sheet (every sheet if unsure)."""
    worksheets = [m for m in members if m.filename.lower().startswith("xl/worksheets/")]
    worksheets = [m for m in worksheets if m.filename.lower().endswith(".xml")]
    target = _first_sheet_path(source, handle, members)
    if target is None:
        return worksheets
    chosen = [m for m in members if m.filename.lower() == target.lower()]
    return chosen or worksheets


def _first_sheet_path(
    source: Source, handle: IO[bytes], members: list[zipfile.ZipInfo]
) -> str | None:
    by_name = {m.filename: m for m in members}
    workbook, rels = by_name.get("xl/workbook.xml"), by_name.get("xl/_rels/workbook.xml.rels")
    if workbook is None or rels is None:
        return None
    try:
        sheets = ElementTree.fromstring(_read(source, handle, workbook))
        links = ElementTree.fromstring(_read(source, handle, rels))
    except ElementTree.ParseError:
        return None  # calamine will say what is wrong with them
    first = next((e for e in sheets.iter() if _local(e.tag) == "sheet"), None)
    if first is None:
        return None
    rid = next((v for k, v in first.attrib.items() if _local(k) == "id"), None)
    for link in links.iter():
        if _local(link.tag) == "Relationship" and link.get("Id") == rid:
            target = link.get("Target") or ""
            if target.startswith("/"):
                return target.lstrip("/")
            return posixpath.normpath(posixpath.join("xl", target))
    return None


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _read(source: Source, handle: IO[bytes], member: zipfile.ZipInfo) -> bytes:
    # A sheet list is a few KB; parsing a huge one as a tree would cost far more memory.
    if member.file_size > _SHEET_LIST_BYTES:
        raise source.fail(
            f"its sheet list {member.filename!r} is {size_text(member.file_size)}, more than "
            f"{size_text(_SHEET_LIST_BYTES)}: the file is not a genuine workbook",
            EXPORT_RECOURSE,
        )
    return b"".join(_inflate(source, handle, member, _SHEET_LIST_BYTES, MAX_WORKBOOK_BYTES))


def _scan_sheet(
    source: Source, handle: IO[bytes], member: zipfile.ZipInfo, shared: SharedText
) -> None:
    scan = SheetScan(shared)
    inflated = _inflate(source, handle, member, MAX_SHEET_XML_BYTES.value, MAX_SHEET_XML_BYTES)
    for chunk in chain(inflated, [None]):
        try:
            scan.feed(chunk) if chunk is not None else scan.finish()
        except ValueError as e:
            raise source.fail(
                f"the first sheet holds a {e} that is not a cell address", EXPORT_RECOURSE
            ) from e
        if scan.pending > _LONGEST_ROW:
            raise source.fail(
                f"a row of the first sheet is longer than {size_text(_LONGEST_ROW)} of XML",
                EXPORT_RECOURSE,
            )
        _check_extent(source, scan)


def _check_extent(source: Source, scan: SheetScan) -> None:
    rows, columns = MAX_SHEET_ROWS.value, MAX_SHEET_COLUMNS.value
    if max(scan.row, scan.last_row) > rows:
        raise refuse_size(source, "the first sheet", f"past row {rows:,}", MAX_SHEET_ROWS)
    if max(scan.column, scan.last_column) > columns:
        raise refuse_size(source, "the first sheet", f"past column {columns:,}", MAX_SHEET_COLUMNS)
    if scan.cells > MAX_SHEET_CELLS.value:
        shown = f"at least {scan.cells:,} cells (the rectangle from its first to its last value)"
        raise refuse_size(source, "the first sheet", shown, MAX_SHEET_CELLS)
    if scan.shared.total > MAX_SHEET_TEXT_BYTES.value:
        shown = f"at least {size_text(scan.shared.total)} of text in its cells"
        raise refuse_size(source, "the first sheet", shown, MAX_SHEET_TEXT_BYTES)


def _inflate(
    source: Source, handle: IO[bytes], member: zipfile.ZipInfo, budget: int, limit: Limit
) -> Iterator[bytes]:
    """The member's bytes as its compressed data really inflates, at most ``budget`` in all."""
    name = member.filename
    if member.file_size > budget:
        raise refuse_size(source, f"its part {name!r}", size_text(member.file_size), limit)
    if member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise source.fail(
            f"its part {name!r} uses zip compression method {member.compress_type}, which "
            "Excel never writes",
            EXPORT_RECOURSE,
        )
    handle.seek(member.header_offset)
    header = handle.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise source.fail(f"its part {name!r} has no valid zip header", EXPORT_RECOURSE)
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    handle.seek(member.header_offset + 30 + name_length + extra_length)
    inflater = zlib.decompressobj(-zlib.MAX_WBITS) if member.compress_type else None
    left, produced = member.compress_size, 0
    while left > 0:
        raw = handle.read(min(_CHUNK, left))
        if not raw:
            break
        left -= len(raw)
        try:
            data = inflater.decompress(raw, _CHUNK) if inflater else raw
        except zlib.error as e:
            raise source.fail(f"its part {name!r} is corrupt ({e})", EXPORT_RECOURSE) from e
        while True:
            produced += len(data)
            if produced > budget:
                shown = f"more than {size_text(budget)} when inflated"
                raise refuse_size(source, f"its part {name!r}", shown, limit)
            yield data
            if inflater is None or not inflater.unconsumed_tail:
                break
            data = inflater.decompress(inflater.unconsumed_tail, _CHUNK)


def size_text(n: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,} bytes"
