"""The write path of a big project: large documents readable from clone and remote, the
index patched entry by entry, files replaced whole, a killed writer's object lock,
compaction of large objects; checked against dulwich's own index and the real ``git``
(fsck, status, cat-file)."""

from __future__ import annotations

import json
import os
import random
import time
from contextlib import closing
from pathlib import Path

import pytest
from dulwich.index import Index, index_entry_from_stat
from dulwich.objects import Blob, Commit
from dulwich.repo import Repo

from datom_core._git import MetadataRepo
from datom_core._git import _maintenance as maint
from datom_core._git._copy import LOCK_STALE, add_object
from datom_core._git._fast import _compact
from datom_core._git._fast._index import FILE_MODE
from datom_core._git._fast._share import SHARE_ENV
from datom_core._git._internals import write_file_atomic
from tests.core.test_git_objects import ME, git, loose_files, needs_git, put


def big_document(seed: int, entries: int = 3000) -> bytes:
    """A manifest-like document (over 64 KiB at 800 entries), one per seed."""
    body = {f"t{i:04d}": {"version": f"{seed:08d}{i:056d}"} for i in range(entries)}
    return (json.dumps(body, indent=2) + "\n").encode()


def tree_files(r: Repo) -> dict[bytes, bytes]:
    """``path -> blob id`` of every file of HEAD."""
    commit = r[b"HEAD"]
    assert isinstance(commit, Commit)
    out: dict[bytes, bytes] = {}
    for entry in r.object_store.iter_tree_contents(commit.tree):
        assert entry.path is not None and entry.sha is not None
        out[entry.path] = entry.sha
    return out


@needs_git
def test_a_large_object_is_readable_from_clone_and_remote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SHARE_ENV, "0")  # a clone that copies the remote's objects
    repo = MetadataRepo.init(tmp_path / "a", None)
    doc = big_document(1)
    assert len(doc) >= 64 << 10
    sha = repo.commit_and_push(put({".datom/manifest.json": doc, "t/m": b"x"}), "big", ME)
    assert sha is not None
    blob = Blob.from_string(doc).id.decode()
    bare = MetadataRepo.embedded_remote_path(tmp_path / "a")
    assert blob in loose_files(tmp_path / "a" / ".git" / "objects")
    assert blob in loose_files(bare / "objects")
    for where in (tmp_path / "a", bare):
        assert git(where, "cat-file", "blob", blob).encode() == doc
        git(where, "fsck", "--strict", "--no-dangling")
    assert git(tmp_path / "a", "status", "--porcelain") == ""
    assert (tmp_path / "a" / ".datom" / "manifest.json").read_bytes() == doc
    fresh = MetadataRepo.clone(bare, tmp_path / "b")
    assert fresh.read(".datom/manifest.json") == doc


