"""The example loads as ``dg dev`` loads it (the checkout's ``dg.toml``) and as
``dagster dev -w workspace.yaml`` does, without a single warning, and its inbox sensor is
stopped until started."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dagster import DefaultSensorStatus

REPO_ROOT = Path(__file__).resolve().parents[2]
# The command itself, not the example: Dagster prefers `dg check defs` for it.
COMMAND_NOTICE = "Function `definitions_validate_command` is superseded"

pytestmark = pytest.mark.timeout(300)


def test_the_example_loads_from_its_workspace_without_warnings(tmp_path: Path) -> None:
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DATOM_HOME": str(tmp_path / "datom"),
        "PYTHONPATH": str(REPO_ROOT),
        "PYTHONWARNINGS": "always",  # every warning shown, none hidden by "once" filters
    }
    run = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "definitions", "validate",
         "-w", str(REPO_ROOT / "workspace.yaml")],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "Validation successful for code location example_project." in output
    lines = [line for line in output.splitlines() if COMMAND_NOTICE not in line]
    warnings = [line for line in lines if "WARNING" in line or "Warning" in line]
    assert not warnings, "\n".join(warnings)


def test_the_example_loads_as_a_dg_project_without_warnings(tmp_path: Path) -> None:
    """``dg dev`` / ``dg check defs`` from the checkout (its ``dg.toml``: root module
    example_project, code location example_project), what demo.py prints."""
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    venv = Path(sys.executable).parent
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DATOM_HOME": str(tmp_path / "datom"),
        "PYTHONPATH": str(REPO_ROOT),
        "PYTHONWARNINGS": "always",
        "VIRTUAL_ENV": str(venv.parent),  # as `. .venv/bin/activate` sets it
        "PATH": f"{venv}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    run = subprocess.run(
        [str(venv / "dg"), "check", "defs"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "All definitions loaded successfully." in output
    warnings = [line for line in output.splitlines() if "WARNING" in line or "arning" in line]
    assert not warnings, "\n".join(warnings)


def test_the_example_sensor_is_stopped_until_started() -> None:
    from example_project.definitions import defs

    sensor = defs.resolve_sensor_def("datom_inbox_sensor")
    assert sensor.default_status == DefaultSensorStatus.STOPPED
    assert "input_files" in (sensor.description or "")
