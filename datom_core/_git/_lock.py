"""A cross-process exclusive lock for one clone of the metadata repository.

Several processes (Dagster run workers, a CLI next to a notebook, ...) may share one clone;
a write reads, changes, commits and pushes, so it must not interleave with another write.
The lock is ``fcntl.flock`` on a file inside ``.git/``: the kernel releases it when the
holding process dies, so a crash never leaves a stale lock behind.

``flock`` locks belong to an open file description, which matters twice here:

* Each acquisition opens its own descriptor, so two threads or two processes (fork or
  spawn) contend properly. A nested acquisition in the *same* thread re-uses the held
  descriptor (the lock is re-entrant per thread) instead of deadlocking on itself.
* A forked child inherits the parent's descriptor and with it a share of the parent's lock.
  The holder's pid is recorded, so a child never counts the parent's lock as its own and
  never unlocks it; it simply opens a fresh descriptor and waits like anyone else.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from .._errors import GitError

__all__ = ["RepoLock"]

# Seconds between tries, doubling: a write holds a clone for a few milliseconds, and steps
# of Dagster's multi-process executor sharing one clone queue behind each other's writes
# (5 ms doubling to 100 ms left the clone idle between them: 8 processes through one
# clone, 79-117 -> 111-137 writes/s). A waiter costs one flock call a try.
_POLL_START = 0.001
_POLL_MAX = 0.008


@dataclass
class _Held:
    pid: int
    fd: int
    depth: int


_local = threading.local()


def _held_locks() -> dict[str, _Held]:
    held: dict[str, _Held] | None = getattr(_local, "held", None)
    if held is None:
        held = {}
        _local.held = held
    return held


class RepoLock:
    """Context manager holding an exclusive ``flock`` on ``lock_path``.

    ``timeout`` is in seconds; ``None`` waits forever. Raises :class:`GitError` when the
    lock is not obtained in time.
    """

    def __init__(
        self, lock_path: Path, timeout: float | None, poll: tuple[float, float] | None = None
    ) -> None:
        self.lock_path = lock_path
        self.timeout = timeout
        # (first, longest) wait between tries: short for locks held for milliseconds
        self._poll = poll or (_POLL_START, _POLL_MAX)
        self._key = str(lock_path)

    def __enter__(self) -> RepoLock:
        held = _held_locks()
        mine = held.get(self._key)
        if mine is not None and mine.pid == os.getpid():
            mine.depth += 1
            return self
        fd = self._open()
        try:
            self._wait(fd)
        except BaseException:
            os.close(fd)
            raise
        held[self._key] = _Held(pid=os.getpid(), fd=fd, depth=1)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        held = _held_locks()
        mine = held.get(self._key)
        if mine is None or mine.pid != os.getpid():
            return
        mine.depth -= 1
        if mine.depth:
            return
        del held[self._key]
        try:
            fcntl.flock(mine.fd, fcntl.LOCK_UN)
        finally:
            os.close(mine.fd)

    def _open(self) -> int:
        try:
            return os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise GitError(
                f"Cannot open the lock file {self.lock_path}: {e.strerror}. "
                "Check that the clone exists and is writable."
            ) from e

    def _wait(self, fd: int) -> None:
        if self.timeout is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        deadline = time.monotonic() + max(self.timeout, 0.0)
        delay, longest = self._poll
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise GitError(
                        f"Timed out after {self.timeout:g}s waiting for {self.lock_path}: "
                        "another datom process is writing to this clone. Wait for it to "
                        "finish, or raise the timeout."
                    ) from None
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, longest)
