"""Storing objects, and copying them between two repositories on this machine (private to
the git layer): a write's new objects, a push into a local remote, a local remote's
commits a clone lacks. dulwich writes them (``add_object``, ``add_objects``); what is
here is when to ask it for a pack rather than loose files, what to do about a lock file
a killed writer left, and keeping a pack a clone gains until a ref reaches it.

dulwich writes a loose object through ``<object>.lock`` (``O_EXCL``): a writer killed
mid-write leaves that file behind, and every later write of the same object would fail
with ``FileLocked``. git never makes such a file (it writes a temporary file and links
it), and objects are content-addressed, so any writer's bytes are the right ones: a lock
older than :data:`LOCK_STALE` seconds (by its file system's clock) is a killed dulwich
writer's, removed; a younger one is waited for.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from dulwich.file import FileLocked
from dulwich.object_store import BaseObjectStore, DiskObjectStore
from dulwich.objects import ObjectID, ShaFile
from dulwich.repo import Repo

from .._errors import GitError
from ._access import PUSH_KEEP
from ._diff import commit_object_ids
from ._fast._packs import write_objects
from ._gitlocks import lock_age
from ._internals import set_fetched
from ._objects import commit_of
from ._read import keeping, load

__all__ = [
    "LOCK_STALE",
    "add_object",
    "add_objects",
    "copy_commits",
    "kept_till_fetched",
    "receive_objects",
]

log = logging.getLogger("datom_core.git")

LOCK_STALE = 2.0  # seconds after which an object's lock file is a killed writer's
# More objects than this in one transfer arrive as a pack (git's transfer.unpackLimit is
# 100): fewer stay loose, as every pack costs each later lookup until a compaction merges
# it, and a pack is a better home for many objects (one file, one fsync).
_UNPACK_LIMIT = 100
_TRIES = 16  # writes into a fan-out folder a concurrent prune-packed keeps removing


def add_object(store: BaseObjectStore, obj: ShaFile) -> None:
    """``store.add_object(obj)``, past a killed writer's lock file (module docstring) and
    a fan-out folder a concurrent ``git gc`` removed as empty between dulwich's ``mkdir``
    and its write."""

    def write() -> None:
        for tries in range(1, _TRIES + 1):
            try:
                return store.add_object(obj)
            except FileNotFoundError:
                if tries == _TRIES:
                    raise

    deadline = time.monotonic() + 2 * LOCK_STALE
    while True:
        try:
            return write()
        except FileLocked as e:
            lock = Path(os.fsdecode(e.lockfilename))
            if time.monotonic() > deadline:
                raise GitError(
                    f"Could not write the git object {obj.id.decode()}: its lock file {lock} "
                    "stays held. Remove it if no git process is running on this "
                    "repository, then try again."
                ) from e
            age = lock_age(lock)
            if age is not None and age < LOCK_STALE:
                time.sleep(min(LOCK_STALE - age, 0.05) + 0.001)
            elif age is not None:
                log.warning("removing the stale lock %s (left by a killed writer)", lock)
                lock.unlink(missing_ok=True)


def add_objects(r: Repo, objects: Sequence[ShaFile]) -> int:
    """Store ``objects`` in ``r``: loose when few, as one pack when many; returns how many
    it stored loose (a compaction's budget counts them)."""
    store = r.object_store
    if len(objects) >= _UNPACK_LIMIT and isinstance(store, DiskObjectStore):
        missing = [(o, None) for o in objects if o.id not in store]
        if missing:
            store.add_objects(missing)
        return 0
    for obj in objects:
        add_object(store, obj)
    return len(objects)


def kept_till_fetched(r: Repo, branch: bytes, tip: bytes | None, bring: Callable[[], int]) -> int:
    """``bring()``, which stores the objects of ``tip`` (a commit of ``branch``) in the
    clone ``r``, with each pack it adds kept (``.keep``) until ``refs/datom/fetched/<branch>``
    reaches ``tip``: the clone's own refs move later, and a ``git repack -a -d`` meanwhile
    deletes the objects of an unkept pack no ref reaches (loose objects it leaves). Returns
    what ``bring`` does."""
    with keeping(r.object_store) as kept:
        stored = bring()
        if kept and tip is not None:
            set_fetched(r, branch, tip)
    return stored


@contextmanager
def receive_objects(remote: Repo, objects: Sequence[ShaFile]) -> Iterator[int]:
    """Store the objects a push sends into a local remote, for the caller to move the ref
    inside the block; yields how many were written loose (with the remote's permissions:
    dulwich applies its store's ``shared_perm``, see :mod:`._groupshare`).

    Many arrive as one pack, kept (``.keep``) until the block ends, as git's receive-pack
    keeps one until its ref has moved: a ``git repack -a -d`` meanwhile deletes every pack
    it finds not kept, and the pushed objects, not yet reachable, would go with it. Every
    object is in that pack, even one the remote holds: that copy may be an unreachable one
    the same repack deletes. A refused push leaves the pack unreferenced and not kept, as
    a killed one does."""
    store = remote.object_store
    if len(objects) < _UNPACK_LIMIT or not isinstance(store, DiskObjectStore):
        for obj in objects:
            add_object(store, obj)
        yield len(objects)
        return
    base = Path(store.pack_dir) / write_objects(store, objects, keep=PUSH_KEEP)
    try:
        yield 0
    finally:
        base.with_suffix(".keep").unlink(missing_ok=True)


def copy_commits(source: Repo, target: Repo, tip: bytes | None) -> int:
    """Copy the commit ``tip`` and those behind it that ``target`` lacks, with the objects
    they add, from one local repository to another; returns how many loose objects
    ``target`` gained (many arrive as one pack, as git keeps a fetched pack past
    ``transfer.unpackLimit``)."""
    commits: dict[bytes, None] = {}
    stack = [tip] if tip is not None else []
    while stack:
        sha = stack.pop()
        if sha not in commits and ObjectID(sha) not in target.object_store:
            commits[sha] = None
            stack.extend(getattr(commit_of(source.object_store, sha), "parents", []))
    ids = dict.fromkeys(commit_object_ids(source.object_store, reversed(commits)))  # once each
    wanted = [sha for sha in ids if ObjectID(sha) not in target.object_store]
    return add_objects(target, [load(source.object_store, sha) for sha in wanted])
