"""Measure an .xls before calamine reads it: the text its first sheet's cells copy.

An .xls keeps its strings once, in the workbook's shared string table (SST), and a text
cell (``LABELSST``) holds an index into it; calamine gives every such cell its own copy
of the string, so one 32,767-character string referenced by 65,536 cells is gigabytes
in memory from a file of a megabyte. This module reads the file's OLE container and the
BIFF8 records of its workbook stream (the same bytes calamine reads, at most
:data:`~._limits.MAX_XLS_BYTES`), takes every shared string's length and adds up each sheet's
references (the largest sheet counts, whichever calamine reads first), and refuses a sheet whose text exceeds
:data:`~._limits.MAX_SHEET_TEXT_BYTES` (a character counts 3 bytes, its UTF-8 worst
case). A file that is not a well-formed OLE/BIFF8 workbook is left to calamine.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import IO

from datom_core._onboard._readers._common import Source
from datom_core._onboard._readers._limits import MAX_SHEET_TEXT_BYTES
from datom_core._onboard._readers._xlsx_guard import refuse_size, size_text

__all__ = ["check_xls"]

_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_END_OF_CHAIN = 0xFFFFFFFE
_SST, _CONTINUE, _LABELSST, _LABEL, _BOF, _EOF = 0xFC, 0x3C, 0xFD, 0x204, 0x809, 0x0A


class _Malformed(Exception):
    """Not an OLE/BIFF8 file this module understands (calamine will say what it is)."""


def check_xls(source: Source, handle: IO[bytes]) -> None:
    """Refuse the workbook in ``handle`` if its first sheet's cells hold too much text."""
    try:
        stream = _workbook_stream(handle.read())
        if stream is None:
            return
        total = _sheet_text(stream, _string_lengths(stream))
    except (_Malformed, struct.error, IndexError):
        return
    if total > MAX_SHEET_TEXT_BYTES.value:
        shown = f"at least {size_text(total)} of text in its cells"
        raise refuse_size(source, "a sheet", shown, MAX_SHEET_TEXT_BYTES)


def _workbook_stream(data: bytes) -> bytes | None:
    """The ``Workbook`` (or ``Book``) stream of an OLE compound file, None if too small."""
    if data[:8] != _OLE:
        raise _Malformed
    sector = 1 << struct.unpack_from("<H", data, 0x1E)[0]
    if sector not in (512, 4096):
        raise _Malformed
    fat_sectors = list(struct.unpack_from("<109I", data, 0x4C))
    next_difat, difat_count = struct.unpack_from("<II", data, 0x44)
    for _ in range(difat_count):  # further FAT sector numbers, in a chain of DIFAT sectors
        at = (next_difat + 1) * sector
        *more, next_difat = struct.unpack_from(f"<{sector // 4}I", data, at)
        fat_sectors += more
    fat: list[int] = []
    for number in fat_sectors[: struct.unpack_from("<I", data, 0x2C)[0]]:
        fat += struct.unpack_from(f"<{sector // 4}I", data, (number + 1) * sector)
    directory = _chain(data, fat, struct.unpack_from("<I", data, 0x30)[0], sector)
    cutoff = struct.unpack_from("<I", data, 0x38)[0]
    for at in range(0, len(directory) - 127, 128):
        length = struct.unpack_from("<H", directory, at + 64)[0]
        name = directory[at : at + max(0, length - 2)].decode("utf-16-le", errors="replace")
        if directory[at + 66] == 2 and name in ("Workbook", "Book"):
            start, size = struct.unpack_from("<IQ", directory, at + 116)
            if sector == 512:  # version 3 files: the high half is not defined
                size &= 0xFFFFFFFF
            if size < cutoff:
                return None  # a few KB, in the mini stream: nothing to fear
            return _chain(data, fat, start, sector)[:size]
    raise _Malformed


