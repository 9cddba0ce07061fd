"""Steps sharing one clone (Dagster's multi-process executor with one ``DATOM_HOME``) take
turns at its lock: a waiter tries often enough not to leave it idle, and a writer does not
hold it while it compacts the remote (tens of milliseconds every few dozen writes)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from datom_core._git import MetadataRepo, _lock
from datom_core._git import _maintenance as maint
from datom_core._git._lock import RepoLock
from tests.core.test_git_objects import ME


def test_a_waiter_tries_again_at_least_every_eight_milliseconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "datom.lock"
    held, release, released = threading.Event(), threading.Event(), threading.Event()

    def holder() -> None:
        with RepoLock(path, timeout=5):
            held.set()
            release.wait(5)
        released.set()

    sleeps: list[float] = []
    real_sleep = _lock.time.sleep

    def recorded(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 30:
            release.set()  # the holder lets go once the waiter has backed off for a while
            released.wait(5)
        real_sleep(seconds)

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(5)
    monkeypatch.setattr(_lock.time, "sleep", recorded)
    with RepoLock(path, timeout=5):
        assert released.is_set()
    thread.join(5)
    assert len(sleeps) >= 30
    assert sleeps[0] <= 0.001 and max(sleeps) <= 0.008


def test_the_remote_is_compacted_after_the_clone_lock_is_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    clone_lock = str(repo.controldir / "datom.lock")
    held_during: list[bool] = []
    real = maint.compact_remote

    def watched(*args: object, **kwargs: object) -> bool:
        held_during.append(clone_lock in _lock._held_locks())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(maint, "compact_remote", watched)
    monkeypatch.setattr(maint, "LOOSE_BUDGET", 4)
    for i in range(2 * maint.REMOTE_CHECK_EVERY):
        repo.commit_and_push(lambda tree, i=i: {f"t{i}/m": b"x"}, f"c{i}", ME)
    assert held_during and not any(held_during)
    with repo.lock(timeout=0):  # and nothing is left holding it
        pass
