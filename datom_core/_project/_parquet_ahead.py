"""An accelerator: a big parquet's bytes are hashed, written and synced by a second thread
while pyarrow encodes the next ones (``_parquet.serialized``).

Encoding is one thread's work; hashing the bytes, writing them and, for a file staged in
a local store, syncing them are not, and in the encoding thread they add to it (~20 ms
and, at the link's ``fsync``, ~40 ms for a 19 MB parquet). Here the encoder only queues
each chunk; a worker hashes it and writes it, and every ``SYNC_EVERY`` bytes asks the
disk to keep what it has so far (``fdatasync``), so that the store's ``fsync`` before the
link finds almost nothing left to write.

Contract: the same bytes in the same order into the file, the same digest and size as
:class:`~datom_core._project._parquet._HashingSink` gives (the worker runs one); an error
of a write or a sync reaches the encoder (its next write, or :meth:`AheadSink.finish`),
never lost; at most ``QUEUED`` chunks wait (memory stays bounded); the worker writes
through its own descriptor and is done before :meth:`AheadSink.finish` returns, and one
left behind (an interrupt) only writes into its own, closing it after. The store's own
``fsync`` before the link is unchanged: these syncs only do its work earlier.

Plain path: ``_HashingSink`` in the encoding thread, and the one ``fsync`` the store
does before it links the file. ``DATOM_PLAIN=1`` selects it.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

__all__ = ["QUEUED", "SYNC_EVERY", "AheadSink", "ahead"]

QUEUED = 16  # chunks of at most a megabyte each (``_parquet._CHUNK``), besides the one in hand
SYNC_EVERY = 2 << 20  # bytes written between two syncs: what is left for the link's fsync

_DONE = None


@contextmanager
def ahead(file: BinaryIO, sink_of: Callable[[BinaryIO], Any], sync: bool) -> Iterator[AheadSink]:
    """An :class:`AheadSink` for ``file``, finished on leaving the block (its worker's
    error raised there), or abandoned when the block raises."""
    sink = AheadSink(file, sink_of, sync)
    try:
        yield sink
    except BaseException:
        sink.abandon()
        raise
    sink.finish()


class AheadSink:
    """The file pyarrow writes into: each chunk is queued for a worker that hands it to a
    hashing sink (made by ``sink_of`` around a duplicate of ``file``'s descriptor) and,
    when ``sync``, syncs the file every :data:`SYNC_EVERY` bytes."""

    def __init__(self, file: BinaryIO, sink_of: Callable[[BinaryIO], Any], sync: bool) -> None:
        self._file = os.fdopen(os.dup(file.fileno()), "wb", buffering=0)
        try:
            self.sink = sink_of(self._file)
        except BaseException:
            self._file.close()
            raise
        self._sync = sync
        self._queue: queue.Queue[bytes | None] = queue.Queue(QUEUED)
        self._error: BaseException | None = None
        self._abandoned = False
        self.size = 0
        self.closed = False
        self._worker = threading.Thread(target=self._work, name="datom-parquet", daemon=True)
        self._worker.start()

    def write(self, data: bytes) -> int:
        if self._error is not None:
            raise self._error
        chunk = data if isinstance(data, bytes) else bytes(data)  # ours to keep
        self._queue.put(chunk)
        self.size += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def finish(self) -> None:
        """Wait for the worker to write (and sync) every queued chunk; raise its error."""
        self._end()
        if self._error is not None:
            raise self._error

    def abandon(self) -> None:
        """Stop the worker, what is still queued unwritten (the file is to be deleted)."""
        self._abandoned = True
        self._end()

    def _end(self) -> None:
        self._queue.put(_DONE)
        self._worker.join()

    def _work(self) -> None:
        unsynced = 0
        sync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync
        try:
            while (chunk := self._queue.get()) is not _DONE:
                if self._error is not None or self._abandoned:
                    continue  # drained, so that the encoder never waits on a full queue
                try:
                    self.sink.write(chunk)
                    unsynced += len(chunk)
                    if self._sync and unsynced >= SYNC_EVERY:
                        sync(self._file.fileno())
                        unsynced = 0
                except BaseException as e:  # the encoder raises it at its next write
                    self._error = e
        finally:
            self._file.close()
