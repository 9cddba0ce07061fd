"""A clone whose HEAD git detached: a checkout of a commit or tag, ``git submodule update``
(the project's clone as a submodule of an analysis repository), a CI job's checkout (a
commit fetched into a fresh repository, no local branch). datom works on the project's
branch: every call is refused before anything changes, naming the clone (not the
submodule's ``core.worktree`` path) and the ``git checkout`` that puts it back on the
branch; once run, the write goes through."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._errors import GitError
from tests.core.projects import frame
from tests.gitcli import git, needs_git

pytestmark = needs_git

_WHO = ("-c", "user.name=Analyst", "-c", "user.email=analyst@example.org")


def _project(tmp_path: Path) -> tuple[dc.Connection, Path]:
    conn = dc.init_repo(tmp_path / "proj", "P", dc.LocalStore(tmp_path / "store"))
    conn.write("dm", frame(3), message="first")
    conn.write("dm", frame(4), message="second")
    return conn, Path(conn.repo.remote_url)


def _checkout_commit(tmp_path: Path, remote: Path) -> Path:
    git(tmp_path, "clone", "-q", str(remote), "clone")
    git(tmp_path / "clone", "checkout", "-q", "--detach", "HEAD~1")
    return tmp_path / "clone"


def _submodule(tmp_path: Path, remote: Path) -> Path:
    git(tmp_path, "init", "-q", "analysis")
    analysis = tmp_path / "analysis"
    git(analysis, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(remote), "md")
    git(analysis, *_WHO, "commit", "-q", "-m", "the metadata at its second commit")
    git(analysis / "md", "checkout", "-q", "HEAD~1")  # pinned one commit back, as a
    git(analysis, *_WHO, "commit", "-q", "-am", "pin the first")  # colleague's pin is
    git(analysis, "submodule", "update", "-q")  # then updated to
    assert (analysis / "md" / ".git").is_file()
    return analysis / "md"


def _ci_checkout(tmp_path: Path, remote: Path) -> Path:
    """What GitLab's runner does: a fresh repository, the branch fetched into its tracking
    ref, the commit checked out."""
    ci = tmp_path / "ci"
    git(tmp_path, "init", "-q", "ci")
    git(ci, "remote", "add", "origin", str(remote))
    git(ci, "fetch", "-q", "origin", "+refs/heads/main:refs/remotes/origin/main")
    git(ci, "checkout", "-q", git(ci, "rev-parse", "origin/main").strip())
    return ci


def _state(clone: Path, store: Path) -> dict[str, object]:
    gitdir = Path(git(clone, "rev-parse", "--absolute-git-dir").strip())
    files = {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for root in (clone, store)
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }
    return {
        "HEAD": (gitdir / "HEAD").read_text(),
        "refs": git(clone, "for-each-ref", "--format=%(refname) %(objectname)"),
        "index": hashlib.sha256((gitdir / "index").read_bytes()).hexdigest(),
        "files": files,
    }


@pytest.mark.parametrize("made_by", [_checkout_commit, _submodule, _ci_checkout])
def test_a_detached_head_is_refused_before_anything_changes_naming_the_checkout(
    tmp_path: Path, made_by: Callable[[Path, Path], Path]
) -> None:
    _conn, remote = _project(tmp_path)
    clone = made_by(tmp_path, remote)
    detached = git(clone, "rev-parse", "HEAD").strip()
    before = _state(clone, tmp_path / "store")
    calls: dict[str, Callable[[], object]] = {
        "connect": lambda: dc.connect(clone),
        "write": lambda: dc.connect(clone).write("dm", frame(9), message="from the checkout"),
        "unchanged write": lambda: dc.connect(clone).write("dm", frame(3), message="same"),
        "read": lambda: dc.connect(clone).read("dm"),
        "validate fix": lambda: dc.connect(clone).validate(fix=True),
    }
    for name, call in calls.items():
        with pytest.raises(GitError) as e:
            call()
        said = str(e.value)
        assert f"HEAD of {clone} is detached at {detached[:12]}" in said, (name, said)
        assert f"git -C {clone} checkout main" in said, (name, said)
        assert _state(clone, tmp_path / "store") == before, name
    git(clone, "checkout", "-q", "main")  # the remedy, as the message words it
    if made_by is _submodule:
        git(clone, "pull", "-q", "--ff-only")
    assert dc.connect(clone).write("dm", frame(9), message="on the branch").change == "full"
    reader = dc.connect(store=dc.LocalStore(tmp_path / "store"), project_name="P")
    assert len(reader.read("dm")) == 9
    assert git(remote, "log", "-1", "--format=%s", "main").strip() == "on the branch"


def test_the_clone_a_message_names_is_the_submodules_folder(tmp_path: Path) -> None:
    """A submodule's working tree is reached through ``core.worktree``
    (``md/../.git/modules/md/../../../md``): messages name ``md``."""
    conn, remote = _project(tmp_path)
    clone = _submodule(tmp_path, remote)
    with pytest.raises(GitError) as e:
        dc.connect(clone).write("dm", frame(9))
    assert f"HEAD of {clone} is detached" in str(e.value)
    assert ".git/modules" not in str(e.value) and "/../" not in str(e.value)
    git(clone, "checkout", "-q", "main")
    (clone / "dm" / "metadata.json").write_text("edited by hand\n")
    conn.write("dm", frame(5), message="third")  # something to pull
    with pytest.raises(GitError) as e:
        dc.connect(clone).repo.pull()
    assert str(e.value).startswith(f"{clone} has uncommitted changes"), e.value


@pytest.mark.parametrize(
    ("start", "said", "stop"),
    [
        (
            ("-c", "sequence.editor=sed -i 1s/^pick/edit/", "rebase", "-q", "-i", "HEAD~1"),
            "A rebase is in progress",
            ("rebase", "--abort"),
        ),
        (("bisect", "start", "HEAD", "HEAD~2"), "A bisect is in progress", ("bisect", "reset")),
    ],
    ids=["rebase", "bisect"],
)
def test_an_operation_git_has_in_progress_is_named_with_its_own_remedy(
    tmp_path: Path, start: tuple[str, ...], said: str, stop: tuple[str, ...]
) -> None:
    """Not "check out main": that would leave the rebase or the bisect half done."""
    _project(tmp_path)
    clone = tmp_path / "proj"
    git(clone, *_WHO, *start)
    before = _state(clone, tmp_path / "store")
    with pytest.raises(GitError) as e:
        dc.connect(clone).write("dm", frame(9))
    assert str(e.value).startswith(f"{said} in {clone}"), e.value
    assert f"git {' '.join(stop)}" in str(e.value) and "checkout" not in str(e.value)
    assert _state(clone, tmp_path / "store") == before
    git(clone, *stop)
    assert dc.connect(clone).write("dm", frame(9)).change == "full"
