"""A locked data cut on a real instance (sqlite, temp dir) and the multiprocess executor:
it refuses to move when its members moved, names each move and the deliberate way out,
is never shown as stale, and an ordinary cut beside it behaves as before."""

from pathlib import Path
from typing import Any

import pytest
from dagster._core.definitions.data_version import StaleStatus
from dagster._utils.test.data_versions import get_stale_status_resolver

import datom_core as dc
from dagster import AssetKey, DagsterInstance, execute_job, reconstructable

from . import defs_lock
from .conftest import latest, meta

pytestmark = pytest.mark.timeout(600)


def _run(instance: DagsterInstance, job: Any, run_config: dict | None = None) -> tuple[bool, str]:
    """Run ``job`` on the multiprocess executor: (success, the step failure's message)."""
    with execute_job(
        reconstructable(job), instance=instance, run_config=run_config or {}
    ) as result:
        failures = [e for e in result.all_events if e.is_step_failure]
        message = "\n".join(str(getattr(f.event_specific_data, "error", "")) for f in failures)
        return result.success, message


def _month(n: int) -> dict:
    return {"ops": {"raw": {"config": {"month": n}}}}


def _status(instance: DagsterInstance, key: AssetKey) -> StaleStatus:
    return get_stale_status_resolver(instance, list(defs_lock.defs.assets or [])).get_status(key)


def test_a_locked_cut_refuses_to_move_and_is_never_stale(
    fresh_instance: DagsterInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATOM_HOME", str(tmp_path / "home"))
    instance = fresh_instance
    assert _run(instance, defs_lock.data_job, _month(1))[0]
    assert _run(instance, defs_lock.lock_job)[0] and _run(instance, defs_lock.cut_job)[0]
    product = dc.connect(tmp_path / "home" / "Test_lock" / "repo")
    locked = product.get_set()
    month1 = {m.name: m.version for m in locked.members}
    assert set(month1) == {"raw", "derived"}
    first = instance.get_latest_materialization_event(defs_lock.lock.key)
    assert first is not None and meta(first.asset_materialization, "datom/locked") is True
    assert _status(instance, defs_lock.lock.key) == StaleStatus.FRESH

    # Month 2 arrives: the ordinary cut is Unsynced, the lock is not.
    assert _run(instance, defs_lock.data_job, _month(2))[0]
    assert _status(instance, defs_lock.cut.key) == StaleStatus.STALE
    assert _status(instance, defs_lock.lock.key) == StaleStatus.FRESH

    # Materializing the lock fails the step with each move and the deliberate way out.
    head, history = product.repo.head(), len(product.set_history())
    ok, message = _run(instance, defs_lock.lock_job)
    assert not ok
    assert f"'Test lock' is locked at version {locked.version[:12]}" in message
    assert "nothing was written" in message
    current = {n: dc.connect(_study(tmp_path)).resolve(n) for n in month1}
    for name, version in month1.items():
        assert f"- {name}: {version[:12]} -> {current[name][:12]}" in message
    assert "config: {relock: true}" in message and defs_lock.lock.op.name in message
    # Nothing moved: not the product repo, not the set, not the asset's latest event.
    assert (product.repo.head(), len(product.set_history())) == (head, history)
    assert product.get_set().version == locked.version
    after = instance.get_latest_materialization_event(defs_lock.lock.key)
    assert after is not None and after.run_id == first.run_id
    assert _status(instance, defs_lock.lock.key) == StaleStatus.FRESH

    # The ordinary cut moves as before.
    assert _run(instance, defs_lock.cut_job)[0]
    moved = latest(instance, defs_lock.cut.key)
    assert meta(moved, "datom/change") == "full"
    assert {
        r.data["table"]: r.data["version"] for r in moved.metadata["datom/members"].value.records
    } == current  # noqa: E501

    # Relocked deliberately: a new version of the lock, pinning the current versions.
    relock = {"ops": {defs_lock.lock.op.name: {"config": {"relock": True}}}}
    assert _run(instance, defs_lock.lock_job, relock)[0]
    again = product.get_set()
    assert again.version != locked.version
    assert {m.name: m.version for m in again.members} == current
    assert "relocked deliberately" in product.repo.log()[0].message
    # Unchanged members: the lock materializes again as the same version.
    assert _run(instance, defs_lock.lock_job)[0]
    assert meta(latest(instance, defs_lock.lock.key), "datom/change") == "none"


def _study(tmp_path: Path) -> Path:
    return tmp_path / "home" / "dagster" / "repo"
