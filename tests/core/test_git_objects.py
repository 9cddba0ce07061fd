"""Loose objects shared between a clone and its local remote, and the per-file commit index,
checked against the real ``git`` (fsck, log) on real repositories."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from contextlib import closing
from pathlib import Path

import pytest
from dulwich.objects import ObjectID, ShaFile
from dulwich.refs import Ref
from dulwich.repo import Repo

from datom_core._git import Author, MetadataRepo, TreeReader, _objects
from datom_core._git._fast._share import SHARE_ENV
from datom_core._git._read import has, load
from tests.gitcli import git, needs_git

ME = Author("Ada Lovelace", "ada@example.org")


def put(files: dict[str, bytes]) -> Callable[[TreeReader], Mapping[str, bytes]]:
    return lambda tree: files


def pushed(tmp_path: Path, count: int, files: Callable[[int], dict[str, bytes]]) -> MetadataRepo:
    """A project at ``tmp_path / "a"`` with ``count`` pushed commits of ``files(i)``."""
    a = MetadataRepo.init(tmp_path / "a", None)
    for i in range(count):
        a.commit_and_push(put(files(i)), f"c{i}", ME)
    return a


def loose_files(objects: Path) -> dict[str, Path]:
    return {
        p.parent.name + p.name: p
        for p in objects.glob("[0-9a-f][0-9a-f]/*")
        if len(p.parent.name + p.name) == 40
    }


@needs_git
def test_pushed_objects_reach_clone_and_remote_at_loose_level_1_and_git_accepts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SHARE_ENV, "0")  # clones that copy the remote's objects
    a = MetadataRepo.init(tmp_path / "a", None)
    b = MetadataRepo.clone(a.remote_url, tmp_path / "b")
    big = b'{"rows": [' + b", ".join(b'"x%d"' % i for i in range(3000)) + b"]}"
    for i in range(6):
        writer = (a, b)[i % 2]
        writer.commit_and_push(put({f"t{i % 3}/m.json": big + b"%d" % i}), f"c{i}", ME)
    remote = MetadataRepo.embedded_remote_path(tmp_path / "a")
    theirs = loose_files(remote / "objects")
    for clone in (tmp_path / "a", tmp_path / "b"):
        mine = loose_files(clone / ".git" / "objects")
        shared = [sha for sha in mine if sha in theirs]
        assert shared, "no object of a push reached the clone"
        for sha in shared:  # the same object (zlib streams may differ)
            assert zlib.decompress(mine[sha].read_bytes()) == zlib.decompress(
                theirs[sha].read_bytes()
            )
        git(clone, "fsck", "--strict", "--no-dangling")
        assert git(clone, "status", "--porcelain") == ""
    git(remote, "fsck", "--strict", "--no-dangling")
    # core.looseCompression=1 in both repositories datom made, and dulwich honours it:
    # the biggest object deflates to what level 1 gives
    for where in (tmp_path / "a", remote):
        assert git(where, "config", "core.looseCompression").strip() == "1"
    biggest = max(theirs.values(), key=lambda p: p.stat().st_size)
    raw = zlib.decompress(biggest.read_bytes())
    assert len(biggest.read_bytes()) == len(zlib.compress(raw, 1))
    assert git(tmp_path / "b", "log", "--format=%H") == git(remote, "log", "--format=%H")


def test_objects_missing_from_the_remote_as_files_are_copied_from_its_pack(
    tmp_path: Path,
) -> None:
    a = pushed(tmp_path, 5, lambda i: {f"t{i}/m": b"%d" % i})
    remote = MetadataRepo.embedded_remote_path(tmp_path / "a")
    with closing(Repo(str(remote))) as r:
        r.object_store.pack_loose_objects()
        assert r.object_store.count_loose_objects() == 0
    b = MetadataRepo.clone(a.remote_url, tmp_path / "b")
    a.commit_and_push(lambda tree: {"t9/m": b"9"}, "c9", ME)
    b.fetch_and_reset()
    assert b.read("t9/m") == b"9" and b.read("t0/m") == b"0"
    assert [c.id for c in b.log()] == [c.id for c in a.log()]


@needs_git
def test_the_commits_of_a_file_are_those_git_log_lists(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    for i in range(40):
        files = {f"t{i % 5}/m": b"%d" % i, "shared": b"%d" % (i // 4)}
        if i == 20:
            files["t1/m"] = b"3"  # back to an earlier version's bytes
        repo.commit(files, f"c{i}", ME)
    repo.push()
    clone = tmp_path / "a"

    def git_log(path: str, n: int | None = None) -> list[str]:
        extra = [f"-n{n}"] if n else []
        return git(clone, "log", "--format=%H", *extra, "--", path).split()

    for path in ("t0/m", "t1/m", "t4/m", "shared"):
        assert [c.id for c in repo.log(path)] == git_log(path)
        assert [c.id for c in repo.log(path, max_entries=3)] == git_log(path, 3)
        assert repo.last_commit_touching(path) == git_log(path)[0]
    assert repo.log("t0") == MetadataRepo.open(clone).log("t0")  # a directory: the walk
    assert [c.id for c in repo.log("t0")] == git_log("t0")
    assert repo.log("absent/file") == []
    repo.commit({"t2/m": b"later"}, "later", ME)  # the index is extended, not rebuilt
    assert [c.id for c in repo.log("t2/m")] == git_log("t2/m")
    older = git_log("t3/m")[3]
    git(clone, "reset", "--hard", older)  # HEAD moved back by another tool: rebuilt
    assert [c.id for c in repo.log("t3/m")] == git_log("t3/m")
    assert repo.last_commit_touching("t3/m") == older


@needs_git
def test_a_history_with_a_merge_is_walked_as_before(tmp_path: Path) -> None:
    """A merge made by another tool: the index does not answer (a path-filtered log judges
    a merge against every parent), the walk does, as it always did."""
    repo = MetadataRepo.init(tmp_path / "a", None)
    clone = tmp_path / "a"
    for i in range(4):
        repo.commit({f"t{i % 2}/m": b"%d" % i}, f"c{i}", ME)
    git(clone, "checkout", "-q", "-b", "side")
    (clone / "side.txt").write_text("side\n")
    git(clone, "add", "side.txt")
    git(clone, "-c", "user.name=x", "-c", "user.email=x@y", "commit", "-qm", "side")
    git(clone, "checkout", "-q", "main")
    repo.commit({"t0/m": b"main"}, "on main", ME)
    git(clone, "-c", "user.name=x", "-c", "user.email=x@y", "merge", "-q", "--no-edit", "side")
    reopened = MetadataRepo.open(clone)
    with closing(Repo(str(clone))) as r:
        head = r.refs[Ref(b"HEAD")]
        for path in ("t0/m", "t1/m", "side.txt"):
            walked = [e.commit.id.decode() for e in r.get_walker([head], paths=[path.encode()])]
            assert [c.id for c in reopened.log(path)] == walked != []


def _loose_of(store: Path) -> dict[str, Path]:
    return loose_files(store)


@pytest.mark.usefixtures("accelerated")  # a clone reading through its alternate
def test_objects_are_read_from_loose_files_of_the_clone_or_its_alternate_as_dulwich_reads_them(
    tmp_path: Path,
) -> None:
    a = MetadataRepo.init(tmp_path / "a", None)
    for i in range(3):
        a.commit_and_push(put({f"t{i}/m.json": b'{"i": %d}' % i, "m.json": b"%d" % i}), f"c{i}", ME)
    remote = MetadataRepo.embedded_remote_path(tmp_path / "a") / "objects"
    with closing(Repo(str(tmp_path / "a"))) as r:
        clone_store = r.object_store
        assert [s.path for s in clone_store.alternates] == [str(remote.resolve())]
        ids = sorted(_loose_of(remote))
        assert len(ids) >= 9
        for sha in ids:  # through the alternate, and from the remote's own store
            for store in (clone_store, clone_store.alternates[0]):
                got, want = load(store, sha.encode()), store[ObjectID(sha.encode())]
                assert type(got) is type(want)
                assert got.as_raw_string() == want.as_raw_string()
                assert got.id == want.id == sha.encode()
        with pytest.raises(KeyError):
            load(clone_store, b"0" * 40)


@pytest.mark.usefixtures("accelerated")  # a clone reading through its alternate
def test_an_object_is_found_where_dulwich_finds_it_loose_packed_or_through_the_alternate(
    tmp_path: Path,
) -> None:
    pushed(tmp_path, 3, lambda i: {f"t{i}/m.json": b'{"i": %d}' % i})
    remote = MetadataRepo.embedded_remote_path(tmp_path / "a")
    loose = sorted(_loose_of(remote / "objects"))
    with closing(Repo(str(remote))) as r:  # some of the remote's objects only in a pack
        packed = loose[:4]
        r.object_store.add_objects([(r.object_store[ObjectID(s.encode())], None) for s in packed])
        for sha in packed:
            r.object_store.delete_loose_object(ObjectID(sha.encode()))
    with closing(Repo(str(tmp_path / "a"))) as r:
        store = r.object_store
        for sha in [*loose, "0" * 40, "f" * 40]:
            for where in (store, store.alternates[0]):
                assert has(where, sha.encode()) == (ObjectID(sha.encode()) in where), sha
        assert all(has(store, s.encode()) for s in loose)  # through the alternate
        assert not has(store, b"0" * 40)


@pytest.mark.usefixtures("accelerated")  # a clone reading through its alternate
def test_an_object_a_compaction_moves_into_a_pack_mid_look_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local remote's compaction packs a loose object and deletes its file between
    dulwich's look in the packs and its look in the loose files of a clone reading the
    remote in place: the object is still found (a clone's write reading its own pushed
    commit during another writer's compaction raised "No commit")."""
    pushed(tmp_path, 2, lambda i: {f"t{i}/m.json": b'{"i": %d}' % i})
    remote = MetadataRepo.embedded_remote_path(tmp_path / "a")
    sha = ObjectID(sorted(_loose_of(remote / "objects"))[0].encode())
    with closing(Repo(str(tmp_path / "a"))) as r:
        alternate = r.object_store.alternates[0]
        look_loose = alternate.contains_loose
        moved: list[bool] = []

        def moving(wanted: ObjectID) -> bool:
            if not moved:  # the compaction, between the two looks
                moved.append(True)
                with closing(Repo(str(remote))) as other:
                    other.object_store.add_objects([(other.object_store[sha], None)])
                    other.object_store.delete_loose_object(sha)
            return look_loose(wanted)

        monkeypatch.setattr(alternate, "contains_loose", moving)
        assert has(r.object_store, sha) and moved


