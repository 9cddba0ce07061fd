"""`make demo`'s story end to end, then the CLI against the project it leaves behind."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(600)

BIN = Path(sys.executable).parent


def _datom(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "datom"), *args], capture_output=True, text=True, timeout=120)


def test_demo_then_cli(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    env = {**os.environ, "DATOM_DEMO_DIR": str(demo)}
    run = subprocess.run(
        [sys.executable, "-m", "example_project.demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "proof: no onboarding run requested" in out and "ok: repo and store agree" in out
    assert "dagster dev -w workspace.yaml" in out

    clone = demo / "datom" / "STUDY_001" / "repo"
    listing = _datom("--repo", str(clone), "--json", "list")
    assert listing.returncode == 0, listing.stderr
    tables = {t["name"]: t for t in json.loads(listing.stdout)}
    assert set(tables) == {"dm", "ex", "lb", "ae", "adsl", "adae", "lab_summary"}
    assert all(t["version_count"] == 3 for t in tables.values())

    history = json.loads(_datom("--repo", str(clone), "--json", "history", "dm").stdout)
    assert len(history) == 3 and history[0]["version"] == tables["dm"]["current_version"]

    lineage = _datom("--repo", str(clone), "--json", "lineage", "adae", "--depth", "source")
    sources = {s["table"] for s in json.loads(lineage.stdout)}
    assert sources == {"dm", "ex", "ae"}

    store = demo / "datom" / "STUDY_001" / "store"
    reader = _datom("--store", str(store), "--project", "STUDY_001", "--json", "list")
    assert reader.returncode == 0 and len(json.loads(reader.stdout)) == 7
    assert _datom("--repo", str(clone), "validate").returncode == 0
