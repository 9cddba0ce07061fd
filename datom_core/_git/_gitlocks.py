"""git's own lock files in a clone or a local remote (private to the git layer).

git changes a ref, the index or the configuration by creating ``<file>.lock``
exclusively, writing it and renaming it over the file; dulwich and datom do the same.
Other git processes work in a clone beside datom: a colleague's ``git status`` or ``git
fetch``, an editor's git integration refreshing the index every few seconds, ``git
gc``. Their locks live for milliseconds (``git commit`` keeps the index's while its
message is edited), and git never removes another process's lock: removing one lets two
writers rename over each other's file. So a lock in datom's way is git's: waited for, up
to :data:`GIT_LOCK_WAIT` seconds (:func:`unstale`), then refused in git's words, naming
the file to remove if no git process runs there. A local remote is the same: a
colleague's ``git push`` into it holds the branch's lock while its ``reference-transaction``
hook runs, ``git pack-refs`` holds ``packed-refs.lock``.

The locks a datom writer killed holding the clone's lock (a local remote's: the writers'
turn) left are known by its tenure (``_lock``, written before its first git lock): the
next holder removes those made as the killed writer's last git lock began
(:func:`sweep_killed`: within :data:`_SPAN` seconds of it), once they are older than
:data:`_GRACE` (a git process's lock goes away before that). A git process's lock made
later (an interactive ``git commit`` in the clone before the next datom write) is left.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from dulwich.file import FileLocked

from .._errors import GitError
from ._lock import note_tenure

__all__ = ["GIT_LOCK_WAIT", "lock_age", "sweep_killed", "unstale"]

log = logging.getLogger("datom_core.git")
T = TypeVar("T")

GIT_LOCK_WAIT = 10.0  # seconds a git process's lock in the way is waited for
_GRACE = 1.0  # seconds a lock has lived before a killed writer's is removed
_SLACK = 2.0  # seconds of a filesystem's timestamp resolution (FAT, SMB: 2 s)
_SPAN = 60.0  # seconds after a note within which the lock it announced is written
_POLL = 0.01


def unstale(fn: Callable[[], T], remote: str | None = None) -> T:
    """Run a ref or index update of a clone (or of the local ``remote``, its URL) past
    git's lock files: each is waited for (see the module docstring); :class:`GitError`
    when one stays in the way."""
    note_tenure()  # a killed writer's locks are known by it
    deadline = time.monotonic() + GIT_LOCK_WAIT
    while True:
        try:
            return fn()
        except FileLocked as e:
            lock = Path(os.fsdecode(e.lockfilename))
            if time.monotonic() >= deadline and lock.exists():
                raise _in_the_way(lock, remote) from None
            time.sleep(_POLL)


def lock_age(path: Path) -> float | None:
    """Seconds since ``path`` was last modified, by the clock of the filesystem holding it
    (a file server's clock may differ from this machine's: the lock's time is compared
    with that of a file made there now); None if it is gone."""
    try:
        then = path.stat().st_mtime
    except FileNotFoundError:
        return None
    probe = path.with_name(f".datom-clock-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError:  # not writable here: this machine's clock is all there is
        return time.time() - then
    try:
        now = os.fstat(fd).st_mtime
    finally:
        os.close(fd)
        probe.unlink(missing_ok=True)
    return now - then


def sweep_killed(controldir: Path, since: float) -> None:
    """Remove the git lock files of ``controldir`` (and its common folder) made as a killed
    datom writer's last git lock began (``since``, its tenure's time), each once older
    than :data:`_GRACE`."""
    for lock in _git_locks(controldir):
        while True:
            try:
                made = lock.stat().st_mtime
            except FileNotFoundError:
                break
            age = lock_age(lock)
            if not since - _SLACK <= made <= since + _SPAN or age is None:
                break
            if age >= _GRACE:
                log.warning("removed the git lock %s, left by a datom writer killed there", lock)
                lock.unlink(missing_ok=True)
                break
            time.sleep(min(_GRACE - age, _POLL * 10))


def _git_locks(controldir: Path) -> Iterator[Path]:
    """git's lock files in a git folder and its common one: its own (``index.lock``,
    ``HEAD.lock``, ``config.lock``...) and its refs'; not datom's (``datom*.lock``)."""
    folders = {controldir}
    common = controldir / "commondir"
    if common.is_file():
        folders.add((controldir / common.read_text().strip()).resolve())
    for folder in folders:
        for lock in folder.glob("*.lock"):
            if not lock.name.startswith("datom"):
                yield lock
        yield from (folder / "refs").rglob("*.lock")


def _in_the_way(lock: Path, remote: str | None) -> GitError:
    if remote is None:
        clone = next((p.parent for p in lock.parents if p.name == ".git"), lock.parent)
        where = (
            f"the clone {clone} (git status or fetch, an editor's git integration, a "
            "commit whose message is being edited)"
        )
    else:
        where = f"{remote} (a colleague's push and its hooks, git gc or pack-refs)"
    return GitError(
        f"git's lock file {lock} stayed in the way for {GIT_LOCK_WAIT:g} s: another git "
        f"process is working in {where}, or one that crashed left it; datom left the file "
        "alone. Let it finish and write again; if no git process runs there, remove the "
        f"file (rm {lock}) first."
    )
