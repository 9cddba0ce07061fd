"""Onboarding file drops with Dagster: the inbox assets and the inbox sensor.

The docstrings of :func:`datom_inbox_assets` and :func:`datom_inbox_sensor` say what each
does.
"""

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

import datom_core as dc
from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    AssetSpec,
    DataVersion,
    DefaultSensorStatus,
    Failure,
    MaterializeResult,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    multi_asset,
    sensor,
)
from datom_dagster._annotations import plain
from datom_dagster._metadata import Written, materialization_metadata, written_line

__all__ = ["datom_inbox_assets", "datom_inbox_sensor"]

_ONBOARD = ("new", "changed")
_PROBLEMS = ("unsupported_format", "invalid_name", "refused", "error", "stale")


def datom_inbox_assets(
    tables: Sequence[str],
    *,
    resource_key: str = "datom",
    inbox: str | None = None,
    inbox_storage_options: Mapping[str, Any] | None = None,
    group_name: str | None = "raw",
    key_prefix: Sequence[str] = (),
    name: str = "datom_inbox",
    encoding: str | None = None,
) -> AssetsDefinition:
    """One asset per raw table, materialized by syncing its inbox file into datom.

    The file ``dm.csv`` becomes table and asset ``dm``. Materializing one of them syncs its
    inbox file into datom and reports the same ``datom/*`` metadata as
    :class:`~datom_dagster.DatomIOManager`, with the table's ``data_sha`` as the Dagster
    data version: downstream assets go stale exactly when a new extract changes the data.

    ``tables`` are the expected table names (file stems); ``inbox`` the folder or URL the
    files arrive in (default: the clone's ``input_files/``; ``inbox_storage_options`` go to
    its fsspec filesystem, e.g. an S3 endpoint); ``resource_key`` names a
    :class:`~datom_dagster.DatomResource` for the project. ``encoding`` is the encoding of
    the files' text (``"cp1252"``, ...; see :func:`datom_core.read_extract`); a fallback
    encoding datom had to use is logged with the run.
    """
    keys = {dc.validate_table_name(table): AssetKey([*key_prefix, table]) for table in tables}
    specs = [
        AssetSpec(
            key,
            group_name=group_name,
            description=f"Raw table {table!r}, onboarded from its extract in the inbox.",
            metadata={"datom_table": table},
            kinds={"datom"},
        )
        for table, key in keys.items()
    ]

    @multi_asset(specs=specs, can_subset=True, name=name, required_resource_keys={resource_key})
    def _onboard(context: AssetExecutionContext) -> Iterator[MaterializeResult]:
        conn = getattr(context.resources, resource_key).connection()
        wanted = {t for t, k in keys.items() if k in context.selected_asset_keys}
        results = conn.sync(
            path=inbox, tables=wanted, storage_options=inbox_storage_options, encoding=encoding
        )
        synced = {r.name: r for r in results}
        for row in results:
            if row.status != "error" and row.message:
                context.log.info(f"{row.name}: {row.message}")
        failures = [f"{r.name}: {r.message}" for r in synced.values() if r.status == "error"]
        for table in sorted(wanted):
            if table in synced and synced[table].status == "error":
                continue
            change = synced[table].change if table in synced else None
            yield _result(conn, keys[table], table, change, inbox, context.log)
        if failures:
            where = inbox_folder(conn, inbox)
            raise Failure(description=f"could not onboard from {where}: " + "; ".join(failures))

    return _onboard


def _result(
    conn: dc.Connection,
    key: AssetKey,
    table: str,
    change: str | None,
    inbox: str | None,
    log: Any,
) -> MaterializeResult:
    try:
        record = conn.version(table)
    except dc.NotFoundError as e:
        raise Failure(
            description=f"no extract for table {table!r} has been onboarded yet: drop its file "
            f"(e.g. {table}.csv) into {inbox_folder(conn, inbox)} first"
        ) from e
    written = Written(table, record.version, change or "none", None, record)
    schema = conn.read(table, record, as_="arrow").schema
    metadata = materialization_metadata(conn, written, schema)
    log.info(written_line(table, record.version, metadata))
    return MaterializeResult(
        asset_key=key,
        metadata=metadata,
        data_version=DataVersion(record.data_sha),
    )


