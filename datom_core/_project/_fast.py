"""The fenced accelerators of the big-table paths, each beside the plain path it replaces.

Code here exists for speed only: the plain path next to it gives the same bytes and the
same digests, and ``DATOM_PLAIN=1`` in the environment selects the plain paths (to rule
an accelerator out when chasing a problem, or to measure what it pays).

* :func:`encode_hashing`: a parquet file's SHA-256 computed while the file is encoded,
  on a thread of its own, so that on a machine with a spare core the digest is ready
  when the last byte is written. Plain path: encode the file, then hash it in a second
  pass over it. Measured by ``benchmarks/bench_write_read.py`` (write / write_table).

The text splices of this layer live beside the documents they print, under the same
switch: :mod:`._manifest_text` (a manifest updated without re-printing every entry;
plain path: :func:`._build.updated_manifest` parses and prints it whole) and
:mod:`._history_text` (a history grown by one entry, a store copy spliced onto the last
one; plain path: the whole list printed by :func:`._documents.dump`). Measured (issue
30): 2.6x on a write into 3,000 tables. Contract: byte for byte what the full print gives.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from datom_core._plain import plain

__all__ = ["encode_hashing", "file_sha", "plain"]

_CHUNK = 1 << 20


def file_sha(path: Path) -> str:
    """The hex SHA-256 of the file at ``path``, read once."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def encode_hashing(path: Path, encode: Callable[[Any], object]) -> str:
    """Run ``encode(sink)`` to write a file at ``path``; the hex SHA-256 of its bytes.

    ``sink`` is ``path`` itself on the plain path, else an Arrow output stream whose
    bytes are hashed on another thread as they are written.
    """
    if plain():
        encode(path)
        return file_sha(path)
    with _HashingFile(path) as raw:
        stream = pa.BufferedOutputStream(pa.PythonFile(raw, mode="w"), buffer_size=_CHUNK)
        encode(stream)
        stream.close()  # flushes the last buffered bytes into ``raw``
        return raw.hexdigest()


class _HashingFile:
    """A write-only file: each chunk goes to disk and, through a queue, to a hashing
    thread (hashlib releases the interpreter lock while it hashes a large chunk)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self._chunks: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._digest = hashlib.sha256()
        self._thread = threading.Thread(target=self._hash, name="datom-sha256", daemon=True)
        self._thread.start()
        self.closed = False

    def _hash(self) -> None:
        while (chunk := self._chunks.get()) is not None:
            self._digest.update(chunk)

    def write(self, data: Any) -> int:
        chunk = bytes(data)  # Arrow's buffer is only lent for the call
        self._chunks.put(chunk)
        view = memoryview(chunk)
        while view:
            view = view[os.write(self._fd, view) :]
        return len(chunk)

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._chunks.put(None)
            self._thread.join()
            os.close(self._fd)

    def hexdigest(self) -> str:
        """The digest of everything written; closes the file first."""
        self.close()
        return self._digest.hexdigest()

    def __enter__(self) -> _HashingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
