"""Helpers for the command-line tests: run ``datom`` in-process, and a seeded project."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from click.testing import CliRunner, Result

import datom_core as dc
from datom_core.cli import cli
from tests.core.projects import frame, new_project

# The caller's environment must not choose the project, the width or the terminal.
_CLEAN_ENV: dict[str, str | None] = {
    "DATOM_REPO": None,
    "DATOM_STORE": None,
    "DATOM_PROJECT": None,
    "TTY_COMPATIBLE": None,
    "FORCE_COLOR": None,
    "COLUMNS": "200",
}

RAW_PARENT = dc.ParentRef(
    source="RAW_001",
    table="lab",
    version="a" * 64,
    data_sha="b" * 64,
    source_lineage=(dc.SourceRef("RAW_001", "lab", "b" * 64),),
)


def run(*args: object, env: dict[str, str | None] | None = None) -> Result:
    """``datom ARGS`` in-process (click's runner); stdout and stderr kept apart."""
    runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], env={**_CLEAN_ENV, **(env or {})})


def run_json(*args: object, env: dict[str, str | None] | None = None) -> Any:
    """``datom --json ARGS``, asserting success; the parsed stdout."""
    result = run("--json", *args, env=env)
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
    return json.loads(result.stdout)


@dataclass(frozen=True)
class Seeded:
    """A project with three versions of ``dm`` and a derived ``adsl``."""

    conn: dc.Connection
    repo: Path
    store: Path
    dm: tuple[str, str, str]  # versions, oldest first
    adsl: str

    @property
    def dev(self) -> tuple[str, str]:
        return ("--repo", str(self.repo))

    @property
    def reader(self) -> tuple[str, str, str, str]:
        return ("--store", str(self.store), "--project", self.conn.project_name)


def seeded_project(tmp_path: Path) -> Seeded:
    """``dm`` v1 (3 rows); v2 (same rows: AGE changed, WEIGHT gone, SEX new); v3 (5 rows)."""
    conn = new_project(tmp_path)
    v1 = conn.write("dm", frame(3), message="first extract")
    second = frame(3).drop(columns="WEIGHT").assign(AGE=lambda d: d["AGE"] + 1, SEX="F")
    v2 = conn.write("dm", second, message="ages corrected")
    third = frame(5).drop(columns="WEIGHT").assign(SEX="M")
    v3 = conn.write("dm", third, message="two more subjects")
    adsl = conn.write(
        "adsl", pd.DataFrame({"USUBJID": ["S-000"], "TRT": ["A"]}), parents=["dm", RAW_PARENT]
    )
    return Seeded(
        conn, conn.path, tmp_path / "store", (v1.version, v2.version, v3.version), adsl.version
    )


def parquet_objects(store: Path) -> list[Path]:
    """Every parquet object of a local store."""
    return sorted(store.rglob("*.parquet"))


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
