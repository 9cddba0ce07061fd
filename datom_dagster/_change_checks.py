"""Opt-in checks on what the latest version changed: its schema, and its row count.

Both compare the latest version of each of the asset's tables (each stored partition's,
for a partitioned asset) with the version before it, from the recorded metadata only
(column names and row counts; no data is read):

* :data:`SCHEMA_CHECK_NAME` fails when columns were added or removed;
* :data:`ROW_COUNT_CHECK_NAME` fails when the row count moved by more than ``threshold``
  (a fraction of the previous count: ``0.1`` allows ±10%).

A first version passes both. Failures have severity WARN, or ERROR when the check is
blocking (then downstream assets of the run are not materialized).
"""

from collections.abc import Callable

import datom_core as dc
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    MetadataValue,
    asset_check,
)
from datom_dagster._change import change_summary
from datom_dagster._targets import Target, stored_tables

__all__ = ["ROW_COUNT_CHECK_NAME", "SCHEMA_CHECK_NAME", "row_count_check", "schema_check"]

SCHEMA_CHECK_NAME = "datom_schema_change"
"""Name of the check ``build_datom_asset_checks(..., schema_change=True)`` adds (columns added,
removed or retyped by the latest version)."""
ROW_COUNT_CHECK_NAME = "datom_row_count_change"
"""Name of the check ``build_datom_asset_checks(..., row_count_change=f)`` adds (the row count
moved by more than the fraction ``f``)."""

Finding = Callable[[dc.TableDiff], str | None]


def schema_check(target: Target, io_manager_key: str, blocking: bool) -> AssetChecksDefinition:
    """Fails when the latest version added or removed columns."""

    def finding(s: dc.TableDiff) -> str | None:
        if s.before is None or not (s.columns_added or s.columns_removed):
            return None  # a first version has no schema to change from
        return f"columns added {list(s.columns_added)}, removed {list(s.columns_removed)}"

    return _build(
        target,
        io_manager_key,
        blocking,
        SCHEMA_CHECK_NAME,
        finding,
        "datom: the latest version has the columns of the one before it",
    )


def row_count_check(
    target: Target, io_manager_key: str, threshold: float, blocking: bool
) -> AssetChecksDefinition:
    """Fails when the row count moved by more than ``threshold`` of the previous count."""
    if not threshold >= 0:
        raise dc.InvalidArgumentError(
            f"asset {target.key.to_user_string()}: row_count_change must be a fraction >= 0 "
            f"(0.1 allows ±10%), not {threshold!r}"
        )

    def finding(s: dc.TableDiff) -> str | None:
        if s.rows_before is None:
            return None
        moved = abs(s.rows_after - s.rows_before)
        if moved <= threshold * s.rows_before:
            return None
        return f"rows {s.rows_before} -> {s.rows_after}, beyond ±{threshold:.0%}"

    return _build(
        target,
        io_manager_key,
        blocking,
        ROW_COUNT_CHECK_NAME,
        finding,
        f"datom: the row count moved by at most {threshold:.0%} from the version before",
    )


def _build(
    target: Target,
    io_manager_key: str,
    blocking: bool,
    name: str,
    finding: Finding,
    description: str,
) -> AssetChecksDefinition:
    @asset_check(
        asset=target.key,
        name=name,
        description=description,
        blocking=blocking,
        required_resource_keys={io_manager_key},
    )
    def _check(context: AssetCheckExecutionContext) -> AssetCheckResult:
        conn = getattr(context.resources, io_manager_key).connection()
        tables = stored_tables(conn, target, context)
        problems, summaries = [], []
        for table in tables:
            try:
                current = conn.resolve(table)
            except dc.NotFoundError:
                continue
            summary = change_summary(conn, table, current)
            summaries.append(summary)
            problem = finding(summary)
            if problem:
                problems.append(f"{table}: {problem}")
        return AssetCheckResult(
            passed=not problems,
            severity=AssetCheckSeverity.ERROR if blocking else AssetCheckSeverity.WARN,
            description="; ".join(problems) or None,
            metadata={
                "datom/tables_checked": MetadataValue.int(len(summaries)),
                "datom/problems": MetadataValue.json(problems),
                "datom/rows_before": MetadataValue.int(sum(s.rows_before or 0 for s in summaries)),
                "datom/rows_after": MetadataValue.int(sum(s.rows_after for s in summaries)),
            },
        )

    return _check
