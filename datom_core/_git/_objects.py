"""Commits and trees built from the parent tree plus what changed (private to the git layer).

Nothing here scans the working tree or walks a whole tree: a commit is the parent's tree
with the changed blobs put in (only the trees on their paths are rewritten), and the
objects it adds are exactly the ones a remote that has the parent lacks, so a push sends
those and nothing else.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from dulwich.object_store import BaseObjectStore
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree

from ._index import FILE_MODE

__all__ = [
    "NewCommit",
    "TreeReader",
    "build_commit",
    "changed_paths",
    "commits_between",
    "objects_of_commits",
    "objects_to_send",
]

_Change = tuple[list[bytes], bytes | None]  # path components, blob id (None: delete)
# Parsed trees by id (content-addressed, so shared safely by every repository): the root
# tree of a 3,000-table project takes milliseconds to parse and is read several times per
# write. Never mutated: _apply works on a copy.
_TREES: dict[bytes, Tree] = {}
_TREES_MAX = 64


def _remember(tree: Tree) -> None:
    if len(_TREES) >= _TREES_MAX:
        _TREES.pop(next(iter(_TREES)))
    _TREES[tree.id] = tree


def tree_of(store: BaseObjectStore, sha: bytes) -> Tree | None:
    """The tree ``sha`` (None if it is not a tree), parsed once."""
    tree = _TREES.get(sha)
    if tree is None:
        obj = store[ObjectID(sha)]
        if not isinstance(obj, Tree):
            return None
        _remember(obj)
        tree = obj
    return tree


class TreeReader:
    """A read-only view of the files of one commit (``commit`` None: the empty tree).

    ``read(path)`` returns the bytes of ``path`` there, or ``None`` if it is absent.
    """

    def __init__(self, store: BaseObjectStore, commit: bytes | None) -> None:
        self._store = store
        self.commit: str | None = commit.decode() if commit is not None else None
        root = store[ObjectID(commit)] if commit is not None else None
        self._root: bytes | None = root.tree if isinstance(root, Commit) else None

    def read(self, path: str) -> bytes | None:
        sha = self._root
        for part in path.encode().split(b"/"):
            tree = tree_of(self._store, sha) if sha is not None else None
            if tree is None or part not in tree:
                return None
            _mode, sha = tree[part]
        obj = self._store[ObjectID(sha)] if sha is not None else None
        return obj.as_raw_string() if isinstance(obj, Blob) else None


@dataclass
class NewCommit:
    """A commit not yet stored, with every object it adds over its parent."""

    commit: Commit
    objects: list[ShaFile] = field(default_factory=list)  # the commit last
    changes: dict[bytes, bytes | None] = field(default_factory=dict)  # path -> blob id

    @property
    def id(self) -> bytes:
        return self.commit.id


def _apply(
    store: BaseObjectStore, tree_id: bytes | None, changes: list[_Change], out: list[ShaFile]
) -> bytes | None:
    """The id of ``tree_id`` with ``changes`` applied (None if it ends up empty)."""
    tree = Tree()
    if tree_id is not None:
        base = tree_of(store, tree_id)
        copied = base.copy() if base is not None else Tree()
        tree = copied if isinstance(copied, Tree) else Tree()
    nested: dict[bytes, list[_Change]] = {}
    for parts, sha in changes:
        if len(parts) > 1:
            nested.setdefault(parts[0], []).append((parts[1:], sha))
        elif sha is None:
            if parts[0] in tree:
                del tree[parts[0]]
        else:
            tree[parts[0]] = (FILE_MODE, ObjectID(sha))
    for name, sub in nested.items():
        old = tree[name][1] if name in tree and stat.S_ISDIR(tree[name][0]) else None
        new = _apply(store, old, sub, out)
        if new is None:
            if name in tree:
                del tree[name]
        elif new != old:
            tree[name] = (stat.S_IFDIR, ObjectID(new))
    if not len(tree):
        return None
    if tree_id is None or tree.id != tree_id:
        out.append(tree)
        _remember(tree)  # the next commit's parent tree: parsed already
    return tree.id


def build_commit(
    store: BaseObjectStore,
    parent: bytes | None,
    files: Mapping[str, bytes],
    message: str,
    identity: bytes,
    timestamp: int,
) -> NewCommit | None:
    """A commit of ``files`` on top of ``parent``, or None when ``parent`` already holds them.

    Only files whose bytes differ from ``parent``'s are changed. Nothing is stored: the
    caller adds :attr:`NewCommit.objects` where they are needed.
    """
    reader = TreeReader(store, parent)
    blobs: dict[bytes, Blob] = {}
    for relpath, data in files.items():
        blob = Blob.from_string(bytes(data))
        if reader.read(relpath) != blob.data:
            blobs[relpath.encode()] = blob
    if not blobs:
        return None
    out: list[ShaFile] = list({b.id: b for b in blobs.values()}.values())
    changes: list[_Change] = [(path.split(b"/"), blob.id) for path, blob in blobs.items()]
    tree_id = _apply(store, reader._root, changes, out)
    if tree_id is None:
        empty = Tree()
        out.append(empty)
        tree_id = empty.id
    c = Commit()
    c.tree = tree_id
    c.parents = [ObjectID(parent)] if parent is not None else []
    c.author = c.committer = identity
    c.author_time = c.commit_time = timestamp
    c.author_timezone = c.commit_timezone = 0
    c.encoding = b"UTF-8"
    c.message = (message if message.endswith("\n") else message + "\n").encode()
    out.append(c)
    return NewCommit(c, out, {path: blob.id for path, blob in blobs.items()})


def changed_paths(
    store: BaseObjectStore, old: bytes | None, new: bytes | None
) -> dict[bytes, bytes | None]:
    """``path -> blob id`` (None: removed) for every file differing between two commits."""
    out: dict[bytes, bytes | None] = {}
    _diff(store, _tree_of(store, old), _tree_of(store, new), b"", out)
    return out


def _diff(
    store: BaseObjectStore,
    old: bytes | None,
    new: bytes | None,
    prefix: bytes,
    out: dict[bytes, bytes | None],
) -> None:
    if old == new:
        return
    a = tree_of(store, old) if old is not None else None
    b = tree_of(store, new) if new is not None else None
    for name in set(a or ()) | set(b or ()):
        was = a[name] if a is not None and name in a else None
        now = b[name] if b is not None and name in b else None
        if was == now:
            continue
        path = prefix + name
        was_dir = was is not None and stat.S_ISDIR(was[0])
        now_dir = now is not None and stat.S_ISDIR(now[0])
        if was_dir or now_dir:
            _diff(store, was[1] if was_dir else None, now[1] if now_dir else None, path + b"/", out)  # type: ignore[index]
        if was is not None and not was_dir:
            out[path] = None
        if now is not None and not now_dir and stat.S_ISREG(now[0]):
            out[path] = now[1]


def _tree_of(store: BaseObjectStore, commit: bytes | None) -> bytes | None:
    if commit is None:
        return None
    obj = store[ObjectID(commit)]
    return obj.tree if isinstance(obj, Commit) else None


def commits_between(store: BaseObjectStore, head: bytes, base: bytes | None) -> list[bytes] | None:
    """Commits from ``head`` back to (excluding) ``base`` along first parents, oldest first.

    None when ``base`` is not on that line (a merge, or unrelated histories).
    """
    chain, sha = [], head
    while sha != base:
        chain.append(sha)
        obj = store[ObjectID(sha)]
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
    for name in tree:
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
