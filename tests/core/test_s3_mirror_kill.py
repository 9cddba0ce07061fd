"""A writer killed in the middle of its mirror into S3, where the history and
``metadata.json`` are put at once (one round trip), the manifest after both: the next
write of the table, from another clone, leaves the store equal to git's tip."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._project import _layout as L
from tests.core.projects import frame
from tests.core.test_concurrency_mirror import assert_store_is_git

pytestmark = pytest.mark.timeout(300)

_WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    import datom_core as dc
    from tests.core.projects import frame
    store = dc.S3Store({bucket!r}, prefix="proj", endpoint_url={endpoint!r})
    conn = dc.connect({clone!r}, store=store)
    for seed in range({writes}):
        conn.write("dm", frame(seed=7 + seed))
    """
)


def _write_and_die(clone: Path, bucket: str, endpoint: str, step: str, writes: int) -> int:
    """Write ``dm`` ``writes`` times in a new process, killed at ``step`` of the last."""
    root = str(Path(__file__).parents[2])
    code = _WRITER.format(
        root=root, clone=str(clone), bucket=bucket, endpoint=endpoint, writes=writes
    )
    env = {**os.environ, "DATOM_CRASH_AT": f"{step}@{writes}"}
    return subprocess.run([sys.executable, "-c", code], env=env, timeout=120).returncode


@pytest.mark.parametrize("writes", [1, 2], ids=["settling", "conditional"])
@pytest.mark.parametrize("step", ["mirror:snapshot", "mirror:history", "mirror:metadata"])
def test_an_s3_writer_killed_mid_mirror_is_repaired_by_the_next_write(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, step: str, writes: int
) -> None:
    """``conditional``: the killed write is the process's second, whose PUTs condition on
    the copies its first wrote (no settling look)."""
    store = dc.S3Store(s3_bucket, prefix="proj", endpoint_url=s3_endpoint)
    first = dc.init_repo(tmp_path / "first", "STUDY_S3", store)
    first.write("dm", frame(seed=1))
    second = dc.clone(first.repo.remote_url, tmp_path / "second", store)
    before = store.read_bytes(L.STORE_MANIFEST)
    assert _write_and_die(first.path, s3_bucket, s3_endpoint, step, writes) == -signal.SIGKILL
    second.pull()
    if writes == 1:
        assert store.read_bytes(L.STORE_MANIFEST) == before  # the manifest is put last
    assert store.read_bytes(L.STORE_MANIFEST) != second.repo.read(L.MANIFEST)  # it lags
    if step != "mirror:snapshot":  # both were answered before the kill: they went at once
        assert store.read_bytes(L.store_metadata("dm")) == second.repo.read(L.git_metadata("dm"))
        assert b'"' + second.version("dm").version.encode() in store.read_bytes(
            L.store_history("dm")
        )
    assert not second.validate().ok  # the store lags git's tip
    second.write("dm", frame(seed=20))  # the next write of the table puts it right
    assert_store_is_git(second)
