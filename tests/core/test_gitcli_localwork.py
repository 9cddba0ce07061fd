"""Work done with the git command line in a datom clone is never lost: an unpushed commit
makes a write refuse before anything changes, local branches stay, and a colleague's
executables and symbolic links are checked out as such (``_git/_localwork``,
``_git/_worktree``). After each scenario real git accepts the remote."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._git import MetadataRepo
from tests.core.projects import fingerprint, frame, new_project
from tests.gitcli import GIT, git, needs_git

pytestmark = needs_git

WHO = ("-c", "user.name=Grace Hopper", "-c", "user.email=grace@example.org")


def git_accepts(remote: str | Path, tmp_path: Path) -> None:
    """``git fsck --strict --full`` is clean and ``git clone --no-local`` works."""
    remote = Path(str(remote).removeprefix("file://"))
    git(remote, "fsck", "--strict", "--full", "--no-dangling")
    target = tmp_path / f"verify-{len(list(tmp_path.glob('verify-*')))}"
    git(tmp_path, "clone", "-q", "--no-local", str(remote), str(target))
    git(target, "fsck", "--strict", "--full")


def _commit_with_git(clone: Path, name: str, text: str, message: str) -> str:
    (clone / name).write_text(text)
    git(clone, "add", "-f", name)
    git(clone, *WHO, "commit", "-qm", message)
    return git(clone, "rev-parse", "HEAD").strip()


def test_an_unpushed_git_commit_makes_a_write_refuse_before_anything_changes(
    tmp_path: Path,
) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    clone = conn.repo.path
    mine = _commit_with_git(clone, "notes.txt", "read me\n", "Notes for the team")
    before = fingerprint(conn)
    with pytest.raises(dc.GitError) as refused:
        conn.write("dm", frame(7))
    message = str(refused.value)
    assert mine[:12] in message and "Notes for the team" in message
    assert "push origin main" in message and "reset --keep" in message
    assert fingerprint(conn) == before  # nothing uploaded, nothing recorded, nothing moved
    assert (clone / "notes.txt").read_text() == "read me\n"
    assert git(clone, "rev-parse", "HEAD").strip() == mine
    # Pushed as the message says, the next write goes on top of it and keeps it.
    git(clone, "push", "-q", "origin", "main")
    conn.write("dm", frame(7))
    assert git(clone, "rev-parse", "HEAD^").strip() == mine
    assert (clone / "notes.txt").read_text() == "read me\n"
    assert git(clone, "status", "--porcelain") == ""
    git_accepts(conn.repo.remote_url, tmp_path)


def test_an_unpushed_git_commit_is_never_reset_away(tmp_path: Path) -> None:
    """Every way the clone's branch is moved to origin refuses, the commit kept; a commit
    datom made itself and could not push is still datom's to drop."""
    a = MetadataRepo.init(tmp_path / "a", None)
    a.commit({"t/m.json": b"1"}, "first")
    a.push()
    b = MetadataRepo.clone(a.remote_url, tmp_path / "b")
    b.commit_and_push(lambda tree: {"t/m.json": b"2"}, "second")
    mine = _commit_with_git(a.path, "t/notes.txt", "kept\n", "Hand-made")
    for move in (a.fetch_and_reset, lambda: a.catch_up(b.head()), a.pull):
        with pytest.raises(dc.GitError, match=mine[:12] + "|diverged"):
            move()
        assert a.head() == mine and (a.path / "t" / "notes.txt").read_text() == "kept\n"
    git(a.path, "branch", "my-work")
    git(a.path, "reset", "-q", "--keep", "origin/main")
    assert a.fetch_and_reset() == b.head()
    assert git(a.path, "rev-parse", "my-work").strip() == mine
    own = a.commit({"t/m.json": b"3"}, "datom's own, not pushed")
    assert own is not None
    b.commit_and_push(lambda tree: {"t/m.json": b"4"}, "third")
    assert a.fetch_and_reset() == b.head()  # datom's unpushed commit: redone by its caller
    git_accepts(a.remote_url, tmp_path)


