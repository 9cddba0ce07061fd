"""A colleague's sparse checkout of a datom project (``git sparse-checkout``): datom's writes
keep to it as git's own checkout does, and git is the judge (``git sparse-checkout
reapply`` finds nothing to do). A sparse index datom cannot update is refused before
anything changes; settings git keeps in ``config.worktree`` are read (``_git/_settings``,
``_git/_worktree``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import datom_core as dc
from tests.core.projects import fingerprint, frame, new_project
from tests.core.test_gitcli_localwork import git_accepts
from tests.gitcli import git, needs_git

pytestmark = needs_git

WHO = ("-c", "user.name=Grace Hopper", "-c", "user.email=grace@example.org")
PATTERNS = {"cone": ["ae"], "no-cone": ["--no-cone", "/.datom/", "/ae/"]}


def _sparse_clone(tmp_path: Path, *how: str) -> tuple[dc.Connection, Path]:
    """A project of three tables, and a colleague's git clone of it checking out ``ae``."""
    conn = new_project(tmp_path)
    for table, rows in (("dm", 5), ("ae", 3), ("ex", 2)):
        conn.write(table, frame(rows))
    theirs = tmp_path / "theirs"
    git(tmp_path, "clone", "-q", conn.repo.remote_url, str(theirs))
    git(theirs, "sparse-checkout", "set", *how)
    return conn, theirs


def _checkout(clone: Path) -> tuple[str, list[str]]:
    """What git's index says of each path (``H`` in the working tree, ``S`` skipped) and
    the files there."""
    files = sorted(
        str(p.relative_to(clone))
        for p in clone.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(clone).parts
    )
    return git(clone, "ls-files", "-t"), files


def _as_git_would(clone: Path) -> tuple[str, list[str]]:
    """The clone's checkout, asserting that git's own sparse checkout leaves it as it is."""
    seen = _checkout(clone)
    git(clone, "sparse-checkout", "reapply")
    assert _checkout(clone) == seen
    assert git(clone, "status", "--porcelain") == ""
    return seen


@pytest.mark.parametrize("mode", sorted(PATTERNS))
def test_a_write_keeps_to_a_sparse_checkout_as_gits_checkout_does(
    tmp_path: Path, mode: str
) -> None:
    """A table outside the checkout, or new, is recorded and stays out of the working tree
    (skip-worktree in the index); one inside is written there. git's own reapply changes
    nothing, ``git status`` is clean, and a colleague's commit and push work after."""
    conn, theirs = _sparse_clone(tmp_path, *PATTERNS[mode])
    mine = dc.connect(theirs)
    mine.write("dm", frame(7, seed=1))
    mine.write("ae", frame(4, seed=1))
    mine.write("zz", frame(2, seed=1))
    listed, files = _as_git_would(theirs)
    assert not (theirs / "dm").exists() and not (theirs / "zz").exists()
    assert "ae/metadata.json" in files and "S zz/metadata.json" in listed.splitlines()
    assert "H ae/metadata.json" in listed.splitlines()
    assert len(conn.read("dm")) == 7 and len(conn.read("zz")) == 2
    assert mine.validate().ok and conn.validate().ok
    (theirs / "ae" / "README.md").write_text("adverse events\n")
    git(theirs, "add", "ae/README.md")
    git(theirs, *WHO, "commit", "-qm", "Describe ae")
    assert git(theirs, "show", "--name-only", "--format=", "HEAD").split() == ["ae/README.md"]
    git(theirs, "push", "-q", "origin", "main")
    mine.write("dm", frame(8, seed=2))  # on top of the colleague's pushed commit
    _as_git_would(theirs)
    git_accepts(conn.repo.remote_url, tmp_path)


def test_a_file_outside_the_checkout_that_is_there_is_written(tmp_path: Path) -> None:
    """git writes a path its patterns leave out when its file is in the working tree
    (and drops the path's skip-worktree bit): so does datom."""
    conn, theirs = _sparse_clone(tmp_path, "ae")
    (theirs / "dm").mkdir()
    (theirs / "dm" / "metadata.json").write_bytes(
        git(theirs, "show", "HEAD:dm/metadata.json").encode()
    )
    dc.connect(theirs).write("dm", frame(7, seed=1))
    wrote = (theirs / "dm" / "metadata.json").read_bytes()
    assert wrote == git(theirs, "show", "HEAD:dm/metadata.json").encode()
    assert "H dm/metadata.json" in git(theirs, "ls-files", "-t").splitlines()
    assert git(theirs, "status", "--porcelain") == ""


def test_a_sparse_index_is_refused_before_anything_changes(tmp_path: Path) -> None:
    conn, theirs = _sparse_clone(tmp_path, "--sparse-index", "ae")
    mine = dc.connect(theirs)
    index = (theirs / ".git" / "index").read_bytes()
    before = fingerprint(conn)
    with pytest.raises(dc.GitError, match="sparse index") as refused:
        mine.write("dm", frame(7, seed=1))
    assert "reapply --no-sparse-index" in str(refused.value)
    assert fingerprint(conn) == before and mine.repo.head() == conn.repo.head()
    assert (theirs / ".git" / "index").read_bytes() == index
    git(theirs, "sparse-checkout", "reapply", "--no-sparse-index")  # as the message says
    mine.write("dm", frame(7, seed=1))
    assert len(conn.read("dm")) == 7
    _as_git_would(theirs)
    git_accepts(conn.repo.remote_url, tmp_path)


def test_a_setting_in_config_worktree_is_honoured(tmp_path: Path) -> None:
    """``git config --worktree`` writes ``config.worktree``, read only under
    ``extensions.worktreeConfig``: a split index set there is refused as one set in
    ``config``, and setting it is seen by a handle already open."""
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    clone = conn.repo.path
    git(clone, "config", "extensions.worktreeConfig", "true")
    conn.write("dm", frame(6))  # the handle has read the configuration
    git(clone, "config", "--worktree", "core.splitIndex", "true")  # git splits it next
    before = fingerprint(conn)
    with pytest.raises(dc.GitError, match="split index"):
        conn.write("dm", frame(8))
    assert fingerprint(conn) == before
