"""The cv1 ``chr`` payload: a mask byte per row, then every value NUL-terminated.

Nothing here pays per value in Python. A column is cut into slices bounded in rows and in
bytes; a slice's mask is its validity bitmap unpacked by numpy. Its values payload comes
from the compiled encoder ``_chrenc`` (one pass over the offsets, about a nanosecond per
value, without the GIL) when it was built, else from one Arrow ``binary_join`` of the
whole slice with the NUL as separator (the terminator of the last value is added after
it): the same bytes at about 9 ns per value. Setting the environment variable
``DATOM_CV1_PURE=1`` before datom is imported forces the Arrow path, as does the switch
``DATOM_PLAIN=1`` (:mod:`datom_core._plain`) at any time. Dictionary and
``string_view`` slices are decoded to offset strings one slice at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import ModuleType
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datom_core._identity._pipeline import SLICE_ROWS, Payload, Sha, feed, readonly_view
from datom_core._plain import plain

try:
    from datom_core._identity import _chrenc
except ImportError:  # installed without a C compiler: the Arrow path encodes alone
    _chrenc = None  # type: ignore[assignment]

__all__ = ["has_nul", "is_chr", "update_chr"]

SLICE_BYTES = 8 << 20
"""Value bytes encoded per step (at least one row): a slice's payload stays this small."""

_NUL = b"\0"

PURE_ENV = "DATOM_CV1_PURE"
"""The environment variable that, set to ``1``, makes the Arrow path encode all strings."""

compiled: ModuleType | None = None if os.environ.get(PURE_ENV, "") not in ("", "0") else _chrenc
"""The compiled values encoder in use, or None for the Arrow path."""

_PAD = 16  # the compiled encoder copies short values as 16-byte blocks


class _Part(NamedTuple):
    """A slice of a column, with a bound on the value bytes of its present rows."""

    arr: pa.Array
    nbytes: int


def is_chr(t: pa.DataType) -> bool:
    """Whether values of type ``t`` are encoded as ``chr`` (UTF-8 strings)."""
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def update_chr(h: Sha, column: pa.ChunkedArray) -> None:
    """Feed ``column``'s chr payload into ``h``: the whole mask first, then the values."""
    parts = [part for chunk in column.chunks for part in _byte_slices(chunk)]
    feed(h, parts, _mask_payload)
    feed(h, parts, _values_payload)


def has_nul(column: pa.ChunkedArray) -> bool:
    """Whether a present value of the string (or string-dictionary) column holds a NUL."""
    for chunk in column.chunks:
        if pa.types.is_dictionary(chunk.type):
            if not _offsets_have_nul(_as_offset_strings(chunk.dictionary)):
                continue  # the common case: no level holds a NUL, used or not
            chunk = _as_offset_strings(chunk)
        if pa.types.is_string_view(chunk.type):
            if any(_offsets_have_nul(_as_offset_strings(p.arr)) for p in _byte_slices(chunk)):
                return True
        elif _offsets_have_nul(chunk):
            return True
    return False


def _offsets_have_nul(arr: pa.Array) -> bool:
    n = len(arr)
    data = arr.buffers()[2] if n else None
    if data is None:
        return False
    offsets = _offsets(arr)
    first, last = int(offsets[0]), int(offsets[-1])
    if last <= first or readonly_view(data, np.uint8, first, last - first).min() != 0:
        return False
    # Bytes under null slots may be anything; only refuse when a present value holds NUL.
    return bool(pc.any(pc.match_substring(arr, "\0")).as_py())


# -- slicing --------------------------------------------------------------------------


def _byte_slices(chunk: pa.Array) -> Iterator[_Part]:
    """Zero-copy slices of ``chunk`` with at most SLICE_ROWS rows and about SLICE_BYTES bytes."""
    n = len(chunk)
    ends = _value_ends(chunk)
    start = 0
    while start < n:
        stop = min(n, start + SLICE_ROWS)
        if ends[stop] - ends[start] > SLICE_BYTES:
            limit = ends[start] + SLICE_BYTES
            stop = max(start + 1, int(np.searchsorted(ends, limit, side="right")) - 1)
        yield _Part(chunk.slice(start, stop - start), int(ends[stop] - ends[start]))
        start = stop


def _value_ends(chunk: pa.Array) -> np.ndarray:
    """n+1 increasing byte positions: ``ends[j] - ends[i]`` bounds the bytes of rows i..j-1."""
    t = chunk.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _offsets(chunk)
    if pa.types.is_string_view(t):
        # Each 16-byte view starts with the value's length (int32).
        views = readonly_view(chunk.buffers()[1], np.int32, 4 * chunk.offset, 4 * len(chunk))
        lengths = views[::4]
    else:  # a dictionary of strings: the lengths of the levels each row points at
        levels = pc.binary_length(_as_offset_strings(chunk.dictionary)).fill_null(0)
        level_lengths = levels.to_numpy(zero_copy_only=False).astype(np.int64)
        if not len(level_lengths):  # then every row is missing
            return np.zeros(len(chunk) + 1, dtype=np.int64)
        # A null row's index is undefined: clipped into range, it still bounds its 0 bytes.
        lengths = np.take(level_lengths, _indices(chunk.indices), mode="clip")
    ends = np.zeros(len(chunk) + 1, dtype=np.int64)
    np.cumsum(np.maximum(lengths, 0), out=ends[1:])
    return ends


