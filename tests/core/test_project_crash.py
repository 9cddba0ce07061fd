"""A writer killed (SIGKILL) at every step boundary: re-running the write converges."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._project import _layout as L
from tests.core.projects import frame, new_project

STEPS = [
    "hashed",
    "uploaded",
    "snapshotted",
    "committed",
    "pushed",
    "mirror:snapshot",
    "mirror:history",
    "mirror:metadata",
    "mirrored",
]

_WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    import datom_core as dc
    from tests.core.projects import frame
    dc.connect({clone!r}).write("dm", frame(seed=7), message="second extract")
    """
)


def _write_and_die(clone: Path, step: str) -> int:
    code = _WRITER.format(root=str(Path(__file__).parents[2]), clone=str(clone))
    env = {**os.environ, "DATOM_CRASH_AT": step}
    return subprocess.run([sys.executable, "-c", code], env=env, timeout=120).returncode


def _advertised_data_is_present(conn: dc.Connection) -> None:
    """The store never advertises a version whose parquet is missing or unverified."""
    reader = dc.connect(store=conn.store, project_name=conn.project_name)
    for table in reader.tables():
        for version in reader.history(table.name):
            key = L.store_parquet(table.name, version.data_sha)
            assert conn.store.sha256(key) == version.parquet_sha
        current = json.loads(conn.store.read_bytes(L.store_metadata(table.name)))
        assert conn.store.exists(L.store_parquet(table.name, current["data_sha"]))


@pytest.fixture(params=["local", "s3"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> dc.Store:
    """The project's store: a directory, or a bucket on moto's S3 server (the killed
    writer finds it again from ``.datom/project.yaml`` and the environment)."""
    if request.param == "local":
        return dc.LocalStore(tmp_path / "store")
    bucket, endpoint = request.getfixturevalue("s3_bucket"), request.getfixturevalue("s3_endpoint")
    return dc.S3Store(bucket, prefix="proj", endpoint_url=endpoint)


@pytest.mark.parametrize("step", STEPS)
def test_killed_writer_converges_on_rerun(tmp_path: Path, step: str, backend: dc.Store) -> None:
    conn = new_project(tmp_path, backend)
    first = conn.write("dm", frame())
    assert _write_and_die(conn.path, step) == -signal.SIGKILL
    _advertised_data_is_present(conn)

    again = conn.write("dm", frame(seed=7), message="second extract")
    assert again.data_sha == dc.hash_table(frame(seed=7)).data_sha
    history = [h.version for h in conn.history("dm")]
    assert history == [again.version, first.version], "exactly one entry per version"
    report = conn.validate()
    if not report.ok:  # whatever a crash left behind, git can repair
        assert conn.validate(fix=True).ok
    assert conn.validate().ok
    _advertised_data_is_present(conn)
    assert conn.read("dm").equals(frame(seed=7))
    assert conn.repo.has_unpushed_commits() is False
