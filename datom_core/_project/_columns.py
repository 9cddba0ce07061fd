"""Column digests of a stored version, from its parquet footer (FORMAT2.md §3).

A datom parquet carries the cv1 digests under ``datom.column_hashes``: reading the footer
(a few KB) tells which columns differ without reading any data. A parquet without the key
(written by R, or before format 2) has its digests recomputed from the data on demand.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from datom_core._errors import DatomError
from datom_core._identity._cv1 import ColumnHash, hash_arrow_table
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._model import TableMetadata
from datom_core._project._parquet import FOOTER_KEY, read_verified
from datom_core._store import Store

__all__ = ["column_digests", "footer_digests"]


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
    """A version's column digests: its footer's, an old document's, or recomputed."""
    key = L.store_parquet(table, metadata.data_sha)
    found = footer_digests(ctx.store, key)
    if found is not None and len(found) == metadata.ncol:
        return found
    if metadata.column_hashes is not None and len(metadata.column_hashes) == metadata.ncol:
        return tuple(ColumnHash(c.name, c.sha) for c in metadata.column_hashes)
    table = read_verified(ctx.store, key, metadata.parquet_sha)
    return hash_arrow_table(table).column_hashes
