"""Finishing an interrupted write never publishes a person's own unpushed commit.

A datom commit killed before its push stays on the clone's branch (listed in
``.git/datom-made-commits``); the next sync finishes it (``_project/_recover.py``
``finish_interrupted``). A commit someone made with git in that clone meanwhile, above or
below datom's, used to go out with it. Now the recovery refuses, naming the person's
commits and how to push or set them aside; nothing is pushed or dropped, and once they
are set aside the sync finishes datom's commit alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import datom_core as dc
from tests.gitcli import git, needs_git

pytestmark = needs_git

_COMMIT_KILLED_IN_PUSH = """
import sys
import datom_core as dc
conn = dc.connect(sys.argv[1])
conn.repo.commit({"NOTES_BY_DATOM.md": b"datom's\\n"}, "datom's own commit")
conn.repo.push()
"""


def _user_commit(clone: Path, name: str) -> str:
    (clone / name).write_text(f"{name}\n")
    git(clone, "add", "-f", name)  # the project's .gitignore lists its own files
    git(clone, "-c", "user.name=Person", "-c", "user.email=p@example.org",
        "commit", "-q", "-m", f"my own {name}")  # fmt: skip
    return git(clone, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("order", ["user-after-datom", "user-before-datom"])
def test_recovery_refuses_to_push_a_persons_commit_and_drops_nothing(
    tmp_path: Path, order: str
) -> None:
    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", dc.LocalStore(tmp_path / "store"))
    clone = conn.path
    bare = Path(conn.repo.remote_url)
    before_remote = git(bare, "rev-parse", "main").strip()
    if order == "user-before-datom":
        mine = _user_commit(clone, "mine.txt")
    env = {**os.environ, "DATOM_CRASH_AT": "git:push:objects"}  # committed, not pushed
    child = subprocess.run(
        [sys.executable, "-c", _COMMIT_KILLED_IN_PUSH, str(clone)],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    if order == "user-after-datom":
        assert child.returncode == -signal.SIGKILL
    else:  # the push itself refuses before sending anything (it used to send both)
        assert child.returncode == 1 and mine[:12] in child.stderr, child.stderr[-2000:]
    if order == "user-after-datom":
        mine = _user_commit(clone, "mine.txt")
    head = git(clone, "rev-parse", "HEAD").strip()

    with pytest.raises(dc.GitError) as refused:
        dc.connect(clone).sync()
    message = str(refused.value)
    assert mine[:12] in message and "my own mine.txt" in message
    assert "git -C" in message  # the remedy
    assert git(bare, "rev-parse", "main").strip() == before_remote  # nothing published
    assert git(clone, "rev-parse", "HEAD").strip() == head  # nothing dropped
    assert (clone / "mine.txt").read_text() == "mine.txt\n"

    # The remedy the message names: the commit kept on a branch, the project's reset.
    git(clone, "branch", "my-work", mine)
    git(clone, "reset", "-q", "--keep", "origin/main")
    dc.connect(clone).sync()
    assert "my own mine.txt" not in git(bare, "log", "--format=%s", "main").splitlines()
    assert git(clone, "rev-parse", "my-work").strip() == mine  # kept
