"""git's lock files in a local remote: a colleague's ``git push`` holds the branch's lock
while its ``reference-transaction`` hook runs, ``git pack-refs`` holds
``packed-refs.lock``. datom waits for them and never removes one, unless a datom pusher
killed under the remote's writers' turn left it (its tenure)."""

from __future__ import annotations

import logging
import multiprocessing
import os
import subprocess
import time
from pathlib import Path

import pytest

from datom_core._errors import GitError
from datom_core._git import Author, MetadataRepo, _gitlocks, _lock
from tests.gitcli import GIT, git, needs_git

ME = Author("Tester", "tester@example.org")

_REMOTE_LOCKS = ["refs/heads/main.lock", "HEAD.lock", "packed-refs.lock"]


def _project(tmp_path: Path) -> tuple[MetadataRepo, Path]:
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit_and_push(lambda tree: {"x": b"1"}, "x", ME)
    return repo, MetadataRepo.embedded_remote_path(tmp_path / "a")


def _removals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if "remov" in r.getMessage() and ".lock" in r.getMessage()
    ]


@needs_git
def test_a_colleagues_push_holding_the_branch_lock_in_its_hook_is_waited_for(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The colleague's push holds ``refs/heads/main.lock`` for 3 s (its
    reference-transaction hook, as a replicating server's): datom removed it as a killed
    writer's after 2 s, and the colleague's push failed ("couldn't set")."""
    caplog.set_level(logging.INFO, "datom_core")
    repo, bare = _project(tmp_path)
    git(tmp_path, "clone", "-q", str(bare), "colleague")
    who = ("-c", "user.name=Colleague", "-c", "user.email=colleague@example.org")
    git(tmp_path / "colleague", *who, "commit", "-q", "--allow-empty", "-m", "colleague's")
    theirs = git(tmp_path / "colleague", "rev-parse", "HEAD").strip()
    hook = bare / "hooks" / "reference-transaction"
    started = tmp_path / "hook-started"
    hook.write_text(f'#!/bin/sh\n[ "$1" = prepared ] && touch {started} && sleep 3\nexit 0\n')
    hook.chmod(0o755)
    push = subprocess.Popen(
        [GIT, "-C", str(tmp_path / "colleague"), "push", "origin", "HEAD:main"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=str(tmp_path)),
    )
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (bare / "refs" / "heads" / "main.lock").exists()
    mine = repo.commit_and_push(lambda tree: {"x": b"2"}, "mine", ME)
    out, _ = push.communicate(timeout=60)
    assert push.returncode == 0, out
    assert _removals(caplog) == []
    hook.unlink()
    history = git(bare, "log", "--format=%H", "main").split()
    assert history[:2] == [mine, theirs]  # both recorded: datom's on top of the colleague's
    git(bare, "fsck", "--strict")


def _push_and_die(clone: str, lock: str) -> None:
    """Take the remote's writers' turn as a push does, make one of git's lock files in the
    remote, and be killed."""
    repo = MetadataRepo(clone)
    with repo._remote().turn(60):  # type: ignore[attr-defined]
        _lock.note_tenure()  # what a push does before its first git lock
        (MetadataRepo.embedded_remote_path(Path(clone)) / lock).write_bytes(b"0" * 40 + b"\n")
        os.kill(os.getpid(), 9)


@pytest.mark.parametrize("lock", _REMOTE_LOCKS)
def test_a_lock_left_by_a_pusher_killed_in_the_remote_is_cleared(tmp_path: Path, lock: str) -> None:
    repo, bare = _project(tmp_path)
    child = multiprocessing.get_context("spawn").Process(
        target=_push_and_die, args=(str(tmp_path / "a"), lock)
    )
    child.start()
    child.join(60)
    assert child.exitcode == -9
    planted = bare / lock
    assert planted.exists()
    time.sleep(1.1)  # older than the grace a git process's lock is given
    assert repo.commit_and_push(lambda tree: {"x": b"2"}, "x2", ME) is not None
    assert not planted.exists()
    assert repo.commit_and_push(lambda tree: {"x": b"3"}, "x3", ME) is not None
    git(bare, "fsck", "--strict")


def test_a_remote_lock_no_datom_pusher_left_is_never_removed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """However old: a git that crashed left it, or one still runs. Named with the file to
    remove once the wait is over (not retried as a lost race for minutes), the write not
    recorded; once the file is gone, the write goes through."""
    monkeypatch.setattr(_gitlocks, "GIT_LOCK_WAIT", 0.3)
    repo, bare = _project(tmp_path)
    planted = bare / "refs" / "heads" / "main.lock"
    planted.write_bytes(b"git's\n")
    hour_ago = time.time() - 3600
    os.utime(planted, (hour_ago, hour_ago))
    tip = git(bare, "rev-parse", "main")
    started = time.monotonic()
    with pytest.raises(GitError, match=f"lock file {planted} stayed in the way") as e:
        repo.commit_and_push(lambda tree: {"x": b"2"}, "x2", ME)
    assert time.monotonic() - started < 10
    assert f"rm {planted}" in str(e.value)
    assert planted.read_bytes() == b"git's\n"
    assert git(bare, "rev-parse", "main") == tip
    assert _removals(caplog) == []
    planted.unlink()
    assert repo.commit_and_push(lambda tree: {"x": b"3"}, "x3", ME) is not None
    assert git(bare, "rev-parse", "main").strip() == repo.head()


def test_a_killed_pushers_lock_is_judged_by_the_file_systems_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This machine's clock an hour behind the file server's (simulated by moving this
    process's clock back): a lock a pusher killed a minute ago left is cleared at once."""
    repo, bare = _project(tmp_path)
    turn = bare / "datom-writers.lock"
    turn.write_bytes(b"H 4242".ljust(24))  # the killed pusher's tenure, two minutes ago
    lock = bare / "refs" / "heads" / "main.lock"
    lock.write_bytes(b"")
    now = time.time()
    os.utime(turn, (now - 120, now - 120))
    os.utime(lock, (now - 60, now - 60))
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 3600)
    start = time.monotonic()
    assert repo.commit_and_push(lambda tree: {"x": b"2"}, "x2", ME) is not None
    assert time.monotonic() - start < 5
    assert not lock.exists()
    assert turn.read_bytes()[:1] == b"-"
    git(bare, "fsck", "--strict")
