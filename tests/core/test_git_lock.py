"""Steps sharing one clone (Dagster's multi-process executor with one ``DATOM_HOME``) take
turns at its lock: a waiter gets it the moment it is released, and a writer does not
hold it while it compacts the remote (tens of milliseconds every few dozen writes)."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from datom_core._errors import GitError
from datom_core._git import MetadataRepo, _lock
from datom_core._git import _maintenance as maint
from datom_core._git._lock import RepoLock
from tests.core.test_git_objects import ME


def _held_elsewhere(path: Path) -> tuple[threading.Thread, threading.Event, threading.Event]:
    """A thread holding the lock at ``path`` until its ``release`` event is set."""
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with RepoLock(path, timeout=5):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(5)
    return thread, held, release


def test_a_waiter_blocks_in_the_kernel_instead_of_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One try without waiting, then one blocking ``flock`` that the kernel ends when the
    holder lets go: no sleeping between tries (which left a released lock idle)."""
    path = tmp_path / "datom.lock"
    thread, _, release = _held_elsewhere(path)
    calls: list[int] = []
    real = _lock.fcntl.flock

    def recorded(fd: int, operation: int) -> None:
        calls.append(operation)
        if operation == _lock.fcntl.LOCK_EX:  # the blocking wait has begun: let go now
            release.set()
        real(fd, operation)

    monkeypatch.setattr(_lock.fcntl, "flock", recorded)
    with RepoLock(path, timeout=10):
        monkeypatch.undo()
        thread.join(5)
        assert not thread.is_alive()  # the holder had let go: the waiter holds it now
    tries = [op for op in calls if op != _lock.fcntl.LOCK_UN]
    assert tries == [_lock.fcntl.LOCK_EX | _lock.fcntl.LOCK_NB, _lock.fcntl.LOCK_EX]


def test_a_waiter_that_gives_up_leaves_the_lock_to_the_next(tmp_path: Path) -> None:
    """The timeout holds, and the helper still blocked in ``flock`` releases the lock as
    soon as it gets it: the next process is not locked out by a waiter that left."""
    path = tmp_path / "datom.lock"
    thread, _, release = _held_elsewhere(path)
    with pytest.raises(GitError, match="Timed out after 0.1s"):
        with RepoLock(path, timeout=0.1):
            pass
    with pytest.raises(GitError, match="Timed out after 0s"):
        with RepoLock(path, timeout=0):
            pass
    release.set()
    thread.join(5)
    with RepoLock(path, timeout=5):  # the abandoned helper took it and let it go
        pass
    helpers = [t for t in threading.enumerate() if t.name == "datom-lock-wait"]
    for helper in helpers:
        helper.join(5)
    assert not any(t.is_alive() for t in helpers)
    with RepoLock(path, timeout=0):
        pass


def test_a_waiter_interrupted_leaves_the_lock_to_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while waiting gives up like a timeout: the interrupt propagates, and the
    helper releases the lock when it gets it."""
    path = tmp_path / "datom.lock"
    thread, _, release = _held_elsewhere(path)

    class Interrupted(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            raise KeyboardInterrupt

    waiter_threading = SimpleNamespace(
        Event=Interrupted, Lock=threading.Lock, Thread=threading.Thread
    )
    monkeypatch.setattr(_lock, "threading", waiter_threading)  # the waiter's event only
    with pytest.raises(KeyboardInterrupt):
        with RepoLock(path, timeout=5):
            pass
    monkeypatch.undo()
    release.set()
    thread.join(5)
    with RepoLock(path, timeout=5):
        pass
    for helper in [t for t in threading.enumerate() if t.name == "datom-lock-wait"]:
        helper.join(5)
    with RepoLock(path, timeout=0):
        pass


def test_the_remote_is_compacted_after_the_clone_lock_is_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    clone_lock = str(repo.controldir / "datom.lock")
    held_during: list[bool] = []
    real = maint.compact_remote

    def watched(*args: object, **kwargs: object) -> bool:
        held_during.append(clone_lock in _lock._holds.held)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(maint, "compact_remote", watched)
    monkeypatch.setattr(maint, "LOOSE_BUDGET", 4)
    for i in range(2 * maint.REMOTE_CHECK_EVERY):
        repo.commit_and_push(lambda tree, i=i: {f"t{i}/m": b"x"}, f"c{i}", ME)
    assert held_during and not any(held_during)
    with repo.lock(timeout=0):  # and nothing is left holding it
        pass
