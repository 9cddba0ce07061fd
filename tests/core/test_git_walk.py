"""The git layer's walk (``_fast._walk``) gives dulwich's answer, the paths two commits
differ in (with modes), for trees this process made (read from the names they were made
with) and trees made elsewhere (compared entry by entry); the objects a push sends and a
copy takes are all the other side lacks."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from dulwich.object_store import MemoryObjectStore
from dulwich.objects import Blob, Commit, ObjectID, Tree
from hypothesis import given, settings
from hypothesis import strategies as st

from datom_core._git import _diff, _objects
from datom_core._git._fast import _memo, _tree, _walk
from datom_core._memory import KeyedMemory
from datom_core._plain import PLAIN_ENV

_MODES = [0o100644, 0o100755, 0o120000, 0o160000]


@contextmanager
def _plain_paths() -> Iterator[None]:
    before = os.environ.get(PLAIN_ENV)
    os.environ[PLAIN_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ[PLAIN_ENV]
        else:
            os.environ[PLAIN_ENV] = before


def _tree_of_files(store: MemoryObjectStore, files: Mapping[str, tuple[int, bytes]]) -> bytes:
    """A tree made the way another tool makes one: every entry written out, with modes."""
    here: dict[str, tuple[int, bytes]] = {}
    folders: dict[str, dict[str, tuple[int, bytes]]] = {}
    for path, entry in files.items():
        head, _, rest = path.partition("/")
        if rest:
            folders.setdefault(head, {})[rest] = entry
        else:
            here[head] = entry
    tree = Tree()
    for name, sub in folders.items():
        if name not in here:
            tree.add(name.encode(), 0o040000, _tree_of_files(store, sub))
    for name, (mode, data) in here.items():
        if mode == 0o160000:  # a submodule: a commit id, not an object of this repository
            tree.add(name.encode(), mode, Blob.from_string(data).id)
            continue
        blob = Blob.from_string(data)
        store.add_object(blob)
        tree.add(name.encode(), mode, blob.id)
    store.add_object(tree)
    return tree.id


def _commit(store: MemoryObjectStore, tree: bytes, parent: bytes | None) -> bytes:
    c = Commit()
    c.tree, c.parents = ObjectID(tree), [ObjectID(parent)] if parent else []
    c.author = c.committer = b"A <a@b>"
    c.author_time = c.commit_time = 0
    c.author_timezone = c.commit_timezone = 0
    c.message = b"m"
    store.add_object(c)
    return c.id


def _reachable(store: MemoryObjectStore, commit: bytes | None) -> set[bytes]:
    """Every object a commit reaches, with its ancestors (submodule commits excluded)."""
    seen: set[bytes] = set()
    todo = [commit] if commit is not None else []
    while todo:
        sha = todo.pop()
        if sha in seen:
            continue
        seen.add(sha)
        obj = store[ObjectID(sha)]
        if isinstance(obj, Commit):
            todo += [obj.tree, *obj.parents]
        elif isinstance(obj, Tree):
            todo += [e.sha for e in obj.items() if e.mode != 0o160000]
    return seen


_paths = st.sampled_from(["t1/metadata.json", "t2/metadata.json", "t1/sub/x", "t3", "a.b", "t2"])
_files = st.dictionaries(_paths, st.tuples(st.sampled_from(_MODES), st.sampled_from([b"1", b"2"])))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(steps=st.lists(st.tuples(st.booleans(), _files), min_size=2, max_size=5))
def test_fast_and_plain_walks_agree(steps: list[tuple[bool, dict[str, tuple[int, bytes]]]]) -> None:
    """A history of commits, some built here on their parent (their trees remember what
    they were made from), some written out whole (another writer's, with executables,
    symbolic links, submodules and files turning into folders): every pair of commits
    differs in the same paths and modes either way, and every stretch of history sends
    what the other side lacks."""
    store = MemoryObjectStore()
    _memo._TREES, _tree._MADE_FROM = KeyedMemory(64), KeyedMemory(256)
    heads: list[bytes] = []
    for made_here, drawn in steps:
        parent = heads[-1] if heads else None
        # a submodule only where no table folder is ever written (a write under a path a
        # submodule holds is not what this compares)
        files = {
            p: (m if m != 0o160000 or p in ("t3", "a.b") else 0o100644, d)
            for p, (m, d) in drawn.items()
        }
        plain_files = {p: d for p, (m, d) in files.items() if m == 0o100644}
        new = _objects.build_commit(store, parent, plain_files, "m", b"A <a@b>", 0)
        if made_here and new is not None:
            for obj in new.objects:
                store.add_object(obj)
            heads.append(new.id)
        else:
            heads.append(_commit(store, _tree_of_files(store, files), parent))
    for i, old in enumerate([None, *heads]):
        for new_head in heads[i:]:
            fast_modes: dict[bytes, int] = {}
            fast = _walk.changed_paths(store, old, new_head, fast_modes)
            with _plain_paths():
                plain_modes: dict[bytes, int] = {}
                assert _diff.changed_paths(store, old, new_head, plain_modes) == fast
                assert plain_modes == fast_modes
            # what a push sends: all the remote lacks, nothing the new commits do not reach
            # (dulwich may send one the remote holds, an unchanged empty tree)
            lacks = _reachable(store, new_head) - _reachable(store, old)
            sent = {o.id for o in _diff.objects_to_send(store, new_head, old)}
            assert lacks <= sent <= _reachable(store, new_head)
            base = _reachable(store, heads[i - 1]) if i else set()
            copied = set(_diff.commit_object_ids(store, heads[i:]))
            assert _reachable(store, heads[-1]) - base <= copied <= _reachable(store, heads[-1])
