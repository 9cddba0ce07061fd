"""A large blob's loose file is written by the worker thread while its id is computed
(``_git/_stored``): taken into place by the push, and never left behind, whatever happens
to the commit (unchanged, repeated, rejected, failed, or staged for another store)."""

from __future__ import annotations

import errno
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from dulwich.objects import Blob
from dulwich.repo import Repo

from datom_core._errors import GitError
from datom_core._git import GitCredentials, MetadataRepo, TreeReader, _objects, _stored
from datom_core._git import _maintenance as maint
from datom_core._git._shared import SHARE_ENV
from tests.core.test_git_objects import ME, git, loose_files, needs_git, put
from tests.core.test_git_writes import big_document
from tests.gitserver import GitHTTPServer


def _staged_files(*roots: Path) -> list[Path]:
    """Temporary files of staged objects anywhere under the given repositories."""
    return [p for root in roots for p in root.rglob("tmp_obj_*")]


def _remote(clone: Path) -> Path:
    return MetadataRepo.embedded_remote_path(clone)


@pytest.fixture
def writer_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the threads that wrote staged loose files."""
    names: list[str] = []
    real = _stored._write

    def recording(tmp: str, header: bytes, chunks: list[bytes]) -> None:
        names.append(threading.current_thread().name)
        real(tmp, header, chunks)

    monkeypatch.setattr(_stored, "_write", recording)
    yield names


@needs_git
def test_a_large_blob_is_written_by_the_worker_and_taken_into_place(
    tmp_path: Path, writer_threads: list[str]
) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    doc = big_document(1)
    repo.commit_and_push(put({".datom/manifest.json": doc, "t/m": b"x"}), "big", ME)
    blob = Blob.from_string(doc).id.decode()
    assert len(writer_threads) == 1 and writer_threads[0].startswith("datom-loose")
    assert blob in loose_files(_remote(tmp_path / "a") / "objects")
    assert _staged_files(tmp_path) == []
    for where in (tmp_path / "a", _remote(tmp_path / "a")):
        assert git(where, "cat-file", "blob", blob).encode() == doc
        git(where, "fsck", "--strict", "--no-dangling")
    assert git(tmp_path / "a", "status", "--porcelain") == ""


@needs_git
def test_unchanged_and_repeated_large_blobs_leave_no_staged_file(
    tmp_path: Path, writer_threads: list[str]
) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    doc = big_document(2)
    repo.commit_and_push(put({"one.json": doc, "two.json": doc}), "the same bytes twice", ME)
    assert writer_threads  # the repeat is discarded: cancelled, or written and removed
    assert repo.commit_and_push(put({"one.json": doc}), "unchanged", ME) is None
    repo.commit_and_push(put({"one.json": doc, "t/m": b"y"}), "a small change", ME)
    repo.commit({"two.json": doc, "t/m": b"z"}, "a local commit", ME)
    repo.push()
    assert _staged_files(tmp_path) == []
    git(tmp_path / "a", "fsck", "--strict", "--no-dangling")
    git(_remote(tmp_path / "a"), "fsck", "--strict", "--no-dangling")


@needs_git
def test_a_rejected_push_discards_what_it_staged_and_the_replay_lands(tmp_path: Path) -> None:
    a = MetadataRepo.init(tmp_path / "a", None)
    a.commit_and_push(put({"seed": b"0"}), "seed", ME)
    b = MetadataRepo.clone(_remote(tmp_path / "a"), tmp_path / "b")
    builds: list[str | None] = []

    def build(tree: TreeReader) -> Mapping[str, bytes]:
        builds.append(tree.commit)
        if len(builds) == 1:  # another writer lands first (same thread: the turn re-enters)
            b.commit_and_push(put({"other": big_document(3)}), "the other writer", ME)
        return {"mine": big_document(4)}

    sha = a.commit_and_push(build, "mine", ME)
    assert len(builds) == 2 and builds[0] != builds[1]
    assert _staged_files(tmp_path) == []
    remote = _remote(tmp_path / "a")
    assert git(remote, "rev-parse", "main").strip() == sha
    assert git(remote, "cat-file", "blob", f"{sha}:mine").encode() == big_document(4)
    git(remote, "fsck", "--strict", "--no-dangling")


@needs_git
def test_a_staged_write_that_fails_is_written_in_place_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(tmp: str, header: bytes, chunks: list[bytes]) -> None:
        Path(tmp).write_bytes(b"half")
        Path(tmp).unlink()
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_stored, "_write", full_disk)
    repo = MetadataRepo.init(tmp_path / "a", None)
    doc = big_document(5)
    sha = repo.commit_and_push(put({"big.json": doc}), "big", ME)
    assert _staged_files(tmp_path) == []
    assert git(_remote(tmp_path / "a"), "cat-file", "blob", f"{sha}:big.json").encode() == doc
    git(_remote(tmp_path / "a"), "fsck", "--strict", "--no-dangling")


@needs_git
def test_a_commit_that_fails_while_building_its_trees_leaves_no_staged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    real: Callable[..., Any] = _objects._apply

    def broken(*args: Any) -> Any:
        raise GitError("a tree could not be read")

    monkeypatch.setattr(_objects, "_apply", broken)
    with pytest.raises(GitError, match="could not be read"):
        repo.commit_and_push(put({"big.json": big_document(6)}), "big", ME)
    assert _staged_files(tmp_path) == []
    monkeypatch.setattr(_objects, "_apply", real)
    assert repo.commit_and_push(put({"big.json": big_document(6)}), "big", ME) is not None


def test_a_file_staged_for_one_store_is_not_taken_into_another(tmp_path: Path) -> None:
    folders = [tmp_path / "one", tmp_path / "two"]
    for folder in folders:
        folder.mkdir()
    blob = _stored.LargeBlob.from_string(big_document(7))
    blob.staged = _stored.Staged(str(folders[0]), blob)
    final = folders[1] / blob.id[:2].decode() / blob.id[2:].decode()
    assert not blob.staged.take(str(folders[1]), str(final))
    assert not final.exists()
    _stored.release([blob])
    assert _staged_files(*folders) == []
    assert not blob.staged.take(str(folders[0]), str(final))  # released: nothing to take


@needs_git
def test_a_clone_that_copies_its_objects_links_the_taken_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SHARE_ENV, "0")
    repo = MetadataRepo.init(tmp_path / "a", None)
    doc = big_document(8)
    repo.commit_and_push(put({"big.json": doc}), "big", ME)
    blob = Blob.from_string(doc).id.decode()
    ours = loose_files(tmp_path / "a" / ".git" / "objects")[blob]
    theirs = loose_files(_remote(tmp_path / "a") / "objects")[blob]
    assert ours.stat().st_ino == theirs.stat().st_ino
    assert _staged_files(tmp_path) == []


_WRITE_BIG = textwrap.dedent(
    """
    import sys
    from datom_core._git import Author, MetadataRepo
    from tests.core.test_git_writes import big_document
    repo = MetadataRepo.open(sys.argv[1])
    repo.commit_and_push(lambda tree: {"big.json": big_document(9)}, "big", Author("A", "a@b"))
    """
)


@needs_git
def test_a_writer_killed_after_staging_leaves_a_file_that_compaction_removes_later(
    tmp_path: Path,
) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit_and_push(put({"seed": b"0"}), "seed", ME)
    env = {**os.environ, "DATOM_CRASH_AT": "git:stage:written"}
    child = subprocess.run([sys.executable, "-c", _WRITE_BIG, str(tmp_path / "a")], env=env)
    assert child.returncode == -signal.SIGKILL
    remote = _remote(tmp_path / "a")
    (left,) = _staged_files(tmp_path)
    assert left.parent == remote / "objects"
    # git and the next writer step around it
    git(remote, "fsck", "--strict", "--no-dangling")
    sha = repo.commit_and_push(put({"big.json": big_document(9)}), "big", ME)
    assert git(remote, "cat-file", "blob", f"{sha}:big.json").encode() == big_document(9)
    with closing(Repo(str(remote))) as r:
        maint.compact(r)  # a young one may be a live writer's: kept
        assert left.exists()
        hour_ago = time.time() - _stored.STALE_AFTER - 1
        os.utime(left, (hour_ago, hour_ago))
        maint.compact(r)
    assert _staged_files(tmp_path) == []


@needs_git
def test_over_https_the_clone_keeps_the_staged_file_of_what_it_pushed(
    git_http_server: GitHTTPServer, tmp_path: Path, writer_threads: list[str]
) -> None:
    bare = git_http_server.create_bare("proj")
    url, creds = git_http_server.url_for("proj"), GitCredentials(git_http_server.token)
    repo = MetadataRepo.clone(url, tmp_path / "a", credentials=creds)
    doc = big_document(10)
    sha = repo.commit_and_push(put({".datom/manifest.json": doc}), "big", ME)
    blob = Blob.from_string(doc).id.decode()
    assert writer_threads  # staged in the clone, whose store the build reads
    assert blob in loose_files(tmp_path / "a" / ".git" / "objects")
    assert _staged_files(tmp_path) == []
    assert git(bare, "cat-file", "blob", f"{sha}:.datom/manifest.json").encode() == doc
    git(tmp_path / "a", "fsck", "--strict", "--no-dangling")
    other = MetadataRepo.clone(url, tmp_path / "b", credentials=creds)
    assert other.read(".datom/manifest.json") == doc


@needs_git
def test_a_commit_that_fails_reading_its_parent_leaves_no_staged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    real = TreeReader.entry
    seen: list[str] = []

    def failing_second(self: TreeReader, relpath: str) -> Any:
        seen.append(relpath)
        if len(seen) == 2:
            raise GitError("the parent's tree could not be read")
        return real(self, relpath)

    monkeypatch.setattr(TreeReader, "entry", failing_second)
    files = {"one.json": big_document(11), "two.json": big_document(12)}
    with pytest.raises(GitError, match="could not be read"):
        repo.commit_and_push(put(files), "two big", ME)
    assert _staged_files(tmp_path) == []


def test_a_compaction_sweeps_what_killed_writers_left_an_hour_ago(tmp_path: Path) -> None:
    """A writer killed while writing a loose object or a pack leaves its temporary file
    (git's prefixes, which git itself skips): a compaction removes those an hour old,
    in the objects folder, the pack folder and the fan-out folders it sweeps, and keeps
    a young one (a live writer's)."""
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit_and_push(put({"seed": b"0"}), "seed", ME)
    objects = _remote(tmp_path / "a") / "objects"
    hour_ago = time.time() - _stored.STALE_AFTER - 1
    old = [
        objects / "tmp_obj_1_aa",
        objects / "pack" / "tmp_pack_1_bb",
        objects / "7f" / "tmp_obj_1_cc",
    ]
    young = [
        objects / "tmp_obj_2_dd",
        objects / "pack" / "tmp_pack_2_ee",
        objects / "7f" / "tmp_obj_2_ff",
    ]
    for path in old + young:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"partial")
    for path in old:
        os.utime(path, (hour_ago, hour_ago))
    with closing(Repo(str(objects.parent))) as r:
        assert maint.drop_stale_temporaries(r.object_store, folders=256) == 3
    assert [p.exists() for p in old + young] == [False] * 3 + [True] * 3


def _take_in_child(staged: _stored.Staged, folder: str, final: str, out: Any) -> None:
    out.put((staged.take(folder, final), staged.discard()))


def test_a_forked_child_steps_around_what_its_parent_is_staging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child forked while the parent's worker writes a staged file has no such thread:
    its ``take`` says no (it writes the object itself) and its ``discard`` leaves the file
    to the parent, instead of waiting forever on a job no thread will run."""
    folder = tmp_path / "objects"
    folder.mkdir()
    go = threading.Event()
    real = _stored._write

    def held(*args: Any) -> None:
        go.wait(10)
        real(*args)

    monkeypatch.setattr(_stored, "_write", held)
    blob = _stored.LargeBlob.from_string(big_document(3))
    staged = _stored.Staged(str(folder), blob)
    final = str(folder / "ab" / "cdef")
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_take_in_child, args=(staged, str(folder), final, out))
    child.start()
    child.join(timeout=10)
    hung = child.is_alive()
    if hung:
        child.kill()
    go.set()
    assert not hung
    assert out.get(timeout=5) == (False, None)
    assert staged.take(str(folder), final)
    assert Path(final).read_bytes()[:2] == b"\x78\x01"  # zlib's header: a loose object
