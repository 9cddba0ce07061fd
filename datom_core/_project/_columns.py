"""Column digests of a stored version, from its parquet footer (FORMAT2.md §3).

A datom parquet carries the cv1 digests under ``datom.column_hashes``: reading the footer
(a few KB) tells which columns differ without reading any data. A parquet without the key
(written by R, or before format 2) has its digests recomputed from the data on demand.

Digests this process computed are also remembered by ``data_sha`` (a bounded memory):
``data_sha`` is the hash of exactly those digests, so a version hashed here (the one a
write just recorded, the current one a write compares with) needs no footer read.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict

import pyarrow as pa
import pyarrow.parquet as pq

from datom_core._errors import DatomError
from datom_core._identity._cv1 import ColumnHash, TableHash, hash_arrow_table
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._model import TableMetadata
from datom_core._project._parquet import FOOTER_KEY, read_verified
from datom_core._store import Store

__all__ = ["column_digests", "footer_digests", "known_digests", "remember_digests"]

_KEPT_COLUMNS = 1 << 16  # digests kept in all (~10 MB at most), oldest tables dropped first
_known: OrderedDict[str, tuple[ColumnHash, ...]] = OrderedDict()
_known_columns = 0
_guard = threading.Lock()


def remember_digests(table_hash: TableHash) -> None:
    """Keep the digests of a table this process hashed, under its ``data_sha``."""
    global _known_columns
    digests = tuple(table_hash.column_hashes)
    with _guard:
        old = _known.pop(table_hash.data_sha, None)
        _known_columns -= len(old) if old is not None else 0
        _known[table_hash.data_sha] = digests
        _known_columns += len(digests)
        while len(_known) > 1 and _known_columns > _KEPT_COLUMNS:
            _known_columns -= len(_known.popitem(last=False)[1])


def known_digests(data_sha: str, ncol: int) -> tuple[ColumnHash, ...] | None:
    """The digests of ``data_sha`` if this process hashed it (and it has ``ncol`` columns)."""
    with _guard:
        found = _known.get(data_sha)
        if found is not None:
            _known.move_to_end(data_sha)
    return found if found is not None and len(found) == ncol else None


def footer_digests(store: Store, key: str) -> tuple[ColumnHash, ...] | None:
    """The digests a parquet's footer records; None when it records none or is unreadable."""
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
        return tuple(ColumnHash(str(c["name"]), str(c["sha"])) for c in doc)
    except (ValueError, TypeError, KeyError):
        return None


def column_digests(
    ctx: ProjectContext, table: str, metadata: TableMetadata
) -> tuple[ColumnHash, ...]:
    """A version's column digests: known here, its footer's, an old document's, or recomputed."""
    known = known_digests(metadata.data_sha, metadata.ncol)
    if known is not None:
        return known
    key = L.store_parquet(table, metadata.data_sha)
    found = footer_digests(ctx.store, key)
    if found is not None and len(found) == metadata.ncol:
        return found
    if metadata.column_hashes is not None and len(metadata.column_hashes) == metadata.ncol:
        return tuple(ColumnHash(c.name, c.sha) for c in metadata.column_hashes)
    table_hash = hash_arrow_table(read_verified(ctx.store, key, metadata.parquet_sha))
    remember_digests(table_hash)
    return table_hash.column_hashes
