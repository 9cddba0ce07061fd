"""The metadata shown on every materialization datom stores: what a reviewer needs to see.

* ``datom/summary`` first: the version's place in its table's history and the change in
  words, ``v3 of 4, was v2 — full: +1 row, 2 columns changed`` or ``unchanged — still v3
  (written ...)`` (:mod:`datom_dagster._headline`).
* Identity: ``datom/version``, ``datom/data_sha``, ``datom/parquet_sha``, ``datom/change``
  (``none``, ``metadata_only`` or ``full``), ``datom/table``, ``datom/project``.
* ``datom/commit``: the commit that made this version current (for ``none``, the earlier
  commit that did), a link when the remote is a known host (GitHub, GitLab, Bitbucket over
  https; credentials are never shown).
* ``datom/parents``: a table, one row per parent (table, version prefix, data_sha prefix,
  source project), and ``datom/parent/<asset>`` links to the upstream assets;
  ``datom/source_lineage``: a table of the raw sources (project, table, data_sha; R datom
  records that data_sha under the name ``version_sha``).
* The change summary against the previous version (:mod:`datom_dagster._change`):
  ``datom/changes`` (markdown), ``datom/compared_with`` (the version before; for an
  unchanged write, the version itself) and ``datom/rows_before``, ``datom/rows_after``,
  ``datom/columns_added``/``_removed``/``_changed`` and, with a key,
  ``datom/rows_added``/``_removed``/``_changed``.
* Dagster's standard ``dagster/row_count``, ``dagster/column_schema`` (Arrow types:
  ``date``, ``timestamp[us, tz=UTC]``, ``categorical<string>``...) and ``dagster/uri`` (the
  exact parquet object in the store).
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import pyarrow as pa

import datom_core as dc
from dagster import AssetKey, MetadataValue, TableColumn, TableRecord, TableSchema
from datom_dagster._change import change_summary, summary_metadata
from datom_dagster._headline import headline, position

__all__ = [
    "DATOM_KEYS",
    "STANDARD_KEYS",
    "Written",
    "arrow_type_name",
    "commit_url",
    "materialization_metadata",
    "written_line",
    "parquet_url",
]

DATOM_KEYS = (
    "datom/summary",
    "datom/version",
    "datom/data_sha",
    "datom/parquet_sha",
    "datom/change",
    "datom/table",
    "datom/project",
    "datom/commit",
    "datom/parents",
    "datom/source_lineage",
    "datom/changes",
    "datom/rows_after",
)
STANDARD_KEYS = ("dagster/row_count", "dagster/column_schema", "dagster/uri")

_PREFIX = 12
_PARENT_SCHEMA = TableSchema(
    columns=[
        TableColumn("table", "string"),
        TableColumn("version", "string", description="version id (metadata_sha) prefix"),
        TableColumn("data_sha", "string", description="data_sha prefix"),
        TableColumn("project", "string", description="the parent's datom project"),
    ]
)


@dataclass(frozen=True)
class Written:
    """The version a materialization stands for, and how it came to be."""

    table: str
    version: str
    change: str
    commit: str | None  # None: not known (looked up: the commit that recorded the version)
    metadata: dc.TableMetadata | None = None  # the recorded record, when the write gave it
    replaced: dc.TableMetadata | None = None  # the version the write made non-current


def materialization_metadata(
    conn: dc.Connection,
    written: Written,
    schema: pa.Schema,
    *,
    key: Sequence[str] | None = None,
    parent_assets: Sequence[AssetKey] = (),
) -> dict[str, MetadataValue]:
    """Metadata for the materialization of ``written`` (``schema``: the stored columns)."""
    recorded = written.metadata or conn.version(written.table, written.version)
    commit = written.commit or conn.commit_of(written.table, written.version) or ""
    summary = change_summary(
        conn,
        written.table,
        recorded,
        unchanged=written.change == "none",
        key=key,
        before=written.replaced,
    )
    head = headline(written.change, summary, position(conn, written.table, written.version))
    entries: dict[str, MetadataValue] = {
        "datom/summary": MetadataValue.text(head),
        "datom/version": MetadataValue.text(written.version),
        "datom/data_sha": MetadataValue.text(recorded.data_sha),
        "datom/parquet_sha": MetadataValue.text(recorded.parquet_sha or ""),
        "datom/change": MetadataValue.text(written.change),
        "datom/table": MetadataValue.text(written.table),
        "datom/project": MetadataValue.text(conn.project_name),
        "datom/commit": _commit_value(conn, commit),
        "datom/parents": MetadataValue.table(
            [_parent_row(p) for p in recorded.parents], schema=_PARENT_SCHEMA
        ),
        "datom/source_lineage": source_lineage_table(recorded.get("source_lineage")),
        **summary_metadata(summary, head),
        "dagster/row_count": MetadataValue.int(recorded.nrow),
        "dagster/column_schema": MetadataValue.table_schema(column_schema(schema)),
        "dagster/uri": MetadataValue.url(parquet_url(conn, written.table, recorded.data_sha)),
    }
    for asset_key in dict.fromkeys(parent_assets):
        entries[f"datom/parent/{asset_key.to_user_string()}"] = MetadataValue.asset(asset_key)
    return entries


_LINEAGE_SCHEMA = TableSchema(
    columns=[
        TableColumn("project", "string", description="the source's datom project"),
        TableColumn("table", "string", description="the source (an onboarded table)"),
        TableColumn(
            "data_sha",
            "string",
            description="the source version's data_sha (R datom names it version_sha)",
        ),
    ]
)


def source_lineage_table(value: Any) -> MetadataValue:
    """The recorded ``source_lineage`` as a table whose columns say what each id is."""
    rows = [
        TableRecord(
            {
                "project": str(r.get("project", "")),
                "table": str(r.get("table", "")),
                "data_sha": str(r.get("version_sha", "")),
            }
        )
        for r in _records(value)
    ]
    return MetadataValue.table(rows, schema=_LINEAGE_SCHEMA)


def written_line(table: str, version: str, metadata: Mapping[str, MetadataValue]) -> str:
    """The run log's line for one written table: table, version and the change."""
    return f"datom: {table} {version[:12]}: {metadata['datom/summary'].value}"


