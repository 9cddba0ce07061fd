"""What a version changed compared with the one before it: the materialization's summary.

The comparison is :meth:`datom_core.Connection.diff`: rows before and after, columns
added, removed and changed (from the parquet-footer column digests, so no data is read)
and, when the asset declares a key (``datom_annotations(key=[...])``), rows added,
removed and changed by key (this reads both versions). :func:`summary_metadata` turns the
:class:`datom_core.TableDiff` into the materialization's ``datom/changes`` markdown and
numeric entries that checks can use.
"""

from collections.abc import Sequence

import datom_core as dc
from dagster import MetadataValue

__all__ = ["change_summary", "summary_markdown", "summary_metadata"]


def change_summary(
    conn: dc.Connection,
    table: str,
    version: str | dc.TableMetadata,
    *,
    unchanged: bool = False,
    key: Sequence[str] | None = None,
    before: dc.TableMetadata | None = None,
) -> dc.TableDiff:
    """``version`` of ``table`` compared with the version before it, or with itself when
    the write that reported it changed nothing (``unchanged``).

    Given the recorded :class:`~datom_core.TableMetadata` (what a write returns), an
    unchanged version is summarised from that record alone: comparing a version with
    itself reads nothing (and the key columns are still checked). ``before``: the version
    the write replaced (``WriteResult.replaced``), so the history is not searched for it.
    """
    keys = list(key) if key else None
    if unchanged and isinstance(version, dc.TableMetadata):
        return _unchanged(table, version, keys)
    if unchanged:
        return conn.diff(table, version, version, key=keys)
    return conn.diff(table, before, version, key=keys)  # None: diff takes the one before


def _unchanged(table: str, record: dc.TableMetadata, key: list[str] | None) -> dc.TableDiff:
    missing = [k for k in key or () if k not in record.colnames]
    if missing:
        raise dc.InvalidArgumentError(
            f"table {table!r}: key column(s) {missing} are not in version {record.version[:12]}"
        )
    columns = tuple(record.colnames)
    return dc.TableDiff(
        table=table,
        before=record.version,
        after=record.version,
        rows_before=record.nrow,
        rows_after=record.nrow,
        columns_added=(),
        columns_removed=(),
        columns_changed=(),
        key=tuple(key) if key else None,
        rows_added=0 if key else None,
        rows_removed=0 if key else None,
        rows_changed=0 if key else None,
        same_data=True,
        columns_unchanged=columns,
    )


def summary_markdown(summary: dc.TableDiff) -> str:
    """The summary as a short markdown report (the Dagster UI renders it)."""
    if summary.before is None:
        head = f"**{summary.table}**: first version `{summary.after[:12]}`"
    elif summary.before == summary.after:
        head = f"**{summary.table}**: unchanged, version `{summary.after[:12]}`"
    else:
        head = f"**{summary.table}**: `{summary.before[:12]}` → `{summary.after[:12]}`"
    rows_before = "—" if summary.rows_before is None else str(summary.rows_before)
    lines = [
        head,
        "",
        "| | before | after |",
        "|---|---|---|",
        f"| rows | {rows_before} | {summary.rows_after} |",
        "",
        f"- columns added: {_names(summary.columns_added)}",
        f"- columns removed: {_names(summary.columns_removed)}",
        f"- columns changed: {_names(summary.columns_changed)}",
    ]
    if summary.key is not None:
        lines.append(
            f"- rows by key ({_names(summary.key)}): {summary.rows_added} added, "
            f"{summary.rows_removed} removed, {summary.rows_changed} changed"
        )
    return "\n".join(lines)


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "none"


def summary_metadata(summary: dc.TableDiff) -> dict[str, MetadataValue]:
    """``datom/changes`` (markdown) and the numbers behind it."""
    entries: dict[str, MetadataValue] = {
        "datom/changes": MetadataValue.md(summary_markdown(summary)),
        "datom/compared_with": MetadataValue.text(summary.before or ""),
        "datom/rows_after": MetadataValue.int(summary.rows_after),
        "datom/columns_added": MetadataValue.int(len(summary.columns_added)),
        "datom/columns_removed": MetadataValue.int(len(summary.columns_removed)),
        "datom/columns_changed": MetadataValue.int(len(summary.columns_changed)),
    }
    if summary.rows_before is not None:
        entries["datom/rows_before"] = MetadataValue.int(summary.rows_before)
    for name in ("rows_added", "rows_removed", "rows_changed"):
        value = getattr(summary, name)
        if value is not None:
            entries[f"datom/{name}"] = MetadataValue.int(value)
    return entries
