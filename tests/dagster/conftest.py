"""Fixtures for the Dagster plugin: a real temporary Dagster instance and datom projects."""

import os
import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import datom_core as dc
from dagster import AssetKey, DagsterInstance, instance_for_test
from datom_dagster import DatomIOManager, DatomResource, LocalStorage
from tests.childsignals import default_signals

# Dagster 1.13 resolves a nested resource given by value (DatomIOManager(datom=...) when
# the DatomResource is not also a top-level resource) through its own deprecated
# InitResourceContext.dagster_run; the warning is Dagster's, not the plugin's.
DAGSTER_NESTED_RESOURCE_WARNING = "ignore:InitResourceContext.dagster_run is deprecated"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.filterwarnings(DAGSTER_NESTED_RESOURCE_WARNING))


@pytest.fixture
def fresh_instance(tmp_path: Path) -> Iterator[DagsterInstance]:
    """A persistent (sqlite) Dagster instance of its own, in a temp dir.

    For tests that look at more than the latest materialization of the assets they ran
    (staleness, event counts) and for the multiprocess executor and the webserver.
    """
    home = tmp_path / "dagster_home"
    home.mkdir()
    with instance_for_test(temp_dir=str(home)) as inst:
        yield inst


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DagsterInstance]:
    """A persistent Dagster instance shared by one module's tests (creating one takes ~1.5 s).

    Each test writes to its own datom project and reads back only the latest
    materialization of assets it just ran, so sharing the event log is harmless.
    """
    home = tmp_path_factory.mktemp("dagster_home")
    with instance_for_test(temp_dir=str(home)) as inst:
        yield inst


@pytest.fixture
def io_manager(tmp_path: Path) -> DatomIOManager:
    """An IO manager on a fresh local project (created on first use)."""
    return project_io_manager(tmp_path, "study")


def project_io_manager(tmp_path: Path, project: str, **fields: Any) -> DatomIOManager:
    """A DatomIOManager for project ``project`` with clone and store under ``tmp_path``."""
    return DatomIOManager(datom=project_resource(tmp_path, project, **fields))


def project_resource(tmp_path: Path, project: str, **fields: Any) -> DatomResource:
    """A DatomResource for project ``project`` with clone and store under ``tmp_path``."""
    return DatomResource(
        project_name=project,
        clone_path=str(tmp_path / project / "repo"),
        storage=LocalStorage(path=str(tmp_path / project / "store")),
        **fields,
    )


def latest(instance: DagsterInstance, key: str | AssetKey, partition: str | None = None) -> Any:
    """The latest AssetMaterialization of ``key`` (of one partition if given)."""
    asset_key = AssetKey.from_coercible(key)
    if partition is None:
        entry = instance.get_latest_materialization_event(asset_key)
        assert entry is not None, f"{asset_key} was never materialized"
        return entry.asset_materialization
    from dagster import AssetRecordsFilter

    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=asset_key, asset_partitions=[partition]), limit=1
    ).records
    assert records, f"{asset_key} [{partition}] was never materialized"
    return records[0].asset_materialization


def meta(materialization: Any, key: str) -> Any:
    """The plain value of one metadata entry."""
    return materialization.metadata[key].value


def parents_shown(materialization: Any) -> list[dict[str, str]]:
    """The rows of the ``datom/parents`` table of a materialization."""
    return [dict(r.data) for r in materialization.metadata["datom/parents"].value.records]


def as_shown(parent: Mapping[str, str]) -> dict[str, str]:
    """A recorded parent as its ``datom/parents`` row shows it (12-character prefixes)."""
    return {
        "table": parent["table"],
        "version": parent["version"][:12],
        "data_sha": parent["data_sha"][:12],
        "project": parent["source"],
    }


def onboard(conn: dc.Connection, name: str, data: pd.DataFrame) -> dc.ParentRef:
    """Onboard ``data`` as the imported table ``name`` (a CSV dropped in the inbox, synced).

    An imported table has no parents and a source_lineage pointing at itself.
    """
    inbox = conn.path / "input_files"
    data.to_csv(inbox / f"{name}.csv", index=False)
    [row] = conn.sync()
    assert row.status == "synced", row
    return conn.parent(name)


@contextmanager
def dagster_process(command: Sequence[str], env: Mapping[str, str], log: Path) -> Iterator[None]:
    """A Dagster server process (webserver, daemon) for the block, then stopped with its children.

    Its own session, so that SIGTERM reaches the code server it spawns too.
    """
    with log.open("ab") as out:
        process = subprocess.Popen(
            list(command),
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=default_signals,  # the SIGTERM below stops it cleanly
        )
    try:
        yield
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
