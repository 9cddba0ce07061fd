"""What differs between two commits: the paths a checkout rewrites and the objects a push
sends (private to the git layer), as dulwich finds them (``tree_changes``,
``MissingObjectFinder``).

The paths are asked for on every write that lands on another writer's commit, and
``tree_changes`` compares every entry of a 3,000-table root tree (~15 ms): unless
``DATOM_PLAIN`` names ``walk``, :mod:`._fast._walk` gives the same answer from the names a
tree was made with. The objects to send are asked for only off the write path (a push of
commits made before, a copy from a local remote not shared), where dulwich's search does.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable

from dulwich.diff_tree import tree_changes
from dulwich.object_store import BaseObjectStore, MissingObjectFinder
from dulwich.objects import ObjectID, ShaFile

from .._plain import plain
from ._fast import _walk
from ._objects import commit_of

__all__ = ["changed_paths", "commit_object_ids", "objects_to_send"]

_PLAIN = 0o100644


def changed_paths(
    store: BaseObjectStore,
    old: bytes | None,
    new: bytes | None,
    modes: dict[bytes, int] | None = None,
) -> dict[bytes, bytes | None]:
    """``path -> blob id`` (None: removed) for every file and symbolic link differing
    between two commits; ``modes`` (when given) gets ``path -> new mode`` for those whose
    old or new mode is not a plain file's (an executable, a symbolic link)."""
    if not plain("walk"):
        return _walk.changed_paths(store, old, new, modes)
    a, b = _walk.root_tree(store, old), _walk.root_tree(store, new)
    changes = list(tree_changes(store, ObjectID(a) if a else None, ObjectID(b) if b else None))
    out: dict[bytes, bytes | None] = {}
    was: dict[bytes, int] = {}
    for ch in changes:
        if ch.old is not None and ch.old.path is not None and ch.old.mode is not None:
            out[ch.old.path], was[ch.old.path] = None, ch.old.mode
    for ch in changes:
        now = ch.new
        if now is None or now.path is None or now.mode is None or now.sha is None:
            continue  # removed
        if not (stat.S_ISREG(now.mode) or stat.S_ISLNK(now.mode)):
            continue  # a submodule's commit
        out[now.path] = now.sha
        if modes is not None and (now.mode != _PLAIN or was.get(now.path, _PLAIN) != _PLAIN):
            modes[now.path] = now.mode
    return out


def objects_to_send(store: BaseObjectStore, head: bytes, base: bytes | None) -> list[ShaFile]:
    """The objects a remote holding ``base`` lacks to hold ``head``."""
    haves = [ObjectID(base)] if base is not None else []
    return [store[sha] for sha, _ in MissingObjectFinder(store, haves, [ObjectID(head)])]


def commit_object_ids(store: BaseObjectStore, commits: Iterable[bytes]) -> list[bytes]:
    """The ids of ``commits`` and of the trees and blobs they add over the parents outside
    them (blobs are named, never read)."""
    commits = list(commits)
    inside = set(commits)
    parents = {p for c in commits for p in getattr(commit_of(store, c), "parents", [])}
    haves = [ObjectID(p) for p in parents - inside]
    wants = [ObjectID(c) for c in commits]
    return [sha for sha, _ in MissingObjectFinder(store, haves, wants)]
