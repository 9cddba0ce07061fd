"""What datom's fetches and pushes of a local remote promise its compaction (private to the
git layer), in either mode (``DATOM_PLAIN``): they hold the remote's maintenance lock
shared (:class:`RemoteAccess`), which a compaction (:mod:`._fast._compact`) takes
exclusively to delete what it replaced; a pushed pack is kept (:data:`PUSH_KEEP`) until
its ref has moved."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._groupshare import open_lock

__all__ = ["LOCK_NAME", "PUSH_KEEP", "RemoteAccess"]

LOCK_NAME = "datom-maintenance.lock"
PUSH_KEEP = b"datom push\n"  # the .keep of a pushed pack whose ref has not moved yet


class RemoteAccess:
    """The shared side of a local remote's maintenance lock, on one descriptor per process.

    Held while any thread of the process reads (threads writing through one connection
    share it): the ``flock`` is taken by the first holder and dropped by the last.
    ``file_mode`` is the mode the lock file is made with (a group-shared remote's team
    may open it: set it, from :func:`._groupshare.lock_mode`, before the first hold).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file_mode = 0o644
        self._fd: int | None = None
        self._pid = -1
        self._holders = 0
        self._count = threading.Lock()

    def _descriptor(self) -> int | None:
        if self._fd is None or self._pid != os.getpid():
            try:
                self._fd = open_lock(self.path / LOCK_NAME, self.file_mode)
            except OSError:  # a read-only remote: nobody compacts it, nothing to guard
                self._fd = None
            self._pid = os.getpid()
        return self._fd

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the remote open for reading or pushing (compaction waits for it)."""
        if self._pid != os.getpid():  # a forked child: its parent's lock may be held
            self._count, self._holders = threading.Lock(), 0
        with self._count:
            fd = self._descriptor()
            if fd is not None and self._holders == 0:
                fcntl.flock(fd, fcntl.LOCK_SH)
            self._holders += 1
        try:
            yield
        finally:
            with self._count:
                self._holders -= 1
                if fd is not None and self._holders == 0 and self._fd == fd:
                    fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = None
