"""Concurrency: the multiprocess executor writing into one project; retried steps."""

import os
from pathlib import Path

import pandas as pd
from dagster._core.definitions.data_version import DATA_VERSION_TAG

import datom_core as dc
from dagster import (
    AssetOut,
    ConfigurableIOManager,
    DagsterEventType,
    InputContext,
    OutputContext,
    RetryPolicy,
    execute_job,
    materialize,
    multi_asset,
    reconstructable,
)

from . import defs_multiprocess
from .conftest import latest, meta


def test_multiprocess_executor_writes_every_version_once(fresh_instance, tmp_path):
    # The project does not exist yet: the concurrent steps also race to create it.
    config = {
        "clone_path": str(tmp_path / "repo"),
        "storage": {"local": {"path": str(tmp_path / "store")}},
    }
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    parts = [f"part_{i}" for i in range(defs_multiprocess.WIDTH)]
    run_config = {
        "resources": {"datom": {"config": config}},
        "ops": {p: {"config": {"directory": str(barrier)}} for p in parts},
    }
    with execute_job(
        reconstructable(defs_multiprocess.mp_job),
        instance=fresh_instance,
        run_config=run_config,
        raise_on_error=True,
    ) as result:
        assert result.success
        run_id = result.run_id
    log = [e for e in fresh_instance.all_logs(run_id) if e.dagster_event is not None]
    starts = {e.step_key: e.timestamp for e in log if e.dagster_event.is_step_start}
    ends = {e.step_key: e.timestamp for e in log if e.dagster_event.is_step_success}
    pids = {e.dagster_event.pid for e in log if e.dagster_event.is_step_start}
    assert os.getpid() not in pids and len(pids) >= len(parts)
    # The eight steps really overlapped in time.
    assert max(starts[p] for p in parts) < min(ends[p] for p in parts)

    conn = dc.connect(tmp_path / "repo")
    assert {t.name for t in conn.tables()} == {*parts, "combined"}
    for name in [*parts, "combined"]:
        event = latest(fresh_instance, name)
        assert len(conn.history(name)) == 1
        assert meta(event, "datom/version") == conn.resolve(name)
        assert event.tags[DATA_VERSION_TAG] == conn.metadata(name)["data_sha"]
    parents = conn.metadata("combined")["parents"]
    assert sorted(p["table"] for p in parents) == parts
    assert all(p["version"] == conn.resolve(p["table"]) for p in parents)
    assert len(conn.repo.log()) == 1 + len(parts) + 1  # init, one commit per version
    report = conn.validate()
    assert report.ok and not report.problems, str(report)


class FailsOnce(ConfigurableIOManager):
    """Fails the first time it stores anything, as a flaky store would."""

    marker: str

    def handle_output(self, context: OutputContext, obj: object) -> None:
        if not Path(self.marker).exists():
            Path(self.marker).touch()
            raise ConnectionError("transient failure")

    def load_input(self, context: InputContext) -> object:
        raise NotImplementedError


@multi_asset(
    outs={"kept": AssetOut(), "flaky": AssetOut(io_manager_key="flaky")},
    retry_policy=RetryPolicy(max_retries=1),
)
def pair():
    return pd.DataFrame({"k": [1, 2]}), pd.DataFrame({"f": [3]})


def test_a_retried_step_does_not_duplicate_history(instance, io_manager, tmp_path):
    resources = {"io_manager": io_manager, "flaky": FailsOnce(marker=str(tmp_path / "failed"))}
    result = materialize([pair], instance=instance, resources=resources)
    assert result.success
    kinds = [e.event_type for e in result.all_events]
    assert DagsterEventType.STEP_UP_FOR_RETRY in kinds
    # "kept" was stored by both attempts: once as a new version, then as no change.
    changes = [
        e.event_specific_data.materialization.metadata["datom/change"].value
        for e in result.all_events
        if e.event_type == DagsterEventType.ASSET_MATERIALIZATION and e.asset_key.path == ["kept"]
    ]
    assert changes == ["full", "none"]
    conn = io_manager.connection()
    assert len(conn.history("kept")) == 1 and len(conn.repo.log()) == 2
