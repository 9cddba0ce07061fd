"""The clone lock and the writers' turn: a waiter blocks in the kernel (no polling), and a
wait given up on leaves nothing held. Real ``flock`` on real files; the holder is another
thread (each acquisition opens its own descriptor, so threads contend as processes do)."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from datom_core._errors import GitError
from datom_core._git import _lock
from datom_core._git._lock import RepoLock


def _hold(path: Path, release: threading.Event, held: threading.Event) -> threading.Thread:
    def run() -> None:
        with RepoLock(path, None):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=run)
    thread.start()
    assert held.wait(10)
    return thread


def _counting_fcntl(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the lock module's ``flock`` calls: tries that may not block, and waits."""
    calls: Counter[str] = Counter()
    real = _lock.fcntl

    def flock(fd: int, op: int) -> Any:
        if op & real.LOCK_EX:
            calls["try" if op & real.LOCK_NB else "wait"] += 1
        return real.flock(fd, op)

    fake = SimpleNamespace(**{k: getattr(real, k) for k in dir(real) if k.startswith("LOCK_")})
    fake.flock = flock
    monkeypatch.setattr(_lock, "fcntl", fake)
    return calls


def _lock_waiters() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "datom-lock-wait"]


def test_a_waiter_blocks_in_the_kernel_and_gets_the_lock_when_it_is_let_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "turn.lock"
    release, held = threading.Event(), threading.Event()
    holder = _hold(path, release, held)
    calls = _counting_fcntl(monkeypatch)
    got: list[float] = []

    def wait() -> None:
        with RepoLock(path, 30):
            got.append(time.monotonic())

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)  # a poller (5 ms doubling to 100 ms) would have tried 8 times by now
    assert not got  # still held
    release.set()
    holder.join(10)
    waiter.join(10)
    assert len(got) == 1
    assert calls == Counter({"try": 1, "wait": 1})  # one look, then one wait in the kernel


def test_a_timed_out_wait_holds_nothing_once_the_holder_lets_go(tmp_path: Path) -> None:
    path = tmp_path / "turn.lock"
    fds_before = len(os.listdir("/proc/self/fd"))
    release, held = threading.Event(), threading.Event()
    holder = _hold(path, release, held)
    with pytest.raises(GitError, match="Timed out after 0.2s"):
        with RepoLock(path, 0.2):
            pass
    with pytest.raises(GitError, match="Timed out after 0s"):
        with RepoLock(path, 0):
            pass
    assert len(_lock_waiters()) == 2  # still blocked in the kernel, on their duplicates
    release.set()
    holder.join(10)
    deadline = time.monotonic() + 10
    while _lock_waiters() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _lock_waiters()  # each took the lock late, then let it go
    with RepoLock(path, 5):  # free: the late takers released it
        pass
    assert len(os.listdir("/proc/self/fd")) == fds_before  # no descriptor left open


def test_the_lock_is_exclusive_under_many_contending_waiters(tmp_path: Path) -> None:
    path = tmp_path / "turn.lock"
    inside, most, errors = [0], [0], []
    guard = threading.Lock()

    def work() -> None:
        try:
            for _ in range(20):
                with RepoLock(path, 60):
                    with guard:
                        inside[0] += 1
                        most[0] = max(most[0], inside[0])
                    time.sleep(0.001)
                    with guard:
                        inside[0] -= 1
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and most[0] == 1
