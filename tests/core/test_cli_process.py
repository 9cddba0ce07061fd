"""The installed ``datom`` script as a real process, progress bars, and a reader over S3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import datom_core as dc
from tests.core.cli_helpers import Seeded, run, run_json, seeded_project

DATOM = Path(sys.executable).with_name("datom")


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    return seeded_project(tmp_path_factory.mktemp("process"))


def datom(
    *args: object, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the console script; the environment cannot pick a project or force a terminal."""
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATOM_REPO", "DATOM_STORE", "DATOM_PROJECT", "TTY_COMPATIBLE", "FORCE_COLOR"}
    }
    return subprocess.run(
        [str(DATOM), *map(str, args)],
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_reader_process(shared: Seeded) -> None:
    assert DATOM.is_file(), "run `pip install -e .` so that the datom script exists"
    listed = datom("--json", *shared.reader, "list")
    assert listed.returncode == 0, listed.stderr
    assert [t["name"] for t in json.loads(listed.stdout)] == ["adsl", "dm"]
    assert listed.stderr == ""

    env = {"DATOM_STORE": str(shared.store), "DATOM_PROJECT": "STUDY_001"}
    missing = datom("show", "nope", env=env)
    assert missing.returncode == 3
    assert missing.stdout == ""
    assert missing.stderr.startswith("datom: error: ") and missing.stderr.count("\n") == 1


def test_a_developer_process_in_its_clone(shared: Seeded) -> None:
    status = datom("--json", "status", cwd=shared.repo / "input_files")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["path"] == str(shared.repo)
    outside = datom("status", cwd=shared.store)
    assert outside.returncode == 2 and "Traceback" not in outside.stderr


def test_progress_bars_only_on_a_terminal(shared: Seeded, tmp_path: Path) -> None:
    terminal = {"TTY_COMPATIBLE": "1"}  # rich: treat stderr as a terminal
    shown = datom(*shared.reader, "read", "dm", "-o", tmp_path / "a.csv", env=terminal)
    assert shown.returncode == 0, shown.stderr
    assert "writing a.csv" in shown.stderr and "5/5" in shown.stderr
    assert "wrote 5 rows" in shown.stdout and "\x1b[" not in shown.stdout

    quiet = datom("--json", *shared.reader, "read", "dm", "-o", tmp_path / "c.csv", env=terminal)
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert json.loads(quiet.stdout)["nrow"] == 5
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "c.csv").read_bytes()


def test_sync_shows_a_bar_per_file_on_a_terminal(tmp_path: Path) -> None:
    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", dc.LocalStore(tmp_path / "store"))
    for name in ("ae", "dm", "lb"):
        (conn.path / "input_files" / f"{name}.csv").write_text("A,B\n1,x\n")
    result = datom("sync", cwd=conn.path, env={"TTY_COMPATIBLE": "1"})
    assert result.returncode == 0, result.stderr
    assert "onboarding" in result.stderr and "3/3" in result.stderr
    assert "3 synced" in result.stdout
    assert [t.name for t in conn.tables()] == ["ae", "dm", "lb"]


def test_a_reader_and_a_developer_over_s3(tmp_path: Path, s3_endpoint: str, s3_bucket: str) -> None:
    url = f"s3://{s3_bucket}/study"
    s3 = ("--endpoint-url", s3_endpoint)
    created = run("--json", *s3, "init", tmp_path / "repo", "--project", "S3_STUDY", "--store", url)
    assert created.exit_code == 0, created.stderr
    assert json.loads(created.stdout)["store"] == f"{url}/datom"
    dc.connect(tmp_path / "repo").write("dm", pd.DataFrame({"x": [1, 2]}))

    tables = run_json(*s3, "--store", url, "--project", "S3_STUDY", "list")
    assert [t["name"] for t in tables] == ["dm"]
    out = tmp_path / "dm.parquet"
    run_json(*s3, "--store", url, "--project", "S3_STUDY", "read", "dm", "-o", out)
    assert out.is_file()
    absent = run(*s3, "--store", f"s3://{s3_bucket}/elsewhere", "--project", "S3_STUDY", "list")
    assert absent.exit_code == 3 and "holds no datom project" in absent.stderr


def test_the_command_line_does_not_import_dagster() -> None:
    code = "import sys, datom_core.cli; print(sorted(m for m in sys.modules if 'dagster' in m))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"