def _offsets(arr: pa.Array) -> np.ndarray:
    """The n+1 offsets of an offset-string array (a zero-copy view)."""
    width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    return readonly_view(arr.buffers()[1], width, arr.offset, len(arr) + 1)


def _as_offset_strings(arr: pa.Array) -> pa.Array:
    """``arr`` as ``string`` or ``large_string`` (decoding dictionaries and views)."""
    if pa.types.is_dictionary(arr.type):
        if pa.types.is_string_view(arr.type.value_type):  # Arrow cannot take from views
            levels = _as_offset_strings(arr.dictionary)
            arr = pa.DictionaryArray.from_arrays(arr.indices, levels)
        arr = arr.dictionary_decode()
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    return arr


# -- payloads -------------------------------------------------------------------------


def _missing_bytes(arr: pa.Array) -> np.ndarray:
    """One byte per row: 1 where the value is missing, 0 where it is present."""
    n = len(arr)
    if arr.null_count == 0:
        return np.zeros(n, dtype=np.uint8)
    bitmap = readonly_view(arr.buffers()[0], np.uint8, 0, (arr.offset + n + 7) // 8)
    valid = np.unpackbits(bitmap, count=arr.offset + n, bitorder="little")[arr.offset :]
    return np.bitwise_xor(valid, 1, out=valid)


def _mask_payload(part: _Part) -> Payload:
    arr = part.arr
    if pa.types.is_dictionary(arr.type) and arr.dictionary.null_count:
        arr = _as_offset_strings(arr)  # a level may itself be missing
    return (_missing_bytes(arr),)


def _values_payload(part: _Part) -> Payload:
    """Every value's UTF-8 bytes followed by one NUL; a missing value is just the NUL."""
    n = len(part.arr)
    if n == 0:
        return ()
    if compiled is not None and not plain():
        return (_compiled_values(compiled, part.arr, part.nbytes),)
    arr = _without_nulls(_as_offset_strings(part.arr))
    fixed = _fixed_width_payload(arr)
    if fixed is not None:
        return (fixed,)
    one_list = pa.ListArray.from_arrays(pa.array([0, n], pa.int32()), arr)
    joined = pc.binary_join(one_list, pa.scalar("\0", arr.type))[0].as_buffer()
    return (_NUL,) if joined is None else (joined, _NUL)


def _compiled_values(encoder: ModuleType, arr: pa.Array, nbytes: int) -> np.ndarray:
    """The values payload of a slice whose present values hold at most ``nbytes`` bytes."""
    out = np.empty(nbytes + len(arr) + _PAD, dtype=np.uint8)
    indices = None
    if pa.types.is_dictionary(arr.type) and _is_plain_dictionary(arr.dictionary):
        indices = _indices(arr.indices)
        bits = arr.indices  # the rows' validity is the indices'
        arr = arr.dictionary
    else:
        arr = bits = _as_offset_strings(arr)
    validity = bits.buffers()[0] if bits.null_count else None
    _, _, data = arr.buffers()
    wide = pa.types.is_large_string(arr.type)
    args = (_offsets(arr), data or b"", wide, validity, bits.offset, indices)
    return out[: encoder.values(out, *args)]


def _is_plain_dictionary(levels: pa.Array) -> bool:
    """Whether the encoder can read ``levels`` in place (offset strings, none missing)."""
    offset_strings = pa.types.is_string(levels.type) or pa.types.is_large_string(levels.type)
    return offset_strings and len(levels) > 0 and levels.null_count == 0


def _indices(indices: pa.Array) -> np.ndarray:
    """The dictionary indices of a slice as int64 (whatever they hold under null rows)."""
    dtype = np.dtype(indices.type.to_pandas_dtype())
    raw = readonly_view(indices.buffers()[1], dtype, indices.offset, len(indices))
    return raw.astype(np.int64)


def _fixed_width_payload(arr: pa.Array) -> np.ndarray | None:
    """The payload of a null-free slice whose values all have one byte length, else None.

    Identifiers and codes (USUBJID, DOMAIN, flags) often do: then the payload is one
    strided copy into rows of ``width + 1`` bytes whose last byte is the NUL.
    """
    offsets = _offsets(arr)
    n, first = len(arr), int(offsets[0])
    width, rest = divmod(int(offsets[-1]) - first, n)
    if rest or int(offsets[1]) - first != width:
        return None
    if width and not (np.diff(offsets) == width).all():
        return None
    out = np.zeros((n, width + 1), dtype=np.uint8)
    if width:
        data = readonly_view(arr.buffers()[2], np.uint8, first, n * width)
        out[:, :width] = data.reshape(n, width)
    return out


def _without_nulls(arr: pa.Array) -> pa.Array:
    """``arr`` with every missing value an empty string (what the join must see)."""
    if arr.null_count == 0:
        return arr
    lengths = np.diff(_offsets(arr))
    if np.count_nonzero(np.multiply(lengths, _missing_bytes(arr), out=lengths)):
        # Null slots holding bytes (allowed by Arrow, rare): copy them out.
        return arr.fill_null("")
    # Null slots are empty: dropping the validity bitmap turns them into "" for free.
    _, value_offsets, data = arr.buffers()
    return pa.Array.from_buffers(arr.type, len(arr), [None, value_offsets, data], offset=arr.offset)
