"""datom-cv1: the canonical value encoding behind ``data_sha``.

Works on Arrow data only; converting pandas and polars frames is the Arrow boundary's job
(``_arrow``). Each column is classified once (:func:`classify`) and then streamed into its
own SHA-256 in bounded slices, so memory stays flat and columns hash in parallel threads
(``hashlib`` and numpy release the GIL on large buffers).
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["ColumnHash", "TableHash", "classify", "hash_arrow_table"]

HASH_ALGO = "datom-cv1"

_R_INT_MAX = 2147483647
_NAN_BITS = np.uint64(0x7FF8000000000000)
_NEG_ZERO_BITS = np.uint64(0x8000000000000000)
_NA_REAL_BITS = np.uint64(0x7FF00000000007A2)  # R's NA_real_
_NA_INT64 = np.int64(-(2**63))  # bit64's NA_integer64_
_SLICE_ROWS = 1 << 17  # rows hashed per step; bounds the temporary buffers
_TICKS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_MS_PER_DAY = 86_400_000.0


@dataclass(frozen=True)
class ColumnHash:
    """The cv1 digest of one column."""

    name: str
    sha: str


@dataclass(frozen=True)
class TableHash:
    """The identity of a table's values: ``data_sha`` and its per-column digests."""

    data_sha: str
    column_hashes: tuple[ColumnHash, ...]
    nrow: int
    ncol: int


@dataclass(frozen=True)
class _Plan:
    """How one column is encoded: the cv1 tag and the payload encoder."""

    tag: str  # num, chr, i64, date, time, drtn
    kind: str  # num, chr, i64 (the payload encoder)
    divisor: float = 1.0  # ticks per unit for date/time/duration columns


class Unhashable(Exception):
    """Internal: a column cannot be encoded; ``args[0]`` is the recourse to print."""


def classify(column: pa.ChunkedArray) -> _Plan:
    """Return how ``column`` is encoded, or raise :class:`Unhashable` with the recourse."""
    t = column.type
    if pa.types.is_dictionary(t):
        return classify(_decoded(column))
    if pa.types.is_boolean(t) or pa.types.is_floating(t) or pa.types.is_null(t):
        return _Plan("num", "num")
    if pa.types.is_integer(t):
        return _Plan("num", "num") if _fits_r_integer(column) else _Plan("i64", "i64")
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return _Plan("chr", "chr")
    if pa.types.is_date32(t):
        return _Plan("date", "num")
    if pa.types.is_date64(t):
        return _Plan("date", "num", _MS_PER_DAY)
    if pa.types.is_timestamp(t):
        return _Plan("time", "num", float(_TICKS[t.unit]))
    if pa.types.is_duration(t) or pa.types.is_time(t):
        return _Plan("drtn", "num", float(_TICKS[t.unit]))
    raise Unhashable(_recourse(t))


def _recourse(t: pa.DataType) -> str:
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return "explode it or serialise it to a string column yourself"
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return "explode it or serialise it to a string column yourself"
    if pa.types.is_struct(t) or pa.types.is_map(t):
        return "flatten it into scalar columns"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "hex- or base64-encode it into a string column"
    if pa.types.is_binary_view(t):
        return "hex- or base64-encode it into a string column"
    if pa.types.is_decimal(t):
        return "cast it to float64 (lossy, your choice) or to string"
    return "convert it to a supported type (number, string, date, time, duration, boolean)"


def _decoded(column: pa.ChunkedArray) -> pa.ChunkedArray:
    # Levels, unused levels and orderedness are not identity: only the values are.
    return pa.chunked_array(
        [c.dictionary_decode() for c in column.chunks], type=column.type.value_type
    )


def _fits_r_integer(column: pa.ChunkedArray) -> bool:
    if column.null_count == len(column):
        return True
    bounds = pc.min_max(column)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    return -_R_INT_MAX <= lo and hi <= _R_INT_MAX