def _parent_row(parent: dc.ParentRef) -> TableRecord:
    return TableRecord(
        {
            "table": parent.table,
            "version": parent.version[:_PREFIX],
            "data_sha": parent.data_sha[:_PREFIX],
            "project": parent.source,
        }
    )


def _commit_value(conn: dc.Connection, commit: str) -> MetadataValue:
    remote = conn.repo.remote_url if conn.role == "developer" else None
    url = commit_url(remote, commit) if remote and commit else None
    return MetadataValue.url(url) if url else MetadataValue.text(commit)


_HOSTS = {
    "github.com": "{base}/commit/{sha}",
    "gitlab.com": "{base}/-/commit/{sha}",
    "bitbucket.org": "{base}/commits/{sha}",
}
_SHA = re.compile(r"[0-9a-f]{7,64}")


def commit_url(remote: str, commit: str) -> str | None:
    """A browser link to ``commit`` when ``remote`` is an https URL of a known host.

    Anything else (a path, ssh, an unknown host) gives None. Credentials in the remote
    URL are dropped, never shown.
    """
    if not _SHA.fullmatch(commit):
        return None
    parts = urlsplit(remote)
    host = (parts.hostname or "").lower()
    if parts.scheme != "https" or host not in _HOSTS:
        return None
    path = parts.path.rstrip("/").removesuffix(".git")
    if path.count("/") < 2:  # needs at least /owner/repository
        return None
    return _HOSTS[host].format(base=f"https://{host}{path}", sha=commit)


def parquet_url(conn: dc.Connection, table: str, data_sha: str) -> str:
    """The URL of a version's parquet object (path segments percent-encoded)."""
    key = conn.parquet_key(table, data_sha)
    return f"{conn.store.url}/{'/'.join(quote(part) for part in key.split('/'))}"


def column_schema(schema: pa.Schema) -> TableSchema:
    """The stored columns with their Arrow types, named as a reader expects them.

    A column's labels (a SAS/SPSS/Stata variable label, format, value labels) are its
    description.
    """
    labels = dc.column_labels(schema)
    return TableSchema(
        columns=[
            TableColumn(
                name=f.name,
                type=arrow_type_name(f.type),
                description=labels[f.name].describe() if f.name in labels else None,
            )
            for f in schema
        ]
    )


def arrow_type_name(t: pa.DataType) -> str:
    """``date``, ``timestamp[us, tz=UTC]``, ``categorical<string>``, ``string``, ``int64``..."""
    if pa.types.is_dictionary(t):
        return f"categorical<{arrow_type_name(t.value_type)}>"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return f"timestamp[{t.unit}, tz={t.tz}]" if t.tz else f"timestamp[{t.unit}]"
    if pa.types.is_time(t):
        return "time"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_boolean(t):
        return "bool"
    return str(t)


def _records(value: Any) -> list[dict[str, Any]]:
    # R writes a one-record array as a bare object.
    if value is None:
        return []
    return [dict(value)] if isinstance(value, Mapping) else [dict(v) for v in value]
