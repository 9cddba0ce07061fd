"""How a writer waits for a clone another writer holds: often enough that steps sharing one
clone (Dagster's multi-process executor with one ``DATOM_HOME``) do not leave it idle."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from datom_core._git import _lock
from datom_core._git._lock import RepoLock


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
