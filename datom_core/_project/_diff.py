"""What changed between two versions of a table.

Columns come from the two versions' parquet-footer digests (a few KB each, no data
read; recomputed when a parquet has none). Row counts of a keyed diff read both
versions' data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from datom_core._errors import InvalidArgumentError, NotFoundError
from datom_core._project._columns import column_digests
from datom_core._project._context import ProjectContext
from datom_core._project._model import TableMetadata
from datom_core._project._read import history_entries, read_table

__all__ = ["TableDiff", "diff_versions"]


@dataclass(frozen=True)
class TableDiff:
    """Two versions of a table compared: ``before`` (None for a first version) and
    ``after``; columns added, removed and changed (their digests differ); with a ``key``,
    the rows added, removed and changed between the two (matched on the key columns)."""

    table: str
    before: str | None
    after: str
    rows_before: int | None
    rows_after: int
    columns_added: tuple[str, ...]
    columns_removed: tuple[str, ...]
    columns_changed: tuple[str, ...]
    key: tuple[str, ...] | None = None
    rows_added: int | None = None
    rows_removed: int | None = None
    rows_changed: int | None = None
    same_data: bool = False
    columns_unchanged: tuple[str, ...] = ()
    reordered: bool = False

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary (what ``datom diff --json`` prints)."""
        return {
            "table": self.table,
            "before": self.before,
            "after": self.after,
            "same_data": self.same_data,
            "rows": {"before": self.rows_before, "after": self.rows_after},
            "columns": {
                "added": list(self.columns_added),
                "removed": list(self.columns_removed),
                "changed": list(self.columns_changed),
                "unchanged": list(self.columns_unchanged),
                "reordered": self.reordered,
            },
            "key": list(self.key) if self.key else None,
            "rows_added": self.rows_added,
            "rows_removed": self.rows_removed,
            "rows_changed": self.rows_changed,
        }

    def to_markdown(self) -> str:
        """A short Markdown report (for a pull request, a Dagster description...)."""
        before = self.before[:12] if self.before else "(none)"
        lines = [f"**{self.table}**: `{before}` → `{self.after[:12]}`", ""]
        rows = (
            f"{self.rows_before} → {self.rows_after}"
            if self.rows_before is not None
            else str(self.rows_after)
        )
        lines.append(f"* rows: {rows}")
        if self.same_data:
            lines.append("* data: identical (the versions differ in metadata only)")
        for label, names in (
            ("added", self.columns_added),
            ("removed", self.columns_removed),
            ("changed", self.columns_changed),
        ):
            if names:
                lines.append(f"* columns {label}: " + ", ".join(f"`{n}`" for n in names))
        if self.reordered:
            lines.append("* column order changed")
        if self.key:
            lines.append(
                f"* by key ({', '.join(self.key)}): {self.rows_added} added, "
                f"{self.rows_removed} removed, {self.rows_changed} changed"
            )
        return "\n".join(lines) + "\n"


def previous_version(ctx: ProjectContext, table: str, after: str) -> str | None:
    """The version recorded just before ``after`` in the history (None for the first)."""
    versions = [h.version for h in history_entries(ctx, table)]
    if after not in versions:
        raise NotFoundError(f"table {table!r}: version {after} is not in its history")
    i = versions.index(after)
    return versions[i + 1] if i + 1 < len(versions) else None


def diff_versions(
    ctx: ProjectContext,
    table: str,
    before: TableMetadata | None,
    after: TableMetadata,
    key: Sequence[str] | None = None,
) -> TableDiff:
    """Compare ``before`` with ``after`` (see :class:`TableDiff`)."""
    new_cols = list(after.colnames)
    old_cols = list(before.colnames) if before else []
    new_d = {c.name: c.sha for c in column_digests(ctx, table, after)}
    old_d = {c.name: c.sha for c in column_digests(ctx, table, before)} if before else {}
    common = [c for c in new_cols if c in old_cols]
    keyed: tuple[int | None, int | None, int | None] = (None, None, None)
    key_t = tuple(key) if key else None
    if key_t:
        keyed = _keyed_counts(ctx, table, before, after, key_t)
    return TableDiff(
        table=table,
        before=before.version if before else None,
        after=after.version,
        rows_before=before.nrow if before else None,
        rows_after=after.nrow,
        columns_added=tuple(c for c in new_cols if c not in old_cols),
        columns_removed=tuple(c for c in old_cols if c not in new_cols),
        columns_changed=tuple(c for c in common if old_d.get(c) != new_d.get(c)),
        key=key_t,
        rows_added=keyed[0],
        rows_removed=keyed[1],
        rows_changed=keyed[2],
        same_data=before is not None and before.data_sha == after.data_sha,
        columns_unchanged=tuple(c for c in common if old_d.get(c) == new_d.get(c)),
        reordered=[c for c in old_cols if c in new_cols] != common,
    )


def _row_digests(table: pa.Table, key: tuple[str, ...]) -> dict[tuple[Any, ...], str]:
    keys = list(zip(*(table.column(k).to_pylist() for k in key), strict=True))
    dupes = [k for k, n in Counter(keys).items() if n > 1]
    if dupes:
        raise InvalidArgumentError(
            f"key {list(key)} does not identify rows: {len(dupes)} value(s) repeat "
            f"(e.g. {dupes[0]!r}); choose key columns that are unique"
        )
    # repr() compares missing values and NaN as equal, as the data's identity does.
    rows = zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True)
    return {k: repr(row) for k, row in zip(keys, rows, strict=True)}


def _keyed_counts(
    ctx: ProjectContext,
    table: str,
    before: TableMetadata | None,
    after: TableMetadata,
    key: tuple[str, ...],
) -> tuple[int, int, int]:
    for md in (m for m in (before, after) if m is not None):
        missing = [k for k in key if k not in md.colnames]
        if missing:
            raise NotFoundError(  # a missing column is "not found", as read() says
                f"table {table!r}: key column(s) {missing} are not in version {md.version[:12]}"
            )
    new = _row_digests(read_table(ctx, table, after, as_="arrow"), key)
    old = _row_digests(read_table(ctx, table, before, as_="arrow"), key) if before else {}
    added = sum(1 for k in new if k not in old)
    removed = sum(1 for k in old if k not in new)
    changed = sum(1 for k in new if k in old and new[k] != old[k])
    return added, removed, changed
