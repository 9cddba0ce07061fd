"""Clones of a local remote read its objects in place (git's alternates, ``_git/_fast/_share``):
no copies, git accepts them, compaction of the remote keeps them readable, an absent
remote is a clear error that loses nothing, and a clone can opt out."""

from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path

import pytest
from dulwich.objects import Blob
from dulwich.repo import Repo

import datom_core as dc
from datom_core._git import MetadataRepo
from datom_core._git import _maintenance as maint
from datom_core._git._fast._packs import write_objects
from datom_core._git._fast._share import SHARE_ENV
from tests.core.projects import frame
from tests.core.test_git_objects import ME, loose_files, put
from tests.gitcli import GIT, git


def _alternates(clone: Path) -> list[str]:
    path = clone / ".git" / "objects" / "info" / "alternates"
    return path.read_text().split() if path.exists() else []


def _loose(clone: Path) -> set[str]:
    return set(loose_files(clone / ".git" / "objects"))


@pytest.mark.usefixtures("accelerated")
def test_clones_read_the_remotes_objects_without_copying_them(tmp_path: Path) -> None:
    a = MetadataRepo.init(tmp_path / "a", None)
    b = MetadataRepo.clone(a.remote_url, tmp_path / "b")
    remote = MetadataRepo.embedded_remote_path(tmp_path / "a")
    for clone in ("a", "b"):
        assert _alternates(tmp_path / clone) == [str((remote / "objects").resolve())]
    before = {c: _loose(tmp_path / c) for c in ("a", "b")}
    shas = []
    for i in range(12):
        writer = (a, b)[i % 2]
        shas.append(writer.commit_and_push(put({f"t{i % 3}/m.json": b"%d" % i}), f"c{i}", ME))
    assert {c: _loose(tmp_path / c) for c in ("a", "b")} == before  # nothing copied
    a.fetch_and_reset()
    for repo in (a, b):
        assert [c.id for c in repo.log()][: len(shas)] == list(reversed(shas))
        assert repo.tree().read("t2/m.json") == b"11"
    if GIT is not None:
        for clone in (tmp_path / "a", tmp_path / "b"):
            git(clone, "fsck", "--strict", "--no-dangling")
            assert git(clone, "status", "--porcelain") == ""
            assert git(clone, "log", "--format=%H", "-1").strip() == shas[-1]


@pytest.mark.usefixtures("accelerated")  # the compaction accelerator itself
def test_a_clone_stays_readable_while_its_remote_is_compacted(tmp_path: Path) -> None:
    a = MetadataRepo.init(tmp_path / "a", None)
    b = MetadataRepo.clone(a.remote_url, tmp_path / "b")
    remote = MetadataRepo.embedded_remote_path(tmp_path / "a")
    for i in range(maint.PACK_BUDGET + 4):
        a.commit_and_push(put({f"t{i}/m.json": b"%d" % i}), f"c{i}", ME)
    with closing(Repo(str(remote))) as r:  # past the remote's budget, with no push to see it
        for _ in range(maint.PACK_BUDGET + 1):
            write_objects(
                r.object_store, [r.object_store[r.head()], Blob.from_string(os.urandom(8))]
            )
    b.fetch_and_reset()
    seen = b.tree().read("t3/m.json")  # b's handle lists the remote's packs now
    with closing(Repo(str(remote))) as r:
        packs_before = len(r.object_store.packs)
        maint.compact(r)  # merges packs, deleting the ones b listed
        assert len(r.object_store.packs) < packs_before
    assert seen == b"3"
    assert [b.read_at(c.id, f"t{i}/m.json") for i, c in enumerate(reversed(b.log()))] == [
        b"%d" % i for i in range(maint.PACK_BUDGET + 4)
    ]


@pytest.mark.usefixtures("accelerated")
def test_an_absent_remote_is_a_clear_error_and_the_write_loses_nothing(tmp_path: Path) -> None:
    conn = dc.init_repo(tmp_path / "repo", "P", dc.LocalStore(tmp_path / "store"))
    first = conn.write("dm", frame(seed=1))
    remote = MetadataRepo.embedded_remote_path(tmp_path / "repo")
    remote.rename(tmp_path / "away")
    with pytest.raises(dc.GitError, match="not there now"):
        conn.repo.tree()
    with pytest.raises(dc.GitError):
        conn.write("dm", frame(seed=2))
    assert conn.read("dm").equals(frame(seed=1))  # readers need only the store
    (tmp_path / "away").rename(remote)
    assert conn.repo.head() == first.commit
    assert conn.validate().ok
    assert conn.write("dm", frame(seed=2)).change == "full"


@pytest.mark.parametrize("how", ["environment", "git config", "plain path"])
def test_a_clone_can_opt_out_and_then_holds_its_own_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    a = MetadataRepo.init(tmp_path / "a", None)
    a.commit_and_push(put({"t/m.json": b"1"}), "one", ME)
    monkeypatch.setenv(*(("DATOM_PLAIN", "share") if how == "plain path" else (SHARE_ENV, "0")))
    b = MetadataRepo.clone(a.remote_url, tmp_path / "b")
    if how == "git config":
        with closing(Repo(str(tmp_path / "b"))) as r:
            config = r.get_config()
            config.set((b"datom",), b"shareObjects", False)
            config.write_to_path()
        monkeypatch.delenv(SHARE_ENV)
        b = MetadataRepo.open(tmp_path / "b")
    a.commit_and_push(put({"t/m.json": b"2"}), "two", ME)
    b.commit_and_push(put({"u/m.json": b"3"}), "three", ME)
    assert _alternates(tmp_path / "b") == []
    remote = MetadataRepo.embedded_remote_path(tmp_path / "a")
    (remote).rename(tmp_path / "away")  # b stands alone: its whole history is its own
    assert [b.read_at(c.id, "t/m.json") for c in b.log()[:3]] == [b"2", b"2", b"1"]


@pytest.mark.usefixtures("accelerated")
def test_a_sharing_clone_and_a_copying_one_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The accelerator and its plain path (``DATOM_PLAIN=share``) side by side on one
    remote, writing in turn: the same commits, files and history in both clones."""
    fast = MetadataRepo.init(tmp_path / "fast", None)
    monkeypatch.setenv("DATOM_PLAIN", "share")
    plain = MetadataRepo.clone(fast.remote_url, tmp_path / "plain")
    monkeypatch.setenv("DATOM_PLAIN", "0")
    assert _alternates(tmp_path / "fast") and not _alternates(tmp_path / "plain")
    for i in range(8):
        writer = (fast, plain)[i % 2]
        writer.commit_and_push(put({f"t{i % 3}/m.json": b"%d" % i}), f"c{i}", ME)
    for repo in (fast, plain):
        repo.fetch_and_reset()
    assert [c.id for c in fast.log()] == [c.id for c in plain.log()]
    for c in fast.log():
        for t in ("t0", "t1", "t2"):
            assert fast.read_at(c.id, f"{t}/m.json") == plain.read_at(c.id, f"{t}/m.json")
    if GIT is not None:
        for clone in (tmp_path / "fast", tmp_path / "plain"):
            git(clone, "fsck", "--strict", "--no-dangling")
            assert git(clone, "status", "--porcelain") == ""
