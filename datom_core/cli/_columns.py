"""A version's columns as its parquet footer records them (no data is downloaded)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from datom_core import ColumnLabels, Connection, DatomError, TableMetadata, column_labels

__all__ = ["StoredColumns", "stored_columns"]


@dataclass(frozen=True)
class StoredColumns:
    """Column -> Arrow type (``string``, ``int32``, ``timestamp[us, tz=UTC]``...) and
    column -> labels (only labelled columns), from one read of the footer."""

    types: dict[str, str]
    labels: dict[str, ColumnLabels]


def stored_columns(conn: Connection, table: str, md: TableMetadata) -> StoredColumns | None:
    """The version's column types and labels as its parquet object stores them; None when
    the object cannot be read (the metadata, which comes from git, is still shown: a
    missing object is what ``datom validate`` reports)."""
    try:
        with conn.store.open_read(conn.parquet_key(table, md.data_sha)) as f:
            schema = pq.read_schema(f)
    except (DatomError, OSError, pa.ArrowException):
        return None
    return StoredColumns({f.name: str(f.type) for f in schema}, column_labels(schema))
