"""The clone's remote-tracking ref is written without an fsync (it only records what the
remote held): one left empty or locked by a crash is read as absent and written again."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from datom_core._errors import GitError
from datom_core._git import MetadataRepo
from tests.core.test_git_objects import ME, put
from tests.gitcli import GIT, git
from tests.syncs import record_fsyncs


def test_an_unreadable_or_locked_tracking_ref_is_repaired_by_the_next_push(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    first = repo.commit_and_push(put({"t/m.json": b"1"}), "one", ME)
    ref = tmp_path / "a" / ".git" / "refs" / "remotes" / "origin" / "main"
    assert ref.read_bytes() == f"{first}\n".encode()
    ref.write_bytes(b"")  # what a power cut may leave of an unsynced file
    tenure = tmp_path / "a" / ".git" / "datom.lock"  # and a killed writer's lock: its
    tenure.write_bytes(b"H 1")  # tenure, written before the lock it made
    (ref.parent / "main.lock").write_bytes(b"")
    now = time.time()
    os.utime(tenure, (now - 5, now - 5))
    os.utime(ref.parent / "main.lock", (now - 3, now - 3))
    assert repo.has_unpushed_commits() is True  # unknown: judged as not pushed, no crash
    synced = record_fsyncs(monkeypatch)
    second = repo.commit_and_push(put({"t/m.json": b"2"}), "two", ME)
    assert any("heads/main" in p for p in synced)  # the remote's ref, and the clone's branch
    assert not any("remotes/origin" in p for p in synced)
    assert ref.read_bytes() == f"{second}\n".encode()
    assert not (ref.parent / "main.lock").exists()
    assert repo.has_unpushed_commits() is False
    if GIT is not None:
        assert git(tmp_path / "a", "rev-parse", "origin/main").strip() == second
        git(tmp_path / "a", "fsck", "--strict", "--no-dangling")


_NAMES = ["main", "feature/x", "a@b", "ü", "a..b", ".x", "dev/.hidden", "x.lock", "x.", "x/"]
_NAMES += ["a//b", "-x", "a b", "a\tb", "a@{b", "a~b", "a^b", "a:b", "a?b", "a*b", "a[b", "a\\b"]


@pytest.mark.skipif(GIT is None, reason="git judges the names")
@pytest.mark.parametrize("name", _NAMES)
def test_a_branch_name_is_refused_exactly_when_git_refuses_it(tmp_path: Path, name: str) -> None:
    judged = subprocess.run([GIT or "git", "check-ref-format", "--branch", name], check=False)
    if judged.returncode == 0:
        MetadataRepo.init(tmp_path / "a", None, branch=name).close()
    else:
        with pytest.raises(GitError, match="Invalid branch name"):
            MetadataRepo.init(tmp_path / "a", None, branch=name)
        assert not (tmp_path / "a").exists()
