"""Column digests of a stored version, from its parquet footer (FORMAT2.md §3).

A datom parquet carries the cv1 digests under ``datom.column_hashes``: reading the footer
(a few KB) tells which columns differ without reading any data. A parquet without the key
(written by R, or before format 2) has its digests recomputed from the data on demand.

Recorded digests (a footer's, an old document's) are used only when they combine to the
version's ``data_sha`` and name its columns: a footer is read before the object is
verified, and an altered one must not say which columns changed.

Digests this process computed are also remembered by ``data_sha`` (a bounded memory):
``data_sha`` is the hash of exactly those digests, so a version hashed here (the one a
write just recorded, the current one a write compares with) needs no footer read.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from datom_core._errors import DatomError
from datom_core._identity._cv1 import ColumnHash, TableHash, combined_sha, hash_arrow_table
from datom_core._memory import KeyedMemory
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._model import TableMetadata
from datom_core._project._parquet import FOOTER_KEY, read_verified
from datom_core._store import Store

__all__ = ["column_digests", "footer_digests", "known_digests", "remember_digests"]

# Digests by data_sha, ~10 MB at most: 65,536 columns in all, the oldest tables dropped first.
_KNOWN: KeyedMemory[str, tuple[ColumnHash, ...]] = KeyedMemory(1 << 16, 1 << 16)


def remember_digests(table_hash: TableHash) -> None:
    """Keep the digests of a table this process hashed, under its ``data_sha``."""
    digests = tuple(table_hash.column_hashes)
    _KNOWN.put(table_hash.data_sha, digests, size=len(digests))


def known_digests(data_sha: str, ncol: int) -> tuple[ColumnHash, ...] | None:
    """The digests of ``data_sha`` if this process hashed it (and it has ``ncol`` columns)."""
    found = _KNOWN.get(data_sha)
    return found if found is not None and len(found) == ncol else None


def footer_digests(store: Store, key: str, version: TableMetadata) -> tuple[ColumnHash, ...] | None:
    """The digests the parquet footer at ``key`` records for ``version``; None when it
    records none, is unreadable, or records digests that are not ``version``'s."""
    try:
        with store.open_read(key) as stream:
            kv = pq.ParquetFile(stream).metadata.metadata or {}
    except (DatomError, pa.ArrowException, OSError, ValueError):
        return None
    raw = kv.get(FOOTER_KEY.encode())
    if raw is None:
        return None
    try:
        doc = json.loads(raw.decode("utf-8"))
        found = tuple(ColumnHash(str(c["name"]), str(c["sha"])) for c in doc)
    except (ValueError, TypeError, KeyError):
        return None
    return _own(found, version)


def _own(digests: tuple[ColumnHash, ...], version: TableMetadata) -> tuple[ColumnHash, ...] | None:
    """``digests`` if they are ``version``'s: its column names, combining to its data_sha."""
    if tuple(c.name for c in digests) != tuple(version.colnames):
        return None
    try:
        combined = combined_sha(version.nrow, [c.sha for c in digests])
    except UnicodeEncodeError:  # not a hex digest
        return None
    return digests if combined == version.data_sha else None


def column_digests(
    ctx: ProjectContext, table: str, metadata: TableMetadata
) -> tuple[ColumnHash, ...]:
    """A version's column digests: known here, its footer's, an old document's, or recomputed."""
    known = known_digests(metadata.data_sha, metadata.ncol)
    if known is not None:
        return known
    key = L.store_parquet(table, metadata.data_sha)
    found = footer_digests(ctx.store, key, metadata)
    if found is not None:
        return found
    if metadata.column_hashes is not None:
        old = _own(tuple(ColumnHash(c.name, c.sha) for c in metadata.column_hashes), metadata)
        if old is not None:
            return old
    table_hash = hash_arrow_table(read_verified(ctx.store, key, metadata.parquet_sha))
    remember_digests(table_hash)
    return table_hash.column_hashes
