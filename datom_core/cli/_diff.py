"""What changed between two versions of a table, from their metadata alone (no data read)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from datom_core._identity._canonical import metadata_sha
from datom_core._project._documents import colnames_of

__all__ = ["TableDiff", "column_hashes_of", "diff_metadata"]


@dataclass(frozen=True)
class TableDiff:
    """Columns added, removed, changed or unchanged, and the row counts, of two versions.

    A column is *changed* when its ``column_hashes`` entry differs. Columns present on both
    sides of a version that records no ``column_hashes`` (very old projects) are *unknown*.
    """

    table: str
    from_version: str
    to_version: str
    from_nrow: int
    to_nrow: int
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]
    unknown: tuple[str, ...]
    reordered: bool  # the common columns appear in another order
    same_data: bool  # identical data_sha: the versions differ in metadata only

    @property
    def nrow_change(self) -> int:
        return self.to_nrow - self.from_nrow

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "from_version": self.from_version,
            "to_version": self.to_version,
            "same_data": self.same_data,
            "nrow": {"from": self.from_nrow, "to": self.to_nrow, "change": self.nrow_change},
            "columns": {
                "added": list(self.added),
                "removed": list(self.removed),
                "changed": list(self.changed),
                "unchanged": list(self.unchanged),
                "unknown": list(self.unknown),
                "reordered": self.reordered,
            },
        }


def diff_metadata(table: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> TableDiff:
    """Compare two metadata documents of ``table`` (``old`` first)."""
    old_cols, new_cols = _colnames(old), _colnames(new)
    old_hashes, new_hashes = column_hashes_of(old), column_hashes_of(new)
    common = [c for c in new_cols if c in old_cols]
    changed, unchanged, unknown = [], [], []
    for column in common:
        if column not in old_hashes or column not in new_hashes:
            unknown.append(column)
        elif old_hashes[column] == new_hashes[column]:
            unchanged.append(column)
        else:
            changed.append(column)
    return TableDiff(
        table=table,
        from_version=metadata_sha(old),
        to_version=metadata_sha(new),
        from_nrow=int(old.get("nrow", 0)),
        to_nrow=int(new.get("nrow", 0)),
        added=tuple(c for c in new_cols if c not in old_cols),
        removed=tuple(c for c in old_cols if c not in new_cols),
        changed=tuple(changed),
        unchanged=tuple(unchanged),
        unknown=tuple(unknown),
        reordered=[c for c in old_cols if c in new_cols] != common,
        same_data=old.get("data_sha") == new.get("data_sha"),
    )


def _colnames(metadata: Mapping[str, Any]) -> list[str]:
    if "colnames" not in metadata:
        return list(column_hashes_of(metadata))
    return [str(n) for n in colnames_of(metadata)]


def column_hashes_of(metadata: Mapping[str, Any]) -> dict[str, str]:
    """``{column: sha}`` from a version's ``column_hashes`` (empty if it records none)."""
    raw = metadata.get("column_hashes") or []
    if isinstance(raw, Mapping):
        # R writes a one-record array as a bare object; tolerate a {name: sha} mapping too.
        raw = (
            [raw]
            if "name" in raw and "sha" in raw
            else [{"name": k, "sha": v} for k, v in raw.items()]
        )
    return {str(e["name"]): str(e["sha"]) for e in raw if isinstance(e, Mapping) and "name" in e}
