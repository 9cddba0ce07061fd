"""The objects a remote lacks: those a push sends (private to the git layer).

Along a line of first parents each commit adds its own trees and blobs over its parent's,
found from the trees' changed names (see :mod:`._objects`); anything else (merges,
unrelated histories) is left to dulwich's search.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator, Mapping

from dulwich.object_store import BaseObjectStore
from dulwich.objects import Commit, ObjectID, ShaFile

from ._objects import names_between, tree_of
from ._read import load

__all__ = ["commits_between", "objects_of_commits", "objects_to_send"]


def commits_between(store: BaseObjectStore, head: bytes, base: bytes | None) -> list[bytes] | None:
    """Commits from ``head`` back to (excluding) ``base`` along first parents, oldest first.

    None when ``base`` is not on that line (a merge, or unrelated histories).
    """
    chain, sha = [], head
    while sha != base:
        chain.append(sha)
        obj = load(store, sha)
        if not isinstance(obj, Commit) or len(obj.parents) > 1:
            return None
        if not obj.parents:
            if base is not None:
                return None
            break
        sha = obj.parents[0]
    chain.reverse()
    return chain


def objects_of_commits(store: BaseObjectStore, commits: list[bytes]) -> Iterator[ShaFile]:
    """Each commit, with the trees and blobs it adds over its first parent."""
    for sha in commits:
        c = store[ObjectID(sha)]
        assert isinstance(c, Commit)
        parent = store[c.parents[0]] if c.parents else None
        old_root = parent.tree if isinstance(parent, Commit) else None
        yield from _tree_delta(store, old_root, c.tree)
        yield c


def _tree_delta(store: BaseObjectStore, old: bytes | None, new: bytes) -> Iterator[ShaFile]:
    if old == new:
        return
    tree = tree_of(store, new)
    assert tree is not None
    yield tree
    prev = tree_of(store, old) if old is not None else None
    for name in names_between(old, new, prev, tree):
        if name not in tree:
            continue
        mode, sha = tree[name]
        was = prev[name] if prev is not None and name in prev else None
        if was is not None and was[1] == sha:
            continue
        if stat.S_ISDIR(mode):
            base = was[1] if was is not None and stat.S_ISDIR(was[0]) else None
            yield from _tree_delta(store, base, sha)
        elif mode & 0o170000 != 0o160000:  # a submodule's commit is not ours to send
            yield store[sha]


def objects_to_send(
    store: BaseObjectStore,
    head: bytes,
    base: bytes | None,
    known: Mapping[bytes, list[ShaFile]] | None = None,
) -> list[ShaFile]:
    """The objects a remote holding ``base`` lacks to hold ``head`` (parents first).

    ``known``: the objects of commits this handle made (nothing to compute for those).
    """
    chain = commits_between(store, head, base)
    if chain is not None:
        out: list[ShaFile] = []
        for sha in chain:
            mine = (known or {}).get(sha)
            out.extend(mine if mine is not None else objects_of_commits(store, [sha]))
        return out
    # Merges or unrelated histories (a repository edited by other tools): dulwich's search.
    haves = [ObjectID(base)] if base is not None else []
    missing = store.find_missing_objects(haves, [ObjectID(head)])
    return [store[sha] for sha, _hint in missing]
