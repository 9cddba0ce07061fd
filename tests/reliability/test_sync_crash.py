"""``sync()`` killed (SIGKILL) at every checkpoint and at random times, then run again.

After the re-run the project must have converged: nothing unpushed, ``validate`` clean,
a store-only reader sees the newest extract of every table, and every version appears
exactly once in its history. A kill between the commit and the end of mirroring must not
make the next ``sync()`` call the file ``unchanged`` and leave readers on old data.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

import datom_core as dc
from tests.core.test_project_crash import STEPS

TABLES = ("dm", "ae", "lb")
CHECKPOINTS = STEPS  # the write protocol's step boundaries, as the write crash test
RANDOM_KILLS = 24  # with the 9 checkpoints: 33 kills in all

_SYNC = textwrap.dedent(
    """
    import datom_core as dc
    dc.connect({clone!r}).sync()
    """
)


def _extract(table: str, month: int) -> pd.DataFrame:
    rows = 20 + month
    return pd.DataFrame(
        {
            "USUBJID": [f"{table.upper()}-{i:03d}" for i in range(rows)],
            "VISIT": [month] * rows,
            "VALUE": [i * 1.5 + month for i in range(rows)],
        }
    )


def _drop(conn: dc.Connection, month: int) -> dict[str, str]:
    """Write month ``month``'s extracts into the inbox; the data_sha each must become."""
    inbox = conn.path / "input_files"
    inbox.mkdir(exist_ok=True)
    expected = {}
    for table in TABLES:
        path = inbox / f"{table}.csv"
        _extract(table, month).to_csv(path, index=False)
        expected[table] = dc.hash_table(dc.read_extract(path)).data_sha
    return expected


def _sync_in_child(clone: Path, *, crash_at: str | None = None) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    if crash_at is not None:
        env["DATOM_CRASH_AT"] = crash_at
    else:
        env.pop("DATOM_CRASH_AT", None)
    code = _SYNC.format(clone=str(clone))
    return subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.DEVNULL)


def _assert_converged(conn: dc.Connection, expected: dict[str, str]) -> None:
    assert conn.repo.has_unpushed_commits() is False
    report = conn.validate()
    assert report.ok, report
    reader = dc.connect(store=conn.store, project_name=conn.project_name)
    current = {t.name: t for t in reader.tables()}
    for table, data_sha in expected.items():
        assert current[table].current_data_sha == data_sha, f"{table}: readers see an old extract"
        versions = [v.version for v in reader.history(table)]
        assert len(versions) == len(set(versions)), f"{table}: a version recorded twice"
        assert [v.version for v in conn.history(table)] == versions
        newest = reader.read(table, version=versions[0], as_="arrow")
        assert dc.hash_table(newest).data_sha == data_sha


@pytest.fixture
def project(tmp_path: Path) -> dc.Connection:
    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", dc.LocalStore(tmp_path / "store"))
    _drop(conn, 1)
    assert {r.status for r in conn.sync()} == {"synced"}
    return conn


@pytest.mark.slow
@pytest.mark.parametrize("step", CHECKPOINTS)
def test_sync_killed_at_a_checkpoint_converges(project: dc.Connection, step: str) -> None:
    expected = _drop(project, 2)
    child = _sync_in_child(project.path, crash_at=step)
    assert child.wait(timeout=120) == -signal.SIGKILL
    project.sync()
    _assert_converged(project, expected)
    # A further run finds nothing to do.
    assert {r.status for r in project.sync()} <= {"skipped"}
    _assert_converged(project, expected)


@pytest.mark.slow
def test_sync_killed_at_random_times_converges(project: dc.Connection) -> None:
    rng = random.Random(20261201)
    # How long an uninterrupted sync of one new month takes here: kills land inside it.
    _drop(project, 2)
    started = time.monotonic()
    assert _sync_in_child(project.path).wait(timeout=120) == 0
    span = time.monotonic() - started
    for month in range(3, 3 + RANDOM_KILLS):
        expected = _drop(project, month)
        child = _sync_in_child(project.path)
        time.sleep(rng.uniform(0.0, span))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=120)
        project.sync()
        _assert_converged(project, expected)
    for table in TABLES:
        assert len(project.history(table)) == 2 + RANDOM_KILLS


_WRITE = textwrap.dedent(
    """
    import pandas as pd
    import datom_core as dc
    dc.connect({clone!r}).write("adsl", pd.DataFrame({{"a": [1, 2, 3]}}))
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("step", ["committed", "pushed", "mirror:history"])
def test_a_sync_finishes_a_write_killed_after_its_commit(project: dc.Connection, step: str) -> None:
    env = {**os.environ, "DATOM_CRASH_AT": step}
    code = _WRITE.format(clone=str(project.path))
    child = subprocess.run([sys.executable, "-c", code], env=env, stderr=subprocess.DEVNULL)
    assert child.returncode == -signal.SIGKILL
    project.sync()  # nothing new in the inbox: it only finishes the interrupted write
    assert project.repo.has_unpushed_commits() is False
    assert project.validate().ok
    reader = dc.connect(store=project.store, project_name=project.project_name)
    assert [t.name for t in reader.tables()] == ["adsl", "ae", "dm", "lb"]
    assert reader.read("adsl")["a"].tolist() == [1, 2, 3]
