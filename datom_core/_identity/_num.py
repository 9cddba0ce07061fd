"""The cv1 ``num`` and ``i64`` payload encoders, one Arrow slice at a time (numpy only).

The values a slice is read from may be the caller's own memory (a numpy array pandas or
pyarrow wrapped without copying) or one buffer Arrow shares between a column's validity
and its values (``pa.nulls``, a cast from the null type). So every view of an Arrow
buffer is read-only (:func:`readonly_view`), and a payload that differs from the values
is always a new array: nothing here can write into its input.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datom_core._identity._pipeline import Payload, readonly_view

__all__ = ["i64_payload", "num_payload"]

_NAN_BITS = np.uint64(0x7FF8000000000000)
_NEG_ZERO_BITS = np.uint64(0x8000000000000000)
_NA_REAL_BITS = np.uint64(0x7FF00000000007A2)  # R's NA_real_
_NA_INT64 = np.int64(-(2**63))  # bit64's NA_integer64_


def _decoded(arr: pa.Array) -> pa.Array:
    # Levels and unused levels are not identity: only the values are.
    return arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr


def _valid_mask(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return pc.is_valid(arr).to_numpy(zero_copy_only=False)


def _value_view(arr: pa.Array, dtype: np.dtype) -> np.ndarray:
    """A read-only zero-copy view of the values buffer (null slots hold arbitrary values)."""
    return readonly_view(arr.buffers()[1], dtype, arr.offset, len(arr))


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


def num_payload(arr: pa.Array, divisor: float = 1.0) -> Payload:
    """Every value as a little-endian double: NaN canonical, -0.0 as +0.0, missing as NA."""
    arr = _decoded(arr)
    values = _as_float64(arr, divisor)
    bits = values.view(np.uint64)
    valid = _valid_mask(arr)
    if pa.types.is_floating(arr.type):
        # Only floats can be NaN or -0.0: widened integers and divided ticks cannot.
        nan = np.isnan(values)
        neg_zero = bits == _NEG_ZERO_BITS
        if nan.any() or neg_zero.any():
            bits = _own(bits)
            bits[nan] = _NAN_BITS
            bits[neg_zero] = 0
    if valid is None:
        return (bits,)
    bits = _own(bits)
    bits[~valid] = _NA_REAL_BITS
    return (bits,)


def _own(bits: np.ndarray) -> np.ndarray:
    """``bits`` when this module made it, else a copy: a view of Arrow memory is never written.

    Every view of Arrow memory is read-only (:func:`readonly_view`), so a writeable array
    is one that ``_as_float64`` made (a widening, a division, zeros).
    """
    return bits if bits.flags.writeable else bits.copy()


def i64_payload(arr: pa.Array) -> Payload:
    """Every value's int64 bits, little-endian; missing as INT64_MIN."""
    arr = _decoded(arr)
    return (arr.cast(pa.int64()).fill_null(_NA_INT64).to_numpy(zero_copy_only=False),)
