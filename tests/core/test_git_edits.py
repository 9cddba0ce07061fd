"""Another writer's root tree, read as the edit of a big tree this process holds.

The trees here are written by dulwich's own serialiser into a real object store on disk
(loose files, as another writer's push leaves them), then read cold: whatever path the
read takes, the tree must be exactly what dulwich parses from those bytes, and the paths
that differ between commits exactly the files that differ.
"""

from __future__ import annotations

import multiprocessing
import random
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest
from dulwich.object_store import DiskObjectStore
from dulwich.objects import Blob, Commit, Tree
from hypothesis import given, settings
from hypothesis import strategies as st

import datom_core as dc
from datom_core._git import _objects as O
from datom_core._git._diff import changed_paths
from datom_core._git._fast import _memo as M
from datom_core._git._fast import _tree as T
from datom_core._memory import KeyedMemory
from tests.core.trees import differing_files
from tests.gitcli import git, needs_git

pytestmark = pytest.mark.usefixtures("accelerated")  # tests of an accelerator itself

TABLES = 120  # above the size from which root trees are patched rather than re-serialised


def _fresh_memory() -> None:
    M._TREES, T._MADE_FROM, T._LAYOUTS = KeyedMemory(64), KeyedMemory(256), KeyedMemory(64)


@pytest.fixture
def store(tmp_path: Path) -> DiskObjectStore:
    _fresh_memory()
    return DiskObjectStore.init(str(tmp_path / "objects"))


def _commit(store: DiskObjectStore, files: dict[str, bytes], parent: bytes | None) -> bytes:
    made = O.build_commit(store, parent, files, "w", b"A <a@b>", 0)
    assert made is not None
    for obj in made.objects:
        store.add_object(obj)
    return made.id


def _foreign_commit(
    store: DiskObjectStore, root: Tree, entries: dict[bytes, tuple[int, bytes]], parent: bytes
) -> tuple[bytes, bytes]:
    """A commit whose root tree dulwich serialises from ``entries`` (another writer's), as
    loose files in ``store``: (commit id, root tree id)."""
    tree = Tree()
    for name, (mode, sha) in entries.items():
        tree[name] = (mode, sha)
    commit = Commit()
    commit.tree, commit.parents, commit.message = tree.id, [parent], b"elsewhere"
    commit.author = commit.committer = b"B <b@c>"
    commit.author_time = commit.commit_time = commit.author_timezone = commit.commit_timezone = 0
    store.add_object(tree)
    store.add_object(commit)
    return commit.id, tree.id


def _project(store: DiskObjectStore) -> tuple[bytes, Tree]:
    """A project of ``TABLES`` tables, written twice here (so its root is patched and its
    layout known, as after a write): (the tip, its root tree)."""
    files = {f"t{i:04d}/metadata.json": b"doc %d" % i for i in range(TABLES)}
    files[".gitignore"] = b"input_files/\n"
    tip = _commit(store, files, None)
    tip = _commit(store, {"t0003/metadata.json": b"mine"}, tip)
    root = O.tree_of(store, store[tip].tree)
    assert isinstance(root, T._PatchedTree)
    return tip, root


def test_the_trees_compared_with_are_the_ones_laid_out_last() -> None:
    memory: KeyedMemory[str, int] = KeyedMemory(3)
    for key in "abcd":
        memory.put(key, 0)
    memory.put("b", 1)  # put again: the newest
    assert memory.newest(2) == ["b", "d"]
    assert memory.newest(9) == ["b", "d", "c"]  # "a" went first


def _subtree(store: DiskObjectStore, data: bytes) -> bytes:
    blob = Blob.from_string(data)
    sub = Tree()
    sub.add(b"metadata.json", 0o100644, blob.id)
    store.add_object(blob)
    store.add_object(sub)
    return sub.id


def _assert_read_right(store: DiskObjectStore, old: bytes, new: bytes) -> Tree:
    """The new root, read cold here, is what dulwich parses; the paths changed between
    the commits are the files that differ."""
    root_id = store[new].tree
    read = O.tree_of(store, root_id)
    parsed = Tree.from_raw_string(Tree.type_num, store[root_id].as_raw_string())
    assert read is not None and read.id == root_id
    assert read.items() == parsed.items()
    assert read.as_raw_string() == parsed.as_raw_string()
    assert changed_paths(store, old, new) == differing_files(store, old, new)
    return read


def test_a_root_whose_ids_another_writer_replaced_is_read_as_that_edit(
    store: DiskObjectStore,
) -> None:
    tip, root = _project(store)
    entries = dict(T.entries_of(root))
    for name in (b"t0000", b"t0057", b"t0119"):
        entries[name] = (entries[name][0], _subtree(store, b"theirs " + name))
    theirs, tree_id = _foreign_commit(store, root, entries, tip)

    read = _assert_read_right(store, tip, theirs)
    assert isinstance(read, T._PatchedTree)  # not parsed
    assert T.made_from(tree_id) == (root.id, frozenset({b"t0000", b"t0057", b"t0119"}))
    # A write on top of it is patched at the same offsets and is what git would write.
    mine = _commit(store, {"t0100/metadata.json": b"after theirs"}, theirs)
    made = O.tree_of(store, store[mine].tree)
    assert isinstance(made, T._PatchedTree)
    assert (
        made.as_raw_string()
        == Tree.from_raw_string(Tree.type_num, made.as_raw_string()).as_raw_string()
    )
    assert changed_paths(store, tip, mine) == {
        b"t0000/metadata.json": Blob.from_string(b"theirs t0000").id,
        b"t0057/metadata.json": Blob.from_string(b"theirs t0057").id,
        b"t0119/metadata.json": Blob.from_string(b"theirs t0119").id,
        b"t0100/metadata.json": Blob.from_string(b"after theirs").id,
    }


