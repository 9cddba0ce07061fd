"""S3 faults (fault proxy in front of moto, tests/faultproxy.py): what a failed write put
is removed, documents never go backwards, and each error names its real cause."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import datom_core as dc
from tests.core.projects import frame
from tests.faultproxy import FaultProxy
from tests.gitserver import GitHTTPServer

PARQUET = r"/dm/[0-9a-f]{64}\.parquet$"
SNAPSHOT = r"/dm/\.metadata/[0-9a-f]{64}\.json$"


def _project(tmp_path: Path, bucket: str, proxy: FaultProxy) -> dc.Connection:
    store = dc.S3Store(bucket, prefix="proj", endpoint_url=proxy.url)
    return dc.init_repo(tmp_path / "repo", "STUDY_001", store)


def _keys(conn: dc.Connection) -> list[str]:
    return sorted(conn.store.list(""))


def test_a_parquet_put_whose_answer_was_lost_is_this_writes_and_removed_when_it_fails(
    tmp_path: Path, s3_bucket: str, s3_proxy: FaultProxy
) -> None:
    conn = _project(tmp_path, s3_bucket, s3_proxy)
    conn.write("dm", frame())
    before = _keys(conn)
    lost = s3_proxy.inject("lost", method="PUT", path=PARQUET)
    refused = s3_proxy.inject("status", method="PUT", path=SNAPSHOT, status=403)
    with pytest.raises(dc.StoreError):
        conn.write("dm", frame(seed=2))
    assert (lost.fired, refused.fired) == (1, 1)
    assert _keys(conn) == before  # the parquet that landed unanswered is removed too


def test_a_failure_outside_datoms_errors_still_removes_what_the_write_put(
    tmp_path: Path, s3_bucket: str, s3_proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = _project(tmp_path, s3_bucket, s3_proxy)
    conn.write("dm", frame())
    before = _keys(conn)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug between the upload and the push")

    monkeypatch.setattr(type(conn.repo), "commit_and_push", broken)
    with pytest.raises(RuntimeError):
        conn.write("dm", frame(seed=2))
    assert _keys(conn) == before


def test_an_undo_that_fails_keeps_the_push_error_and_validate_removes_the_orphans_later(
    tmp_path: Path, s3_bucket: str, s3_proxy: FaultProxy
) -> None:
    conn = _project(tmp_path, s3_bucket, s3_proxy)
    conn.write("dm", frame())
    before = _keys(conn)
    s3_proxy.inject("status", method="PUT", path=SNAPSHOT, status=503, times=100)
    s3_proxy.inject("status", method="DELETE", path=PARQUET, status=403, times=100)
    with pytest.raises(dc.StoreError) as caught:
        conn.write("dm", frame(seed=2))
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "undo could not remove" in notes and ".parquet" in notes
    assert "503" in str(caught.value)  # the write's own error, not the undo's
    s3_proxy.clear()
    left = sorted(set(_keys(conn)) - set(before))
    assert len(left) == 1 and left[0].endswith(".parquet")
    young = conn.validate(fix=True)  # within the grace period: may be a write in flight
    assert not [p for p in young.problems if p.kind == "orphaned_object"]
    report = conn.validate(fix=True, grace_s=0)
    orphans = [p for p in report.problems if p.kind == "orphaned_object"]
    assert [p.key for p in orphans] == left and all(p.fixed for p in orphans)
    assert _keys(conn) == before
    assert conn.validate(grace_s=0).ok


@pytest.mark.parametrize(
    ("mode", "options", "says", "not_says"),
    [
        ("slowdown", {}, "is throttling requests (", "AWS credentials"),
        ("status", {"status": 503}, "throttling requests (HTTP 503", "AWS credentials"),
        ("status", {"status": 500}, "failed on its side (HTTP 500", "AWS credentials"),
        ("reset", {}, "cannot connect to endpoint_url", "AWS credentials"),
        ("status", {"status": 403}, "check the AWS credentials", "throttling"),
    ],
)
def test_each_s3_failure_names_its_own_cause(
    s3_bucket: str, s3_proxy: FaultProxy, mode: str, options: dict, says: str, not_says: str
) -> None:
    store = dc.S3Store(s3_bucket, prefix="proj", endpoint_url=s3_proxy.url)
    s3_proxy.inject(mode, times=100, **options)
    with pytest.raises(dc.StoreError) as caught:
        store.write_bytes(".metadata/manifest.json", b"{}")
    assert says in str(caught.value) and not_says not in str(caught.value)


def test_a_timeout_and_a_missing_bucket_are_named(s3_bucket: str, s3_proxy: FaultProxy) -> None:
    options = {"config_kwargs": {"read_timeout": 0.5, "retries": {"total_max_attempts": 1}}}
    store = dc.S3Store(s3_bucket, prefix="proj", endpoint_url=s3_proxy.url, **options)
    s3_proxy.inject("stall", delay=3, times=100)
    with pytest.raises(dc.StoreError) as caught:
        store.write_bytes(".metadata/manifest.json", b"{}")
    assert "did not answer in time" in str(caught.value)
    s3_proxy.clear()
    missing = dc.S3Store("no-such-bucket-here", prefix="proj", endpoint_url=s3_proxy.url)
    with pytest.raises(dc.StoreError) as caught:
        missing.write_bytes(".metadata/manifest.json", b"{}")
    assert "bucket 'no-such-bucket-here' does not exist" in str(caught.value)
    assert "credentials" not in str(caught.value)


def test_a_failed_writes_snapshot_is_adopted_by_the_rerun_not_reported_as_forged(
    tmp_path: Path,
    s3_bucket: str,
    s3_proxy: FaultProxy,
    git_http_server: GitHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DATOM_GIT_TOKEN", git_http_server.token)
    git_http_server.create_bare("proj")
    git_proxy = FaultProxy(f"http://127.0.0.1:{git_http_server.port}")
    try:
        store = dc.S3Store(s3_bucket, prefix="proj", endpoint_url=s3_proxy.url)
        conn = dc.init_repo(tmp_path / "repo", "STUDY_001", store, remote=git_proxy.url_for("proj"))
        conn.write("dm", frame())
        git_proxy.inject("status", method="POST", path="git-receive-pack$", status=403)
        s3_proxy.inject("status", method="DELETE", status=403, times=100)
        with pytest.raises(dc.GitError) as caught:  # the push's refusal, not the undo's error
            conn.write("dm", frame(seed=2))
        assert "403" in str(caught.value)
        assert "undo could not remove" in "\n".join(caught.value.__notes__)
        s3_proxy.clear()
        time.sleep(1.1)  # the re-run's own document would carry another created_at
        again = conn.write("dm", frame(seed=2))
        assert again.change == "full"
        report = conn.validate(grace_s=0)
        assert report.ok, [(p.kind, p.key) for p in report.problems]
        assert conn.read("dm", version=again.version).equals(frame(seed=2))
    finally:
        git_proxy.close()


@pytest.mark.parametrize(
    "document",
    [r"/dm/\.metadata/metadata\.json$", r"/dm/\.metadata/version_history\.json$",
     r"/datom/\.metadata/manifest\.json$"],
)  # fmt: skip
def test_a_mirror_put_delivered_late_never_puts_an_older_document_back(
    tmp_path: Path, s3_bucket: str, s3_proxy: FaultProxy, document: str
) -> None:
    options = {"config_kwargs": {"read_timeout": 1}}
    store = dc.S3Store(s3_bucket, prefix="proj", endpoint_url=s3_proxy.url, **options)
    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", store)
    conn.write("dm", frame())
    held = s3_proxy.inject("hold", method="PUT", path=document)
    first = conn.write("dm", frame(seed=1))  # its PUT is held; the retry lands
    assert held.fired == 1 and len(s3_proxy.held) == 1
    second = conn.write("dm", frame(seed=2))
    key = document.strip("$").replace("\\", "").rsplit("/datom/", 1)[-1].lstrip("/")
    current = conn.store.read_bytes(key)
    assert s3_proxy.deliver_held() == [412]  # the stale PUT lands now, and is refused
    assert conn.store.read_bytes(key) == current
    assert conn.read("dm").equals(frame(seed=2)) and second.version != first.version
    assert conn.validate().ok
