"""A colleague's linked worktree (``git worktree add``) of a datom clone: refs every
worktree shares (the remote-tracking ref, datom's fetched ref) and the repository's
configuration live in the common git folder, where git reads them; what is the
worktree's own (its index, its ``HEAD``, datom's journal and lock) in its own."""

from __future__ import annotations

from pathlib import Path

import pytest

import datom_core as dc
from tests.core.projects import fingerprint, frame, new_project
from tests.core.test_gitcli_localwork import git_accepts
from tests.gitcli import git, needs_git

pytestmark = needs_git


def _worktree_of_main(tmp_path: Path) -> tuple[dc.Connection, Path, Path]:
    """A project, a colleague's clone of it now on a branch of their own, and a linked
    worktree of that clone on the project's branch."""
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    theirs, linked = tmp_path / "theirs", tmp_path / "linked"
    git(tmp_path, "clone", "-q", conn.repo.remote_url, str(theirs))
    git(theirs, "switch", "-q", "-c", "docs")
    git(theirs, "worktree", "add", "-q", str(linked), "main")
    return conn, theirs, linked


def test_a_linked_worktree_on_the_project_branch_writes_where_git_reads(tmp_path: Path) -> None:
    conn, theirs, linked = _worktree_of_main(tmp_path)
    docs = git(theirs, "rev-parse", "docs")
    mine = dc.connect(linked)
    mine.write("ae", frame(2))
    mine.write("dm", frame(6, seed=1))
    head = mine.repo.head()
    assert git(linked, "rev-parse", "origin/main").strip() == head == conn.repo.remote_head()
    assert git(linked, "status", "-sb").splitlines()[0] == "## main...origin/main"
    private = theirs / ".git" / "worktrees" / "linked"
    assert not (private / "refs").exists(), sorted(map(str, private.rglob("*")))
    assert git(linked, "status", "--porcelain") == git(theirs, "status", "--porcelain") == ""
    assert git(theirs, "rev-parse", "docs") == docs
    assert mine.validate().ok and len(conn.read("ae")) == 2
    git(theirs, "fsck", "--strict", "--no-dangling")
    git_accepts(conn.repo.remote_url, tmp_path)


def test_a_linked_worktrees_remote_set_url_is_followed(tmp_path: Path) -> None:
    """The configuration is the common folder's: ``git remote set-url`` run in the linked
    worktree takes effect on a handle already open there."""
    conn, theirs, linked = _worktree_of_main(tmp_path)
    mine = dc.connect(linked)
    mine.write("ae", frame(2))
    moved = tmp_path / "moved.git"
    git(tmp_path, "clone", "-q", "--bare", conn.repo.remote_url, str(moved))
    git(linked, "remote", "set-url", "origin", str(moved))
    mine.write("ex", frame(3))
    assert git(moved, "rev-parse", "main").strip() == mine.repo.head()
    assert git(Path(conn.repo.remote_url), "rev-parse", "main").strip() != mine.repo.head()


def test_a_linked_worktree_on_a_branch_of_its_own_is_refused(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    theirs, linked = tmp_path / "theirs", tmp_path / "linked"
    git(tmp_path, "clone", "-q", conn.repo.remote_url, str(theirs))
    git(theirs, "worktree", "add", "-q", "-b", "mine", str(linked))
    before = fingerprint(conn)
    with pytest.raises(dc.GitError, match="mine"):
        dc.connect(linked).write("dm", frame(7))
    assert fingerprint(conn) == before
