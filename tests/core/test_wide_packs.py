"""Compaction packs loose objects from their bytes and merges packs by copying entries:
every object reads back byte for byte, through dulwich and through the real ``git``, and a
write project compacted many times keeps its history, reads and validate right."""

from __future__ import annotations

import os
import re
import zlib
from contextlib import closing
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree
from dulwich.pack import apply_delta
from dulwich.refs import Ref
from dulwich.repo import Repo

import datom_core as dc
from datom_core._git import Author, MetadataRepo
from datom_core._git import _maintenance as maint
from datom_core._git._fast import _compact, _packs
from datom_core._git._fast._packs import write_objects
from datom_core._git._fast._share import SHARE_ENV
from datom_core._plain import plain
from tests.gitcli import GIT, git, needs_git

pytestmark = pytest.mark.usefixtures("accelerated")  # tests of an accelerator itself

ME = Author("Ada Lovelace", "ada@example.org")


def _history(repo: Repo, commits: int, width: int) -> dict[bytes, tuple[int, bytes]]:
    """``commits`` commits on master, each changing one of ``width`` root entries (a wide
    root tree, as a project's), added loose; every object's (type, bytes) by id."""
    store = repo.object_store
    made: dict[bytes, tuple[int, bytes]] = {}

    def add(obj: ShaFile) -> ShaFile:
        store.add_object(obj)
        made[obj.id] = (obj.type_num, obj.as_raw_string())
        return obj

    root, parent = Tree(), None
    lines = [b'  "t%05d": "%s"' % (k, os.urandom(32).hex().encode()) for k in range(width)]
    for i in range(commits):
        for k in [i % width] if i else range(width):
            doc = add(Blob.from_string(b'{"n": %d, "name": "t%05d"}\n' % (i, k)))
            sub = Tree()
            sub.add(b"metadata.json", 0o100644, doc.id)
            add(sub)
            root.add(b"t%05d" % k, 0o040000, sub.id)
        # A manifest: one entry rewritten (its length changing), and a stamp at the end.
        lines[i % width] = b'  "t%05d": "%s"' % (i % width, os.urandom(1 + i % 40).hex().encode())
        text = b"{\n" + b",\n".join(lines) + b'\n  "at": "%d"\n}\n' % i
        root.add(b"manifest.json", 0o100644, add(Blob.from_string(text)).id)
        noise = add(Blob.from_string(os.urandom(9000)))  # big, and nothing like the others
        root.add(b"noise", 0o100644, noise.id)
        tree = add(Tree.from_string(root.as_raw_string()))
        c = Commit()
        c.tree, c.parents = tree.id, [parent] if parent else []
        c.author = c.committer = b"A <a@example.org>"
        c.author_time = c.commit_time = 1_700_000_000 + i
        c.author_timezone = c.commit_timezone = 0
        c.message = b"write %d\n" % i
        parent = add(c).id
    assert parent is not None
    repo.refs[Ref(b"refs/heads/master")] = parent
    return made


def _same(repo: Repo, made: dict[bytes, tuple[int, bytes]]) -> None:
    with closing(Repo(repo.path)) as fresh:  # nothing remembered from before
        for sha, (type_num, raw) in made.items():
            assert fresh.object_store.get_raw(ObjectID(sha)) == (type_num, raw)


@needs_git
def test_loose_objects_are_packed_from_their_bytes_exactly(tmp_path: Path) -> None:
    repo = Repo.init_bare(tmp_path / "r", mkdir=True)
    repo.close()
    made = _history(repo, 100, 1500)
    packed = _compact._pack_loose(repo.object_store)
    assert packed == len(made)
    assert repo.object_store.count_loose_objects() == 0
    _same(repo, made)
    (pack,) = (tmp_path / "r" / "objects" / "pack").glob("*.pack")
    listed = git(tmp_path / "r", "verify-pack", "-v", str(pack))
    assert sum(sha.decode() in listed for sha in made) == len(made)
    chains = [int(n) for n in re.findall(r"chain length = (\d+):", listed)]
    assert chains and max(chains) <= _packs._DEPTH  # manifests and root trees: deltas
    whole = sum(len(_packs._whole(b"", t, raw)[1]) for t, raw in made.values())
    assert pack.stat().st_size * 3 < whole  # every entry deflated whole: 3 times as big
    git(tmp_path / "r", "fsck", "--full", "--strict", "--no-dangling")


