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
    assert "dg dev" in out and "dagster dev" not in out  # the example is a dg project
    assert "lock check: passed (7 locked versions resolve and verify)" in out
    # The refusal the story shows is told once, in its words: no stack trace of it.
    assert "Traceback" not in run.stdout + run.stderr and "STEP_FAILURE" not in run.stderr

    clone = demo / "datom" / "STUDY_001" / "repo"
    listing = _datom("--repo", str(clone), "--json", "list")
    assert listing.returncode == 0, listing.stderr
    tables = {t["name"]: t for t in json.loads(listing.stdout)}
    assert set(tables) == {"dm", "ex", "lb", "ae", "adsl", "adae", "lab_summary"}
    # Month 4 adds a version of every table but dm (enrolment ended in month 3).
    assert {n: t["version_count"] for n, t in tables.items()} == {
        "dm": 3, "ex": 4, "lb": 4, "ae": 4, "adsl": 4, "adae": 4, "lab_summary": 4
    }  # fmt: skip

    history = json.loads(_datom("--repo", str(clone), "--json", "history", "dm").stdout)
    assert len(history) == 3 and history[0]["version"] == tables["dm"]["current_version"]

    lineage = _datom("--repo", str(clone), "--json", "lineage", "adae", "--depth", "source")
    sources = {s["table"] for s in json.loads(lineage.stdout)}
    assert sources == {"dm", "ex", "ae"}

    store = demo / "datom" / "STUDY_001" / "store"
    reader = _datom("--store", str(store), "--project", "STUDY_001", "--json", "list")
    assert reader.returncode == 0 and len(json.loads(reader.stdout)) == 7
    assert _datom("--repo", str(clone), "validate").returncode == 0
    _check_the_lock(demo, clone, out)


def _check_the_lock(demo: Path, clone: Path, out: str) -> None:
    """Month 3's lock as the CLI reads it, and the re-derivation pinned to it."""
    lock = demo / "datom" / "STUDY-001_DB_lock" / "repo"
    shown = json.loads(_datom("--repo", str(lock), "--json", "set", "show").stdout)
    assert shown["tags"] == {"milestone": ["database lock"], "study": ["STUDY-001"]}
    words = " ".join(out.split())  # rich wraps long lines
    assert f"cut 'STUDY-001 DB lock' version={shown['version']} members=7 change=full" in words
    members = json.loads(_datom("--repo", str(lock), "--json", "set", "members").stdout)
    locked = {m["id"]["name"]: m["id"]["version"] for m in members}
    assert set(locked) == {"dm", "ex", "lb", "ae", "adsl", "adae", "lab_summary"}
    history = {
        name: json.loads(_datom("--repo", str(clone), "--json", "history", name).stdout)
        for name in ("adsl", "adae", "dm")
    }
    # The lock is month 3's state: the third version of each table, not the current one.
    assert all(locked[n] == h[-3 if n != "dm" else 0]["version"] for n, h in history.items())
    # After month 4 was onboarded, the run as of the lock re-derived exactly those versions.
    rederived = out.split("Re-derive as of the lock", 1)[1].split("proof:", 1)[0]
    for name in ("adsl", "adae"):
        assert f"derived   {name:<11} change=none          version={locked[name][:12]}" in rederived
    assert (
        f"adsl={locked['adsl'][:12]} and adae={locked['adae'][:12]} are the locked versions "
        "(change=none), built from the locked inputs" in words
    )
    # Materializing the locked cut after month 4 was refused: the lock stays at month 3.
    assert (
        f"materializing the locked cut 'STUDY-001 DB lock' again was refused; it stays at "
        f"{shown['version'][:12]} (6 members would have moved)" in words
    )
    refused = out.split("again was refused", 1)[1].split("Run everything again", 1)[0]
    for name in ("ex", "lb", "ae", "adsl", "adae", "lab_summary"):  # dm: no new month-4 data
        assert f"- {name}: {locked[name][:12]} -> " in refused
    assert "- dm:" not in refused
