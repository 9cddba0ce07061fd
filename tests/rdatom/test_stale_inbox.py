"""R records a newer extract; the Python clone's leftover first file must not revert it.

Python onboards ``dm.csv``; R datom 0.2.0, in its own clone, onboards a newer one. The
Python clone pulls with its first file still in the inbox: the scan calls it ``stale``,
naming both versions, ``sync()`` leaves it, and only ``sync(revert=True)`` makes the
first version current again, which R then reads as current.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import datom_core as dc
from tests.rdatom.rsession import RSession

DM_V1 = b"USUBJID,AGE\nS-001,34\nS-002,51\n"
DM_V2 = b"USUBJID,AGE\nS-001,34\nS-002,51\nS-003,29\n"


def test_a_leftover_file_does_not_revert_rs_newer_version(r020: RSession, tmp_path: Path) -> None:
    clone = tmp_path / "py-clone"
    store = tmp_path / "store"
    remote = Path(f"{clone}.remote.git")
    py = dc.init_repo(clone, "STALE", dc.LocalStore(store))
    first_file = clone / "input_files" / "dm.csv"
    first_file.parent.mkdir(exist_ok=True)
    first_file.write_bytes(DM_V1)
    an_hour_ago = time.time() - 3600
    os.utime(first_file, (an_hour_ago, an_hour_ago))
    (first,) = py.sync()
    v1 = str(first.version)
    assert first.status == "synced"

    r_clone = tmp_path / "r-clone"
    r020.call("r_clone", path=r_clone, store=store, remote=remote)
    (r_clone / "input_files").mkdir(exist_ok=True)
    (r_clone / "input_files" / "dm.csv").write_bytes(DM_V2)
    conn = {"path": str(r_clone), "store": str(store), "remote": str(remote)}
    r020.call("r_sync", conn=conn)
    v2 = str(r020.call("r_current", conn=conn, name="dm"))
    assert v2 != v1

    py.pull()
    (row,) = py.scan_inbox()
    assert row.status == "stale"
    assert v1[:12] in row.message and v2[:12] in row.message
    (skipped,) = py.sync()
    assert skipped.status == "skipped" and py.resolve("dm") == v2

    (reverted,) = py.sync(revert=True)
    assert (reverted.status, reverted.version) == ("synced", v1)
    assert v1[:12] in reverted.message and v2[:12] in reverted.message
    r020.call("r_pull", path=r_clone, store=store, remote=remote)
    described = r020.call("r_describe", conn=conn, read_versions=False)
    assert described["dm"]["current_version"] == v1
    # R reads the first extract's rows as current.
    assert r020.call("r_read_hash", conn=conn, name="dm") == {
        "data_sha": py.metadata("dm", v1)["data_sha"],
        "nrow": 2,
    }