@needs_git
def test_the_index_after_many_writes_equals_dulwichs_full_rebuild(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    rng = random.Random(7)
    present: set[str] = set()
    for i in range(60):
        files = {f"t{rng.randrange(25):02d}/metadata.json": f"{i}".encode() for _ in range(3)}
        files["manifest.json"] = f"manifest {i}".encode() * (1 + i % 5)
        if i % 9 == 4:  # a changed file of a different size, and paths never seen before
            files[f"new{i}/m"] = b"n" * i
        repo.commit(files, f"c{i}", ME)
        present |= set(files)
    with closing(Repo(str(tmp_path / "a"))) as r:
        head = tree_files(r)
        assert {p.decode() for p in head} == present
        ours = Index(str(tmp_path / "a" / ".git" / "index"))
        rebuilt = Index(str(tmp_path / "rebuilt-index"), read=False)
        for path, sha in head.items():
            st = os.lstat(tmp_path / "a" / os.fsdecode(path))
            rebuilt[path] = index_entry_from_stat(st, sha, mode=FILE_MODE)
        rebuilt.write()
        assert dict(ours.items()) == dict(rebuilt.items())
    assert git(tmp_path / "a", "status", "--porcelain") == ""
    git(tmp_path / "a", "diff-index", "--quiet", "--cached", "HEAD")


@needs_git
def test_the_index_drops_paths_a_reset_removes(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit_and_push(put({"a/m": b"1", "b/m": b"1"}), "one", ME)
    other = MetadataRepo.clone(MetadataRepo.embedded_remote_path(tmp_path / "a"), tmp_path / "b")
    repo.commit({"c/m": b"local only"}, "local", ME)  # never pushed: the reset drops it
    repo.fetch_and_reset()
    assert not (tmp_path / "a" / "c").exists()
    assert git(tmp_path / "a", "status", "--porcelain") == ""
    other.commit_and_push(put({"a/m": b"2"}), "two", ME)
    repo.fetch_and_reset()
    assert git(tmp_path / "a", "status", "--porcelain") == ""
    assert repo.read("a/m") == b"2"


@pytest.mark.usefixtures("accelerated")  # the compaction accelerator itself
@needs_git
def test_compaction_packs_large_loose_objects_and_keeps_every_commit_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SHARE_ENV, "0")  # a clone that holds copies, compacted too
    repo = MetadataRepo.init(tmp_path / "a", None)
    writes = maint.LOOSE_BUDGET // 3 + 2 * maint.CLONE_CHECK_EVERY  # 3 objects a write
    docs = [big_document(i, entries=800) for i in range(writes)]
    assert len(docs[0]) >= 64 << 10
    shas = [repo.commit_and_push(put({"history.json": d}), f"c{i}", ME) for i, d in enumerate(docs)]
    bare = MetadataRepo.embedded_remote_path(tmp_path / "a")
    for path in (tmp_path / "a" / ".git", bare):
        with closing(Repo(str(path))) as r:
            assert r.object_store.packs  # the writes compacted it on their budget
            maint.compact(r)
            assert r.object_store.count_loose_objects() <= maint.LOOSE_BUDGET
            assert len(r.object_store.packs) <= maint.PACK_BUDGET
    for where in (tmp_path / "a", bare):
        git(where, "fsck", "--strict", "--no-dangling")
        for pack in (where / ".git" if where == tmp_path / "a" else where).glob(
            "objects/pack/*.idx"
        ):
            git(where, "verify-pack", str(pack))
    for sha, doc in zip(shas, docs, strict=True):
        assert sha is not None and repo.read_at(sha, "history.json") == doc
    assert git(tmp_path / "a", "status", "--porcelain") == ""
    fresh = MetadataRepo.clone(bare, tmp_path / "b")
    assert [c.id for c in fresh.log()] == list(reversed(shas))


@pytest.mark.usefixtures("accelerated")  # the compaction accelerator itself
def test_merging_packs_keeps_every_object(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The packs are made here: the writing handle's own checks (every 16 operations, or
    # a commit whose id is due) must not merge them first.
    monkeypatch.setattr(maint, "CLONE_CHECK_EVERY", 1 << 62)
    repo = MetadataRepo.init(tmp_path / "a", None)
    shas = []
    with closing(Repo(str(tmp_path / "a"))) as r:
        for i in range(maint.PACK_BUDGET + 2):  # one small pack per round, past the budget
            shas.append(repo.commit({f"t{i}/m": big_document(i, entries=10)}, f"c{i}", ME))
            assert _compact._pack_loose(r.object_store) > 0
        assert len(r.object_store.packs) > maint.PACK_BUDGET
        packed, merged = maint.compact(r)
        assert merged > 0 and len(r.object_store.packs) <= maint.PACK_BUDGET
    git(tmp_path / "a", "fsck", "--strict", "--no-dangling")
    for i, sha in enumerate(shas):
        assert sha is not None and repo.read_at(sha, f"t{i}/m") == big_document(i, entries=10)


def test_a_replaced_file_gets_the_new_bytes_and_a_hard_link_keeps_the_old(
    tmp_path: Path,
) -> None:
    final = tmp_path / "f"
    write_file_atomic(final, b"first")  # nothing there yet
    assert final.read_bytes() == b"first"
    linked = tmp_path / "other-name"
    os.link(final, linked)  # the old file keeps its bytes under its other name
    write_file_atomic(final, b"second")
    assert final.read_bytes() == b"second" and linked.read_bytes() == b"first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f", "other-name"]


def test_replacing_a_directory_fails_and_leaves_it_and_no_temporary(tmp_path: Path) -> None:
    final = tmp_path / "d"
    final.mkdir()
    (final / "inside").write_bytes(b"kept")
    with pytest.raises(OSError):
        write_file_atomic(final, b"new")
    assert final.is_dir() and (final / "inside").read_bytes() == b"kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


@needs_git
def test_a_killed_writers_object_lock_is_taken_over_and_a_live_ones_waited_for(
    tmp_path: Path,
) -> None:
    bare = tmp_path / "r.git"
    with closing(Repo.init_bare(str(bare), mkdir=True)) as r:
        stale, live = (Blob.from_string(b"stale %d" % i) for i in range(2))
        for blob, age in ((stale, LOCK_STALE + 1), (live, 0.0)):
            path = Path(r.object_store._get_shafile_path(blob.id))
            path.parent.mkdir(exist_ok=True)
            lock = path.with_name(path.name + ".lock")
            lock.write_bytes(b"half an obj")  # what a writer killed mid-write leaves
            os.utime(lock, (time.time() - age,) * 2)
        add_object(r.object_store, stale)  # an old lock: taken over at once
        assert r.object_store[stale.id].as_raw_string() == stale.as_raw_string()
        start = time.monotonic()
        add_object(r.object_store, live)  # a fresh one: waited for until it is old
        assert LOCK_STALE * 0.9 <= time.monotonic() - start < LOCK_STALE * 3
        assert r.object_store[live.id].as_raw_string() == live.as_raw_string()
    assert not list(bare.glob("objects/*/*.lock"))
    git(bare, "fsck", "--strict")


def test_an_object_lock_is_judged_by_the_file_systems_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This machine's clock an hour behind the file server's (simulated by moving this
    process's clock back): an object lock left a minute ago is still a killed writer's."""
    with closing(Repo.init_bare(str(tmp_path / "r.git"), mkdir=True)) as r:
        blob = Blob.from_string(b"left by a killed writer")
        path = Path(r.object_store._get_shafile_path(blob.id))
        path.parent.mkdir()
        lock = path.with_name(path.name + ".lock")
        lock.write_bytes(b"half an obj")
        os.utime(lock, (time.time() - 60,) * 2)
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() - 3600)
        start = time.monotonic()
        add_object(r.object_store, blob)
        assert time.monotonic() - start < LOCK_STALE / 2  # taken over, not waited for
        assert r.object_store[blob.id].as_raw_string() == blob.as_raw_string()
    assert not lock.exists()


@needs_git
def test_an_index_rewritten_by_git_between_writes_is_read_again_not_patched(
    tmp_path: Path,
) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit_and_push(put({"a/m": b"1", "b/m": b"1", "c/m": b"1"}), "one", ME)
    clone = tmp_path / "a"
    (clone / "untracked.txt").write_bytes(b"x")
    git(clone, "add", "untracked.txt")  # git itself writes the index (with an extension)
    git(clone, "update-index", "--refresh")
    repo.commit_and_push(put({"a/m": b"2"}), "two", ME)  # only a changed entry: a patch
    with closing(Repo(str(clone))) as r:
        paths = {p for p, _ in Index(str(clone / ".git" / "index")).items()}
        assert paths == set(tree_files(r)) | {b"untracked.txt"}  # git's entry kept
    assert git(clone, "status", "--porcelain") == "A  untracked.txt\n"
    assert git(clone, "diff", "--stat") == ""
