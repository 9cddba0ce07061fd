"""A write classifies on the remote's tip read in place, and the clone moves once.

Two clones of one local bare remote: ``behind`` has not seen what ``ahead`` pushed. A write
in ``behind`` reads the remote's tip where it lives, moves its clone only to the commit it
pushes (working tree and index exactly that commit's, as real git sees them), a ``none``
write touches nothing when the remote did not move, and a clone catching up many
commits receives them as one pack that git and dulwich read.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from dulwich.repo import Repo

import datom_core as dc
from datom_core._git._fast._share import SHARE_ENV
from tests.core.projects import frame, new_project, remote_head
from tests.gitserver import GitHTTPServer

pytestmark = pytest.mark.timeout(300)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _pair(tmp_path: Path) -> tuple[dc.Connection, dc.Connection]:
    ahead = new_project(tmp_path)
    ahead.write("dm", frame(seed=1))
    behind = dc.clone(ahead.repo.remote_url, tmp_path / "behind", store=ahead.store)
    ahead.write("ae", frame(seed=2))
    ahead.write("dm", frame(seed=3))
    return ahead, behind


def _files(root: Path) -> dict[str, int]:
    """Every file of a clone (``.git`` included) with its modification time."""
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_a_write_classifies_on_the_remote_tip_without_moving_the_clone_first(
    tmp_path: Path,
) -> None:
    ahead, behind = _pair(tmp_path)
    before = behind.repo.head()
    assert before != remote_head(ahead)
    # killed after classifying and uploading, before committing: the clone never moved
    code = (
        "import sys, datom_core as dc; from tests.core.projects import frame; "
        "dc.connect(sys.argv[1]).write('lb', frame(seed=9))"
    )
    env = {**os.environ, "DATOM_CRASH_AT": "uploaded"}
    done = subprocess.run([sys.executable, "-c", code, str(behind.path)], env=env)
    assert done.returncode == -signal.SIGKILL
    assert behind.repo.head() == before
    assert not (behind.path / "ae").exists()  # the remote's other table is not checked out
    # classified on the tip: dm's current version there is ahead's, so the same data is
    # a none write reporting ahead's commit
    result = behind.write("dm", frame(seed=3))
    assert result.change == "none"
    assert result.version == ahead.version("dm").version
    assert result.commit == remote_head(ahead) == behind.repo.head()


def test_the_clone_ends_on_the_pushed_commit_with_its_working_tree_and_index(
    tmp_path: Path,
) -> None:
    ahead, behind = _pair(tmp_path)
    tip = remote_head(ahead)
    result = behind.write("lb", frame(seed=4))
    assert result.change == "full"
    assert behind.repo.head() == result.commit == remote_head(ahead)
    assert _git(behind.path, "rev-parse", "HEAD^").strip() == tip
    assert _git(behind.path, "status", "--porcelain", "--untracked-files=no") == ""
    for path in ("ae/metadata.json", "dm/version_history.json", ".datom/manifest.json"):
        shown = subprocess.run(["git", "-C", str(behind.path), "show", f"HEAD:{path}"],
                               capture_output=True, check=True).stdout  # fmt: skip
        assert (behind.path / path).read_bytes() == shown
    ahead.pull()
    assert (behind.path / "ae/metadata.json").read_bytes() == ahead.repo.read("ae/metadata.json")
    assert behind.validate().ok


def test_a_none_write_on_a_still_remote_changes_no_file_of_the_clone(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    first = conn.write("dm", frame(seed=1))
    files = _files(conn.path)
    again = conn.write("dm", frame(seed=1))
    assert (again.change, again.commit, again.version) == ("none", first.commit, first.version)
    assert _files(conn.path) == files


def test_a_none_write_on_a_clone_behind_catches_up_to_the_tip(tmp_path: Path) -> None:
    ahead = new_project(tmp_path)
    first = ahead.write("dm", frame(seed=1))
    behind = dc.clone(ahead.repo.remote_url, tmp_path / "behind", store=ahead.store)
    other = ahead.write("ae", frame(seed=2))
    result = behind.write("dm", frame(seed=1))
    assert (result.change, result.commit) == ("none", first.commit)
    assert behind.repo.head() == other.commit
    assert _git(behind.path, "status", "--porcelain", "--untracked-files=no") == ""
    assert (behind.path / "ae" / "metadata.json").exists()


def test_a_clone_catching_up_many_commits_gets_one_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SHARE_ENV, "0")  # a clone that copies what it fetches
    ahead = new_project(tmp_path)
    ahead.write("dm", frame(seed=0))
    behind = dc.clone(ahead.repo.remote_url, tmp_path / "behind", store=ahead.store)
    for i in range(20):  # ~140 objects: once linked loose, one by one
        ahead.write(f"t{i}", frame(seed=i))
    packs = tmp_path / "behind" / ".git" / "objects" / "pack"
    before = set(packs.glob("*.pack")) if packs.is_dir() else set()
    result = behind.write("lb", frame(seed=99))
    new = set(packs.glob("*.pack")) - before
    assert len(new) == 1
    loose = _git(behind.path, "count-objects", "-v").splitlines()
    assert int(loose[0].removeprefix("count: ")) <= 32  # the first clone's and the write's own
    assert behind.repo.head() == result.commit
    _git(behind.path, "fsck", "--full", "--strict")
    assert _git(behind.path, "rev-list", "--count", "HEAD").strip() == "23"
    with Repo(str(behind.path)) as r:
        walked = list(r.get_walker(include=[r.head()]))
        assert len(walked) == 23
        for entry in walked:
            r[entry.commit.tree]  # every commit's tree is readable by dulwich
    assert {t.name for t in behind.tables()} == {"dm", "lb", *(f"t{i}" for i in range(20))}
    assert behind.validate().ok


def test_over_https_a_clone_behind_classifies_on_the_tip_and_ends_on_its_push(
    git_http_server: GitHTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATOM_GIT_TOKEN", git_http_server.token)
    git_http_server.create_bare("proj")
    url, store = git_http_server.url_for("proj"), dc.LocalStore(tmp_path / "store")
    ahead = dc.init_repo(tmp_path / "ahead", "STUDY_001", store, remote=url)
    first = ahead.write("dm", frame(seed=1))
    behind = dc.clone(url, tmp_path / "behind", store=store)
    moved = ahead.write("ae", frame(seed=2))
    assert not (behind.path / "ae").exists()
    same = behind.write("dm", frame(seed=1))  # none: the tip's dm is this data
    assert (same.change, same.commit) == ("none", first.commit)
    assert behind.repo.head() == moved.commit  # caught up to the tip it classified on
    result = behind.write("lb", frame(seed=3))
    assert result.change == "full" and behind.repo.head() == result.commit
    assert _git(behind.path, "rev-parse", "HEAD^").strip() == moved.commit
    assert _git(behind.path, "status", "--porcelain", "--untracked-files=no") == ""
    ahead.pull()
    assert ahead.repo.head() == result.commit and ahead.validate().ok