@pytest.mark.parametrize("edit", ["a name", "a mode", "an entry swapped for another"])
def test_a_same_length_root_that_is_not_an_id_edit_is_parsed(
    store: DiskObjectStore, edit: str
) -> None:
    """Same length, but bytes outside the ids differ: the tree is parsed, not patched."""
    tip, root = _project(store)
    entries = dict(T.entries_of(root))
    if edit == "a name":
        entries[b"t00Z0"] = entries.pop(b"t0050")  # sorts elsewhere among the t00..
    elif edit == "a mode":
        entries[b".gitignore"] = (0o100755, entries[b".gitignore"][1])
    else:
        entries[b"t9999"] = entries.pop(b"t0050")
    theirs, _ = _foreign_commit(store, root, entries, tip)
    assert len(store[store[theirs].tree].as_raw_string()) == len(root.as_raw_string())
    read = _assert_read_right(store, tip, theirs)
    assert not isinstance(read, T._PatchedTree)


@settings(max_examples=40, deadline=None)
@given(
    picks=st.lists(st.integers(0, TABLES - 1), min_size=1, max_size=12),
    chained=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_any_id_edit_reads_as_dulwich_parses_it(
    tmp_path_factory: pytest.TempPathFactory, picks: list[int], chained: bool, seed: int
) -> None:
    """Random ids replaced, once or by two writers in turn (each read as the edit of the
    one before): every read is dulwich's parse, every diff the files that differ."""
    _fresh_memory()
    store = DiskObjectStore.init(str(tmp_path_factory.mktemp("objects")))
    tip, root = _project(store)
    rng = random.Random(seed)
    base_commit, base = tip, root
    for round_ in range(2 if chained else 1):
        entries = dict(T.entries_of(base))
        for i in picks:
            name = b"t%04d" % i
            entries[name] = (entries[name][0], _subtree(store, b"r%d-%d" % (round_, rng.random())))
        theirs, _ = _foreign_commit(store, base, entries, base_commit)
        read = _assert_read_right(store, base_commit, theirs)
        assert isinstance(read, T._PatchedTree)
        assert changed_paths(store, tip, theirs) == differing_files(store, tip, theirs)
        base_commit, base = theirs, read


# -- end to end: writers of a wide project, each in its own clone --------------------------


def _wide_writer(clone: str, store: str, worker: int) -> tuple[list[tuple[str, str]], int]:
    """Ten writes to tables picked at random; the versions, and how many of the other
    writers' roots this process read as edits."""
    edits = 0
    read_as_edit = M.as_edit

    def counted(sha: bytes, text: bytes, known: Callable[[bytes], Tree | None]) -> Tree | None:
        nonlocal edits
        tree = read_as_edit(sha, text, known)
        edits += tree is not None
        return tree

    M.as_edit = counted
    conn = dc.connect(clone, store=dc.LocalStore(store))
    rng, out = random.Random(worker), []
    for i in range(10):
        table = f"t{rng.randrange(WIDE):03d}"
        data = pa.table({"k": [f"{worker}-{i}-{j}" for j in range(3)]})
        out.append((table, conn.write(table, data).version))
    return out, edits


WIDE = 90


@pytest.mark.slow
@needs_git
def test_writers_of_a_wide_project_read_each_others_roots_as_edits(tmp_path: Path) -> None:
    """Four clones of a 90-table project write at once: each reads the others' root trees
    as edits of its own (no parse), and every version lands once, the store agrees with
    git, git finds the remote whole and every clone's ``git status`` is quiet."""
    store = tmp_path / "store"
    origin = dc.init_repo(tmp_path / "origin", "W", dc.LocalStore(store))
    for t in range(WIDE):
        origin.write(f"t{t:03d}", pa.table({"k": [f"seed {t}"]}))
    clones = [tmp_path / f"c{w}" for w in range(4)]
    for c in clones:
        dc.clone(origin.repo.remote_url, c, dc.LocalStore(store))
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=4, mp_context=ctx) as pool:
        jobs = [pool.submit(_wide_writer, str(c), str(store), w) for w, c in enumerate(clones)]
        results = [job.result() for job in jobs]
    assert sum(edits for _, edits in results) > 0  # the path under test was taken
    origin.pull()
    assert origin.validate().ok
    for table in {t for versions, _ in results for t, _ in versions}:
        recorded = [v.version for v in origin.history(table)]
        assert len(recorded) == len(set(recorded))
        assert {v for versions, _ in results for t, v in versions if t == table} <= set(recorded)
    git(Path(origin.repo.remote_url.removeprefix("file://")), "fsck", "--strict")
    for c in clones:
        assert git(c, "status", "--porcelain") == ""
