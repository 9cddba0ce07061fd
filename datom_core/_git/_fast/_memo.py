"""Parsed trees and commits and blob bytes kept by id (an accelerator of the git layer;
switched off by ``DATOM_PLAIN=1``, or alone by ``DATOM_PLAIN=trees``, ``commits`` and
``blobs``, see :mod:`datom_core._plain`).

Contract: :func:`tree_of`, :func:`commit_of` and :func:`blob_data` give what a read of
the store gives (an id names one content in every store: nothing kept is ever stale, only
the oldest dropped). Plain path (beside each call, in :mod:`.._objects`): the store read
and parsed every time.

Every write reads its parent's root tree (3,000 entries take a millisecond to parse) and
the trees on its paths; another writer's root is read as an edit of one kept here
(:func:`._tree.as_edit`). A clone catching up meets each commit three times (the walk, its own objects, its
child's parent), the log and a mirror deriving a history's commits read the same commits
again, and the documents a write builds (manifests of a megabyte) are read back by the
next write and by the pack merge (:mod:`._compact`). Measured, plain / fast in one run:
``trees`` (a write, ``bench_scale.py``'s ``after_other_without``) into 1,000 tables
2.0x after its own, 2.4x after another writer's, into 3,000 tables 2.8x and 3.7x;
``commits`` (``benchmarks/bench_gitreads.py``, 300 versions) a file's log 2.5-3.4x, the
last 60 commits 18-35x, every version's commit 1.5-1.6x (a write: 0.93-1.08x, noise);
``blobs`` (a write into 1,000 tables, ``bench_scale.py``'s ``after_other_without``) after
another writer's 1.25-1.44x, after its own 1.16-1.34x.
"""

from __future__ import annotations

from dulwich.object_store import BaseObjectStore
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree

from ..._memory import KeyedMemory
from ..._plain import plain
from .._read import load, load_raw
from ._tree import as_edit

__all__ = ["blob_data", "commit_of", "keep_blob", "keep_tree", "kept_blob", "tree_of"]

# Never mutated; bounded by entries (~40 bytes each raw): a few dozen 3,000-table root trees
# beside thousands of tables' own small trees, which a count alone would let evict them.
_ENTRY = 40
_TREES: KeyedMemory[bytes, Tree] = KeyedMemory(8192, 64 * 3000 * _ENTRY)
_BLOBS: KeyedMemory[bytes, bytes] = KeyedMemory(256, 64 << 20)  # blob id -> its bytes
_COMMITS: KeyedMemory[bytes, Commit] = KeyedMemory(256)  # never mutated


def tree_of(store: BaseObjectStore, sha: bytes) -> Tree | None:
    """The tree ``sha`` (None if it is not a tree), read once: as the edit of a recent
    big tree when it is one, else parsed."""
    tree = _TREES.get(sha)
    if tree is None:
        raw = load_raw(store, sha)
        if raw[0] == Tree.type_num:
            tree = as_edit(sha, raw[1], _TREES.get)
            if tree is None:
                parsed = ShaFile.from_raw_string(raw[0], raw[1], ObjectID(sha))
                tree = parsed if isinstance(parsed, Tree) else None
        if tree is not None:
            _TREES.put(sha, tree, _ENTRY * len(tree))
    return tree


def keep_tree(tree: Tree) -> None:
    """Keep a tree this process made (the next write's parent tree)."""
    if not plain("trees"):
        _TREES.put(tree.id, tree, _ENTRY * len(tree))


def commit_of(store: BaseObjectStore, sha: bytes) -> Commit | None:
    """The commit ``sha`` (None if it is not a commit), parsed once."""
    found = _COMMITS.get(sha)
    if found is None and isinstance(obj := load(store, sha), Commit):
        _COMMITS.put(sha, found := obj)
    return found


def kept_blob(sha: bytes) -> bytes | None:
    """The bytes of the blob ``sha`` when this process made or read it lately (a made
    blob's id is the hash of those bytes; a read one's was checked as it was read)."""
    return _BLOBS.get(sha) if not plain("blobs") else None


def keep_blob(sha: bytes, data: bytes) -> None:
    """Keep the bytes of a blob this process made (read back by the next write)."""
    if not plain("blobs"):
        _BLOBS.put(sha, data, len(data))


def blob_data(store: BaseObjectStore, sha: bytes) -> bytes | None:
    """The bytes of the blob ``sha`` (None if it is not a blob), kept for the next reader."""
    data = _BLOBS.get(sha)
    if data is None and isinstance(obj := load(store, sha), Blob):
        _BLOBS.put(sha, data := obj.as_raw_string(), len(data))
    return data
