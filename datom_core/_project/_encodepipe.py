"""An accelerator: a big parquet's bytes hashed and written on a thread of their own.

Arrow encodes a table on one thread; its output must also be hashed (``parquet_sha``)
and written to the file. Done on the encoding thread (the plain path, ``_parquet``'s
``_HashingSink``) the SHA-256 and the writes follow each encoded megabyte in turn; here
the encoder hands each megabyte to a second thread that hashes it and writes it, while
the next one is encoded (hashlib and ``os.write`` release the interpreter lock, and once
the table's own hashing is over the second core is otherwise idle). A file that must be
durable (a local store's staged object) has its writeback started chunk by chunk as well,
so the ``fsync`` before it is linked into place finds almost nothing left to write.

Contract: the same bytes in the same order reach the file and the digest as on the plain
path, so ``parquet_sha``, the size and the file are identical; an error of the writing
thread is raised by the encoder's next write, or by :meth:`PipedSink.finish`.
``DATOM_PLAIN=1`` (or ``DATOM_PLAIN=encode``) selects the plain path.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from typing import BinaryIO

from datom_core._store._local import start_writeback

__all__ = ["PipedSink"]

_DEPTH = 8  # megabytes encoded ahead of the writer at most: memory stays bounded


class PipedSink:
    """A binary file for Arrow's ``PythonFile``: what is written is hashed and written to
    ``file`` by a thread of its own, in order; ``durable`` starts each chunk's writeback."""

    def __init__(self, file: BinaryIO, *, durable: bool) -> None:
        self._file, self._durable = file, durable
        self.digest = hashlib.sha256()
        self.size = 0
        self.closed = False
        self._error: BaseException | None = None
        self._abandoned = False
        self._queue: queue.Queue[bytes | None] = queue.Queue(_DEPTH)
        self._thread = threading.Thread(target=self._drain, name="datom-parquet-out", daemon=True)
        self._thread.start()

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if self._error is not None:
            raise self._error  # as the plain path raises it: from the write that failed
        # Arrow may hand over a view of its own buffer, which it reuses: the queue keeps a copy.
        chunk = data if isinstance(data, bytes) else bytes(data)
        self._queue.put(chunk)
        self.size += len(chunk)
        return len(chunk)

    def _drain(self) -> None:
        fd, offset = self._file.fileno(), 0
        while (chunk := self._queue.get()) is not None:
            if self._error is not None or self._abandoned:
                continue  # keep taking chunks: the encoder must never block on a full queue
            try:
                self.digest.update(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[self._file.write(view) or 0 :]
                if self._durable:
                    start_writeback(fd, offset, len(chunk))
            except BaseException as e:  # raised in the encoder's thread, by write or finish
                self._error = e
            offset += len(chunk)

    def finish(self) -> None:
        """Wait until every chunk is hashed and written; raise the writing thread's error."""
        self._stop()
        if self._error is not None:
            raise self._error

    def abandon(self) -> None:
        """The encoding failed: stop the writing thread, dropping what it has not written."""
        self._abandoned = True
        self._stop()

    def _stop(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True
