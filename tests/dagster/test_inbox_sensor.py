"""The inbox sensor and the onboarded-table assets, on a real temporary Dagster instance."""

from pathlib import Path

import pandas as pd
import pytest
from dagster._core.definitions.data_version import DATA_VERSION_TAG, StaleStatus
from dagster._utils.test.data_versions import get_stale_status_resolver

import datom_core as dc
from dagster import (
    AssetKey,
    DagsterInstance,
    SensorResult,
    asset,
    build_sensor_context,
    instance_for_test,
    materialize,
)
from datom_dagster import DatomIOManager, DatomResource
from datom_dagster._inbox import datom_inbox_assets, datom_inbox_sensor

TABLES = ["dm", "ae"]


@pytest.fixture
def instance(tmp_path: Path):
    home = tmp_path / "dagster"
    home.mkdir()
    with instance_for_test(temp_dir=str(home)) as inst:
        yield inst


@pytest.fixture
def project(tmp_path: Path) -> dict:
    resource = DatomResource(home=str(tmp_path / "datom"), project_name="STUDY_001")
    conn = resource.connection()
    return {
        "resource": resource,
        "conn": conn,
        "inbox": conn.path / "input_files",
        "io": DatomIOManager(datom=resource),
    }


def _tick(sensor, project: dict, instance: DagsterInstance, cursor: str | None) -> SensorResult:
    context = build_sensor_context(
        instance=instance, cursor=cursor, resources={"datom": project["resource"]}
    )
    return sensor(context)


def _run(assets, request, project: dict, instance: DagsterInstance) -> None:
    result = materialize(
        [assets],
        selection=request.asset_selection,
        instance=instance,
        resources={"datom": project["resource"]},
        tags=request.tags,
    )
    assert result.success


def _csv(path: Path, rows: int, bump: int = 0) -> None:
    frame = pd.DataFrame(
        {"USUBJID": [f"S{i:02d}" for i in range(rows)], "AGE": [30 + i + bump for i in range(rows)]}
    )
    frame.to_csv(path, index=False)


def test_ticks_request_exactly_new_and_changed_files(
    project: dict, instance: DagsterInstance
) -> None:
    assets = datom_inbox_assets(TABLES)
    sensor = datom_inbox_sensor(assets)
    inbox = project["inbox"]

    first = _tick(sensor, project, instance, None)
    assert first.run_requests == [] and "no new or changed" in first.skip_reason.skip_message

    _csv(inbox / "dm.csv", 3)
    tick = _tick(sensor, project, instance, first.cursor)
    assert [r.asset_selection for r in tick.run_requests] == [[AssetKey("dm")]]
    sha = dc.file_sha(inbox / "dm.csv")
    assert tick.run_requests[0].run_key == f"dm:{sha}:new"
    again = _tick(sensor, project, instance, tick.cursor)  # the run has not landed yet
    assert again.run_requests == []

    _run(assets, tick.run_requests[0], project, instance)
    event = instance.get_latest_materialization_event(AssetKey("dm")).asset_materialization
    data_sha = project["conn"].metadata("dm")["data_sha"]
    assert event.tags[DATA_VERSION_TAG] == data_sha
    assert event.metadata["datom/data_sha"].value == data_sha
    assert (
        event.metadata["datom/table"].value == "dm"
        and event.metadata["dagster/row_count"].value == 3
    )

    # The cursor survives a restart: a fresh resource and context with the stored cursor.
    restarted = {
        **project,
        "resource": DatomResource(home=project["resource"].home, project_name="STUDY_001"),
    }
    assert _tick(sensor, restarted, instance, again.cursor).run_requests == []

    _csv(inbox / "dm.csv", 4)  # an updated extract
    _csv(inbox / "ae.csv", 2)  # a new domain
    (inbox / "notes.json").write_text("{}")  # unsupported, must not block the others
    (inbox / "ae broken.xlsx").write_bytes(b"not a workbook")
    tick = _tick(sensor, project, instance, again.cursor)
    keys = sorted(r.run_key.split(":")[0] for r in tick.run_requests)
    assert keys == ["ae", "dm"]
    dm_request = next(r for r in tick.run_requests if r.run_key.startswith("dm:"))
    assert dm_request.run_key.endswith(dc.metadata_sha(project["conn"].metadata("dm")))
    for request in tick.run_requests:
        _run(assets, request, project, instance)
    assert project["conn"].read("dm").shape == (4, 2)
    assert len(project["conn"].history("dm")) == 2
    quiet = _tick(sensor, project, instance, tick.cursor)
    assert quiet.run_requests == []
    assert "notes.json" in quiet.skip_reason.skip_message
    assert "unsupported_format" in quiet.skip_reason.skip_message


