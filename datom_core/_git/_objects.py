"""Commits and trees built from the parent tree plus what changed (private to the git layer).

Nothing here scans the working tree or walks a whole tree: a commit is the parent's tree
with the changed blobs put in (only the trees on their paths are rewritten), and the
objects it adds are exactly the ones a remote that has the parent lacks, so a push sends
those and nothing else. A big tree is patched, and another writer's read as an edit of
one held here, by the accelerator :mod:`._fast._tree`; the plain path beside it is
dulwich's (a copy of the base with the entries set; a parse). Trees, commits and blobs
read or built are kept by id by the accelerator :mod:`._fast._memo`.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field

from dulwich.object_store import BaseObjectStore, MemoryObjectStore, OverlayObjectStore
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree
from dulwich.repo import Repo

from .._errors import GitError
from .._plain import plain
from ._fast import _memo
from ._fast._index import FILE_MODE
from ._fast._tree import patched, remember_made
from ._internals import check_relpath, clone_folder
from ._read import has, load
from ._signing import Sign

__all__ = [
    "Answer",
    "Build",
    "ChainItem",
    "NewCommit",
    "TreeReader",
    "blob_data",
    "build_chain",
    "build_commit",
    "commit_object",
    "commit_of",
    "tree_of",
]

_Change = tuple[list[bytes], bytes | None]  # path components, blob id (None: delete)
_Entry = tuple[int, bytes]  # mode, hex id


def tree_of(store: BaseObjectStore, sha: bytes) -> Tree | None:
    """The tree ``sha`` (None if it is not a tree): kept, and a recent big tree's edit read
    as one, by :mod:`._fast._memo`."""
    if not plain("trees"):
        return _memo.tree_of(store, sha)
    obj = load(store, sha)  # the plain path: a parse
    return obj if isinstance(obj, Tree) else None


def commit_of(store: BaseObjectStore, sha: bytes) -> Commit | None:
    """The commit ``sha`` (None if it is not a commit): kept by :mod:`._fast._memo`."""
    if not plain("commits"):
        return _memo.commit_of(store, sha)
    obj = load(store, sha)  # the plain path
    return obj if isinstance(obj, Commit) else None


def commit_object(r: Repo, commit: str) -> Commit:
    """The commit of a full hex id held by the clone ``r`` (the memory holds any clone's
    commits it met: asked only then); :class:`GitError` naming the id if none."""
    sha, found = commit.encode(), None
    if re.fullmatch("[0-9a-f]{40}", commit) and has(r.object_store, sha):
        with suppress(KeyError):
            found = commit_of(r.object_store, sha)
    if found is None:
        raise GitError(f"No commit {commit!r} in {clone_folder(r)}: pass a full 40-hex commit id.")
    return found


def blob_data(store: BaseObjectStore, sha: bytes) -> bytes | None:
    """The bytes of the blob ``sha`` (None if it is not a blob): kept by :mod:`._fast._memo`."""
    if not plain("blobs"):
        return _memo.blob_data(store, sha)
    obj = load(store, sha)  # the plain path
    return obj.as_raw_string() if isinstance(obj, Blob) else None


class TreeReader:
    """A read-only view of the files of one commit (``commit`` None: the empty tree).

    ``read(path)`` returns the bytes of ``path`` there, or ``None`` if it is absent.
    """

    def __init__(self, store: BaseObjectStore, commit: bytes | None) -> None:
        self._store = store
        self.commit: str | None = commit.decode() if commit is not None else None
        root = commit_of(store, commit) if commit is not None else None
        self._root: bytes | None = root.tree if root is not None else None

    def entry(self, path: str | bytes) -> _Entry | None:
        """``(mode, id)`` of ``path`` (a file or a directory), or None if it is absent."""
        found: _Entry | None = (stat.S_IFDIR, self._root) if self._root is not None else None
        raw = path.encode() if isinstance(path, str) else path
        for part in raw.split(b"/"):
            tree = tree_of(self._store, found[1]) if found is not None else None
            if tree is None or part not in tree:
                return None
            found = tree[part]
        return found

    def read(self, path: str) -> bytes | None:
        found = self.entry(path)
        return blob_data(self._store, found[1]) if found is not None else None

    def directories(self) -> list[str]:
        """The names of the top-level directories (the tables, the sets, ``.datom``...)."""
        tree = tree_of(self._store, self._root) if self._root is not None else None
        if tree is None:
            return []
        return [
            n.decode("utf-8", "surrogateescape") for n, m, _ in tree.iteritems() if stat.S_ISDIR(m)
        ]


@dataclass
class NewCommit:
    """A commit not yet stored, with every object it adds over its parent."""

    commit: Commit
    objects: list[ShaFile] = field(default_factory=list)  # the commit last
    changes: dict[bytes, bytes | None] = field(default_factory=dict)  # path -> blob id

    @property
    def id(self) -> bytes:
        return self.commit.id


def _entry_in(tree: Tree | None, name: bytes) -> _Entry | None:
    return tree[name] if tree is not None and name in tree else None


def _apply(
    store: BaseObjectStore, tree_id: bytes | None, changes: list[_Change], out: list[ShaFile]
) -> bytes | None:
    """The id of ``tree_id`` with ``changes`` applied (None if it ends up empty)."""
    base = tree_of(store, tree_id) if tree_id is not None else None
    updates: dict[bytes, _Entry | None] = {}  # name -> its new entry (None: no entry)
    nested: dict[bytes, list[_Change]] = {}
    for parts, sha in changes:
        if len(parts) > 1:
            nested.setdefault(parts[0], []).append((parts[1:], sha))
        else:
            updates[parts[0]] = (FILE_MODE, ObjectID(sha)) if sha is not None else None
    for name, sub in nested.items():
        current = updates[name] if name in updates else _entry_in(base, name)
        old = current[1] if current is not None and stat.S_ISDIR(current[0]) else None
        new = _apply(store, old, sub, out)
        if new is None:
            updates[name] = None
        elif new != old:
            updates[name] = (stat.S_IFDIR, ObjectID(new))
    changed = {n: e for n, e in updates.items() if e != _entry_in(base, n)}
    if base is not None and not changed:
        return tree_id if len(base) else None
    tree = patched(base, changed) if base is not None and tree_id is not None else None
    if tree is None:
        copied = base.copy() if base is not None else Tree()
        tree = copied if isinstance(copied, Tree) else Tree()
        for name, entry in changed.items():
            if entry is not None:
                tree[name] = (entry[0], ObjectID(entry[1]))
            elif name in tree:
                del tree[name]
    if not len(tree):
        return None
    out.append(tree)
    _memo.keep_tree(tree)  # the next commit's parent tree: parsed already
    if base is not None and tree_id is not None:
        remember_made(tree.id, tree_id, frozenset(changed))
    return tree.id


def _changed_blobs(reader: TreeReader, files: Mapping[str, bytes]) -> dict[bytes, Blob]:
    """``path -> blob`` for the ``files`` whose bytes differ from ``reader``'s, one object
    per content."""
    changed: dict[bytes, Blob] = {}
    made: dict[bytes, Blob] = {}
    for relpath, data in files.items():
        raw = bytes(data)
        blob = Blob.from_string(raw)
        _memo.keep_blob(blob.id, raw)
        found = reader.entry(relpath)
        if found is None or found[1] != blob.id:
            changed[relpath.encode()] = made.setdefault(blob.id, blob)
    return changed


def build_commit(
    store: BaseObjectStore,
    parent: bytes | None,
    files: Mapping[str, bytes],
    message: str,
    identity: bytes,
    timestamp: int,
    sign: Sign | None = None,
) -> NewCommit | None:
    """A commit of ``files`` on top of ``parent``, or None when ``parent`` already holds them.

    Only files whose bytes differ from ``parent``'s are changed (their blob ids are
    compared, nothing is read). Nothing is stored: the caller adds
    :attr:`NewCommit.objects` where they are needed. ``sign``: the commit is signed so
    (:mod:`._signing`).
    """
    reader = TreeReader(store, parent)
    blobs = _changed_blobs(reader, files)
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
    c.tree = ObjectID(tree_id)
    c.parents = [ObjectID(parent)] if parent is not None else []
    c.author = c.committer = identity
    c.author_time = c.commit_time = timestamp
    c.author_timezone = c.commit_timezone = 0
    c.encoding = b"UTF-8"
    c.message = (message if message.endswith("\n") else message + "\n").encode()
    if sign is not None:
        c.gpgsig = sign(c.as_raw_string(), identity.decode())
    out.append(c)
    return NewCommit(c, out, {path: blob.id for path, blob in blobs.items()})


Build = Callable[[TreeReader], Mapping[str, bytes]]
Answer = str | None | Exception  # a write's commit, None (no commit needed) or its error


@dataclass(frozen=True)
class ChainItem:
    """One write of a chain: ``build(tree)`` (``commit_and_push``'s), message, identity."""

    build: Build
    message: str
    identity: str


def build_chain(
    store: BaseObjectStore,
    tip: bytes | None,
    items: Sequence[ChainItem],
    timestamp: int,
    sign: Sign | None = None,
) -> tuple[list[Answer], NewCommit | None]:
    """Each item's commit on the one before (the first on ``tip``), and the chain as one
    :class:`NewCommit` (None: nothing to record). A write whose build raises is left out
    with its error as its answer; one whose files the chain holds already makes no commit."""
    memory = MemoryObjectStore()  # the chain's objects, read by later builds over ``store``
    overlay = OverlayObjectStore([memory, store])
    answers: list[Answer] = []
    objects: dict[bytes, ShaFile] = {}
    changes: dict[bytes, bytes | None] = {}
    parent, last = tip, None
    for n, item in enumerate(items):
        base = store if parent == tip else overlay
        try:
            files = dict(item.build(TreeReader(base, parent)))
            for relpath in files:
                check_relpath(relpath)
        except Exception as e:  # this write alone fails; the others go on
            answers.append(e)
            continue
        who = item.identity.encode()
        new = build_commit(base, parent, files, item.message, who, timestamp, sign)
        answers.append(new.id.decode() if new is not None else None)
        if new is not None:
            for obj in new.objects:
                if obj.id not in objects and n + 1 < len(items):  # a later build reads it
                    memory.add_object(obj)  # (a copy: none for a write alone)
                objects.setdefault(obj.id, obj)
            changes.update(new.changes)
            parent, last = new.id, new
    return answers, NewCommit(last.commit, list(objects.values()), changes) if last else None
