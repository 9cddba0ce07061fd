"""The metadata shown on every materialization the IO manager stores.

``datom/version``, ``datom/data_sha``, ``datom/parquet_sha``, ``datom/change`` (``none``,
``metadata_only`` or ``full``), ``datom/table``, ``datom/project``, ``datom/commit`` (the
commit that made this version current; for ``none``, the earlier commit that did),
``datom/parents`` and ``datom/source_lineage`` (as recorded in the version's metadata),
plus Dagster's standard ``dagster/row_count``, ``dagster/column_schema`` and
``dagster/uri`` (the parquet object in the store).
"""

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import datom_core as dc
from dagster import MetadataValue
from datom_dagster._type_handlers import column_schema

__all__ = ["DATOM_KEYS", "STANDARD_KEYS", "materialization_metadata", "parquet_url"]

DATOM_KEYS = (
    "datom/version",
    "datom/data_sha",
    "datom/parquet_sha",
    "datom/change",
    "datom/table",
    "datom/project",
    "datom/commit",
    "datom/parents",
    "datom/source_lineage",
)
STANDARD_KEYS = ("dagster/row_count", "dagster/column_schema", "dagster/uri")


def materialization_metadata(
    conn: dc.Connection, result: dc.WriteResult, table: Any
) -> dict[str, MetadataValue]:
    """Metadata for the materialization of ``result`` (``table`` is what was written)."""
    recorded = conn.metadata(result.table, result.version)
    # An unchanged write commits nothing: report the commit that recorded the version.
    commit = result.commit or conn.commit_of(result.table, result.version) or ""
    return {
        "datom/version": MetadataValue.text(result.version),
        "datom/data_sha": MetadataValue.text(result.data_sha),
        "datom/parquet_sha": MetadataValue.text(result.parquet_sha),
        "datom/change": MetadataValue.text(result.change),
        "datom/table": MetadataValue.text(result.table),
        "datom/project": MetadataValue.text(conn.project_name),
        "datom/commit": MetadataValue.text(commit),
        "datom/parents": MetadataValue.json(_records(recorded.get("parents"))),
        "datom/source_lineage": MetadataValue.json(_records(recorded.get("source_lineage"))),
        "dagster/row_count": MetadataValue.int(int(recorded["nrow"])),
        "dagster/column_schema": MetadataValue.table_schema(column_schema(table)),
        "dagster/uri": MetadataValue.url(parquet_url(conn, result.table, result.data_sha)),
    }


def parquet_url(conn: dc.Connection, table: str, data_sha: str) -> str:
    """The URL of a version's parquet object (path segments percent-encoded)."""
    key = conn.parquet_key(table, data_sha)
    return f"{conn.store.url}/{'/'.join(quote(part) for part in key.split('/'))}"


def _records(value: Any) -> list[dict[str, Any]]:
    # R writes a one-record array as a bare object.
    if value is None:
        return []
    return [dict(value)] if isinstance(value, Mapping) else [dict(v) for v in value]
