"""Copying objects between two repositories on this machine (private to the git layer):
the clone's own new objects, a local remote's commits a clone lacks. Used where a clone
does not read its remote's objects in place (see :mod:`._shared`), and by every push into
a local remote."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from dulwich.file import SharedPerm
from dulwich.object_store import DiskObjectStore
from dulwich.objects import ObjectID, ShaFile
from dulwich.repo import Repo

from ._groupshare import object_paths, widen
from ._held import PUSH_KEEP
from ._loose import commit_object_ids, commit_of, copy_objects, split_large, write_loose
from ._packs import copy_as_pack, write_objects

__all__ = ["add_objects", "copy_commits", "missing_commits", "receive_objects"]

# More objects than this in one transfer arrive as a pack (a first clone, a long absence);
# fewer are loose files (see _loose: linked between a clone and a local remote, never
# deflated twice), which the handles' compaction packs on its budget.
_LOOSE_MAX = 256
# Objects from which a transfer between local repositories arrives as a pack (git's
# transfer.unpackLimit): fewer stay loose, as every pack costs each later lookup until
# a compaction merges it.
_UNPACK_LIMIT = 100


def add_objects(r: Repo, objects: Sequence[ShaFile]) -> int:
    """Store ``objects`` in ``r``: loose when few, as one pack when many; returns how many
    were written loose. (Loose objects go through temporary files of their own, so a
    ``.lock`` a killed dulwich writer left beside one is never in the way.)"""
    if len(objects) > _LOOSE_MAX:
        missing = [o for o in objects if o.id not in r.object_store]
        r.object_store.add_objects([(o, None) for o in missing])
        return 0
    return write_loose(r.object_store, objects)


@contextmanager
def receive_objects(
    remote: Repo, objects: Sequence[ShaFile], perm: SharedPerm | None
) -> Iterator[int]:
    """Store the objects a push sends into a local remote, for the caller to move the ref
    inside the block; yields how many were written loose. Files made get ``perm``
    (a group-shared remote, see :mod:`._groupshare`).

    Many arrive as one pack, kept (``.keep``) until the block ends, as git's receive-pack
    keeps one until its ref has moved: a ``git repack -a -d`` meanwhile deletes every pack
    it finds not kept, and the pushed objects, not yet reachable, would go with it. Every
    object is in that pack, even one the remote holds: that copy may be an unreachable one
    the same repack deletes. A refused push leaves the pack unreferenced and not kept, as
    a killed one does."""
    if len(objects) <= _LOOSE_MAX:
        loose = write_loose(remote.object_store, objects)
        if perm is not None:
            objects_dir = os.fspath(remote.object_store.path)
            widen(object_paths(objects_dir, [o.id for o in objects]), perm)
        yield loose
        return
    store = remote.object_store
    assert isinstance(store, DiskObjectStore)
    base = Path(store.pack_dir) / write_objects(store, objects, keep=PUSH_KEEP)
    try:
        yield 0  # its files are the team's already (_packs.write_entries)
    finally:
        base.with_suffix(".keep").unlink(missing_ok=True)


def copy_commits(source: Repo, target: Repo, commits: list[bytes]) -> int:
    """Copy ``commits`` (``missing_commits`` order) with the objects they add from one
    local repository to another; returns how many loose files ``target`` gained.

    Many objects arrive as one pack of raw copies (git keeps a fetched pack past
    ``transfer.unpackLimit``); a few are linked loose (see ``_loose``)."""
    ids = list(dict.fromkeys(commit_object_ids(source.object_store, commits)))  # once each
    store = target.object_store
    if (
        len(ids) >= _UNPACK_LIMIT
        and isinstance(source.object_store, DiskObjectStore)
        and isinstance(store, DiskObjectStore)
    ):
        # An object the clone already has (its own, a revert's blob) may be packed again:
        # git reads an object from whichever pack holds it.
        small, large = split_large(source.object_store, ids)
        if small:
            copy_as_pack(source.object_store, store, small)
        return copy_objects(source.object_store, store, large)
    return copy_objects(source.object_store, store, ids)


def missing_commits(source: Repo, target: Repo, tip: bytes) -> list[bytes]:
    """Commits reachable from ``tip`` in ``source`` that ``target`` lacks, parents first."""
    order: list[bytes] = []
    seen: set[bytes] = set()
    stack = [tip]
    while stack:
        sha = stack.pop()
        if sha in seen or ObjectID(sha) in target.object_store:
            continue
        seen.add(sha)
        order.append(sha)
        c = commit_of(source.object_store, sha)
        if c is not None:
            stack.extend(c.parents)
    order.reverse()
    return order
