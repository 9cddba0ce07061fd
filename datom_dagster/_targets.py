"""Which assets a check covers, and the datom tables that hold them."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import datom_core as dc
from dagster import (
    AssetCheckExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    PartitionsDefinition,
)
from datom_dagster._annotations import plain
from datom_dagster._naming import TABLE_METADATA_KEY, table_name

__all__ = ["Target", "stored_tables", "targets"]


@dataclass(frozen=True)
class Target:
    """An asset a check covers: its key, table override and partitions."""

    key: AssetKey
    override: str | None
    partitions_def: PartitionsDefinition | None


def targets(assets: Iterable[Any]) -> list[Target]:
    """The assets named by definitions, specs or keys (a multi-asset gives each key)."""
    found = []
    for item in assets:
        if isinstance(item, AssetsDefinition):
            for key in item.keys:
                override = plain(item.get_asset_spec(key).metadata.get(TABLE_METADATA_KEY))
                found.append(Target(key, override, item.partitions_def))
        elif isinstance(item, AssetSpec):
            override = plain((item.metadata or {}).get(TABLE_METADATA_KEY))
            found.append(Target(item.key, override, item.partitions_def))
        else:
            found.append(Target(AssetKey.from_coercible(item), None, None))
    return found


def stored_tables(
    conn: dc.Connection, target: Target, context: AssetCheckExecutionContext
) -> list[str]:
    """The tables of ``target`` stored in ``conn`` (every stored partition's table)."""
    if target.partitions_def is None:
        return [table_name(target.key, override=target.override)]
    keys = target.partitions_def.get_partition_keys(dynamic_partitions_store=context.instance)
    wanted = {
        table_name(target.key, k, partitions_def=target.partitions_def, override=target.override)
        for k in keys
    }
    return sorted(t.name for t in conn.tables() if t.name in wanted)
