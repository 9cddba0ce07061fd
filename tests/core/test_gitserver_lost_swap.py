"""The dulwich test server (tests/gitserver.py) reports a push whose ref update lost to a
concurrent push as failed, as real servers do. It used to answer "ok": bench_concurrency's
colleague (a ``git push`` / ``git pull --rebase`` loop beside datom's writers) then counted
a push that never landed, and its next ``pull --rebase`` dropped that commit as already
upstream: one note lost, not by datom."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

from tests.gitcli import GIT, needs_git
from tests.gitserver import GitHTTPServer

pytestmark = needs_git

# The hook moves main under the push, as a concurrent push landing first would.
_MOVE_MAIN = (
    '#!/bin/sh\ncat >/dev/null\ncp "$GIT_DIR/refs/heads/other" "$GIT_DIR/refs/heads/main"\n'
)


def _git(server: GitHTTPServer, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    basic = base64.b64encode(f"colleague:{server.token}".encode()).decode()
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null",
               GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="http.extraHeader",
               GIT_CONFIG_VALUE_0=f"Authorization: Basic {basic}",
               GIT_AUTHOR_NAME="C", GIT_AUTHOR_EMAIL="c@x", GIT_COMMITTER_NAME="C",
               GIT_COMMITTER_EMAIL="c@x")  # fmt: skip
    return subprocess.run([GIT or "git", *args], cwd=cwd, env=env, capture_output=True, text=True)


def _commit(server: GitHTTPServer, work: Path, name: str) -> str:
    (work / name).write_text(name)
    assert _git(server, work, "add", name).returncode == 0
    assert _git(server, work, "commit", "-qm", name).returncode == 0
    return _git(server, work, "rev-parse", "HEAD").stdout.strip()


def test_a_push_that_lost_its_ref_update_is_refused_and_its_commit_kept(
    git_http_server: GitHTTPServer, tmp_path: Path
) -> None:
    server = git_http_server
    bare = server.create_bare("proj")
    url = server.url_for("proj")
    work = tmp_path / "work"
    assert _git(server, tmp_path, "clone", "-q", url, str(work)).returncode == 0
    _commit(server, work, "first")
    assert _git(server, work, "push", "-q", "origin", "HEAD:main").returncode == 0
    _commit(server, work, "theirs")  # a concurrent writer's commit, on refs/heads/other
    assert _git(server, work, "push", "-q", "origin", "HEAD:other").returncode == 0
    assert _git(server, work, "reset", "-q", "--hard", "HEAD~1").returncode == 0
    mine = _commit(server, work, "note 1")
    server.add_pre_receive_hook("proj", _MOVE_MAIN)
    pushed = _git(server, work, "push", "origin", "HEAD:main")
    assert pushed.returncode != 0, "the server said ok to a push that did not land"
    (bare / "hooks" / "pre-receive").unlink()
    # The colleague's loop: pull --rebase, push again: the commit lands.
    assert _git(server, work, "pull", "-q", "--rebase", "origin", "main").returncode == 0
    assert _git(server, work, "push", "-q", "origin", "HEAD:main").returncode == 0
    log = _git(server, work, "log", "--format=%s", "origin/main").stdout.splitlines()
    assert log[:2] == ["note 1", "theirs"], log
    assert mine not in _git(server, work, "rev-list", "origin/main").stdout  # rebased
