"""Data cuts: one asset that pins the exact current versions of chosen assets as a set.

What it records and how to use it is in the docstring of :func:`datom_data_cut`.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import datom_core as dc
from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    DataVersion,
    Failure,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableRecord,
    TableSchema,
    asset,
)
from datom_dagster._config import DatomProject, DatomResource
from datom_dagster._cut_lock import LockConfig, lock_refusal
from datom_dagster._naming import table_name
from datom_dagster._product import default_product, product_connection
from datom_dagster._set_pins import AS_OF_SET_TAG, SetPin, register_product
from datom_dagster._targets import Target, targets

__all__ = ["CUT_GROUP", "cut_key", "cut_members", "datom_data_cut", "source_connection"]

CUT_GROUP = "datom_cuts"
"""The asset group of data cuts, unless one is given."""

Selection = Sequence[AssetsDefinition | AssetSpec | AssetKey | str | Sequence[str]]


def cut_key(name: str) -> AssetKey:
    """The default asset key of the cut ``name``: ``datom_cut/<name as an identifier>``."""
    return AssetKey(["datom_cut", "".join(c if c.isalnum() else "_" for c in name).lower()])


def datom_data_cut(
    name: str,
    selection: Selection,
    *,
    project: DatomResource | None = None,
    tags: Mapping[str, str | Sequence[str]] | None = None,
    source: str = "io_manager",
    key: AssetKey | str | Sequence[str] | None = None,
    group_name: str | None = CUT_GROUP,
    description: str | None = None,
    locked: bool = False,
) -> AssetsDefinition:
    """A data cut: an asset that pins the exact current versions of chosen assets as a set.

    It builds an asset (default key ``datom_cut/<name>``) that depends on
    the selected assets and, when materialized, writes a set of the current version of each
    selected asset's table (every stored partition of a partitioned one) into the product
    repo of the cut (``project``, by default a project named after the cut in the datom home)::

        lock = datom_data_cut("STUDY-001 DB lock", [dm, ex, adsl, adae],
                              tags={"milestone": "database lock"})

    The cut is refused, and nothing is written, when an output's recorded parents name a
    version the cut pins differently (the output was not rebuilt after its input moved), or
    when a selected asset has no datom table yet. The materialization shows the set's
    version, member count and the members as a table, and the pin to re-run a graph as of
    the cut (the run tag :data:`~datom_dagster.AS_OF_SET_TAG`, ``datom/as_of_set``); its Dagster
    data version is the set's ``data_sha``. An identical cut is ``change == "none"``.

    ``locked=True`` makes the cut a lock: once recorded, a materialization that would move
    any member fails with the moves (and how to record a new cut deliberately), and the cut
    is never shown as stale::

        lock = datom_data_cut("STUDY-001 DB lock", [dm, ex, adsl, adae], locked=True)

    ``name``: the set's name (a table name: letters, digits, ``_ - ( )`` and spaces).
    ``selection``: asset definitions, specs or keys, all stored through the
    :class:`~datom_dagster.DatomIOManager` (or resource) under the resource key ``source``.
    ``project``: the product repo holding the set (default :func:`default_product`).
    ``tags``: the set's labels (text, or lists of text).
    ``locked``: once recorded, the cut refuses to move (:mod:`datom_dagster._cut_lock`).
    """
    dc.validate_table_name(name)
    chosen = targets(selection)
    if not chosen:
        raise dc.InvalidArgumentError(f"data cut {name!r}: select at least one asset")
    product = project if project is not None else default_product(name)
    labels = dict(tags or {})
    register_product(product.project_name, product)

    asset_key = AssetKey.from_coercible(key) if key is not None else cut_key(name)
    metadata: dict[str, Any] = {"datom/set": name, "datom/set_project": product.project_name}
    if locked:
        metadata["datom/locked"] = True
        for t in chosen:
            metadata[f"datom/member/{t.key.to_user_string()}"] = MetadataValue.asset(t.key)

    def body(context: AssetExecutionContext, relock: bool) -> MaterializeResult:
        src = source_connection(context, source)
        members = cut_members(src, chosen, context)
        message = f"dagster: data cut {name} (run {context.run.run_id})"
        try:
            conn = product_connection(product, name)
            if locked and not relock:
                refusal = lock_refusal(
                    conn, name, [m for m, _, _ in members], labels, context.op_def.name
                )
                if refusal is not None:
                    raise Failure(description=refusal, allow_retries=False)
            if relock:
                message += ", relocked deliberately"
            result = conn.write_set([m for m, _, _ in members], tags=labels, message=message)
        except dc.InconsistentParentsError as e:
            raise Failure(
                description=f"data cut {name!r} refused, nothing was written: {e}. "
                "Rematerialize the outputs built from older inputs, then cut again.",
                allow_retries=False,
            ) from e
        except dc.DatomError as e:
            raise Failure(description=f"data cut {name!r}: {e}", allow_retries=False) from e
        pin = SetPin(conn.project_name, name, result.version)
        context.log.info(
            f"datom: cut {name} -> {result.version[:12]} ({result.change}, "
            f"{result.member_count} members); re-run as of it with {AS_OF_SET_TAG}={pin}"
        )
        return MaterializeResult(
            metadata=_cut_metadata(result, pin, members)
            | ({"datom/locked": MetadataValue.bool(True)} if locked else {}),
            data_version=DataVersion(result.data_sha),
        )

    decorate = asset(
        key=asset_key,
        # A lock does not follow its inputs: no dependency, so never "Unsynced" (_cut_lock).
        deps=[] if locked else [t.key for t in chosen],
        required_resource_keys={source},
        group_name=group_name,
        kinds={"datom"},
        description=description
        or (
            f"Locked data cut {name!r}: the exact versions of its inputs, recorded once."
            if locked
            else f"Data cut {name!r}: the exact versions of its inputs."
        ),
        metadata=metadata,
    )
    if locked:

        def _locked(context: AssetExecutionContext, config: LockConfig) -> MaterializeResult:
            return body(context, config.relock)

        return decorate(_locked)

    def _cut(context: AssetExecutionContext) -> MaterializeResult:
        return body(context, False)

    return decorate(_cut)


def source_connection(context: Any, source: str) -> dc.Connection:
    """The connection of the project the selected assets are stored in."""
    resource = getattr(context.resources, source, None)
    if not isinstance(resource, DatomProject):
        raise Failure(
            description=f"data cut: resource {source!r} is not a DatomIOManager or "
            "DatomResource; pass source= naming the one that stores the selected assets",
            allow_retries=False,
        )
    return resource.connection()


def cut_members(
    conn: dc.Connection, chosen: Sequence[Target], context: Any
) -> list[tuple[dc.SetMember, str, str | None]]:
    """(member, asset label, partition key) for the current version of each table."""
    current = {t.name: t.current_version for t in conn.tables()}
    out: list[tuple[dc.SetMember, str, str | None]] = []
    missing: list[str] = []
    for target in chosen:
        label = target.key.to_user_string()
        tables = _tables(target, context)
        stored = [(pk, n) for pk, n in tables if n in current]
        if not stored:
            missing.append(label)
        for pk, table in stored:
            tags = {"dagster_asset": label} | ({"dagster_partition": pk} if pk else {})
            out.append((conn.member(table, current[table], tags=tags), label, pk))
    if missing:
        raise Failure(
            description=f"data cut: {', '.join(missing)} has no datom table in project "
            f"{conn.project_name!r}; materialize it first. Nothing was written.",
            allow_retries=False,
        )
    return out


def _tables(target: Target, context: Any) -> list[tuple[str | None, str]]:
    if target.partitions_def is None:
        return [(None, table_name(target.key, override=target.override))]
    keys = target.partitions_def.get_partition_keys(dynamic_partitions_store=context.instance)
    return [
        (
            k,
            table_name(
                target.key, k, partitions_def=target.partitions_def, override=target.override
            ),
        )
        for k in keys
    ]


def _cut_metadata(
    result: dc.SetWriteResult, pin: SetPin, members: Sequence[tuple[dc.SetMember, str, str | None]]
) -> dict[str, Any]:
    columns = ["asset", "partition", "project", "table", "version"]
    records = [
        TableRecord(
            {
                "asset": label,
                "partition": pk or "",
                "project": m.project,
                "table": m.name,
                "version": m.version,
            }
        )  # fmt: skip
        for m, label, pk in members
    ]
    return {
        "datom/set": pin.name,
        "datom/set_project": pin.project,
        "datom/set_version": result.version,
        "datom/data_sha": result.data_sha,
        "datom/change": result.change,
        "datom/member_count": MetadataValue.int(result.member_count),
        "datom/members": MetadataValue.table(
            records, schema=TableSchema([TableColumn(c, "string") for c in columns])
        ),
        "datom/as_of_set": MetadataValue.text(f"{AS_OF_SET_TAG}={pin}"),
        "datom/commit": result.commit or "",
    }
