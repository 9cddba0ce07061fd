"""What a version changed compared with the one before it: the materialization's summary.

:func:`change_summary` compares two versions of a table: rows before and after, columns
added, removed and changed (from the recorded per-column digests, so no data is read)
and, when the asset declares a key (``datom_annotations(key=[...])``), rows added,
removed and changed by key (this reads both versions). :func:`summary_metadata` turns it
into the materialization's ``datom/changes`` markdown and numeric entries that checks and
``dagster/...`` rules can use.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

import datom_core as dc
from dagster import MetadataValue

__all__ = ["ChangeSummary", "change_summary", "summary_metadata"]


@dataclass(frozen=True)
class ChangeSummary:
    """The difference between version ``before`` (None: the first version) and ``after``."""

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

    def to_markdown(self) -> str:
        """The summary as a short markdown report (the Dagster UI renders it)."""
        if self.before is None:
            head = f"**{self.table}**: first version `{self.after[:12]}`"
        elif self.before == self.after:
            head = f"**{self.table}**: unchanged, version `{self.after[:12]}`"
        else:
            head = f"**{self.table}**: `{self.before[:12]}` → `{self.after[:12]}`"
        rows_before = "—" if self.rows_before is None else str(self.rows_before)
        lines = [
            head,
            "",
            "| | before | after |",
            "|---|---|---|",
            f"| rows | {rows_before} | {self.rows_after} |",
            "",
            f"- columns added: {_names(self.columns_added)}",
            f"- columns removed: {_names(self.columns_removed)}",
            f"- columns changed: {_names(self.columns_changed)}",
        ]
        if self.key is not None:
            lines.append(
                f"- rows by key ({_names(self.key)}): {self.rows_added} added, "
                f"{self.rows_removed} removed, {self.rows_changed} changed"
            )
        return "\n".join(lines)


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "none"


def previous_version(conn: dc.Connection, table: str, version: str) -> str | None:
    """The version recorded just before ``version`` in the table's history (None: first)."""
    history = [v.version for v in conn.history(table)]  # newest first
    if version not in history:
        return None
    index = history.index(version)
    return history[index + 1] if index + 1 < len(history) else None


def change_summary(
    conn: dc.Connection,
    table: str,
    before: str | None,
    after: str,
    *,
    key: Sequence[str] | None = None,
) -> ChangeSummary:
    """Compare version ``before`` of ``table`` with version ``after`` (see the module)."""
    new = conn.metadata(table, after)
    old = conn.metadata(table, before) if before is not None else None
    new_cols, old_cols = _digests(new), _digests(old) if old is not None else {}
    summary = ChangeSummary(
        table=table,
        before=before,
        after=after,
        rows_before=int(old["nrow"]) if old is not None else None,
        rows_after=int(new["nrow"]),
        columns_added=tuple(c for c in new_cols if c not in old_cols) if old else (),
        columns_removed=tuple(c for c in old_cols if c not in new_cols),
        columns_changed=tuple(c for c in new_cols if c in old_cols and new_cols[c] != old_cols[c]),
    )
    if not key:
        return summary
    counts = _keyed_counts(conn, table, before, after, tuple(key), old is None)
    return ChangeSummary(**{**summary.__dict__, "key": tuple(key), **counts})


def _digests(metadata: Mapping[str, Any]) -> dict[str, str]:
    hashes = metadata.get("column_hashes") or []
    if isinstance(hashes, Mapping):  # R writes a one-element array as a bare object
        hashes = [hashes]
    return {str(h["name"]): str(h["sha"]) for h in hashes}


def _keyed_counts(
    conn: dc.Connection,
    table: str,
    before: str | None,
    after: str,
    key: tuple[str, ...],
    first: bool,
) -> dict[str, int]:
    new = _keyed(conn, table, after, key)
    if first or before is None:
        return {"rows_added": len(new), "rows_removed": 0, "rows_changed": 0}
    old = _keyed(conn, table, before, key)
    common = new.index.intersection(old.index)
    columns = [c for c in new.columns if c in old.columns]
    # As objects: categoricals with other categories, or a column whose dtype moved
    # between versions, still compare value by value.
    a = new.loc[common, columns].astype(object)
    b = old.loc[common, columns].astype(object)
    differs = ~((a == b) | (a.isna() & b.isna()))
    return {
        "rows_added": len(new.index.difference(old.index)),
        "rows_removed": len(old.index.difference(new.index)),
        "rows_changed": int(differs.any(axis=1).sum()),
    }


def _keyed(conn: dc.Connection, table: str, version: str, key: tuple[str, ...]) -> pd.DataFrame:
    frame = conn.read(table, version, as_="pandas")
    missing = [k for k in key if k not in frame.columns]
    if missing:
        raise dc.DatomError(
            f"table {table!r} version {version[:12]}: key column(s) {missing} are not in the "
            f"table (columns: {list(frame.columns)}); fix the asset's datom_key"
        )
    indexed = frame.set_index(list(key))
    if not indexed.index.is_unique:
        raise dc.DatomError(
            f"table {table!r} version {version[:12]}: key {list(key)} does not identify rows "
            "(duplicate key values); choose columns that are unique together"
        )
    return indexed


def summary_metadata(summary: ChangeSummary) -> dict[str, MetadataValue]:
    """``datom/changes`` (markdown) and the numbers behind it."""
    entries: dict[str, MetadataValue] = {
        "datom/changes": MetadataValue.md(summary.to_markdown()),
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
