"""The objects a remote lacks: those a push sends (private to the git layer).

Along a line of first parents each commit adds its own trees and blobs over its parent's,
found from the trees' changed names (:func:`commit_objects`); anything else
(merges, unrelated histories) is left to dulwich's search.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from dulwich.object_store import BaseObjectStore
from dulwich.objects import Commit, ObjectID, ShaFile

from ._diff import names_between
from ._objects import commit_of, tree_of
from ._read import load

__all__ = ["commit_objects", "commits_between", "objects_of_commits", "objects_to_send"]

_SUBMODULE = 0o160000


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
    """Each commit, with the trees and blobs it adds over its first parent (commit last)."""
    for sha, is_tree in commit_objects(store, commits):
        tree = tree_of(store, sha) if is_tree else None
        yield tree if tree is not None else load(store, sha)


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


def commit_objects(
    store: BaseObjectStore, commits: Iterable[bytes]
) -> Iterator[tuple[bytes, bool]]:
    """Each commit, with the ids of the trees and blobs it adds over its first parent
    (commit last), each with whether it names a tree (blobs are named, never read)."""
    for sha in commits:
        c = commit_of(store, sha)
        assert c is not None
        parent = commit_of(store, c.parents[0]) if c.parents else None
        yield from _tree_ids(store, parent.tree if parent is not None else None, c.tree)
        yield sha, False


def _tree_ids(
    store: BaseObjectStore, old: bytes | None, new: bytes
) -> Iterator[tuple[bytes, bool]]:
    if old == new:
        return
    tree = tree_of(store, new)
    assert tree is not None
    yield new, True
    prev = tree_of(store, old) if old is not None else None
    for name in names_between(old, new, prev, tree):
        if name not in tree:
            continue
        mode, sha = tree[name]
        was = prev[name] if prev is not None and name in prev else None
        if was is not None and was[1] == sha:
            continue
        if mode & 0o170000 == 0o040000:
            base = was[1] if was is not None and was[0] & 0o170000 == 0o040000 else None
            yield from _tree_ids(store, base, sha)
        elif mode & 0o170000 != _SUBMODULE:  # a submodule's commit is not ours to send
            yield sha, False
