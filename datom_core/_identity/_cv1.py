"""datom-cv1: the canonical value encoding behind ``data_sha``.

Works on Arrow data only; converting pandas and polars frames is the Arrow boundary's job
(``_arrow``). Each column is classified once (:func:`classify`) and then streamed into its
own SHA-256 in bounded slices (``_pipeline``), so memory stays flat and columns hash in
parallel threads. The payload encoders live in ``_num`` and ``_chr``.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from datom_core._identity._chr import has_nul, is_chr, update_chr
from datom_core._identity._num import i64_payload, num_payload
from datom_core._identity._pipeline import feed, row_slices

__all__ = [
    "HASH_ALGO",
    "ColumnHash",
    "TableHash",
    "combined_sha",
    "Unhashable",
    "classify",
    "column_problem",
    "hash_arrow_table",
]

HASH_ALGO = "datom-cv1"

SMALL_TABLE_ROWS = 20_000
"""Tables up to this many rows are hashed column after column in the calling thread."""

_R_INT_MAX = 2147483647
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
        if is_chr(t.value_type):
            return _Plan("chr", "chr")  # decided by the level type: no need to decode
        return classify(_decoded(column))
    if pa.types.is_boolean(t) or pa.types.is_floating(t) or pa.types.is_null(t):
        return _Plan("num", "num")
    if pa.types.is_integer(t):
        return _Plan("num", "num") if _fits_r_integer(column) else _Plan("i64", "i64")
    if is_chr(t):
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
    return bool(-_R_INT_MAX <= lo and hi <= _R_INT_MAX)


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
    if plan.kind == "chr":
        if has_nul(column):
            return "remove the NUL characters from the strings (the chr encoding is NUL-terminated)"
        return None
    values = _decoded(column) if pa.types.is_dictionary(column.type) else column
    if pa.types.is_uint64(values.type) and plan.kind == "i64":
        if pc.max(values).as_py() > 2**63 - 1:
            return "uint64 values above 2^63-1 cannot be stored as int64: cast to float64 or string"
    return None


def hash_arrow_table(table: pa.Table, *, threads: int | None = None) -> TableHash:
    """Hash an Arrow table whose columns have all passed :func:`column_problem`."""
    names = table.column_names
    workers = max(1, min(len(names), threads or os.cpu_count() or 1))
    if workers == 1 or table.num_rows <= SMALL_TABLE_ROWS:
        # Starting threads costs more than hashing a small table (a Dagster asset of a few
        # hundred rows hashed in ~0.3 ms inline, ~1 ms through a pool).
        digests = [_column_digest(n, c) for n, c in zip(names, table.columns, strict=True)]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            digests = list(pool.map(_column_digest, names, table.columns))
    return TableHash(
        data_sha=combined_sha(table.num_rows, digests),
        column_hashes=tuple(ColumnHash(n, d) for n, d in zip(names, digests, strict=True)),
        nrow=table.num_rows,
        ncol=table.num_columns,
    )


def combined_sha(nrow: int, digests: Sequence[str]) -> str:
    """The ``data_sha`` of a table of ``nrow`` rows whose columns have ``digests``, in
    order: a version's recorded digests are its own exactly when they combine to its
    ``data_sha`` (each digest covers its column's name)."""
    outer = hashlib.sha256(HASH_ALGO.encode())
    outer.update(struct.pack("<dd", float(nrow), float(len(digests))))
    for digest in digests:
        outer.update(digest.encode("ascii"))
    return outer.hexdigest()


def _column_digest(name: str, column: pa.ChunkedArray) -> str:
    plan = classify(column)
    h = hashlib.sha256(plan.tag.encode() + name.encode("utf-8") + b"\0")
    if plan.kind == "num":
        divisor = plan.divisor
        feed(h, row_slices(column), lambda part: num_payload(part, divisor))
        if plan.tag == "drtn":
            h.update(b"\0secs")
    elif plan.kind == "i64":
        feed(h, row_slices(column), i64_payload)
    else:
        update_chr(h, column)
    return h.hexdigest()