def test_a_local_branch_with_a_commit_is_never_deleted(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    clone = conn.repo.path
    git(clone, "checkout", "-q", "-b", "side")
    side = _commit_with_git(clone, "side.txt", "on a branch\n", "Side work")
    with pytest.raises(dc.GitError, match=side[:12]):
        conn.write("dm", frame(3))
    assert git(clone, "rev-parse", "side").strip() == side
    assert git(clone, "symbolic-ref", "HEAD").strip() == "refs/heads/side"
    git(clone, "checkout", "-q", "main")
    conn.write("dm", frame(3))  # back on the project branch: the write goes ahead
    assert git(clone, "rev-parse", "side").strip() == side
    assert "side.txt" not in os.listdir(clone)  # not on main, as git itself has it
    git_accepts(conn.repo.remote_url, tmp_path)


def test_a_remote_that_lost_its_branch_never_empties_the_clone(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    remote = Path(conn.repo.remote_url)
    head = conn.repo.head()
    git(remote, "update-ref", "-d", "refs/heads/main")
    with pytest.raises(dc.GitError, match="has no branch main"):
        conn.repo.fetch_and_reset()
    assert conn.repo.head() == head and (conn.repo.path / "dm" / "metadata.json").exists()


def test_executables_and_symbolic_links_of_a_colleague_are_kept(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    remote = conn.repo.remote_url
    colleague = tmp_path / "colleague"
    git(tmp_path, "clone", "-q", remote, str(colleague))
    (colleague / "tools").mkdir()
    (colleague / "tools" / "run.sh").write_text("#!/bin/sh\necho ok\n")
    os.chmod(colleague / "tools" / "run.sh", 0o755)
    os.symlink("tools/run.sh", colleague / "run")
    os.chmod(colleague / ".gitignore", 0o755)  # a mode change only
    git(colleague, "add", "-f", "tools/run.sh", "run", ".gitignore")
    git(colleague, *WHO, "commit", "-qm", "Tools")
    git(colleague, "push", "-q", "origin", "main")
    conn.write("dm", frame(4))  # the datom clone moves over the colleague's commit
    clone = conn.repo.path
    assert os.readlink(clone / "run") == "tools/run.sh"
    assert os.stat(clone / "tools" / "run.sh").st_mode & 0o111
    assert os.stat(clone / ".gitignore").st_mode & 0o111
    assert git(clone, "status", "--porcelain") == ""
    # A plain commit in the datom clone, pushed, leaves them as the colleague made them.
    git(clone, *WHO, "commit", "-qam", "Plain commit", "--allow-empty")
    git(clone, "push", "-q", "origin", "main")
    tree = git(Path(remote), "ls-tree", "-r", "main")
    assert "120000 blob" in next(line for line in tree.splitlines() if line.endswith("\trun"))
    assert next(line for line in tree.splitlines() if line.endswith("tools/run.sh")).startswith(
        "100755"
    )
    assert next(line for line in tree.splitlines() if line.endswith(".gitignore")).startswith(
        "100755"
    )
    # A fresh datom clone checks them out the same way.
    other = dc.clone(remote, tmp_path / "other", store=conn.store)
    assert os.readlink(other.repo.path / "run") == "tools/run.sh"
    assert git(other.repo.path, "status", "--porcelain") == ""
    git_accepts(remote, tmp_path)


def test_a_clone_killed_mid_update_restores_links_and_executables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = MetadataRepo.init(tmp_path / "a", None)
    a.commit({"t/m.json": b"1"}, "first")
    a.push()
    col = tmp_path / "col"
    git(tmp_path, "clone", "-q", a.remote_url, str(col))
    os.symlink("t/m.json", col / "link")
    (col / "x.sh").write_text("#!/bin/sh\n")
    os.chmod(col / "x.sh", 0o755)
    git(col, "add", "link", "x.sh")
    git(col, *WHO, "commit", "-qm", "link")
    git(col, "push", "-q", "origin", "main")
    a.fetch_and_reset()
    (a.path / "link").unlink()  # as a process killed mid-update leaves it, journal and all
    os.chmod(a.path / "x.sh", 0o644)
    (a.controldir / "datom-worktree.journal").write_bytes(b"link\nx.sh\n")
    assert a.recover()
    assert os.readlink(a.path / "link") == "t/m.json"
    assert os.stat(a.path / "x.sh").st_mode & 0o111
    assert git(a.path, "status", "--porcelain") == ""
    assert subprocess.run([GIT or "git", "-C", str(a.path), "diff", "--quiet"]).returncode == 0
