"""A stale inbox file never silently reverts another writer's newer version.

Two clones of one project: A onboarded the first extract of ``dm``; B (another person,
another clone) onboarded a newer one. A's inbox still holds the first file. Scanning
reports it ``stale`` (naming both versions), sync leaves it, and only
``sync(revert=True)`` / ``datom sync --revert`` makes the earlier version current again.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._project import _layout as L
from tests.core.cli_helpers import run
from tests.core.projects import fingerprint, new_project, remote_head

DM_V1 = "USUBJID,AGE\nS-001,34\nS-002,51\n"
DM_V2 = "USUBJID,AGE\nS-001,34\nS-002,51\nS-003,29\n"
HOUR = 3600.0


def _drop(conn: dc.Connection, text: str, modified: float | None = None) -> Path:
    inbox = conn.path / L.INBOX
    inbox.mkdir(exist_ok=True)
    path = inbox / "dm.csv"
    path.write_text(text)
    if modified is not None:
        os.utime(path, (modified, modified))
    return path


def _two_clones(tmp_path: Path) -> tuple[dc.Connection, dc.Connection, str, str]:
    """A onboarded v1 (a file of an hour ago), then B onboarded v2; A has pulled."""
    a = new_project(tmp_path / "a")
    _drop(a, DM_V1, time.time() - HOUR)
    (first,) = a.sync()
    b = dc.clone(a.repo.remote_url, tmp_path / "b", a.store)
    _drop(b, DM_V2)
    (second,) = b.sync()
    assert (first.status, second.status) == ("synced", "synced")
    a.pull()
    return a, b, str(first.version), str(second.version)


def test_a_leftover_earlier_extract_is_stale_and_sync_leaves_it(tmp_path: Path) -> None:
    a, b, v1, v2 = _two_clones(tmp_path)
    (row,) = a.scan_inbox()
    assert row.status == "stale"
    assert f"version {v1[:12]}" in row.message and f"version {v2[:12]}" in row.message
    assert "revert=True" in row.message and "datom sync --revert" in row.message
    before = fingerprint(a)
    (synced,) = a.sync()
    assert (synced.status, synced.change) == ("skipped", None)
    assert synced.message == row.message
    assert fingerprint(a) == before
    assert a.resolve("dm") == v2 and b.resolve("dm") == v2


def test_revert_makes_the_earlier_version_current_naming_both(tmp_path: Path) -> None:
    a, b, v1, v2 = _two_clones(tmp_path)
    (reverted,) = a.sync(revert=True)
    assert (reverted.status, reverted.version) == ("synced", v1)
    assert f"version {v1[:12]}" in reverted.message and f"version {v2[:12]}" in reverted.message
    assert "reverted" in reverted.message
    b.pull()
    assert b.resolve("dm") == v1
    assert [h.version for h in b.history("dm")] == [v2, v1]  # no second entry for v1
    (after,) = a.scan_inbox()
    assert after.status == "unchanged"


def test_an_earlier_extract_dropped_after_the_current_version_is_changed(tmp_path: Path) -> None:
    # Dropped again on purpose (modified after v2 was recorded): the old behaviour.
    a, _, v1, v2 = _two_clones(tmp_path)
    _drop(a, DM_V1, time.time() + 5)
    (row,) = a.scan_inbox()
    assert row.status == "changed" and f"version {v1[:12]}" in row.message
    (synced,) = a.sync()
    assert (synced.status, synced.version) == ("synced", v1)


def test_a_scan_on_an_old_tip_cannot_revert_a_newer_remote_version(tmp_path: Path) -> None:
    # A's clone does not know v3 yet: its scan calls the file a deliberate re-drop
    # (modified after v2), but B recorded v3 after the file was modified. The write of
    # that scan's row, which classifies on the remote's tip, refuses.
    a = new_project(tmp_path / "a")
    _drop(a, DM_V1, time.time() - HOUR)
    (first,) = a.sync()
    _drop(a, DM_V2, time.time() - HOUR / 2)
    a.sync()
    b = dc.clone(a.repo.remote_url, tmp_path / "b", a.store)
    time.sleep(1.1)  # last_updated has whole seconds
    _drop(a, DM_V1)
    time.sleep(1.1)
    _drop(b, DM_V2 + "S-004,40\n")
    (third,) = b.sync()
    v3 = str(third.version)
    (row,) = a.scan_inbox()
    assert row.status == "changed"  # what A's clone can tell without the network
    remote = remote_head(a)
    (refused,) = a.sync([row])  # the rows of that scan, as a reviewed scan is passed
    assert refused.status == "error" and refused.message.startswith("stale: ")
    assert f"version {v3[:12]}" in refused.message and "Nothing was written" in refused.message
    assert remote_head(a) == remote
    b.pull()
    assert b.resolve("dm") == v3
    (again,) = a.sync()  # a fresh scan: sync sees the remote's newer version first
    assert again.status == "skipped" and f"version {v3[:12]}" in again.message
    (reverted,) = a.sync(revert=True)
    assert (reverted.status, reverted.version) == ("synced", first.version)


def test_the_cli_reports_stale_and_reverts_on_request(tmp_path: Path) -> None:
    a, _, v1, v2 = _two_clones(tmp_path)
    scan = run("--repo", a.path, "scan")
    assert scan.exit_code == 0 and "stale" in scan.stdout
    sync = run("--repo", a.path, "sync")
    assert sync.exit_code == 0 and "skipped" in sync.stdout and "--revert" in sync.stdout
    assert a.resolve("dm") == v2
    reverted = run("--repo", a.path, "sync", "--revert")
    assert reverted.exit_code == 0, reverted.stderr
    assert v1[:12] in reverted.stdout and v2[:12] in reverted.stdout
    assert a.resolve("dm") == v1


@pytest.mark.parametrize("last_updated", [None, "", "yesterday"])
def test_no_usable_time_is_never_stale(last_updated: str | None) -> None:
    from datom_core._project._model import ManifestEntry
    from datom_core._project._stale import is_stale

    entry = ManifestEntry({}, "dm", "table", "a" * 64, last_updated=last_updated)
    assert not is_stale(0.0, entry)
    assert not is_stale(
        None, ManifestEntry({}, "dm", "table", "a" * 64, last_updated="2026-01-01T00:00:00Z")
    )
    assert is_stale(
        0.0, ManifestEntry({}, "dm", "table", "a" * 64, last_updated="2026-01-01T00:00:00Z")
    )


def test_a_stale_file_in_an_s3_inbox(tmp_path: Path, s3_endpoint: str, s3_bucket: str) -> None:
    # The file's time is S3's LastModified; the newer version comes from another clone.
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=s3_endpoint, skip_instance_cache=True)
    prefix = f"{s3_bucket}/extracts"
    fs.pipe_file(f"{prefix}/dm.csv", DM_V1.encode())
    options = {"endpoint_url": s3_endpoint}
    a = new_project(tmp_path / "a")
    (first,) = a.sync(path=f"s3://{prefix}", storage_options=options)
    b = dc.clone(a.repo.remote_url, tmp_path / "b", a.store)
    time.sleep(1.1)  # last_updated has whole seconds
    _drop(b, DM_V2)
    (second,) = b.sync()
    a.pull()
    (row,) = a.scan_inbox(f"s3://{prefix}", storage_options=options)
    assert row.status == "stale", row
    assert str(first.version)[:12] in row.message and str(second.version)[:12] in row.message
    (skipped,) = a.sync(path=f"s3://{prefix}", storage_options=options)
    assert skipped.status == "skipped" and a.resolve("dm") == second.version
    (reverted,) = a.sync(path=f"s3://{prefix}", storage_options=options, revert=True)
    assert (reverted.status, reverted.version) == ("synced", first.version)


def test_remote_modification_times_of_fsspec_backends() -> None:
    import datetime as dt

    from datom_core._onboard._inbox import remote_modified

    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert remote_modified({"LastModified": when}) == when.timestamp()  # s3fs
    assert remote_modified({"mtime": 1767323045.5}) == 1767323045.5  # local, sftp
    assert remote_modified({"updated": "2026-01-02T03:04:05Z"}) == when.timestamp()  # gcsfs
    assert remote_modified({"last_modified": when.replace(tzinfo=None)}) == when.timestamp()
    assert remote_modified({"size": 3}) is None