def column_problem(name: object, column: pa.ChunkedArray) -> str | None:
    """Why ``column`` cannot be hashed (its recourse), or None when it can."""
    if not isinstance(name, str):
        return "rename the column to a string"
    if "\0" in name:
        return "remove the NUL character from the column name (the chr encoding is NUL-terminated)"
    try:
        plan = classify(column)
    except Unhashable as e:
        return str(e)
    values = _decoded(column) if pa.types.is_dictionary(column.type) else column
    if pa.types.is_uint64(values.type) and plan.kind == "i64":
        if pc.max(values).as_py() > 2**63 - 1:
            return "uint64 values above 2^63-1 cannot be stored as int64: cast to float64 or string"
    if plan.kind == "chr" and _has_nul(values):
        return "remove the NUL characters from the strings (the chr encoding is NUL-terminated)"
    return None


def _has_nul(column: pa.ChunkedArray) -> bool:
    if pa.types.is_string_view(column.type):
        column = column.cast(pa.large_string())
    for chunk in column.chunks:
        if len(chunk) == 0:
            continue
        width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        offsets = np.frombuffer(chunk.buffers()[1], dtype=width)
        first, last = int(offsets[chunk.offset]), int(offsets[chunk.offset + len(chunk)])
        data = chunk.buffers()[2]
        # Bytes under null slots may be anything; only refuse when a present value holds NUL.
        if (
            data is not None
            and last > first
            and np.frombuffer(data, np.uint8)[first:last].min() == 0
        ):
            return bool(pc.any(pc.match_substring(chunk, "\0")).as_py())
    return False


def hash_arrow_table(
    table: pa.Table,
    *,
    threads: int | None = None,
    on_column: Callable[[int, ColumnHash], None] | None = None,
) -> TableHash:
    """Hash an Arrow table whose columns have all passed :func:`column_problem`.

    ``on_column(index, column_hash)`` is called (in this thread) as each column's digest
    is ready, in completion order: a writer can tell early that the data changed.
    """
    names = table.column_names
    workers = max(1, min(len(names), threads or os.cpu_count() or 1))
    digests: list[str] = [""] * len(names)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {
            pool.submit(_column_digest, name, table.column(i)): i for i, name in enumerate(names)
        }
        for future in as_completed(futures):
            i = futures[future]
            digests[i] = future.result()
            if on_column is not None:
                on_column(i, ColumnHash(names[i], digests[i]))
    outer = hashlib.sha256(HASH_ALGO.encode())
    outer.update(struct.pack("<dd", float(table.num_rows), float(table.num_columns)))
    for digest in digests:
        outer.update(digest.encode("ascii"))
    return TableHash(
        data_sha=outer.hexdigest(),
        column_hashes=tuple(ColumnHash(n, d) for n, d in zip(names, digests, strict=True)),
        nrow=table.num_rows,
        ncol=table.num_columns,
    )


def _column_digest(name: str, column: pa.ChunkedArray) -> str:
    plan = classify(column)
    if pa.types.is_dictionary(column.type):
        column = _decoded(column)
    h = hashlib.sha256(plan.tag.encode() + name.encode("utf-8") + b"\0")
    if plan.kind == "num":
        _feed(h, _slices(column), lambda part: _num_payload(part, plan.divisor))
        if plan.tag == "drtn":
            h.update(b"\0secs")
    elif plan.kind == "i64":
        _feed(h, _slices(column), _i64_payload)
    else:
        _update_chr(h, column)
    return h.hexdigest()


_PREPARE_POOL: ThreadPoolExecutor | None = None
_WINDOW = 3  # slices prepared ahead of the hash: bounds the extra memory


