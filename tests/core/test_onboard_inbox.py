"""Scanning inboxes: what a scan reads, the SHA cache, other folders, S3 and readers."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

import datom_core as dc
from datom_core._git import MetadataRepo
from datom_core._onboard._inbox import RACY_WINDOW_NS
from datom_core._project import _layout as L
from tests.core.projects import new_project
from tests.core.test_readers import FIXTURES

_HOUR_NS = 3600 * 10**9


class CountingStore(dc.LocalStore):
    """A real local store that records the keys it is asked to read."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.reads: list[str] = []

    def read_bytes(self, key: str) -> bytes:
        self.reads.append(key)
        return super().read_bytes(key)

    def open_read(self, key: str) -> Any:
        self.reads.append(key)
        return super().open_read(key)


class CountingRepo(MetadataRepo):
    """A real clone that records the working-tree files it is asked to read."""

    def __init__(self, path: str | os.PathLike[str], **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.reads: list[str] = []

    def read(self, relpath: str) -> bytes | None:
        self.reads.append(relpath)
        return super().read(relpath)


def _csv(path: Path, n: int, age: int = 30) -> Path:
    path.write_text("USUBJID,AGE\n" + "".join(f"S-{i:03d},{age + i}\n" for i in range(n)))
    return path


def _settle(path: Path, age_ns: int = _HOUR_NS) -> None:
    """Date the file back, as an extract dropped earlier (outside the racy window)."""
    mtime = path.stat().st_mtime_ns - age_ns
    os.utime(path, ns=(mtime, mtime))


def _counting(tmp_path: Path) -> tuple[dc.Connection, CountingStore, CountingRepo]:
    store = CountingStore(tmp_path / "store")
    dc.init_repo(tmp_path / "repo", "STUDY_001", store)
    repo = CountingRepo(tmp_path / "repo")
    return dc.Connection("STUDY_001", store, repo), store, repo


def test_scanning_unchanged_files_reads_only_the_manifest(tmp_path: Path) -> None:
    conn, store, repo = _counting(tmp_path)
    for domain in ("ae", "dm", "lb"):
        _csv(conn.path / L.INBOX / f"{domain}.csv", 3)
    conn.sync()

    store.reads.clear()
    repo.reads.clear()
    rows = conn.scan_inbox()
    assert {r.status for r in rows} == {"unchanged"}
    assert repo.reads == [L.MANIFEST]
    assert store.reads == []

    # A changed file makes the scan read that table's history, and nothing else.
    _csv(conn.path / L.INBOX / "dm.csv", 4)
    repo.reads.clear()
    assert {r.name: r.status for r in conn.scan_inbox()}["dm"] == "changed"
    assert repo.reads == [L.MANIFEST, L.git_history("dm")]
    assert store.reads == []


def test_settled_unchanged_files_are_recognised_by_stat_alone(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    path = _csv(conn.path / L.INBOX / "dm.csv", 3, age=30)
    _settle(path)
    conn.sync()
    cache = conn.path / ".git" / "datom-inbox-cache.json"
    entries = json.loads(cache.read_text())["entries"]
    assert set(entries) == {str(path)}

    # Same size, same mtime, same inode, other bytes: the cache answers, the file is not
    # re-read (the price of not hashing the inbox on every scan, as with git's index).
    stat = path.stat()
    with path.open("r+b") as f:
        f.seek(stat.st_size - 3)
        f.write(b"99\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert [r.status for r in conn.scan_inbox()] == ["unchanged"]

    # Any change of the fingerprint re-hashes the file.
    _settle(path, age_ns=10**9)
    assert [r.status for r in conn.scan_inbox()] == ["changed"]


def test_a_freshly_written_file_is_rehashed_until_it_settles(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    path = _csv(conn.path / L.INBOX / "dm.csv", 3, age=30)
    conn.sync()
    stat = path.stat()
    assert time.time_ns() - stat.st_mtime_ns < RACY_WINDOW_NS  # written just now
    cache = conn.path / ".git" / "datom-inbox-cache.json"
    assert not cache.exists() or str(path) not in json.loads(cache.read_text())["entries"]

    # Rewritten within the same timestamp tick, same size: still seen as changed.
    with path.open("r+b") as f:
        f.seek(stat.st_size - 3)
        f.write(b"99\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert [r.status for r in conn.scan_inbox()] == ["changed"]


def test_the_cache_is_never_committed_and_a_corrupt_one_is_ignored(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    path = _csv(conn.path / L.INBOX / "dm.csv", 3)
    _settle(path)
    conn.sync()
    cache = conn.path / ".git" / "datom-inbox-cache.json"
    assert cache.exists()
    assert conn.repo.read_at(conn.repo.head(), "datom-inbox-cache.json") is None
    cache.write_text("{ truncated")
    assert [r.status for r in conn.scan_inbox()] == ["unchanged"]
    assert json.loads(cache.read_text())["entries"][str(path)]["sha"] == dc.file_sha(path)

    # Files that left the inbox leave the cache too.
    path.unlink()
    assert conn.scan_inbox() == []
    assert json.loads(cache.read_text())["entries"] == {}


def test_any_local_folder_can_be_scanned(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    elsewhere = tmp_path / "exports"
    elsewhere.mkdir()
    _csv(elsewhere / "dm.csv", 2)

    (row,) = conn.scan_inbox(elsewhere)
    assert (row.file, row.status) == (str(elsewhere / "dm.csv"), "new")
    assert conn.sync([row])[0].status == "synced"
    assert conn.scan_inbox(str(elsewhere))[0].status == "unchanged"
    assert conn.scan_inbox() == []  # the project's own inbox is empty

    with pytest.raises(dc.NotFoundError, match="does not exist"):
        conn.scan_inbox(tmp_path / "absent")
    with pytest.raises(dc.OnboardingError, match="not a folder"):
        conn.scan_inbox(elsewhere / "dm.csv")


def test_a_reader_scans_against_the_store_and_cannot_sync(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    path = _csv(conn.path / L.INBOX / "dm.csv", 3)
    conn.sync()
    reader = dc.connect(store=conn.store, project_name="STUDY_001")

    assert [r.status for r in reader.scan_inbox(conn.path / L.INBOX)] == ["unchanged"]
    _csv(path, 4)
    assert [r.status for r in reader.scan_inbox(conn.path / L.INBOX)] == ["changed"]
    with pytest.raises(dc.ReadOnlyError, match="no inbox"):
        reader.scan_inbox()
    with pytest.raises(dc.ReadOnlyError):
        reader.sync()


def test_an_s3_prefix_is_an_inbox(tmp_path: Path, s3_endpoint: str, s3_bucket: str) -> None:
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=s3_endpoint, skip_instance_cache=True)
    prefix = f"{s3_bucket}/extracts/2026-01"
    expected = {}
    for fmt in ("csv", "xpt", "xlsx"):
        write, expected[fmt] = FIXTURES[fmt]
        local = tmp_path / f"{fmt}_domain.{fmt}"
        write(local)
        fs.put_file(str(local), f"{prefix}/{local.name}")
    fs.pipe_file(f"{prefix}/notes.json", b"{}")
    fs.pipe_file(f"{prefix}/archive/old.csv", b"a\n1\n")
    options = {"endpoint_url": s3_endpoint}
    conn = new_project(tmp_path)

    rows = conn.scan_inbox(f"s3://{prefix}", storage_options=options)
    assert [(r.name, r.status, r.file) for r in rows] == [
        ("archive", "refused", f"s3://{prefix}/archive"),
        ("csv_domain", "new", f"s3://{prefix}/csv_domain.csv"),
        ("notes", "unsupported_format", f"s3://{prefix}/notes.json"),
        ("xlsx_domain", "new", f"s3://{prefix}/xlsx_domain.xlsx"),
        ("xpt_domain", "new", f"s3://{prefix}/xpt_domain.xpt"),
    ]
    assert rows[1].original_file_sha == dc.file_sha(tmp_path / "csv_domain.csv")

    results = conn.sync(rows, storage_options=options)
    assert [(r.name, r.status) for r in results] == [
        ("archive", "error"),
        ("csv_domain", "synced"),
        ("notes", "skipped"),
        ("xlsx_domain", "synced"),
        ("xpt_domain", "synced"),
    ]
    for fmt in ("csv", "xpt", "xlsx"):
        back = conn.read(f"{fmt}_domain", as_="arrow")
        assert back.to_pydict() == expected[fmt].to_pydict()
    assert [t.original_format for t in conn.tables()] == ["csv", "xlsx", "xpt"]

    again = conn.scan_inbox(f"s3://{prefix}", storage_options=options)
    assert [r.status for r in again if r.format in FIXTURES] == ["unchanged"] * 3
    cached = json.loads((conn.path / ".git" / "datom-inbox-cache.json").read_text())["entries"]
    assert sorted(cached) == [r.file for r in rows if r.status == "new"]  # by ETag
    fs.pipe_file(f"{prefix}/csv_domain.csv", b"USUBJID\nS-9\n")
    changed = conn.scan_inbox(f"s3://{prefix}", storage_options=options)
    assert {r.name: r.status for r in changed}["csv_domain"] == "changed"
