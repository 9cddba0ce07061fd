"""Parquet bytes: serialise a table once, and read stored bytes only after verifying them."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from datom_core._errors import IntegrityError, NotFoundError
from datom_core._store import Store

__all__ = ["BackgroundParquet", "SerializedParquet", "read_verified", "serialized"]

_CHUNK = 1 << 20


@dataclass(frozen=True)
class SerializedParquet:
    """A table written to a local temporary parquet file, with the hash of its bytes."""

    path: Path
    parquet_sha: str
    size_bytes: int


@contextmanager
def serialized(table: pa.Table) -> Iterator[SerializedParquet]:
    """Write ``table`` to a temporary parquet file (deleted on exit) and hash its bytes."""
    fd, name = tempfile.mkstemp(prefix="datom-", suffix=".parquet")
    os.close(fd)
    path = Path(name)
    try:
        pq.write_table(table, path)
        yield SerializedParquet(path, _file_sha(path), path.stat().st_size)
    finally:
        path.unlink(missing_ok=True)


class BackgroundParquet:
    """Serialise a table in a worker thread while the caller hashes it.

    For writes that almost surely carry new data (a changed extract): the parquet bytes
    are ready when the hash is. ``close()`` (or leaving the ``with`` block) waits for the
    worker and deletes the temporary file.
    """

    def __init__(self, table: pa.Table) -> None:
        self._stack = ExitStack()
        self._future = _worker().submit(self._stack.enter_context, serialized(table))

    def result(self) -> SerializedParquet:
        return self._future.result()

    def close(self) -> None:
        wait([self._future])
        self._stack.close()

    def __enter__(self) -> BackgroundParquet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_WORKER: ThreadPoolExecutor | None = None


def _worker() -> ThreadPoolExecutor:
    global _WORKER
    if _WORKER is None:
        _WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="datom-parquet")
    return _WORKER


def _file_sha(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def read_verified(
    store: Store, key: str, parquet_sha: str | None, *, columns: Sequence[str] | None = None
) -> pa.Table:
    """Read ``key`` from ``store``, verifying its SHA-256 before the parquet is parsed.

    A missing ``parquet_sha`` (very old R projects) skips the check, as STORE.md allows.
    """
    try:
        raw = store.read_verified(key, parquet_sha) if parquet_sha else store.read_bytes(key)
    except NotFoundError as e:
        raise NotFoundError(
            f"{key} is missing from {store.url}: the version's data is gone. "
            "Validate the project to see the damage (validate() / datom validate); a repair cannot "
            "recreate data."
        ) from e
    except IntegrityError as e:
        raise IntegrityError(
            f"{key} in {store.url} does not match its recorded parquet_sha "
            f"(expected {e.expected}, actual {e.actual}); the stored bytes were altered. "
            "Nothing was read.",
            key=key,
            expected=e.expected,
            actual=e.actual,
        ) from e
    try:
        return pq.read_table(pa.BufferReader(raw), columns=list(columns) if columns else None)
    except (pa.ArrowInvalid, OSError) as e:
        raise IntegrityError(f"{key} is not a readable parquet file: {e}", key=key) from e
    except KeyError as e:
        raise NotFoundError(f"{key}: no such column {e}") from e