@needs_git
def test_merged_packs_copy_entries_and_resolve_git_deltas(tmp_path: Path) -> None:
    where = tmp_path / "r"
    repo = Repo.init_bare(where, mkdir=True)
    made = _history(repo, 40, 50)
    git(where, "repack", "-a", "-d", "-q")  # git's own pack: deltas, against other objects
    more = {}
    for round_ in range(maint.PACK_BUDGET + 2):  # then small packs of ours past the budget
        blob = Blob.from_string(b"round %d\n" % round_)
        repo.object_store.add_object(blob)
        more[blob.id] = (blob.type_num, blob.as_raw_string())
        _compact._pack_loose(repo.object_store)
    deltas = git(where, "verify-pack", "-v", *map(str, where.glob("objects/pack/*.pack")))
    assert " blob " in deltas and any(len(line.split()) > 5 for line in deltas.splitlines())
    assert len(repo.object_store.packs) > maint.PACK_BUDGET
    repo.close()
    with closing(Repo(str(where))) as again:
        packed, merged = maint.compact(again)
        assert packed == 0 and merged == maint.PACK_BUDGET + 2  # git's big pack is kept
        assert len(again.object_store.packs) == 2
        _same(repo, made | more)
        packs = again.object_store.packs  # now git's, with its deltas, too
        name = _packs.merge_packs(again.object_store, packs)
        for p in packs:
            again.object_store._remove_pack(p)
    assert [p.stem for p in where.glob("objects/pack/*.pack")] == [name]
    _same(repo, made | more)
    git(where, "fsck", "--full", "--strict", "--no-dangling")


@needs_git
def test_merged_delta_packs_keep_their_deltas_exactly(tmp_path: Path) -> None:
    where = tmp_path / "r"
    repo = Repo.init_bare(where, mkdir=True)
    made = _history(repo, 60, 300)
    _compact._pack_loose(repo.object_store)
    (ours,) = repo.object_store.packs
    size = Path(ours._basename + ".pack").stat().st_size
    some = [repo.object_store[ObjectID(sha)] for sha in list(made)[::3]]
    write_objects(repo.object_store, some)  # a second pack: some objects twice
    packs = sorted(repo.object_store.packs, key=len)  # the copies first: bases move
    name = _packs.merge_packs(repo.object_store, packs)
    for p in packs:
        repo.object_store._remove_pack(p)
    (merged,) = where.glob("objects/pack/*.pack")
    assert merged.stem == name
    _same(repo, made)
    listed = git(where, "verify-pack", "-v", str(merged))
    assert max(int(n) for n in re.findall(r"chain length = (\d+):", listed)) <= 2 * _packs._DEPTH
    assert merged.stat().st_size < 2 * size
    git(where, "fsck", "--full", "--strict", "--no-dangling")


def test_an_unreadable_loose_object_is_left_loose(tmp_path: Path) -> None:
    repo = Repo.init_bare(tmp_path / "r", mkdir=True)
    good, bad = Blob.from_string(b"good"), Blob.from_string(b"bad")
    repo.object_store.add_object(good)
    path = Path(repo.object_store._get_shafile_path(bad.id))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(zlib.compress(b"blob 3\0bad")[:-2])  # a torn write: no checksum
    assert _compact._pack_loose(repo.object_store) == 1
    assert path.exists()
    repo.close()
    with closing(Repo(str(tmp_path / "r"))) as again:
        assert again.object_store.get_raw(good.id) == (3, b"good")


