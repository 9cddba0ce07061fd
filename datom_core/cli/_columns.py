"""Column types of a version, from its parquet footer alone (no data is downloaded)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from datom_core import Connection, DatomError, TableMetadata

__all__ = ["column_types"]


def column_types(conn: Connection, table: str, md: TableMetadata) -> dict[str, str] | None:
    """Column -> Arrow type (``string``, ``int32``, ``timestamp[us, tz=UTC]``...) as the
    version's parquet object stores it; None when the object cannot be read (the metadata
    is still shown: a missing object is what ``datom validate`` reports)."""
    try:
        with conn.store.open_read(conn.parquet_key(table, md.data_sha)) as f:
            schema = pq.read_schema(f)
    except (DatomError, OSError, pa.ArrowException):
        return None
    return {field.name: str(field.type) for field in schema}
