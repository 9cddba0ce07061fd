"""What a version changed compared with the one before it: the materialization's summary.

The comparison is :meth:`datom_core.Connection.diff`: rows before and after, columns
added, removed and changed (from the parquet-footer column digests, so no data is read)
and, when the asset declares a key (``datom_annotations(key=[...])``), rows added,
removed and changed by key (this reads both versions). :func:`summary_metadata` turns the
:class:`datom_core.TableDiff` into the materialization's ``datom/changes`` markdown and
numeric entries that checks can use. Without a key, appended rows move every column's
digest, so columns are only reported "changed" when the row count stayed the same.
"""

from collections.abc import Sequence

import datom_core as dc
from dagster import MetadataValue
from datom_dagster._headline import columns_comparable

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


def summary_markdown(summary: dc.TableDiff, head: str | None = None) -> str:
    """The summary as a short markdown report (the Dagster UI renders it).

    ``head``: the first line (:func:`datom_dagster._headline.headline`); an unchanged
    version's report is that line alone.
    """
    if head is None:
        head = _plain_head(summary)
    if summary.before == summary.after:
        return f"**{summary.table}**: {head}"
    rows_before = "—" if summary.rows_before is None else str(summary.rows_before)
    changed = (
        _names(summary.columns_changed)
        if columns_comparable(summary)
        else "not compared (rows were added or removed, so every column's digest moved; "
        "declare a key to compare rows)"
        if summary.key is None
        else "not compared by column (see rows by key)"
    )
    lines = [
        f"**{summary.table}**: {head}",
        "",
        "| | before | after |",
        "|---|---|---|",
        f"| version | {_short(summary.before)} | {_short(summary.after)} |",
        f"| rows | {rows_before} | {summary.rows_after} |",
        "",
        f"- columns added: {_names(summary.columns_added)}",
        f"- columns removed: {_names(summary.columns_removed)}",
        f"- columns changed: {changed}",
    ]
    if summary.key is not None:
        lines.append(
            f"- rows by key ({_names(summary.key)}): {summary.rows_added} added, "
            f"{summary.rows_removed} removed, {summary.rows_changed} changed"
        )
    return "\n".join(lines)


def _plain_head(summary: dc.TableDiff) -> str:
    if summary.before is None:
        return f"first version `{summary.after[:12]}`"
    if summary.before == summary.after:
        return f"unchanged, version `{summary.after[:12]}`"
    return f"`{summary.before[:12]}` → `{summary.after[:12]}`"


def _short(version: str | None) -> str:
    return f"`{version[:12]}`" if version else "—"


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "none"


def summary_metadata(summary: dc.TableDiff, head: str | None = None) -> dict[str, MetadataValue]:
    """``datom/changes`` (markdown) and the numbers behind it (``datom/columns_changed``
    only when the row count did not move: see :mod:`datom_dagster._headline`)."""
    entries: dict[str, MetadataValue] = {
        "datom/changes": MetadataValue.md(summary_markdown(summary, head)),
        "datom/compared_with": MetadataValue.text(summary.before or ""),
        "datom/rows_after": MetadataValue.int(summary.rows_after),
        "datom/columns_added": MetadataValue.int(len(summary.columns_added)),
        "datom/columns_removed": MetadataValue.int(len(summary.columns_removed)),
    }
    if columns_comparable(summary):
        entries["datom/columns_changed"] = MetadataValue.int(len(summary.columns_changed))
    if summary.rows_before is not None:
        entries["datom/rows_before"] = MetadataValue.int(summary.rows_before)
    for name in ("rows_added", "rows_removed", "rows_changed"):
        value = getattr(summary, name)
        if value is not None:
            entries[f"datom/{name}"] = MetadataValue.int(value)
    return entries