def datom_inbox_sensor(
    assets: AssetsDefinition,
    *,
    resource_key: str = "datom",
    inbox: str | None = None,
    inbox_storage_options: Mapping[str, Any] | None = None,
    name: str = "datom_inbox_sensor",
    minimum_interval_seconds: int = 30,
    default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
) -> SensorDefinition:
    """A sensor requesting one run of ``assets`` (from :func:`datom_inbox_assets`) per
    new or changed inbox file.

    It watches the inbox (the clone's ``input_files/``, any local folder or an ``s3://``
    prefix: ``inbox``, with ``inbox_storage_options`` for fsspec). Each tick scans cheaply
    (a file is re-hashed only when its size or modification time moved) and requests one
    run per new or changed file, with run key ``<table>:<original_file_sha>:<current
    version>``: the same file is never onboarded twice, while an older extract dropped
    again after a newer one is. Unsupported or broken files are reported in the tick's log
    and skip reason without holding back the others. The cursor (what was requested last,
    per table) lives in the Dagster instance, so it survives a restart of the daemon.

    The sensor is stopped until started in the UI (Dagster's default);
    ``default_status=DefaultSensorStatus.RUNNING`` starts it with the daemon.
    """
    by_table = {_table_of(assets, key): key for key in assets.keys}

    @sensor(
        name=name,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        asset_selection=AssetSelection.assets(*assets.keys),
        required_resource_keys={resource_key},
        description="Onboards new and changed extracts dropped into "
        + (inbox or "the project's inbox (input_files/ in its clone)")
        + ".",
    )
    def _sensor(context: SensorEvaluationContext, **resources: Any) -> SensorResult:
        # Dagster hands required resources over as keyword arguments when the sensor is
        # called directly, and only on the context when the daemon evaluates it.
        project = resources.get(resource_key) or getattr(context.resources, resource_key)
        conn = project.connection()
        requested: dict[str, str] = json.loads(context.cursor or "{}")
        current = {t.name: t.current_version for t in _tables(conn)}
        requests, problems = [], []
        for row in conn.scan_inbox(inbox, storage_options=inbox_storage_options):
            label = PurePosixPath(row.file).name
            if row.status in _PROBLEMS:
                problems.append(f"{label}: {row.status}: {row.message}")
            elif row.status in _ONBOARD and row.name not in by_table:
                problems.append(
                    f"{label}: no asset for table {row.name!r}; add it to datom_inbox_assets"
                )
            elif row.status in _ONBOARD:
                run_key = f"{row.name}:{row.original_file_sha}:{current.get(row.name, 'new')}"
                if requested.get(row.name) == run_key:
                    continue  # requested on an earlier tick; its run has not landed yet
                requested[row.name] = run_key
                requests.append(
                    RunRequest(
                        run_key=run_key,
                        asset_selection=[by_table[row.name]],
                        tags={
                            "datom/file": label,
                            "datom/original_file_sha": row.original_file_sha or "",
                        },
                    )
                )
        where = inbox_folder(conn, inbox)
        for problem in problems:
            context.log.warning(f"{where}: {problem}")
        skip = None
        if not requests:
            skip = SkipReason(
                f"{where}: " + "; ".join(problems)
                if problems
                else f"no new or changed files in {where}"
            )
        return SensorResult(
            run_requests=requests, cursor=json.dumps(requested, sort_keys=True), skip_reason=skip
        )

    return _sensor


def inbox_folder(conn: dc.Connection, inbox: str | None) -> str:
    """The folder or URL an inbox watches, as messages name it."""
    return inbox if inbox is not None else str(conn.path / "input_files")


def _table_of(assets: AssetsDefinition, key: AssetKey) -> str:
    metadata: Mapping[str, Any] = assets.get_asset_spec(key).metadata or {}
    return plain(metadata.get("datom_table", key.path[-1]))


def _tables(conn: dc.Connection) -> list[dc.TableInfo]:
    try:
        return conn.tables()
    except dc.NotFoundError:
        return []