def _chain(data: bytes, fat: list[int], start: int, sector: int) -> bytes:
    parts, number, seen = [], start, 0
    while number != _END_OF_CHAIN:
        seen += 1
        if number >= len(fat) or seen > len(data) // sector:
            raise _Malformed  # a chain past the FAT, or a loop
        parts.append(data[(number + 1) * sector : (number + 2) * sector])
        number = fat[number]
    return b"".join(parts)


def _records(stream: bytes) -> Iterator[tuple[int, int, int]]:
    """``(type, start of data, end of data)`` of every BIFF record."""
    at, unpack = 0, struct.Struct("<HH").unpack_from
    while at + 4 <= len(stream):
        kind, length = unpack(stream, at)
        yield kind, at + 4, at + 4 + length
        at += 4 + length


def _string_lengths(stream: bytes) -> list[int]:
    """Characters of each shared string, in SST order (no SST: no strings)."""
    segments: list[tuple[int, int]] = []
    for kind, start, end in _records(stream):
        if kind == _SST or (segments and kind == _CONTINUE):
            segments.append((start, end))
        elif segments:
            break
    return _parse_sst(stream, segments) if segments else []


def _parse_sst(stream: bytes, segments: list[tuple[int, int]]) -> list[int]:
    # Only lengths are needed, so the character data is skipped, not decoded; it may run
    # on into the next CONTINUE record, which then starts with a fresh option byte.
    reader = _Segments(stream, segments)
    unique = reader.unpack("<I", 4, offset=4)
    lengths = []
    for _ in range(unique):
        if reader.exhausted:
            break
        chars, flags = reader.unpack("<H", 2), reader.byte()
        runs = reader.unpack("<H", 2) if flags & 0x08 else 0
        extra = reader.unpack("<I", 4) if flags & 0x04 else 0
        left, wide = chars, flags & 0x01
        while left:
            if reader.at_segment_end:
                reader.next_segment()
                wide = reader.byte() & 0x01
            took = min(left, reader.room // (2 if wide else 1))
            if took == 0:
                raise _Malformed
            reader.skip(took * (2 if wide else 1))
            left -= took
        reader.skip(4 * runs + extra)
        lengths.append(chars)
    return lengths


class _Segments:
    """A cursor over the data of an SST record and its CONTINUE records."""

    def __init__(self, stream: bytes, segments: list[tuple[int, int]]) -> None:
        self._segments, self._index = segments, 0
        self._at = segments[0][0]
        self.stream = stream

    @property
    def room(self) -> int:
        return self._segments[self._index][1] - self._at

    @property
    def at_segment_end(self) -> bool:
        return self.room <= 0

    @property
    def exhausted(self) -> bool:
        return self.at_segment_end and self._index + 1 >= len(self._segments)

    def next_segment(self) -> None:
        self._index += 1
        if self._index >= len(self._segments):
            raise _Malformed
        self._at = self._segments[self._index][0]

    def skip(self, n: int) -> None:
        while n > 0:
            if self.at_segment_end:
                self.next_segment()
            took = min(n, self.room)
            self._at += took
            n -= took

    def byte(self) -> int:
        return self.unpack("<B", 1)

    def unpack(self, fmt: str, size: int, offset: int = 0) -> int:
        if self.at_segment_end:
            self.next_segment()
        self.skip(offset)
        if self.room < size:
            raise _Malformed
        (value,) = struct.unpack_from(fmt, self.stream, self._at)
        self._at += size
        return int(value)


def _sheet_text(stream: bytes, lengths: list[int]) -> int:
    """Worst-case UTF-8 bytes of the text cells of the sheet holding the most of it."""
    longest = max(lengths, default=0)
    most, depth, text = 0, 0, 0
    for kind, start, end in _records(stream):
        if kind == _BOF:
            depth += 1
        elif kind == _EOF:
            depth -= 1
            if depth <= 0:  # the end of the globals or of a sheet (charts nest inside)
                most, depth, text = max(most, text), 0, 0
        elif kind == _LABELSST:
            i = struct.unpack_from("<I", stream, start + 6)[0]
            text += 3 * (lengths[i] if i < len(lengths) else longest)
        elif kind == _LABEL:
            text += 3 * (end - start)
    return max(most, text)
