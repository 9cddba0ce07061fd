"""The first line of a materialization: which version this is and what it changed.

A reviewer reads ``v3 of 4, was v2 — full: +1 row, 2 columns changed`` before any 64-hex
id: the version's place in its table's history (oldest is v1), the version it replaced,
and the change in words. A re-run that changed nothing says so and points at the
version that stands: ``unchanged — still v3 (written 2026-01-31T09:00:00Z)``.

Columns are compared by their parquet-footer digests, which cover every row of a
column: when rows were added or removed, every column's digest moves, so "columns
changed" is only stated when the row count is the same (with a key, the rows added,
removed and changed by key say what moved).
"""

from dataclasses import dataclass

import datom_core as dc

__all__ = ["Position", "columns_comparable", "headline", "position"]


@dataclass(frozen=True)
class Position:
    """Where a version stands in its table's history (``ordinal`` 1 is the oldest)."""

    ordinal: int
    count: int
    previous: int | None  # the ordinal of the version before it, None for the first
    written: str  # when this version was recorded (the history's timestamp)

    def label(self) -> str:
        """``v3 of 4, was v2`` (``v1 of 1`` for a first version)."""
        was = f", was v{self.previous}" if self.previous else ""
        return f"v{self.ordinal} of {self.count}{was}"


def position(conn: dc.Connection, table: str, version: str) -> Position | None:
    """The position of ``version`` in ``table``'s history (None: not in it)."""
    history = conn.history(table)  # newest first
    for index, entry in enumerate(history):
        if entry.version == version:
            ordinal = len(history) - index
            return Position(ordinal, len(history), ordinal - 1 or None, entry.timestamp)
    return None


def columns_comparable(summary: dc.TableDiff) -> bool:
    """Whether "columns changed" means something for this pair (see the module docstring)."""
    return summary.rows_before is None or summary.rows_before == summary.rows_after


def headline(change: str, summary: dc.TableDiff, where: Position | None) -> str:
    """The first line: position, then the change in words."""
    if change == "none":
        still = f"still v{where.ordinal} (written {where.written})" if where else "same version"
        return f"unchanged — {still}"
    label = f"{where.label()} — " if where else ""
    if summary.before is None:
        return (
            f"{label}first version: {_n(summary.rows_after, 'row')}, "
            f"{_n(len(summary.columns_unchanged) + len(summary.columns_added), 'column')}"
        )
    return f"{label}{change}: {', '.join(_parts(change, summary))}"


def _parts(change: str, s: dc.TableDiff) -> list[str]:
    if change == "metadata_only" or s.same_data:
        return ["same data, new metadata"]
    parts = []
    if s.key is not None and s.rows_added is not None:  # rows matched by the asset's key
        parts += [f"+{_n(s.rows_added, 'row')}"] if s.rows_added else []
        parts += [f"-{_n(s.rows_removed or 0, 'row')}"] if s.rows_removed else []
        parts += [f"{_n(s.rows_changed or 0, 'row')} changed"] if s.rows_changed else []
    elif s.rows_before is not None and s.rows_after != s.rows_before:
        delta = s.rows_after - s.rows_before
        parts.append(f"{'+' if delta > 0 else '-'}{_n(abs(delta), 'row')}")
    if s.columns_added:
        parts.append(f"+{_n(len(s.columns_added), 'column')}")
    if s.columns_removed:
        parts.append(f"-{_n(len(s.columns_removed), 'column')}")
    if columns_comparable(s) and s.columns_changed:
        parts.append(f"{_n(len(s.columns_changed), 'column')} changed")
    return parts or ["rows reordered"]


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"