def _feed(h: Any, parts: Iterator[pa.Array], payload: Callable[[pa.Array], Any]) -> None:
    """Hash the payloads of ``parts`` in order, preparing the next ones in other threads.

    SHA-256 is sequential, but encoding a slice is not: while one slice is hashed the next
    ones are encoded (numpy, Arrow and hashlib all release the GIL on large buffers).
    """
    global _PREPARE_POOL
    if _PREPARE_POOL is None:
        _PREPARE_POOL = ThreadPoolExecutor(
            max_workers=os.cpu_count() or 2, thread_name_prefix="datom-cv1"
        )
    pending: deque[Future[Any]] = deque()
    for part in parts:
        pending.append(_PREPARE_POOL.submit(payload, part))
        if len(pending) >= _WINDOW:
            h.update(pending.popleft().result())
    while pending:
        h.update(pending.popleft().result())


def _slices(column: pa.ChunkedArray) -> Iterator[pa.Array]:
    for chunk in column.chunks:
        for start in range(0, len(chunk), _SLICE_ROWS):
            yield chunk.slice(start, _SLICE_ROWS)


def _valid_mask(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return pc.is_valid(arr).to_numpy(zero_copy_only=False)


def _value_view(arr: pa.Array, dtype: np.dtype) -> np.ndarray:
    """A read-only zero-copy view of the values buffer (null slots hold arbitrary values)."""
    n, off = len(arr), arr.offset
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=off + n)[off:]


def _as_float64(arr: pa.Array, divisor: float) -> np.ndarray:
    t = arr.type
    if pa.types.is_null(t):
        return np.zeros(len(arr), dtype=np.float64)
    if pa.types.is_boolean(t):
        return arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.float64)
    if pa.types.is_temporal(t):
        # One IEEE division of the raw ticks (IDENTITY.md): never a calendar conversion.
        ticks = _value_view(arr, np.dtype(f"<i{t.bit_width // 8}")).astype(np.float64)
        return ticks / divisor if divisor != 1.0 else ticks
    # Integers in R's range and all floats widen to double exactly.
    values = _value_view(arr, np.dtype(t.to_pandas_dtype()).newbyteorder("<"))
    return values if values.dtype == np.float64 else values.astype(np.float64)


def _num_payload(arr: pa.Array, divisor: float) -> np.ndarray:
    values = _as_float64(arr, divisor)
    bits = values.view(np.uint64)
    nan = np.isnan(values)
    neg_zero = bits == _NEG_ZERO_BITS
    valid = _valid_mask(arr)
    if valid is None and not nan.any() and not neg_zero.any():
        return bits
    if not bits.flags.writeable:  # a zero-copy view into Arrow memory
        bits = bits.copy()
    bits[nan] = _NAN_BITS
    bits[neg_zero] = 0
    if valid is not None:
        bits[~valid] = _NA_REAL_BITS
    return bits


def _i64_payload(arr: pa.Array) -> np.ndarray:
    return arr.cast(pa.int64()).fill_null(_NA_INT64).to_numpy(zero_copy_only=False)


def _update_chr(h: Any, column: pa.ChunkedArray) -> None:
    # Payload: one mask byte per row for the whole column, then every value NUL-terminated.
    for part in _slices(column):
        missing = pc.is_null(part).to_numpy(zero_copy_only=False)
        h.update(missing.view(np.uint8))
    if pa.types.is_string_view(column.type):
        column = column.cast(pa.large_string())
    _feed(h, _slices(column), _chr_values)


def _chr_values(arr: pa.Array) -> memoryview:
    """Every value's UTF-8 bytes followed by one NUL; a missing value is just the NUL."""
    if len(arr) == 0:
        return memoryview(b"")
    # Arrow's join kernel appends the terminator in C++ (nulls become ""), so the result's
    # data buffer is exactly the payload: no per-value work in Python.
    joined = pc.binary_join_element_wise(
        arr,
        pa.scalar("", arr.type),
        pa.scalar("\0", arr.type),
        null_handling="replace",
        null_replacement="",
    )
    width = np.int64 if pa.types.is_large_string(joined.type) else np.int32
    offsets = np.frombuffer(joined.buffers()[1], dtype=width)
    first, last = int(offsets[joined.offset]), int(offsets[joined.offset + len(joined)])
    return memoryview(joined.buffers()[2])[first:last]
