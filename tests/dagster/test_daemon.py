"""The inbox sensor under the real `dagster-daemon`: runs launched, cursor kept across a restart."""

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dagster import DagsterInstance, DagsterRunStatus
from datom_dagster import DatomResource

from .conftest import dagster_process

pytestmark = pytest.mark.timeout(300)

DEFS = Path(__file__).with_name("defs_daemon.py")
BIN = Path(sys.executable).parent


def daemon(env: dict[str, str], workspace: Path, log: Path):
    return dagster_process([str(BIN / "dagster-daemon"), "run", "-w", str(workspace)], env, log)


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_sensor_under_the_daemon_keeps_its_cursor_across_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(f"load_from:\n  - python_file: {DEFS}\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "DATOM_HOME": str(tmp_path / "datom")}
    project = DatomResource(project_name="STUDY_001", home=env["DATOM_HOME"]).connection()
    inbox = project.path / "input_files"
    (inbox / "dm.csv").write_text("USUBJID,AGE\nS1,30\n")
    log = tmp_path / "daemon.log"
    instance = DagsterInstance.from_config(str(home))

    def runs() -> list:
        return instance.get_runs()

    def succeeded(n: int) -> Callable[[], bool]:
        return lambda: sum(r.status == DagsterRunStatus.SUCCESS for r in runs()) >= n

    def cursor() -> str | None:
        states = [
            s for s in instance.all_instigator_state() if s.instigator_name == "datom_inbox_sensor"
        ]
        return states[0].instigator_data.cursor if states and states[0].instigator_data else None

    with daemon(env, workspace, log):
        wait_for(succeeded(1), "the first onboarding run")
    first = cursor()
    assert first and "dm:" in first
    assert [t.name for t in project.tables()] == ["dm"]

    # Restarted: the stored cursor is picked up; unchanged files request nothing.
    with daemon(env, workspace, log):
        runs_before = len(runs())
        time.sleep(8)  # several one-second ticks
        assert len(runs()) == runs_before == 1
        assert cursor() == first
        (inbox / "dm.csv").write_text("USUBJID,AGE\nS1,30\nS2,41\n")  # an updated extract
        wait_for(succeeded(2), "the run for the updated extract")
    keys = sorted(r.tags.get("dagster/run_key", "") for r in runs())
    assert len(keys) == 2 and all(k.startswith("dm:") for k in keys)
    assert len(project.history("dm")) == 2
    assert b"Traceback" not in log.read_bytes(), log.read_text(errors="replace")[-3000:]
