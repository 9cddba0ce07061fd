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

A clone's lock (and a local remote's writers' turn) also keeps its holder's *tenure*
(``on_inherit``): before a holder makes each of git's lock files (:func:`note_tenure`)
it writes its pid into the file, and it marks the file let go as it lets go, so the next
holder that finds it written knows its predecessor was killed while it could hold git's
locks, and when it began the last one (the file's modification time). That holder is
handed the time (``on_inherit``: the git lock files the killed writer left are removed,
``_gitlocks.sweep_killed``) before it does anything else; killed in turn before that is
done, it leaves the record as it found it.
A holder that makes no git lock (a write that records nothing) leaves the file alone.

A waiter blocks in ``flock`` itself, so the kernel hands it the lock the moment the holder
lets go (polling left a released lock idle until the next try: 8 processes sharing one
clone wrote 133-154 writes/s polling, 165-171 blocking, alternated on tmpfs). A blocked
``flock`` cannot be timed out or interrupted, so the wait runs in a helper thread
(:class:`_Waiter`) on a duplicate of the descriptor, and a caller that gives up leaves
the helper to release the lock as soon as it gets it.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from .._errors import GitError
from ._groupshare import open_lock

__all__ = ["RepoLock", "note_tenure"]


@dataclass
class _Held:
    pid: int
    fd: int
    depth: int
    tenure: bool = False  # it keeps one (a clone's lock)
    noted: bool = False  # and has written it


class _Holds(threading.local):
    def __init__(self) -> None:
        self.held: dict[str, _Held] = {}  # this thread's, by lock path


_holds = _Holds()


class RepoLock:
    """Context manager holding an exclusive ``flock`` on ``lock_path``.

    ``timeout`` is in seconds; ``None`` waits forever. Raises :class:`GitError` when the
    lock is not obtained in time. ``mode()``, when given, is the mode the lock file must
    have (a remote several users share: their group may write it); the file is created
    or corrected to it by its owner. A lock file this process may read but not write
    (another user's) is locked through a read-only descriptor: ``flock`` needs no more.
    ``on_error()``, when given, runs as an exception leaves the outermost hold.
    """

    def __init__(
        self,
        lock_path: Path,
        timeout: float | None,
        mode: Callable[[], int] | None = None,
        on_error: Callable[[], None] | None = None,
        on_inherit: Callable[[float], None] | None = None,
    ) -> None:
        self.lock_path, self.timeout, self._key = lock_path, timeout, str(lock_path)
        self._mode, self._on_error, self._on_inherit = mode, on_error, on_inherit

    def __enter__(self) -> RepoLock:
        held = _holds.held
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
        if self._on_inherit is not None:
            try:
                self._begin_tenure(held[self._key], self._on_inherit)
            except BaseException:  # an interrupt in the sweep: the lock is let go
                self.__exit__(None, None, None)
                raise
        return self

    def _begin_tenure(self, mine: _Held, on_inherit: Callable[[float], None]) -> None:
        """Hand a killed predecessor's tenure to ``on_inherit``, then mark it let go (see
        the module docstring). A lock file this process cannot write keeps none."""
        try:
            if os.pread(mine.fd, 1, 0) == _HELD:
                on_inherit(os.fstat(mine.fd).st_mtime)
                os.pwrite(mine.fd, _LET_GO, 0)
            mine.tenure = True
        except OSError:
            pass

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        held = _holds.held
        mine = held.get(self._key)
        if mine is None or mine.pid != os.getpid():
            return
        mine.depth -= 1
        if mine.depth:
            return
        del held[self._key]
        try:
            if exc is not None and self._on_error is not None:
                self._on_error()
        finally:
            try:
                if mine.noted:
                    os.pwrite(mine.fd, _LET_GO, 0)  # let go alive: no tenure for the next
                fcntl.flock(mine.fd, fcntl.LOCK_UN)
            finally:
                os.close(mine.fd)

    def _open(self) -> int:
        try:
            return open_lock(self.lock_path, self._mode() if self._mode is not None else 0o644)
        except OSError as e:
            whose = _owner(self.lock_path)
            raise GitError(
                f"Cannot open the lock file {self.lock_path}{whose}: {e.strerror}. Check "
                "that the repository exists and that you may write to it (a remote "
                "several users share: git config core.sharedRepository group, and a "
                "group they all belong to)."
            ) from e

    def _wait(self, fd: int) -> None:
        if self.timeout is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        try:
            taken = self.timeout > 0 and _Waiter(fd).wait(self.timeout)
        except (OSError, RuntimeError) as e:  # the latter: no thread could be started
            raise GitError(f"Cannot lock {self.lock_path}: {e}.") from e
        if not taken:
            raise GitError(
                f"Timed out after {self.timeout:g}s waiting for {self.lock_path}: "
                "another datom process is writing to this clone. Wait for it to "
                "finish, or raise the timeout."
            )


def note_tenure() -> None:
    """Before one of git's lock files is made: write the tenure of the clone lock this
    thread holds (see the module docstring)."""
    for mine in _holds.held.values():
        if mine.tenure and mine.pid == os.getpid():
            try:
                os.pwrite(mine.fd, _HELD + f" {os.getpid()}".encode().ljust(_TENURE_SIZE), 0)
                mine.noted = True
            except OSError:
                pass


_TENURE_SIZE = 24  # the record's size: written over in place (no block allocated or freed)
_HELD, _LET_GO = b"H", b"-"  # its first byte


def _owner(path: Path) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return ""
    return f" (owner uid {st.st_uid}, mode {st.st_mode & 0o7777:04o})"


class _Waiter:
    """A blocking ``flock`` of ``fd``'s open file description, in a helper thread on a
    duplicate descriptor (the lock is the description's, so it is the caller's once taken).
    A caller that gives up keeps and closes its own descriptor; the helper, when it gets
    the lock after all, releases it at once."""

    def __init__(self, fd: int) -> None:
        self._fd = os.dup(fd)
        self._mutex = threading.Lock()
        self._done = threading.Event()
        self._abandoned = False
        self._error: OSError | None = None
        try:
            threading.Thread(target=self._block, name="datom-lock-wait", daemon=True).start()
        except BaseException as e:
            self._abandoned = True  # a helper that did start lets the lock go at once
            if isinstance(e, Exception):  # no thread could be started: the copy is ours
                os.close(self._fd)
            raise  # an interrupt once the thread runs: the copy is the helper's to close

    def wait(self, timeout: float) -> bool:
        """True once the lock is taken; False after ``timeout`` seconds without it
        (:class:`OSError` if ``flock`` failed)."""
        try:
            self._done.wait(timeout)
        finally:  # a KeyboardInterrupt gives up too
            with self._mutex:
                self._abandoned = not self._done.is_set()
        if self._error is not None:
            raise self._error
        return not self._abandoned

    def _block(self) -> None:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except OSError as e:
            self._error = e
        with self._mutex:
            given_up = self._abandoned
            self._done.set()
        try:
            if given_up and self._error is None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)
