"""A write's outcome is the remote's to say: pushes whose answer is lost (fault proxy in
front of the smart-HTTP git server, tests/faultproxy.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dulwich.repo import Repo

import datom_core as dc
from datom_core._project import _layout as L
from datom_core._sets import write_set
from tests.core.projects import frame
from tests.core.test_sets_support import member_of, read
from tests.faultproxy import FaultProxy, Rule
from tests.gitserver import GitHTTPServer

PUSH = "git-receive-pack$"  # the POST that carries the pack (the ref update)


@pytest.fixture
def proxied(
    git_http_server: GitHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[GitHTTPServer, FaultProxy]]:
    monkeypatch.setenv("DATOM_GIT_TOKEN", git_http_server.token)
    git_http_server.create_bare("proj")
    proxy = FaultProxy(f"http://127.0.0.1:{git_http_server.port}")
    try:
        yield git_http_server, proxy
    finally:
        proxy.close()


def _remote_tip(server: GitHTTPServer) -> str:
    with Repo(str(server.root / "proj")) as r:
        return r.refs[b"refs/heads/main"].decode()


def _project(tmp_path: Path, proxy: FaultProxy, **kwargs: str) -> dc.Connection:
    store = dc.LocalStore(tmp_path / "store")
    return dc.init_repo(
        tmp_path / "repo", "STUDY_001", store, remote=proxy.url_for("proj"), **kwargs
    )


def test_a_push_whose_answer_is_lost_is_a_write_that_succeeded(
    proxied: tuple[GitHTTPServer, FaultProxy], tmp_path: Path
) -> None:
    server, proxy = proxied
    conn = _project(tmp_path, proxy)
    conn.write("dm", frame())
    rule = proxy.inject("lost", method="POST", path=PUSH)
    result = conn.write("dm", frame(seed=2))
    assert rule.fired == 1  # the remote applied the push; its answer never came
    assert result.change == "full" and result.commit == _remote_tip(server)
    assert conn.repo.head() == result.commit
    assert conn.read("dm", version=result.version).equals(frame(seed=2))
    assert conn.validate().ok


def test_a_token_revoked_after_the_push_landed_keeps_the_recorded_versions_data(
    proxied: tuple[GitHTTPServer, FaultProxy], tmp_path: Path
) -> None:
    server, proxy = proxied
    conn = _project(tmp_path, proxy)
    conn.write("dm", frame())
    revoked = Rule("status", status=401, times=10**6)
    proxy.inject("after", method="POST", path=PUSH, then=revoked)
    with pytest.raises(dc.GitError) as caught:
        conn.write("dm", frame(seed=2))
    assert "may have been recorded" in "\n".join(caught.value.__notes__)
    recorded = _remote_tip(server)
    with Repo(str(server.root / "proj")) as r:
        tree = r[r[recorded.encode()].tree]
        blob = r[tree.lookup_path(r.__getitem__, b"dm/metadata.json")[1]]
        data_sha = dc.hash_table(frame(seed=2)).data_sha
        assert data_sha in blob.data.decode()  # the remote records the new data
    # Its parquet is still in the store: nothing was undone.
    assert conn.store.exists(L.store_parquet("dm", data_sha))
    proxy.clear()
    again = conn.write("dm", frame(seed=2))  # the token works again: a re-run converges
    assert again.change == "none" and again.commit == recorded
    assert conn.read("dm", version=again.version).equals(frame(seed=2))
    assert conn.store.exists(L.store_snapshot("dm", again.version))
    report = conn.validate(fix=True)
    assert conn.validate().ok, report


def test_a_refused_push_is_undone_and_the_undos_failure_does_not_hide_it(
    proxied: tuple[GitHTTPServer, FaultProxy], tmp_path: Path
) -> None:
    server, proxy = proxied
    conn = _project(tmp_path, proxy)
    conn.write("dm", frame())
    before = sorted(conn.store.list(""))
    proxy.inject("status", method="POST", path=PUSH, status=403)
    with pytest.raises(dc.GitError) as caught:
        conn.write("dm", frame(seed=2))
    assert "403" in str(caught.value)
    assert sorted(conn.store.list("")) == before  # asked the remote: not recorded, undone


def test_a_set_write_whose_push_answer_is_lost_is_recorded_and_mirrored(
    proxied: tuple[GitHTTPServer, FaultProxy], tmp_path: Path
) -> None:
    server, proxy = proxied
    conn = _project(tmp_path, proxy, mode="product", set="adam")
    conn.write("dm", frame())
    proxy.inject("lost", method="POST", path=PUSH)
    result = write_set(conn, [member_of(conn, "dm")], tags={"by": "a"})
    assert result.commit == _remote_tip(server)
    assert read(conn).version == result.version  # the store's copy names it


def test_a_none_write_reports_its_own_version_when_a_process_sharing_the_clone_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-run after a lost answer is mostly a ``none`` write; the version it reports is
    the one holding its data, even when another process moved the shared clone on."""
    from datom_core._project import _write

    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", dc.LocalStore(tmp_path / "store"))
    first = conn.write("dm", frame(seed=1))
    other = dc.connect(conn.path)
    real = _write.converge_mirror

    def meanwhile(ctx: object, table: str) -> object:
        monkeypatch.setattr(_write, "converge_mirror", real)
        other.write("dm", frame(seed=2))  # through the same clone, between the steps
        return real(ctx, table)  # type: ignore[arg-type]

    monkeypatch.setattr(_write, "converge_mirror", meanwhile)
    again = conn.write("dm", frame(seed=1))
    assert again.change == "none"
    assert (again.version, again.commit) == (first.version, first.commit)
    assert again.data_sha == dc.hash_table(frame(seed=1)).data_sha