def _outcome(read: Callable[[], ShaFile]) -> tuple[str, bytes]:
    """What a read gave: the object's type and bytes, or the error's type."""
    try:
        obj = read()
    except Exception as e:
        return type(e).__name__, b""
    return type(obj).__name__, obj.as_raw_string()


@pytest.mark.usefixtures("accelerated")  # a clone reading through its alternate
def test_a_loose_file_that_is_not_a_whole_object_is_left_to_dulwich(tmp_path: Path) -> None:
    a = MetadataRepo.init(tmp_path / "a", None)
    a.commit_and_push(put({"t/m.json": b'{"a": 1}'}), "c", ME)
    objects = MetadataRepo.embedded_remote_path(tmp_path / "a") / "objects"
    with closing(Repo(str(tmp_path / "a"))) as r:
        store = r.object_store.alternates[0]
        sha, path = next(iter(_loose_of(objects).items()))
        good = path.read_bytes()
        body = zlib.decompress(good)
        for broken in (
            good[: len(good) // 2],  # cut short
            zlib.compress(body.replace(b" ", b"  ", 1)),  # a size that does not match
            zlib.compress(b"bogus 3\0abc"),  # no such type
            zlib.compress(body) + b"trailing",  # bytes after the stream
        ):
            path.chmod(0o644)
            path.write_bytes(broken)
            assert _outcome(lambda: load(store, sha.encode())) == _outcome(
                lambda: store[ObjectID(sha.encode())]
            )
        # the object also in a pack: a broken loose copy is not what is returned
        path.write_bytes(good)
        pack = store.add_objects([(store[ObjectID(sha.encode())], None)])
        assert pack is not None
        path.write_bytes(zlib.compress(b"blob 1\0x"))  # well formed, not what its name says
        assert load(store, sha.encode()).as_raw_string() == body.split(b"\0", 1)[1]


@pytest.mark.usefixtures("accelerated")
def test_the_history_accelerator_answers_as_its_plain_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``log`` (of a file, of everything, limited or not) and ``last_commit_touching``
    answer the same from the path index and first parents as dulwich's walker
    (``DATOM_PLAIN=history``), on a fresh handle and on one that has indexed."""
    repo = MetadataRepo.init(tmp_path / "a", None)
    for i in range(30):
        repo.commit({f"t{i % 4}/m": b"%d" % (i % 7), "shared": b"%d" % (i // 5)}, f"c{i}", ME)

    def answers(handle: MetadataRepo) -> list[object]:
        out: list[object] = [[c.id for c in handle.log(max_entries=n)] for n in (None, 1, 7)]
        for path in ("t0/m", "t3/m", "shared", "t1", "absent"):
            out.append(handle.last_commit_touching(path))
            out += [[c.id for c in handle.log(path, max_entries=n)] for n in (None, 2)]
        return out

    fresh = answers(MetadataRepo.open(tmp_path / "a"))
    assert fresh == answers(repo)  # the second: from an index already built
    monkeypatch.setenv("DATOM_PLAIN", "history")
    assert answers(MetadataRepo.open(tmp_path / "a")) == fresh


@pytest.mark.usefixtures("accelerated")
def test_kept_trees_commits_and_blobs_are_what_the_store_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tree_of``, ``commit_of`` and ``blob_data`` answer from :mod:`_memo` as a read of
    the store does (``DATOM_PLAIN=trees,commits,blobs``): for each kind of object (None for
    another kind) and absent ids (the same KeyError), read again once kept."""
    repo = MetadataRepo.init(tmp_path / "a", None)
    for i in range(3):
        repo.commit({"t/m": b"%d" % i, "u/m": b"same"}, f"c{i}", ME)
    with closing(Repo(str(tmp_path / "a"))) as r:
        store = r.object_store
        ids = [bytes(sha) for sha in store] + [b"0" * 40]

        def answers() -> list[object]:
            out: list[object] = []
            for sha in ids * 2:
                for read in (_objects.tree_of, _objects.commit_of, _objects.blob_data):
                    found: object
                    try:
                        found = read(store, sha)
                    except KeyError:
                        found = KeyError
                    out.append(found.as_raw_string() if isinstance(found, ShaFile) else found)
            return out

        fast = answers()
        monkeypatch.setenv("DATOM_PLAIN", "trees,commits,blobs")
        assert answers() == fast
    assert any(isinstance(a, bytes) and a.startswith(b"tree ") for a in fast)  # commits read
