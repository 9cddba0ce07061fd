"""Parquet bytes: serialise a table once, and read stored bytes only after verifying them.

Every parquet datom writes carries the table's cv1 column digests in its footer, key
:data:`FOOTER_KEY` (FORMAT2.md §3), added to the footer's key-value metadata once the rows
are written: in the Arrow schema it would also be stored in ``ARROW:schema``, other bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from datom_core._errors import DatomError, IntegrityError, NotFoundError, StoreError
from datom_core._identity._cv1 import ColumnHash
from datom_core._labels import with_r_metadata
from datom_core._plain import plain
from datom_core._project._parquet_ahead import ahead
from datom_core._store import LocalStore, Store

__all__ = [
    "FOOTER_KEY",
    "SerializedParquet",
    "footer_json",
    "read_verified",
    "serialized",
    "without_footer_key",
]

#: The parquet key-value metadata key holding the cv1 column digests.
FOOTER_KEY = "datom.column_hashes"


def without_footer_key(table: pa.Table) -> pa.Table:
    """``table`` without the digests key that reading a datom parquet puts in its schema."""
    meta = table.schema.metadata
    if not meta or FOOTER_KEY.encode() not in meta:
        return table
    return table.replace_schema_metadata(
        {k: v for k, v in meta.items() if k != FOOTER_KEY.encode()}
    )


def footer_json(digests: Sequence[ColumnHash]) -> str:
    """The canonical JSON of ``[{"name", "sha"}, ...]`` in column order (the footer value)."""
    doc = [{"name": c.name, "sha": c.sha} for c in digests]
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


_CHUNK = 1 << 20


@dataclass(frozen=True)
class SerializedParquet:
    """A table encoded as parquet, with the hash of its bytes: ``source`` is the bytes
    themselves (a small table) or a local temporary file holding them."""

    source: bytes | Path
    parquet_sha: str
    size_bytes: int


@contextmanager
def serialized(
    table: pa.Table,
    digests: Sequence[ColumnHash] | None = None,
    store: Store | None = None,
    folder: str = "",
) -> Iterator[SerializedParquet]:
    """Encode ``table`` as parquet (in memory, or a temporary file deleted on exit) and
    hash its bytes. ``digests`` (the table's, known once it is hashed) go into the footer.
    A big table for a local ``store`` is written in its ``folder`` key (the table's), so
    that storing it is a link, not a copy (``LocalStore.open_staging``).
    """
    # Encoding into memory and handing the bytes to the store costs a fraction of Arrow's
    # file output for a small table (~0.15 ms instead of ~0.6 ms at 200 rows), and makes
    # no temporary file (creating a file is what costs most on a busy filesystem).
    if table.nbytes <= _IN_MEMORY:
        raw = _encoded(pa.BufferOutputStream(), table, digests).getvalue().to_pybytes()
        yield SerializedParquet(raw, hashlib.sha256(raw).hexdigest(), len(raw))
        return
    # A bigger one is written to the file and hashed as it is written (Arrow hands over
    # one buffered megabyte at a time): no second pass over the file.
    path, fd = _new_file(store, folder)
    try:
        try:
            with os.fdopen(fd, "wb", buffering=0) as file, _sinks(file, store) as sinks:
                into, sink = sinks
                with pa.BufferedOutputStream(pa.PythonFile(into, mode="w"), _CHUNK) as out:
                    _encoded(out, table, digests)
        except OSError as e:  # the disk refused the bytes (full, gone, read-only)
            if isinstance(e, DatomError):
                raise
            raise _write_failed(e, store, folder, path) from e
        yield SerializedParquet(path, sink.digest.hexdigest(), sink.size)
    finally:
        path.unlink(missing_ok=True)


_IN_MEMORY = 16 << 20  # tables up to this size are encoded in memory, handed over as bytes


def _write_failed(e: OSError, store: Store | None, folder: str, path: Path) -> StoreError:
    where = f"the store {store.url}" if isinstance(store, LocalStore) else "a temporary file"
    return StoreError(
        f"table {folder!r}: writing its new parquet into {where} ({path}) failed: {e}; "
        "nothing was written. Free space (or fix the folder's permissions), then write again"
    )


def _new_file(store: Store | None, folder: str) -> tuple[Path, int]:
    """A new empty file, open for writing: a local store's, beside its objects in
    ``folder``; else a private one in the system's temporary folder."""
    if isinstance(store, LocalStore):
        return store.open_staging(folder)
    fd, name = tempfile.mkstemp(prefix="datom-", suffix=".parquet")
    return Path(name), fd


@contextmanager
def _sinks(file: BinaryIO, store: Store | None) -> Iterator[tuple[Any, _HashingSink]]:
    """What pyarrow writes into, and the sink that hashes the bytes into ``file``: one and
    the same in the encoding thread (the plain path), or a second thread's
    (``_parquet_ahead``, which also syncs a file staged in a local store as it goes)."""
    if plain():
        sink = _HashingSink(file)
        yield sink, sink
        return
    with ahead(file, _HashingSink, sync=isinstance(store, LocalStore)) as into:
        yield into, into.sink


class _HashingSink:
    """A binary file that hashes what is written to it, in order, as it is written."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self.digest = hashlib.sha256()
        self.size = 0
        self.closed = False

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        self.digest.update(view)
        while view:
            view = view[self._file.write(view) or 0 :]
        self.size += len(data)
        return len(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def _encoded(sink: Any, table: pa.Table, digests: Sequence[ColumnHash] | None) -> Any:
    """``table`` encoded as parquet into ``sink`` (a path or an Arrow output stream).

    Labelled columns (``_labels``) are also described in R arrow's ``r`` schema key.
    """
    with pq.ParquetWriter(sink, with_r_metadata(table.schema)) as writer:
        writer.write_table(table)
        if digests:
            writer.add_key_value_metadata({FOOTER_KEY: footer_json(digests)})
    return sink


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
        return _parse(raw, list(columns) if columns else None)
    except (pa.ArrowInvalid, OSError) as e:
        raise IntegrityError(f"{key} is not a readable parquet file: {e}", key=key) from e
    except KeyError as e:
        raise NotFoundError(f"{key}: no such column {e}") from e


#: Below this size the dataset layer behind ``pq.read_table`` costs more than the decoding.
_SMALL = 1 << 20


def _parse(raw: bytes | pa.Buffer, columns: list[str] | None) -> pa.Table:
    """The parquet in ``raw`` as a table (``pq.read_table``'s result, also for a small one).

    A small file is decoded by ``ParquetFile.read``, which gives the same table without
    the dataset layer's fixed cost; it treats a missing or repeated column name
    differently, so a selection of those still goes through ``pq.read_table``.
    """
    if len(raw) >= _SMALL:
        return pq.read_table(pa.BufferReader(raw), columns=columns)
    file = pq.ParquetFile(pa.BufferReader(raw))
    if columns is not None:
        names = file.schema_arrow.names
        if len(set(columns)) != len(columns) or not set(columns) <= set(names):
            return pq.read_table(pa.BufferReader(raw), columns=columns)
    return file.read(columns=columns, use_threads=False)