@pytest.mark.parametrize("share", ["1", "0"], ids=["shared clone", "copying clone"])
def test_a_wide_project_compacted_many_times_stays_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, share: str
) -> None:
    monkeypatch.setenv(SHARE_ENV, share)
    conn = dc.init_repo(tmp_path / "repo", "P", dc.LocalStore(tmp_path / "store"))
    tables = [f"t{i:03d}" for i in range(200)]
    for name in tables:  # 200 writes: past the budgets of the clone and of its remote
        conn.write(name, pa.table({"k": [name], "v": [1.0]}))
    for i in range(120):
        conn.write(tables[i % 7], pa.table({"k": [f"x{i}"], "v": [float(i)]}))
    remote = MetadataRepo.embedded_remote_path(tmp_path / "repo")
    compacted = [remote] if share == "1" else [remote, tmp_path / "repo"]
    for where in compacted:
        with closing(Repo(str(where))) as repo:
            # checked every few writes (a write adds ~7 loose objects): the budget holds to
            # within the writes since the last check
            slack = 8 * max(maint.CLONE_CHECK_EVERY, maint.REMOTE_CHECK_EVERY)
            assert repo.object_store.count_loose_objects() <= maint.LOOSE_BUDGET + slack
            assert repo.object_store.packs  # compacted on its budget
    if share == "1" and not plain("share"):  # no copy: it reads the remote's objects
        with closing(Repo(str(tmp_path / "repo"))) as repo:
            # (but the first commit's, made before the clone met its remote)
            assert repo.object_store.count_loose_objects() < 10 and not repo.object_store.packs
    for i, name in enumerate(tables[:7]):
        assert len(conn.history(name)) == 1 + len(range(i, 120, 7))
        last = max(range(i, 120, 7))
        assert list(conn.read(name)["k"]) == [f"x{last}"]
    assert list(conn.read("t150")["k"]) == ["t150"]
    assert conn.validate().ok
    if GIT is not None:
        git(tmp_path / "repo", "fsck", "--full", "--strict", "--no-dangling")


@pytest.mark.parametrize(
    "edit",
    ["same", "start", "end", "middle grows", "middle shrinks", "two in place", "appended"],
)
def test_a_delta_is_found_for_an_edited_text_and_rebuilds_it(edit: str) -> None:
    base = os.urandom(150_000).hex().encode()  # 300 kB, no repeats to copy by chance
    cut = len(base) // 2
    target = {
        "same": base,
        "start": b"X" + base[1:],
        "end": base[:-5] + b"tail!",
        "middle grows": base[:cut] + b"inserted" * 9 + base[cut:],
        "middle shrinks": base[:cut] + base[cut + 777 :],
        "two in place": base[:1000] + b"ab" + base[1002:cut] + b"cd" + base[cut + 2 :],
        "appended": base + b"more" * 100,
    }[edit]
    delta = _packs._delta(base, target)
    assert delta is not None and len(delta) < 3000
    assert b"".join(apply_delta(base, delta)) == target


def test_no_delta_between_unlike_objects() -> None:
    assert _packs._delta(os.urandom(100_000), os.urandom(100_000)) is None


@needs_git
def test_blobs_this_process_made_are_packed_from_memory_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compaction takes the blobs a write just made (megabyte manifests among them)
    from memory instead of inflating their files again; the pack is the same to git."""
    monkeypatch.setattr(maint, "CLONE_CHECK_EVERY", 1 << 62)  # no compaction before ours
    repo = MetadataRepo.init(tmp_path / "a", None)
    for i in range(20):
        repo.commit({f"t{i % 4}/m": b"doc %d\n" % i, ".datom/manifest.json": b"m%d\n" % i}, "c", ME)
    read: list[bytes] = []
    real = _compact.loose_entry

    def counted(store: Any, sha: bytes) -> Any:
        read.append(sha)
        return real(store, sha)

    monkeypatch.setattr(_compact, "loose_entry", counted)
    with closing(Repo(str(tmp_path / "a"))) as r:
        before = {sha: r.object_store.get_raw(sha) for sha in r.object_store}
        packed = _compact._pack_loose(r.object_store)
        assert packed == len(before) and r.object_store.count_loose_objects() == 0
        blobs = sum(1 for kind, _ in before.values() if kind == Blob.type_num)
        assert len(read) == packed - blobs  # trees and commits only were read from files
    with closing(Repo(str(tmp_path / "a"))) as fresh:
        assert {sha: fresh.object_store.get_raw(sha) for sha in before} == before
    git(tmp_path / "a", "fsck", "--full", "--strict", "--no-dangling")
