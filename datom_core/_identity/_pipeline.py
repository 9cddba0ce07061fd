"""Streaming payloads into SHA-256: bounded slices, encoded ahead of the hash.

SHA-256 is sequential, but encoding a slice is not: while one slice is hashed the next
ones are encoded in other threads (numpy, Arrow compute and hashlib all release the GIL
on large buffers). Only a few slices are in flight at once, so memory stays bounded.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

import numpy as np
import pyarrow as pa

__all__ = ["SLICE_ROWS", "Payload", "Sha", "feed", "readonly_view", "row_slices"]

SLICE_ROWS = 1 << 17
"""Rows encoded per step: bounds the temporary buffers and keeps them in cache."""

_WINDOW = 3  # slices encoded ahead of the hash

_Part = TypeVar("_Part")

Payload = Sequence[Any]
"""The pieces (buffer-protocol objects) a slice contributes to the digest, in order."""


class Sha(Protocol):
    """The part of a ``hashlib`` hash object the encoders use."""

    def update(self, data: Any, /) -> None: ...


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _encoder_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                max_workers=os.cpu_count() or 2, thread_name_prefix="datom-cv1"
            )
        return _pool


def feed(h: Sha, parts: Iterable[_Part], payload: Callable[[_Part], Payload]) -> None:
    """Hash ``payload(part)`` for every part, in order, encoding the next parts meanwhile."""
    parts = iter(parts)
    first = next(parts, None)
    if first is None:
        return
    second = next(parts, None)
    if second is None:  # one slice: nothing to overlap, so no thread hand-off
        _update(h, payload(first))
        return
    pool = _encoder_pool()
    pending: deque[Future[Payload]] = deque()
    for part in itertools.chain((first, second), parts):
        pending.append(pool.submit(payload, part))
        if len(pending) >= _WINDOW:
            _update(h, pending.popleft().result())
    while pending:
        _update(h, pending.popleft().result())


def _update(h: Sha, pieces: Payload) -> None:
    for piece in pieces:
        h.update(piece)


def row_slices(column: pa.ChunkedArray, rows: int = SLICE_ROWS) -> Iterator[pa.Array]:
    """Zero-copy slices of at most ``rows`` rows, chunk by chunk."""
    for chunk in column.chunks:
        for start in range(0, len(chunk), rows):
            yield chunk.slice(start, rows)


def readonly_view(buffer: pa.Buffer, dtype: np.dtype | type, start: int, count: int) -> np.ndarray:
    """Items ``start .. start+count`` of an Arrow buffer, zero-copy, that numpy refuses to write.

    ``np.frombuffer`` gives a writeable array whenever the buffer is mutable, and Arrow
    buffers made by pyarrow (or wrapping the caller's numpy arrays) are.
    """
    view = np.frombuffer(buffer, dtype=dtype, count=start + count)[start:]
    view.flags.writeable = False
    return view
