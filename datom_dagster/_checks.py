"""Asset checks: is what datom recorded for an asset still intact?

What it records and how to use it is in the docstring of :func:`build_datom_asset_checks`.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import datom_core as dc
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    MetadataValue,
    asset_check,
)
from datom_dagster._change_checks import row_count_check, schema_check
from datom_dagster._targets import Target, stored_tables, targets

__all__ = ["DATOM_CHECK_NAME", "build_datom_asset_checks"]

DATOM_CHECK_NAME = "datom_integrity"
"""Name of the integrity-and-lineage check :func:`build_datom_asset_checks` adds to each asset."""


@dataclass(frozen=True)
class _Finding:
    table: str
    problem: str
    unverifiable: bool = False  # a parent's project is not reachable from this check


def build_datom_asset_checks(
    assets: Sequence[AssetsDefinition | AssetSpec | AssetKey | str | Sequence[str]],
    *,
    io_manager_key: str = "io_manager",
    other_projects: Sequence[str] = (),
    blocking: bool = False,
    schema_change: bool = False,
    row_count_change: float | None = None,
    change_checks_blocking: bool = False,
) -> list[AssetChecksDefinition]:
    """Integrity and lineage checks for chosen assets, and opt-in change checks.

    It adds one check, :data:`DATOM_CHECK_NAME`, to each chosen
    asset. For the latest version of the asset's table (every stored partition's table, for a
    partitioned asset) it verifies that:

    * the parquet object in the store still hashes to the version's ``parquet_sha``;
    * each parent version exists with the recorded ``data_sha``, and the version's
      ``source_lineage`` equals the union of its parents' ``source_lineage``.

    Parents in another datom project are read through the resources named in
    ``other_projects`` (``DatomResource`` or ``DatomIOManager`` keys); a parent whose project
    is not reachable makes the check fail with severity WARN rather than ERROR.

    ``io_manager_key`` names the :class:`~datom_dagster.DatomIOManager` that stores the
    assets; ``other_projects`` the resource keys of other datom projects their parents may
    live in. Pass the asset definitions (or specs) rather than bare keys when assets set
    ``datom_table`` metadata or are partitioned, so that their tables can be found.
    ``schema_change=True`` adds a check that fails when columns were added or removed;
    ``row_count_change=0.1`` one that fails when the row count moved by more than 10%;
    ``change_checks_blocking=True`` makes those two block downstream assets (their names:
    :data:`SCHEMA_CHECK_NAME`, :data:`ROW_COUNT_CHECK_NAME`).
    """
    checks = []
    for t in targets(assets):
        checks.append(_build(t, io_manager_key, tuple(other_projects), blocking))
        if schema_change:
            checks.append(schema_check(t, io_manager_key, change_checks_blocking))
        if row_count_change is not None:
            checks.append(
                row_count_check(t, io_manager_key, row_count_change, change_checks_blocking)
            )
    return checks


def _build(
    target: Target, io_manager_key: str, other_projects: tuple[str, ...], blocking: bool
) -> AssetChecksDefinition:
    @asset_check(
        asset=target.key,
        name=DATOM_CHECK_NAME,
        description=(
            "datom: the latest version's parquet matches its parquet_sha, and its "
            "source_lineage is the union of its parents'"
        ),
        blocking=blocking,
        required_resource_keys={io_manager_key, *other_projects},
    )
    def _check(context: AssetCheckExecutionContext) -> AssetCheckResult:
        own = getattr(context.resources, io_manager_key).connection()
        conns = {own.project_name: own}
        for key in other_projects:
            conn = getattr(context.resources, key).connection()
            conns.setdefault(conn.project_name, conn)
        tables = stored_tables(own, target, context)
        findings = [f for t in tables for f in verify_table(conns, own, t)]
        return _result(tables, findings)

    return _check


def verify_table(
    conns: Mapping[str, dc.Connection], conn: dc.Connection, table: str
) -> list[_Finding]:
    """Problems with the current version of ``table`` in ``conn``'s project (none: intact)."""
    try:
        metadata = conn.metadata(table)
    except dc.DatomError as e:
        return [_Finding(table, f"cannot read its metadata: {e}")]
    return _parquet_findings(conn, table, metadata) + _lineage_findings(conns, table, metadata)


def _parquet_findings(
    conn: dc.Connection, table: str, metadata: Mapping[str, Any]
) -> list[_Finding]:
    key = conn.parquet_key(table, metadata["data_sha"])
    try:
        actual = conn.store.sha256(key)
    except dc.DatomError as e:
        return [_Finding(table, f"parquet {key} unreadable: {e}")]
    expected = metadata.get("parquet_sha")
    if expected and actual != expected:
        return [_Finding(table, f"parquet {key} hashes to {actual}, recorded {expected}")]
    return []


def _lineage_findings(
    conns: Mapping[str, dc.Connection], table: str, metadata: Mapping[str, Any]
) -> list[_Finding]:
    parents = _records(metadata.get("parents"))
    if not parents:
        return []  # an onboarded table, or a root: its lineage is what it was given
    findings, expected = [], []
    for p in parents:
        where = f"parent {p['source']}/{p['table']}@{p['version'][:12]}"
        conn = conns.get(p["source"])
        if conn is None:
            findings.append(
                _Finding(
                    table,
                    f"{where}: project {p['source']!r} is not reachable from this check; "
                    "add its resource key to other_projects",
                    unverifiable=True,
                )
            )
            continue
        try:
            parent = conn.metadata(p["table"], p["version"])
        except dc.DatomError as e:
            findings.append(_Finding(table, f"{where}: {e}"))
            continue
        if parent["data_sha"] != p["data_sha"]:
            findings.append(_Finding(table, f"{where}: data_sha {parent['data_sha']} recorded"))
        expected.extend(_lineage_set(parent))
    if any(f.unverifiable for f in findings):
        return findings
    recorded = _lineage_set(metadata)
    if set(recorded) != set(expected):
        findings.append(
            _Finding(
                table,
                f"source_lineage {sorted(recorded)} is not the union of its parents' "
                f"{sorted(set(expected))}",
            )
        )
    return findings


def _lineage_set(metadata: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (s["project"], s["table"], s["version_sha"])
        for s in _records(metadata.get("source_lineage"))
    ]


def _records(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    return [dict(value)] if isinstance(value, Mapping) else [dict(v) for v in value]


def _result(tables: list[str], findings: list[_Finding]) -> AssetCheckResult:
    severity = (
        AssetCheckSeverity.WARN
        if findings and all(f.unverifiable for f in findings)
        else AssetCheckSeverity.ERROR
    )
    return AssetCheckResult(
        passed=not findings and bool(tables),
        severity=severity,
        description=None if tables else "no version of this asset is stored in datom yet",
        metadata={
            "datom/tables_checked": MetadataValue.int(len(tables)),
            "datom/problems": MetadataValue.json([f"{f.table}: {f.problem}" for f in findings]),
        },
    )