def test_downstream_goes_stale_only_when_the_data_changes(
    project: dict, instance: DagsterInstance
) -> None:
    assets = datom_inbox_assets(["dm"])

    @asset
    def adsl(dm: pd.DataFrame) -> pd.DataFrame:
        return dm.assign(ADULT=dm["AGE"] >= 18)

    defs = [assets, adsl]
    resources = {"datom": project["resource"], "io_manager": project["io"]}
    inbox = project["inbox"]
    _csv(inbox / "dm.csv", 3)
    assert materialize(defs, instance=instance, resources=resources).success

    def status() -> StaleStatus:
        return get_stale_status_resolver(instance, defs).get_status(AssetKey("adsl"))

    assert status() == StaleStatus.FRESH
    # A re-export: new bytes (quoted fields), the same rows -> metadata_only, same data_sha.
    pd.read_csv(inbox / "dm.csv").to_csv(inbox / "dm.csv", index=False, quoting=1)
    assert materialize([assets], instance=instance, resources=resources).success
    assert project["conn"].history("dm")[0].data_sha == project["conn"].history("dm")[1].data_sha
    assert status() == StaleStatus.FRESH
    _csv(inbox / "dm.csv", 3, bump=1)
    assert materialize([assets], instance=instance, resources=resources).success
    assert status() == StaleStatus.STALE


def test_s3_inbox_works_the_same(
    project: dict,
    instance: DagsterInstance,
    s3_endpoint: str,
    s3_admin,
    s3_bucket: str,
    tmp_path: Path,
) -> None:
    options = {"client_kwargs": {"endpoint_url": s3_endpoint}}
    inbox = f"s3://{s3_bucket}/drops"
    assets = datom_inbox_assets(TABLES, inbox=inbox, inbox_storage_options=options)
    sensor = datom_inbox_sensor(assets, inbox=inbox, inbox_storage_options=options)
    _csv(tmp_path / "dm.csv", 3)
    s3_admin.upload_file(str(tmp_path / "dm.csv"), s3_bucket, "drops/dm.csv")
    tick = _tick(sensor, project, instance, None)
    assert [r.run_key for r in tick.run_requests] == [f"dm:{dc.file_sha(tmp_path / 'dm.csv')}:new"]
    _run(assets, tick.run_requests[0], project, instance)
    assert project["conn"].read("dm").shape == (3, 2)
    assert _tick(sensor, project, instance, tick.cursor).run_requests == []


def test_a_stale_file_requests_no_run_and_is_reported(
    project: dict, instance: DagsterInstance, tmp_path: Path
) -> None:
    # The first extract, an hour old, onboarded; another clone records a newer one.
    import os
    import time

    assets = datom_inbox_assets(TABLES)
    sensor = datom_inbox_sensor(assets)
    conn = project["conn"]
    _csv(project["inbox"] / "dm.csv", 3)
    an_hour_ago = time.time() - 3600
    os.utime(project["inbox"] / "dm.csv", (an_hour_ago, an_hour_ago))
    (first,) = conn.sync()
    other = dc.clone(conn.repo.remote_url, tmp_path / "other", conn.store)
    _csv(other.path / "input_files" / "dm.csv", 5)
    (second,) = other.sync()
    conn.pull()
    tick = _tick(sensor, project, instance, None)
    assert tick.run_requests == []
    message = str(tick.skip_reason.skip_message if tick.skip_reason else "")
    assert "dm.csv: stale" in message
    assert str(first.version)[:12] in message and str(second.version)[:12] in message
    assert conn.resolve("dm") == second.version


def test_every_sensor_and_inbox_message_names_the_folder(
    project: dict, instance: DagsterInstance, tmp_path: Path
) -> None:
    inbox = str(project["inbox"])
    assets = datom_inbox_assets(TABLES)
    sensor = datom_inbox_sensor(assets)
    assert sensor.description is not None and "input_files" in sensor.description
    quiet = _tick(sensor, project, instance, None)
    assert quiet.skip_reason.skip_message == f"no new or changed files in {inbox}"
    (project["inbox"] / "notes.json").write_text("{}")
    problem = _tick(sensor, project, instance, None).skip_reason.skip_message
    assert problem.startswith(f"{inbox}: notes.json: unsupported_format")
    # A folder given explicitly is named as given, in the description and every message.
    drops = tmp_path / "drops"
    drops.mkdir()
    elsewhere = datom_inbox_sensor(assets, inbox=str(drops), name="elsewhere")
    assert str(drops) in (elsewhere.description or "")
    message = _tick(elsewhere, project, instance, None).skip_reason.skip_message
    assert message == f"no new or changed files in {drops}"
    # Onboarding a table whose file never arrived names the folder it looked in.
    result = materialize([datom_inbox_assets(TABLES, inbox=str(drops))], instance=instance,
                         resources={"datom": project["resource"]}, raise_on_error=False)  # fmt: skip
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert f"into {drops} first" in str(failure.event_specific_data.error)
